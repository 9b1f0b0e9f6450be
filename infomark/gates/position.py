"""Where the runtime's evidence puts a session on the gate graph (the ledger and observe
profiles), and the ``gate_moved`` event when that changes.

Kept apart from :mod:`infomark.gates.machine` (the guarded transitions, which import the
finish rules) because every ingest and every record runs it: a hook process whose call
follows a line of prose imported the machine, the moves and the finish rules for this
alone, ~1.5 ms of imports (``python -X importtime``, ``bench.icount --real``: "Edit after
prose").
"""

from __future__ import annotations

from infomark.kernel.graph import TERMINALS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from infomark.gates.config import Config
    from infomark.ledger.engine import Ledger
    from infomark.ledger.state import SessionState

__all__ = ["derived_position", "track"]


def derived_position(state: SessionState, *, finished: bool = False) -> str:
    """Ledger profile: the position implied by runtime evidence."""
    if finished:
        return "G9"
    if state.gate in TERMINALS:
        return state.gate  # the agent declared BLOCKED (or the like): it stays until a new turn
    if not state.has_ledger:
        return "G1" if state.seq else "G0"
    if not state.premises or not state.premises_grounded():
        return "G3"
    if state.last_modify_seq == 0:
        return "G6"
    if state.last_exec_seq > state.last_modify_seq:
        return "G8"
    return "G7"


def track(ledger: Ledger, config: Config, *, finished: bool = False) -> None:
    """Ledger/observe profiles: move the position to what runtime evidence implies."""
    if config.profile.walks_graph:
        return
    state = ledger.state
    target = derived_position(state, finished=finished)
    if target != state.gate:
        ledger.emit(
            "gate_moved",
            {"from": state.gate, "to": target, "kind": "auto", "by": "runtime", "guard": ""},
        )
