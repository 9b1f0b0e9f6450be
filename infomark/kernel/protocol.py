"""The agent-facing protocol: the text users paste into CLAUDE.md / AGENTS.md.

It is rendered from the kernel's data (the InfoMark ladder, the reason codes,
the gate graph), so it cannot drift from the rules the runtime enforces. The
output is deterministic and at most :data:`MAX_PROTOCOL_BYTES` bytes of UTF-8.

Example stamp and gate lines sit inside prose lines on purpose: a block keyword
only opens a block at the start of a line, so the text itself parses to exactly
one block, the example claim_ledger.
"""

from __future__ import annotations

from infomark.kernel.digest import sha256
from infomark.kernel.errors import GraphError
from infomark.kernel.graph import DEFAULT_GRAPH, GateGraph
from infomark.kernel.infomark import InfoMark
from infomark.kernel.reasons import RejectReason

__all__ = [
    "CONTEXT_HEADER",
    "EXAMPLE_LEDGER",
    "MAX_PROTOCOL_BYTES",
    "VERIFY_BRIEF_HEAD",
    "protocol_sha256",
    "render_protocol",
]

MAX_PROTOCOL_BYTES = 6656
#: the first line of the runner's context view, sent as each request's last (user) message
CONTEXT_HEADER = "[infomark context]\n"
#: the first words of what a session start tells an agent in the verify profile, which asks
#: no protocol (the hook's brief instead of the protocol; ``doctor`` looks for either)
VERIFY_BRIEF_HEAD = "infomark is on (verify profile)"
"""Upper bound on the rendered protocol, in bytes of UTF-8."""

EXAMPLE_LEDGER = """\
claim_ledger:
  claims:
    - id: C1
      text: "open window uses chars/4"
      status: Hypothetical
      falsifier: "read computeOpenWindowTokens"
      oracle: "pytest tests/test_window.py -k chars"
  premises_for_plan: [C1]
  open_questions: [C2]
"""
"""The canonical claim_ledger block shown to agents."""

_FENCE = "```"


def _ladder() -> str:
    ranks = sorted(InfoMark, reverse=True)
    grounded = ", ".join(m.label for m in ranks if m.grounded)
    return " > ".join(m.label for m in ranks) + f". G = {{{grounded}}}."


def _moves(graph: GateGraph, gate_id: str) -> str:
    parts: list[str] = []
    for dst in graph.allowed_moves(gate_id):
        if dst == "BLOCKED":
            continue  # reachable from every gate: said once, below
        guards = [e.guard for e in graph.edge(gate_id, dst) if e.guard != "always"]
        parts.append(f"{dst} ({' | '.join(guards)})" if guards else dst)
    return ", ".join(parts)


def _gate_lines(graph: GateGraph) -> list[str]:
    return [f"- {g.id} {g.name}: {g.allows} → moves: {_moves(graph, g.id)}" for g in graph.gates]


def _reason_lines() -> list[str]:
    return [f"- {reason.value}: {reason.hint}" for reason in RejectReason]


def render_protocol(graph: GateGraph = DEFAULT_GRAPH) -> str:
    """The protocol text for ``graph``; GraphError if it would exceed the size bound."""
    mutating = [g for g in graph.gates if g.mutates]
    mutator = mutating[0].id if mutating else "no gate"
    spine = " → ".join(graph.spine)
    lines = [
        "# infomark protocol",
        "",
        "infomark grades your claims from evidence the runtime issued, not from what you",
        "write, and a gate machine decides which tool calls may run.",
        "",
        "## InfoMark",
        f"{_ladder()} Only claims in G ground a plan.",
        "An unknown rank word reads as Unknown.",
        "",
        "## Claim ledger",
        "Declare claims in a block; every claim needs a falsifier and an `oracle:` (the",
        "exact command that decides it). Premise ids go in premises_for_plan, unsettled",
        "ones in open_questions:",
        _FENCE,
        EXAMPLE_LEDGER.rstrip("\n"),
        _FENCE,
        "",
        "## Evidence",
        "Only the runtime raises a claim into G. Each tool result gets a tag like",
        "`[infomark evidence_ref=ev_… tool=bash outcome=PASS "
        "eligible=oracle_stamp,inference_stamp]`.",
        "Bind it with a line that starts with the keyword:",
        "- `oracle_stamp: claim_id=C1 evidence_ref=ev_… result=PASS` needs execution",
        "  evidence: a run of exactly the claim's `oracle:` command, run after declaring",
        "  it → Exact. result=EXPECTED_FAIL binds the FAIL run of a claim that declares",
        "  `expect: FAIL` (→ Exact); FAIL evidence with result=FAIL → Unknown.",
        "- `inference_stamp: claim_id=C2 evidence_ref=ev_…`: a run of its oracle, or a",
        "  Read/Grep of its `observe: PATH` → Inferred.",
        "- `divergence_event: claim_id=C1 evidence_ref=ev_…` revokes the claim.",
        "- `source_stamp: claim_id=C3 evidence_ref=ev_… authority=primary` binds a fetched",
        "  page: primary (vendor docs, spec) → at most Inferred, else Hypothetical.",
        "Web evidence backs no other stamp. Exact or Inferred written by you is demoted to",
        "Hypothetical. Changing a claim's text drops its stamp; a stamp with artifact=PATH",
        "is revoked when that file changes.",
        "",
        "## Rejections",
        "A rejected stamp names one reason code:",
        *_reason_lines(),
        "",
        "## Gates",
        f"Spine: {spine}.",
        "To move, write a line `gate: G4` (a gate id or terminal name). Only the listed",
        "moves are lawful, each taken when the guard in () holds.",
        *_gate_lines(graph),
        'From every gate, `gate: BLOCKED reason="…"` stops honestly (not done).',
        f"Only {mutator} mutates, and only with premises_for_plan ⊆ G. G4 needs explicit",
        "user approval in the strict profile; nothing mutates in that turn.",
        "While a premise is outside G, modify and destructive tools are denied. To ground",
        "it, run its declared oracle and stamp the evidence.",
        "",
        "## Language and prior art",
        "G0: think and respond in the user's language; a reply in another language resets",
        "the gate to G0. REUSE.BEFORE: search and read the existing code (and prior art)",
        "before you write a new module.",
        "",
        "## Finishing",
        "Words do not decide. After your last edit, every stop needs fresh evidence: the",
        "ledger's `done_when: [ids]` (default: the claims stamped after the last edit, at",
        "least one) must be Exact on runs newer than that edit. A premise outside G, a",
        "stale stamp, an oracle that failed after its stamp or a changed test file blocks",
        "it. Not done? Say so with `gate: BLOCKED` or a question for the user.",
    ]
    text = "\n".join(lines) + "\n"
    size = len(text.encode("utf-8"))
    if size > MAX_PROTOCOL_BYTES:
        raise GraphError(
            f"the rendered protocol is {size} bytes, over the {MAX_PROTOCOL_BYTES}-byte bound; "
            "shorten gate `allows` texts or drop edges"
        )
    return text


def protocol_sha256(graph: GateGraph = DEFAULT_GRAPH) -> str:
    """Hex SHA-256 of the UTF-8 protocol text, to tell which version an agent was given."""
    return sha256(render_protocol(graph).encode("utf-8")).hexdigest()
