"""Structural rules every gate graph must keep.

Each check is a function ``(graph) -> list[GraphIssue]`` that reports only its
own code. :data:`CHECKS` maps each code to its check, in the order they run;
:func:`validate_graph` runs them all and :func:`check_graph` raises
:class:`~infomark.kernel.errors.GraphError` listing every issue at once.

``exit_after_mutation`` spares the honest stop (a terminal edge to BLOCKED guarded by
``blocked``), which ``blocked_unreachable`` requires from every gate that is not a dead end.

Checks that need a valid spine (``forward_not_spine``, ``exit_after_mutation``
and the on-the-spine half of ``mutation_gate``) stay silent while
``spine_invalid`` reports: fix the spine first. Likewise
``exit_after_mutation`` waits for a mutating gate on the spine.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from infomark.kernel.errors import GraphError
from infomark.kernel.graph import GUARDS, EdgeKind, GateGraph

__all__ = [
    "CHECKS",
    "Check",
    "GraphIssue",
    "check_graph",
    "validate_graph",
]

# The honest stop: reachable in one move from every gate, even after mutation began.
BLOCKED = "BLOCKED"

# The concern loop: AUTHORIZE opens it sideways, CONCERN_LOOP returns to DECOMPOSE.
_CONCERN_SIDE = ("G4", "G5")
_CONCERN_BACK = ("G5", "G2")


@dataclass(frozen=True, slots=True)
class GraphIssue:
    """One broken rule: a stable ``code`` and a message saying where and how to fix it."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


Check = Callable[[GateGraph], list[GraphIssue]]


def _duplicates(items: tuple[str, ...]) -> list[str]:
    seen: set[str] = set()
    repeated: list[str] = []
    for item in items:
        if item in seen and item not in repeated:
            repeated.append(item)
        seen.add(item)
    return repeated


def _spine_ok(graph: GateGraph) -> bool:
    return not _check_spine(graph)


def _forward_pairs_of_spine(graph: GateGraph) -> set[tuple[str, str]]:
    return set(itertools.pairwise(graph.spine))


def _successors(graph: GateGraph) -> dict[str, set[str]]:
    nodes = set(graph.nodes)
    out: dict[str, set[str]] = {n: set() for n in nodes}
    for e in graph.edges:
        if e.src in nodes and e.dst in nodes:
            out[e.src].add(e.dst)
    return out


def _reachable(successors: dict[str, set[str]], start: str) -> set[str]:
    seen = {start}
    stack = [start]
    while stack:
        for nxt in successors.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


# -- the checks ---------------------------------------------------------------


def _check_duplicate_node(graph: GateGraph) -> list[GraphIssue]:
    return [
        GraphIssue(
            "duplicate_node",
            f"node {name!r} is declared more than once (gates and terminals share one "
            "namespace); give each node a unique name",
        )
        for name in _duplicates(graph.nodes)
    ]


def _check_unknown_endpoint(graph: GateGraph) -> list[GraphIssue]:
    nodes = set(graph.nodes)
    issues: list[GraphIssue] = []
    for e in graph.edges:
        for end, name in (("source", e.src), ("destination", e.dst)):
            if name not in nodes:
                issues.append(
                    GraphIssue(
                        "unknown_endpoint",
                        f"edge {e.src}→{e.dst} ({e.kind.value}): {end} {name!r} is not a "
                        "declared gate or terminal; declare it or fix the edge",
                    )
                )
    return issues


def _check_spine(graph: GateGraph) -> list[GraphIssue]:
    if not graph.spine:
        return [GraphIssue("spine_invalid", "the spine is empty; list the forward path of gates")]
    gate_ids = set(graph.gate_ids)
    issues = [
        GraphIssue(
            "spine_invalid",
            f"spine member {name!r} is not a gate; the spine runs through gates only",
        )
        for name in dict.fromkeys(graph.spine)
        if name not in gate_ids
    ]
    issues.extend(
        GraphIssue("spine_invalid", f"gate {name!r} appears on the spine more than once")
        for name in _duplicates(graph.spine)
    )
    return issues


