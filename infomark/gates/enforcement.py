"""What each decision profile enforces of the G0–G9 spine (seed 002's gated spine).

The gate graph is the same in every profile; what differs is whether the *position* binds.
``strict`` makes the agent walk the graph; ``ledger`` (the default) enforces the spine's
conditions where they matter — the premises before any mutation (G3/G6 → G7) and fresh
evidence before "done" (G8/G9) — and reports the position derived from the evidence;
``observe`` enforces nothing and journals what it would have done. docs/gates.md renders
this table; ``infomark gate`` and ``GET …/gate`` show the current gate's row.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from infomark.kernel.profiles import Profile

__all__ = ["ENFORCEMENT", "enforced_at"]

_REPORTED = "reported only: the position follows the evidence"
_OBSERVED = "journaled only: each decision is recorded as it would be (dryrun), the call runs"

_LEDGER = {
    "G0": "reported; a reply in another language than the user's resets the position here",
    "G1": "reported; only runtime evidence raises a claim (stamps are judged in every gate)",
    "G2": "reported; a claim without a falsifier cannot be stamped, an oracle_stamp needs "
    "the declared oracle",
    "G3": "enforced: a modify or destructive call needs a claim_ledger with premises (no_ledger)",
    "G4": "not enforced: no approval is needed (G4 → G6 is free)",
    "G5": _REPORTED,
    "G6": "enforced: modify and destructive calls are denied while a premise is outside G "
    "(ungrounded_premises)",
    "G7": "enforced: mutation in any position once premises_for_plan ⊆ G; destructive calls "
    "are held (ask)",
    "G8": "enforced at the finish: a claim Exact on evidence newer than the last edit, no "
    "stale stamp",
    "G9": "enforced at the finish: self_graded, ungrounded_premises, stale_evidence, "
    "completion_without_evidence",
}

_STRICT = {
    "G0": "enforced: the position moves only by lawful `gate:` lines; a language slip "
    "resets it here",
    "G1": "enforced: G2 needs every claim in G, or the rest parked in open_questions",
    "G2": "enforced: G3 needs a falsifier and a declared oracle on every claim (the refusal "
    "names each claim that lacks one)",
    "G3": "enforced: G4 needs premises_for_plan naming declared claims",
    "G4": "enforced: G6 needs an operator's approval; nothing mutates in the approving turn",
    "G5": "enforced: back to G2 only when open_questions shrank (loop budget)",
    "G6": "enforced: G7 needs every premise in G",
    "G7": "enforced: the only gate where modify and destructive calls run (gate_position "
    "elsewhere)",
    "G8": "enforced: G9 needs fresh PASS stamps; a failure loops back within the loop budget",
    "G9": "enforced: finishing only from here, under the finish rules",
}

_OBSERVE = {gate: _OBSERVED for gate in _LEDGER}
_OBSERVE["G9"] = "enforced at the finish: the finish rules are not a dry run"

ENFORCEMENT: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        Profile.LEDGER: MappingProxyType(_LEDGER),
        Profile.STRICT: MappingProxyType(_STRICT),
        Profile.OBSERVE: MappingProxyType(_OBSERVE),
    }
)
"""profile → gate → what that profile enforces at that gate (verify has no row:
:func:`enforced_at` gives "")."""


def enforced_at(profile: str, gate: str) -> str:
    """The row for ``gate`` in ``profile``; "" for a terminal or an unknown profile."""
    return ENFORCEMENT.get(profile, {}).get(gate, "")
