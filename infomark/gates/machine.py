"""The G0–G9 gate machine: guards evaluated on session state, checked transitions.

The graph is kernel data; this module gives each guard name its predicate and
decides whether a requested move is lawful. In the ``ledger`` profile the
position is also derived from runtime evidence (auto-tracking).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from infomark.gates.config import Config
from infomark.gates.finalize import finish_problems
from infomark.gates.position import derived_position
from infomark.kernel.graph import DEFAULT_GRAPH, GUARDS, EdgeKind, GateGraph
from infomark.kernel.records import dataclass
from infomark.ledger.state import SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["GUARD_PREDICATES", "Move", "derived_position", "loop_budget", "plan_move"]

Guard = Callable[[SessionState, Config], bool]


def _has_ledger(s: SessionState, c: Config) -> bool:
    return s.has_ledger and bool(s.claims)


def _lacking_checks(s: SessionState) -> list[str]:
    """``C1 (no oracle)``, ``C2 (no falsifier, no oracle)``: claims the G2→G3 move lacks."""
    out: list[str] = []
    for cl in s.claims.values():
        missing = [
            f"no {what}"
            for what, value in (("falsifier", cl.falsifier), ("oracle", cl.oracle))
            if not (value or "").strip()
        ]
        if cl.oracle and cl.oracle_refused:
            missing.append(f"oracle refused: {cl.oracle_refused}")
        if missing:
            out.append(f"{cl.id} ({', '.join(missing)})")
    return out


def _falsifiable(s: SessionState, c: Config) -> bool:
    """Seed 002, G2 DECOMPOSE: every claim has a falsifier *and* a declared oracle."""
    return _has_ledger(s, c) and not _lacking_checks(s)


def _grounded(s: SessionState, c: Config) -> bool:
    return _has_ledger(s, c) and all(cl.grounded for cl in s.claims.values())


def _not_groundable(s: SessionState, c: Config) -> bool:
    return _has_ledger(s, c) and all(
        cl.grounded or cl.id in s.open_questions for cl in s.claims.values()
    )


def _has_premises(s: SessionState, c: Config) -> bool:
    return bool(s.premises) and all(p in s.claims for p in s.premises)


def _approved(s: SessionState, c: Config) -> bool:
    return not c.profile.walks_graph or s.approved_seq > 0


def _premises_grounded(s: SessionState, c: Config) -> bool:
    return s.has_ledger and s.premises_grounded()


def _modified(s: SessionState, c: Config) -> bool:
    return s.last_modify_seq > s.gate_seq


def _oracle_pass(s: SessionState, c: Config) -> bool:
    # The finish gate's own test: fresh completion claims, nothing stale, failed or tampered.
    # Premises about the starting state are not re-stamped (an honest walk can end).
    _code, problems, _, _ = finish_problems(s, "", c)
    return not problems and s.last_modify_seq > 0


def _oracle_failed(s: SessionState, c: Config) -> bool:
    return s.last_exec_fail_seq > s.last_modify_seq


def _budget_exhausted(s: SessionState, c: Config) -> bool:
    return not _oracle_pass(s, c) and s.gate_budget_used.get(s.gate, 0) >= loop_budget(s.gate, c)


def _premise_revoked(s: SessionState, c: Config) -> bool:
    return s.has_ledger and not s.premises_grounded()


def _open_reduced(s: SessionState, c: Config) -> bool:
    before = s.gate_measure.get(s.gate)
    return before is None or len(s.open_questions) < before[0]


def _closure(s: SessionState, c: Config) -> bool:
    return _premises_grounded(s, c) and _oracle_pass(s, c)


def _declared(s: SessionState, c: Config) -> bool:
    return True  # the agent's own `gate: BLOCKED` line is the declaration


GUARD_PREDICATES: Mapping[str, Guard] = {
    "always": lambda s, c: True,
    "has_ledger": _has_ledger,
    "falsifiable": _falsifiable,
    "grounded": _grounded,
    "not_groundable_at_scale": _not_groundable,
    "has_premises": _has_premises,
    "approved": _approved,
    "premises_grounded": _premises_grounded,
    "modified": _modified,
    "oracle_pass_stamped": _oracle_pass,
    "oracle_failed": _oracle_failed,
    "loop_budget_exhausted": _budget_exhausted,
    "premise_revoked": _premise_revoked,
    "open_questions_reduced": _open_reduced,
    "closure_success": _closure,
    "blocked": _declared,
    "needs_approval": _declared,
    "out_of_scope": _declared,
}
if set(GUARD_PREDICATES) != set(GUARDS):  # pragma: no cover - caught by tests at import
    raise RuntimeError("every kernel guard needs exactly one predicate")


def _lacking_detail(s: SessionState) -> str:
    lacking = _lacking_checks(s)
    return ("; lacking: " + ", ".join(lacking)) if lacking else ""


_GUARD_DETAILS: Mapping[str, Callable[[SessionState], str]] = {"falsifiable": _lacking_detail}
"""Guards whose refusal names what exactly is missing, not only the rule."""


def loop_budget(gate: str, config: Config, graph: GateGraph = DEFAULT_GRAPH) -> int:
    """Back moves a gate may take without progress: configured, else its routes out."""
    if gate in config.loop_budget:
        return int(config.loop_budget[gate])
    return graph.routes_out(gate) if gate in graph.gate_ids else 0


def _measure(s: SessionState) -> list[int]:
    unstamped = sum(1 for c in s.claims.values() if c.stamp is None)
    return [len(s.open_questions), unstamped]


@dataclass(frozen=True, slots=True)
class Move:
    """The outcome of a requested transition: lawful (with its edge) or refused (with why)."""

    ok: bool
    src: str
    dst: str
    reason: str
    kind: str = ""
    guard: str = ""
    burned: int = 0
    measure: tuple[int, ...] | None = None

    def payload(self, by: str) -> dict[str, Any]:
        return {
            "from": self.src,
            "to": self.dst,
            "kind": self.kind,
            "guard": self.guard,
            "by": by,
            "reason": self.reason,
            "burned": self.burned,
            "measure": list(self.measure) if self.measure is not None else None,
        }


def plan_move(
    state: SessionState, target: str, config: Config, graph: GateGraph = DEFAULT_GRAPH
) -> Move:
    """Check a move from the current position to ``target`` against the graph and guards."""
    src = state.gate
    dst = graph.parse_gate(target)
    if dst is None:
        return Move(False, src, target, f"unknown gate {target!r}")
    if dst == src:
        return Move(False, src, dst, f"already at {src}")
    if graph.is_terminal(src):
        return Move(False, src, dst, f"{src} is terminal; start a new task")
    edges = graph.edge(src, dst)
    if not edges:
        moves = ", ".join(graph.allowed_moves(src))
        return Move(False, src, dst, f"no edge {src}→{dst}; from {src} you may move to: {moves}")
    failed: list[str] = []
    for edge in edges:
        if not GUARD_PREDICATES[edge.guard](state, config):
            explain = _GUARD_DETAILS.get(edge.guard)
            detail = explain(state) if explain is not None else ""
            failed.append(f"{edge.guard} ({GUARDS[edge.guard]}{detail})")
            continue
        if edge.kind is not EdgeKind.BACK:
            return Move(True, src, dst, edge.condition, edge.kind.value, edge.guard)
        now = _measure(state)
        before = state.gate_measure.get(src)
        burned = 1 if before is not None and not now < before else 0
        if state.gate_budget_used.get(src, 0) + burned > loop_budget(src, config, graph):
            if src == "G8":
                return Move(
                    True,
                    src,
                    "G9",
                    "loop budget exhausted at G8: routed forward to G9 CLEAN_STATE",
                    kind=EdgeKind.FORWARD.value,
                    guard="loop_budget_exhausted",
                )
            return Move(
                False,
                src,
                dst,
                f"loop budget of {src} exhausted: back moves have not reduced open "
                "questions or unstamped claims",
            )
        return Move(True, src, dst, edge.condition, edge.kind.value, edge.guard, burned, tuple(now))
    return Move(False, src, dst, f"{src}→{dst} refused: guard not met: " + " or ".join(failed))