def _check_terminal_kind(graph: GateGraph) -> list[GraphIssue]:
    terminals = set(graph.terminals)
    gate_ids = set(graph.gate_ids)
    issues: list[GraphIssue] = []
    for e in graph.edges:
        if e.dst in terminals and e.kind is not EdgeKind.TERMINAL:
            issues.append(
                GraphIssue(
                    "terminal_kind_mismatch",
                    f"edge {e.src}→{e.dst} reaches a terminal but has kind {e.kind.value!r}; "
                    "only terminal edges reach terminals",
                )
            )
        elif e.dst in gate_ids and e.kind is EdgeKind.TERMINAL:
            issues.append(
                GraphIssue(
                    "terminal_kind_mismatch",
                    f"edge {e.src}→{e.dst} has kind 'terminal' but {e.dst} is a gate; "
                    "use forward, side or back",
                )
            )
    return issues


def _check_edge_from_terminal(graph: GateGraph) -> list[GraphIssue]:
    terminals = set(graph.terminals)
    return [
        GraphIssue(
            "edge_from_terminal",
            f"edge {e.src}→{e.dst} leaves terminal {e.src}; a terminal ends the session",
        )
        for e in graph.edges
        if e.src in terminals
    ]


def _check_mutation_gate(graph: GateGraph) -> list[GraphIssue]:
    mutating = [g.id for g in graph.gates if g.mutates]
    if len(mutating) != 1:
        found = ", ".join(mutating) or "none"
        return [
            GraphIssue(
                "mutation_gate",
                f"exactly one gate must have mutates=True; found {len(mutating)} ({found})",
            )
        ]
    if _spine_ok(graph) and mutating[0] not in graph.spine:
        return [
            GraphIssue(
                "mutation_gate",
                f"mutating gate {mutating[0]} is not on the spine; mutation must be a spine step",
            )
        ]
    return []


def _check_exit_after_mutation(graph: GateGraph) -> list[GraphIssue]:
    if not _spine_ok(graph):
        return []
    mutating = {g.id for g in graph.gates if g.mutates}
    first = next((i for i, gid in enumerate(graph.spine) if gid in mutating), None)
    if first is None:
        return []
    guarded = set(graph.spine[first:-1])  # from mutation up to, not including, the last gate
    last = graph.spine[-1]
    return [
        GraphIssue(
            "exit_after_mutation",
            f"terminal edge {e.src}→{e.dst} leaves after mutation began; "
            f"only {last} may exit once {graph.spine[first]} has run",
        )
        for e in graph.edges
        if e.kind is EdgeKind.TERMINAL
        and e.src in guarded
        and not (e.dst == BLOCKED and e.guard == "blocked")
    ]


def _check_blocked_reachable(graph: GateGraph) -> list[GraphIssue]:
    if BLOCKED not in graph.terminals:
        return [
            GraphIssue(
                "blocked_unreachable",
                f"the graph has no {BLOCKED} terminal; an agent must always be able to stop "
                "honestly",
            )
        ]
    has = {e.src for e in graph.edges if e.dst == BLOCKED and e.kind is EdgeKind.TERMINAL}
    successors = _successors(graph)
    terminals = set(graph.terminals)
    return [
        GraphIssue(
            "blocked_unreachable",
            f"gate {gid} has no terminal edge to {BLOCKED}; add one (guard `blocked`)",
        )
        for gid in dict.fromkeys(graph.gate_ids)
        if gid not in has
        and gid in successors
        and _reachable(successors, gid) & terminals  # a dead end is dead_end's to report
    ]


def _check_forward_not_spine(graph: GateGraph) -> list[GraphIssue]:
    if not _spine_ok(graph):
        return []
    spine_pairs = _forward_pairs_of_spine(graph)
    forward_pairs = {(e.src, e.dst) for e in graph.edges if e.kind is EdgeKind.FORWARD}
    issues = [
        GraphIssue(
            "forward_not_spine",
            f"forward edge {src}→{dst} is not a spine step; use a side or back edge",
        )
        for src, dst in sorted(forward_pairs - spine_pairs)
    ]
    issues.extend(
        GraphIssue(
            "forward_not_spine",
            f"spine step {src}→{dst} has no forward edge; add one with its guard",
        )
        for src, dst in sorted(spine_pairs - forward_pairs)
    )
    return issues


