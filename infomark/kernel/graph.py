"""The gate graph as data: gates G0–G9, terminals, the spine and guarded edges.

An edge's ``guard`` is only a *name*; the gates layer evaluates the predicate of
that name on session state. :data:`GUARDS` is the closed vocabulary of guard
names, and :mod:`infomark.kernel.validate` checks a graph against the kernel's
structural rules. Node names are canonical upper-case strings (``"G4"``,
``"SUCCESS"``); :meth:`GateGraph.parse_gate` turns what a person or an agent
writes (``"g4"``, ``"AUTHORIZE"``, ``"g4-authorize"``, ``"out of scope"``) into
that form.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from types import MappingProxyType

from infomark.kernel.enums import StrEnum
from infomark.kernel.errors import GraphError, UserError
from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.records import dataclass

__all__ = [
    "DEFAULT_GRAPH",
    "GUARDS",
    "TERMINALS",
    "Edge",
    "EdgeKind",
    "Gate",
    "GateGraph",
    "parse_gate",
    "render_graph_text",
]


class EdgeKind(StrEnum):
    """How an edge relates to the spine."""

    FORWARD = "forward"  # one step along the spine
    SIDE = "side"  # into a gate off the spine
    BACK = "back"  # back to an earlier gate
    TERMINAL = "terminal"  # out of the machine, into a terminal


@dataclass(frozen=True, slots=True)
class Gate:
    """One gate: canonical id (``G4``), name (``AUTHORIZE``), what it allows."""

    id: str
    name: str
    allows: str
    mutates: bool = False


@dataclass(frozen=True, slots=True)
class Edge:
    """A lawful move ``src → dst``, taken when the guard named ``guard`` holds."""

    src: str
    dst: str
    kind: EdgeKind
    guard: str
    condition: str

    def __post_init__(self) -> None:
        try:
            kind = EdgeKind(self.kind)
        except ValueError as exc:
            allowed = ", ".join(k.value for k in EdgeKind)
            raise GraphError(
                f"edge {self.src}→{self.dst}: unknown kind {self.kind!r}; use one of {allowed}"
            ) from exc
        object.__setattr__(self, "kind", kind)


GUARDS: Mapping[str, str] = MappingProxyType(
    {
        "always": "unconditional",
        "has_ledger": "a claim_ledger block has been accepted in this session",
        "falsifiable": "every claim has a falsifier and a declared oracle",
        "grounded": "every claim not listed in open_questions is in G",
        "not_groundable_at_scale": (
            "the remaining claims cannot be grounded within budget; they sit in open_questions"
        ),
        "has_premises": "premises_for_plan is non-empty and names only declared claims",
        "approved": "the plan is approved (explicit user approval in the strict profile)",
        "premises_grounded": "every id in premises_for_plan is in G",
        "modified": "at least one modify tool call ran since entering G7",
        "oracle_pass_stamped": (
            "every premise's oracle is stamped PASS or EXPECTED_FAIL on evidence "
            "newer than the last edit"
        ),
        "oracle_failed": "an oracle run or stamp came back FAIL",
        "loop_budget_exhausted": "the G6–G8 repair loop used up its iteration budget",
        "premise_revoked": "a premise lost its stamp (divergence_event, text or artifact change)",
        "open_questions_reduced": "open_questions shrank since entering G5",
        "closure_success": "every premise is in G with evidence fresher than the last edit",
        "blocked": "the agent declared the task blocked and gave a reason",
        "needs_approval": "the next step needs an explicit decision from the user",
        "out_of_scope": "the task is outside what this session may do",
    }
)
"""Every guard name an edge may carry, with a one-line meaning."""

TERMINALS: tuple[str, ...] = ("SUCCESS", "BLOCKED", "OUT_OF_SCOPE", "WAITING_APPROVAL")
"""The terminal nodes: a session that reaches one has left the gate machine."""

_SEPARATORS = lazy_compile(r"[\s_\-:.]+")
_QUOTES = "\"'`[]()"


def _normalise(word: str) -> str:
    """Upper-case, trim quotes, and turn runs of separators into single underscores."""
    return _SEPARATORS.sub("_", word.strip().strip(_QUOTES).strip().upper()).strip("_")


@dataclass(frozen=True)
class GateGraph:
    """Gates, terminals, the spine (the forward path) and the edges between nodes."""

    gates: tuple[Gate, ...]
    terminals: tuple[str, ...]
    spine: tuple[str, ...]
    edges: tuple[Edge, ...]

    def __post_init__(self) -> None:
        # Accept any iterable from callers (e.g. dataclasses.replace with a list).
        for name in ("gates", "terminals", "spine", "edges"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    # -- nodes

    @cached_property
    def gate_ids(self) -> tuple[str, ...]:
        """Gate ids in declaration order."""
        return tuple(g.id for g in self.gates)

    @cached_property
    def nodes(self) -> tuple[str, ...]:
        """Every node: gate ids, then terminals."""
        return (*self.gate_ids, *self.terminals)

    @cached_property
    def _gates_by_id(self) -> dict[str, Gate]:
        table: dict[str, Gate] = {}
        for g in self.gates:
            table.setdefault(g.id, g)
        return table

    @cached_property
    def _edges_by_src(self) -> dict[str, tuple[Edge, ...]]:
        table: dict[str, list[Edge]] = {node: [] for node in self.nodes}
        for e in self.edges:
            table.setdefault(e.src, []).append(e)
        return {node: tuple(out) for node, out in table.items()}

    @cached_property
    def _spellings(self) -> dict[str, str]:
        table: dict[str, str] = {}
        for t in self.terminals:
            table.setdefault(_normalise(t), t)
        for g in self.gates:
            for spelling in (g.id, g.name, f"{g.id}_{g.name}"):
                table.setdefault(_normalise(spelling), g.id)
        return table

    def _require_node(self, name: str) -> None:
        if name not in self.nodes:
            raise UserError(
                f"unknown gate {name!r}: expected one of {', '.join(self.nodes)} "
                "(canonical form; use parse_gate() to turn 'g4' or 'AUTHORIZE' into 'G4')"
            )

    def gate(self, gate_id: str) -> Gate:
        """The gate with this canonical id; UserError for terminals and unknown names."""
        found = self._gates_by_id.get(gate_id)
        if found is None:
            what = "is a terminal, not a gate" if gate_id in self.terminals else "is not a gate"
            raise UserError(
                f"{gate_id!r} {what}: expected one of {', '.join(self.gate_ids)} "
                "(canonical form; use parse_gate() to normalise)"
            )
        return found

    def is_terminal(self, node: str) -> bool:
        """True when ``node`` is one of this graph's terminals (canonical form)."""
        return node in self.terminals

    # -- edges

    def edges_from(self, node: str) -> tuple[Edge, ...]:
        """Edges leaving ``node`` in declaration order; empty for terminals."""
        self._require_node(node)
        return self._edges_by_src[node]

    def edge(self, src: str, dst: str) -> tuple[Edge, ...]:
        """Every edge ``src → dst`` (several when guards differ); empty when none."""
        self._require_node(dst)
        return tuple(e for e in self.edges_from(src) if e.dst == dst)

    def allowed_moves(self, node: str) -> tuple[str, ...]:
        """Distinct destinations reachable in one move from ``node``, in edge order."""
        return tuple(dict.fromkeys(e.dst for e in self.edges_from(node)))

    def routes_out(self, node: str) -> int:
        """How many distinct destinations ``node`` has."""
        return len(self.allowed_moves(node))

    # -- names

    def parse_gate(self, word: str) -> str | None:
        """Canonical node name for ``word``, or None when it names no node.

        Accepts an id (``G4``, ``g4``), a name (``AUTHORIZE``), both
        (``G4 AUTHORIZE``, ``g4-authorize``) and terminals in any case with
        spaces, hyphens or underscores (``out of scope``). An id and a name
        that disagree (``G4 UNDERSTAND``) name nothing.
        """
        if not isinstance(word, str):
            return None
        return self._spellings.get(_normalise(word))