def _check_concern_loop(graph: GateGraph) -> list[GraphIssue]:
    issues: list[GraphIssue] = []
    for (src, dst), kind in ((_CONCERN_SIDE, EdgeKind.SIDE), (_CONCERN_BACK, EdgeKind.BACK)):
        if not any(e.src == src and e.dst == dst and e.kind is kind for e in graph.edges):
            issues.append(
                GraphIssue(
                    "concern_loop_missing",
                    f"the concern loop needs a {kind.value} edge {src}→{dst}",
                )
            )
    return issues


def _check_unknown_guard(graph: GateGraph) -> list[GraphIssue]:
    return [
        GraphIssue(
            "unknown_guard",
            f"edge {e.src}→{e.dst} has guard {e.guard!r}, which is not in GUARDS; "
            "use a declared guard name",
        )
        for e in graph.edges
        if e.guard not in GUARDS
    ]


def _check_duplicate_edge(graph: GateGraph) -> list[GraphIssue]:
    keys = tuple(f"{e.src}→{e.dst} if {e.guard}" for e in graph.edges)
    return [
        GraphIssue(
            "duplicate_edge",
            f"edge {key} is declared more than once; keep one",
        )
        for key in _duplicates(keys)
    ]


def _check_dead_end(graph: GateGraph) -> list[GraphIssue]:
    successors = _successors(graph)
    terminals = set(graph.terminals)
    issues: list[GraphIssue] = []
    for gid in dict.fromkeys(graph.gate_ids):
        if gid in terminals:
            continue
        if not successors[gid]:
            issues.append(
                GraphIssue("dead_end", f"gate {gid} has no way out; give it an outgoing edge")
            )
        elif not _reachable(successors, gid) & terminals:
            issues.append(GraphIssue("dead_end", f"no terminal can be reached from gate {gid}"))
    return issues


def _check_unreachable(graph: GateGraph) -> list[GraphIssue]:
    entry = graph.spine[0] if graph.spine else (graph.gate_ids[0] if graph.gates else None)
    if entry is None:
        return []
    reached = _reachable(_successors(graph), entry)
    return [
        GraphIssue("unreachable", f"node {node} cannot be reached from the entry gate {entry}")
        for node in dict.fromkeys(graph.nodes)
        if node not in reached
    ]


CHECKS: Mapping[str, Check] = MappingProxyType(
    {
        "duplicate_node": _check_duplicate_node,
        "unknown_endpoint": _check_unknown_endpoint,
        "spine_invalid": _check_spine,
        "terminal_kind_mismatch": _check_terminal_kind,
        "edge_from_terminal": _check_edge_from_terminal,
        "mutation_gate": _check_mutation_gate,
        "exit_after_mutation": _check_exit_after_mutation,
        "blocked_unreachable": _check_blocked_reachable,
        "forward_not_spine": _check_forward_not_spine,
        "concern_loop_missing": _check_concern_loop,
        "unknown_guard": _check_unknown_guard,
        "duplicate_edge": _check_duplicate_edge,
        "dead_end": _check_dead_end,
        "unreachable": _check_unreachable,
    }
)
"""Issue code → the check that reports it, in the order :func:`validate_graph` runs them."""


def validate_graph(graph: GateGraph) -> list[GraphIssue]:
    """Every rule ``graph`` breaks; an empty list means the graph is lawful."""
    issues: list[GraphIssue] = []
    for check in CHECKS.values():
        issues.extend(check(graph))
    return issues


def check_graph(graph: GateGraph) -> None:
    """Raise :class:`GraphError` listing every issue, or return when the graph is lawful."""
    issues = validate_graph(graph)
    if issues:
        listing = "\n".join(f"  - {issue}" for issue in issues)
        raise GraphError(f"the gate graph breaks {len(issues)} kernel rule(s):\n{listing}")