def _gate(gate_id: str, name: str, allows: str, *, mutates: bool = False) -> Gate:
    return Gate(id=gate_id, name=name, allows=allows, mutates=mutates)


def _edge(src: str, dst: str, kind: EdgeKind, guard: str, condition: str) -> Edge:
    return Edge(src=src, dst=dst, kind=kind, guard=guard, condition=condition)


_F, _S, _B, _T = EdgeKind.FORWARD, EdgeKind.SIDE, EdgeKind.BACK, EdgeKind.TERMINAL

DEFAULT_GRAPH = GateGraph(
    gates=(
        _gate("G0", "UNDERSTAND", "read-only tools; restate the task and write a claim_ledger"),
        _gate("G1", "GROUND", "read-only tools and declared oracles, to ground claims"),
        _gate(
            "G2", "DECOMPOSE", "read-only tools; split the task into claims with falsifier+oracle"
        ),
        _gate("G3", "MASTER_PLAN", "read-only tools; write the plan and its premises_for_plan"),
        _gate(
            "G4",
            "AUTHORIZE",
            "present plan and premises; no mutation (strict profile: wait for explicit approval)",
        ),
        _gate("G5", "CONCERN_LOOP", "read-only tools; answer concerns, shrink open_questions"),
        _gate(
            "G6", "GROUND_PLAN", "read-only tools and declared oracles; bring every premise into G"
        ),
        _gate("G7", "IMPLEMENT", "modify tools, only while premises_for_plan ⊆ G", mutates=True),
        _gate("G8", "ORACLE", "run the declared oracles and stamp their evidence; no edits"),
        _gate("G9", "CLEAN_STATE", "read-only tools; check fresh Exact evidence, then finish"),
    ),
    terminals=TERMINALS,
    spine=("G0", "G1", "G2", "G3", "G4", "G6", "G7", "G8", "G9"),
    edges=(
        # forward: the spine
        _edge("G0", "G1", _F, "has_ledger", "the task is restated as a claim ledger"),
        _edge("G1", "G2", _F, "grounded", "the claims about the current state are grounded"),
        _edge(
            "G1",
            "G2",
            _F,
            "not_groundable_at_scale",
            "what cannot be grounded in budget is parked as open questions",
        ),
        _edge("G2", "G3", _F, "falsifiable", "every claim is falsifiable and has an oracle"),
        _edge("G3", "G4", _F, "has_premises", "the plan names the claims it rests on"),
        _edge("G4", "G6", _F, "approved", "the plan is approved"),
        _edge("G6", "G7", _F, "premises_grounded", "every premise is in G"),
        _edge("G7", "G8", _F, "modified", "the change has been made"),
        _edge("G8", "G9", _F, "oracle_pass_stamped", "the oracles pass on fresh evidence"),
        _edge(
            "G8",
            "G9",
            _F,
            "loop_budget_exhausted",
            "the repair loop is out of budget; close out honestly",
        ),
        # side: the concern loop
        _edge("G4", "G5", _S, "always", "concerns about the plan are raised"),
        # back
        _edge("G2", "G1", _B, "always", "decomposing showed a claim that needs grounding"),
        _edge("G5", "G2", _B, "open_questions_reduced", "concerns answered; re-decompose"),
        _edge("G8", "G6", _B, "oracle_failed", "an oracle failed; repair the premises"),
        _edge("G8", "G2", _B, "oracle_failed", "an oracle failed; the decomposition was wrong"),
        _edge("G8", "G1", _B, "premise_revoked", "a premise was revoked; ground it again"),
        _edge("G9", "G1", _B, "premise_revoked", "a premise was revoked; ground it again"),
        _edge("G9", "G2", _B, "always", "closing out showed more work; re-decompose"),
        # terminal
        _edge("G0", "WAITING_APPROVAL", _T, "needs_approval", "the task needs a user decision"),
        _edge("G1", "BLOCKED", _T, "blocked", "grounding is impossible here"),
        _edge("G4", "WAITING_APPROVAL", _T, "needs_approval", "waiting for the user to approve"),
        _edge("G4", "BLOCKED", _T, "blocked", "the plan cannot proceed"),
        _edge("G6", "WAITING_APPROVAL", _T, "needs_approval", "a premise needs a user decision"),
        _edge("G9", "SUCCESS", _T, "closure_success", "done, on fresh Exact evidence"),
        _edge("G9", "BLOCKED", _T, "blocked", "the work cannot be finished"),
        _edge("G9", "WAITING_APPROVAL", _T, "needs_approval", "the result needs a user decision"),
        _edge("G9", "OUT_OF_SCOPE", _T, "out_of_scope", "the rest is outside this task"),
        # an honest "I am blocked" is lawful everywhere (journaled as finished_blocked)
        _edge("G0", "BLOCKED", _T, "blocked", "the task cannot even be understood here"),
        _edge("G2", "BLOCKED", _T, "blocked", "the task cannot be decomposed into checks"),
        _edge("G3", "BLOCKED", _T, "blocked", "no plan can be made"),
        _edge("G5", "BLOCKED", _T, "blocked", "a concern cannot be resolved"),
        _edge("G6", "BLOCKED", _T, "blocked", "a premise cannot be grounded"),
        _edge("G7", "BLOCKED", _T, "blocked", "the change cannot be made"),
        _edge("G8", "BLOCKED", _T, "blocked", "the oracle cannot be made to pass"),
    ),
)
"""The kernel's gate graph. ``infomark.kernel.validate.validate_graph`` finds no issue in it."""


def parse_gate(word: str) -> str | None:
    """Canonical node name in :data:`DEFAULT_GRAPH` for ``word``, or None."""
    return DEFAULT_GRAPH.parse_gate(word)


def render_graph_text(graph: GateGraph) -> str:
    """A plain-text listing of the graph: spine, terminals, then each gate and its edges."""
    lines = [
        "spine: " + " → ".join(graph.spine),
        "terminals: " + ", ".join(graph.terminals),
    ]
    kind_width = max(len(k.value) for k in EdgeKind)
    for g in graph.gates:
        flag = "  [mutates]" if g.mutates else ""
        lines.append("")
        lines.append(f"{g.id} {g.name}{flag}: {g.allows}")
        for e in graph.edges:
            if e.src == g.id:
                lines.append(
                    f"  {e.kind.value:<{kind_width}} → {e.dst}  if {e.guard}: {e.condition}"
                )
    return "\n".join(lines) + "\n"
