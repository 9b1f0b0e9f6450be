"""The gate graph as data, its accessors, and the validator's kernel rules."""

from __future__ import annotations

import dataclasses
import json
import pkgutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from types import MappingProxyType

import pytest
from hypothesis import given
from hypothesis import strategies as st

import infomark.kernel
from infomark.kernel.errors import GraphError, UserError
from infomark.kernel.graph import (
    DEFAULT_GRAPH,
    GUARDS,
    TERMINALS,
    Edge,
    EdgeKind,
    Gate,
    GateGraph,
    parse_gate,
    render_graph_text,
)
from infomark.kernel.validate import CHECKS, GraphIssue, check_graph, validate_graph

assert validate_graph(DEFAULT_GRAPH) == [], validate_graph(DEFAULT_GRAPH)

G = DEFAULT_GRAPH

SPEC_GATES = [
    ("G0", "UNDERSTAND"),
    ("G1", "GROUND"),
    ("G2", "DECOMPOSE"),
    ("G3", "MASTER_PLAN"),
    ("G4", "AUTHORIZE"),
    ("G5", "CONCERN_LOOP"),
    ("G6", "GROUND_PLAN"),
    ("G7", "IMPLEMENT"),
    ("G8", "ORACLE"),
    ("G9", "CLEAN_STATE"),
]

SPEC_EDGES = [
    ("G0", "G1", "forward", "has_ledger"),
    ("G1", "G2", "forward", "grounded"),
    ("G1", "G2", "forward", "not_groundable_at_scale"),
    ("G2", "G3", "forward", "falsifiable"),
    ("G3", "G4", "forward", "has_premises"),
    ("G4", "G6", "forward", "approved"),
    ("G6", "G7", "forward", "premises_grounded"),
    ("G7", "G8", "forward", "modified"),
    ("G8", "G9", "forward", "oracle_pass_stamped"),
    ("G8", "G9", "forward", "loop_budget_exhausted"),
    ("G4", "G5", "side", "always"),
    ("G2", "G1", "back", "always"),
    ("G5", "G2", "back", "open_questions_reduced"),
    ("G8", "G6", "back", "oracle_failed"),
    ("G8", "G2", "back", "oracle_failed"),
    ("G8", "G1", "back", "premise_revoked"),
    ("G9", "G1", "back", "premise_revoked"),
    ("G9", "G2", "back", "always"),
    ("G0", "WAITING_APPROVAL", "terminal", "needs_approval"),
    ("G1", "BLOCKED", "terminal", "blocked"),
    ("G4", "WAITING_APPROVAL", "terminal", "needs_approval"),
    ("G4", "BLOCKED", "terminal", "blocked"),
    ("G6", "WAITING_APPROVAL", "terminal", "needs_approval"),
    ("G9", "SUCCESS", "terminal", "closure_success"),
    ("G9", "BLOCKED", "terminal", "blocked"),
    ("G9", "WAITING_APPROVAL", "terminal", "needs_approval"),
    ("G9", "OUT_OF_SCOPE", "terminal", "out_of_scope"),
    ("G0", "BLOCKED", "terminal", "blocked"),
    ("G2", "BLOCKED", "terminal", "blocked"),
    ("G3", "BLOCKED", "terminal", "blocked"),
    ("G5", "BLOCKED", "terminal", "blocked"),
    ("G6", "BLOCKED", "terminal", "blocked"),
    ("G7", "BLOCKED", "terminal", "blocked"),
    ("G8", "BLOCKED", "terminal", "blocked"),
]

SPEC_GUARDS = {
    "always",
    "has_ledger",
    "falsifiable",
    "grounded",
    "not_groundable_at_scale",
    "has_premises",
    "approved",
    "premises_grounded",
    "modified",
    "oracle_pass_stamped",
    "oracle_failed",
    "loop_budget_exhausted",
    "premise_revoked",
    "open_questions_reduced",
    "closure_success",
    "blocked",
    "needs_approval",
    "out_of_scope",
}


def codes(graph: GateGraph) -> set[str]:
    return {issue.code for issue in validate_graph(graph)}


# -- the data matches the spec -------------------------------------------------


def test_gates_terminals_and_spine() -> None:
    assert [(g.id, g.name) for g in G.gates] == SPEC_GATES
    assert G.terminals == TERMINALS == ("SUCCESS", "BLOCKED", "OUT_OF_SCOPE", "WAITING_APPROVAL")
    assert G.spine == ("G0", "G1", "G2", "G3", "G4", "G6", "G7", "G8", "G9")
    assert "G5" not in G.spine
    assert [g.id for g in G.gates if g.mutates] == ["G7"]
    assert all(g.allows and "\n" not in g.allows for g in G.gates)


def test_edges_are_exactly_the_spec() -> None:
    actual = Counter((e.src, e.dst, e.kind.value, e.guard) for e in G.edges)
    assert actual == Counter(SPEC_EDGES)
    assert all(e.condition.strip() for e in G.edges)


def test_guards_are_exactly_the_vocabulary_and_read_only() -> None:
    assert isinstance(GUARDS, MappingProxyType)
    assert set(GUARDS) == SPEC_GUARDS
    assert all(meaning.strip() and "\n" not in meaning for meaning in GUARDS.values())
    assert {e.guard for e in G.edges} == SPEC_GUARDS  # every guard is in use
    with pytest.raises(TypeError):
        GUARDS["new_guard"] = "nope"  # type: ignore[index]


def test_values_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        G.gates[0].mutates = True  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        G.edges[0].guard = "always"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        G.spine = ()  # type: ignore[misc]


def test_edge_kind_is_coerced_and_checked() -> None:
    edge = Edge("G0", "G1", "back", "always", "x")  # type: ignore[arg-type]
    assert edge.kind is EdgeKind.BACK
    with pytest.raises(GraphError, match="unknown kind 'sideways'"):
        Edge("G0", "G1", "sideways", "always", "x")  # type: ignore[arg-type]


def test_graph_equality_and_hash_ignore_lookup_caches() -> None:
    copy = dataclasses.replace(G, edges=list(G.edges))  # type: ignore[arg-type]
    assert copy.edges == G.edges  # lists are turned into tuples
    G.allowed_moves("G8")  # fills caches on one side only
    assert copy == G
    assert hash(copy) == hash(G)


# -- accessors -----------------------------------------------------------------


def test_nodes_and_gate_lookup() -> None:
    assert G.gate_ids == tuple(gid for gid, _ in SPEC_GATES)
    assert G.nodes == (*G.gate_ids, *TERMINALS)
    assert G.gate("G4").name == "AUTHORIZE"
    assert G.gate("G7").mutates


@pytest.mark.parametrize("name", ["g4", "AUTHORIZE", "G10", "", "SUCCESS"])
def test_gate_rejects_non_canonical_names(name: str) -> None:
    with pytest.raises(UserError):
        G.gate(name)


@pytest.mark.parametrize("name", ["g4", "AUTHORIZE", "G4 AUTHORIZE", "success", "G10"])
def test_edge_accessors_reject_non_canonical_names(name: str) -> None:
    with pytest.raises(UserError, match="parse_gate"):
        G.edges_from(name)
    with pytest.raises(UserError):
        G.edge(name, "G1")
    with pytest.raises(UserError):
        G.edge("G0", name)
    with pytest.raises(UserError):
        G.allowed_moves(name)


def test_terminals_are_accepted_and_have_no_way_out() -> None:
    for t in TERMINALS:
        assert G.is_terminal(t)
        assert G.edges_from(t) == ()
        assert G.allowed_moves(t) == ()
        assert G.edge(t, "G0") == ()
        assert G.routes_out(t) == 0
    assert not G.is_terminal("G9")
    assert not G.is_terminal("success")


def test_edges_from_keeps_declaration_order() -> None:
    assert G.edges_from("G8") == tuple(e for e in G.edges if e.src == "G8")
    assert [e.guard for e in G.edge("G1", "G2")] == ["grounded", "not_groundable_at_scale"]
    assert [e.dst for e in G.edge("G9", "SUCCESS")] == ["SUCCESS"]
    assert G.edge("G3", "G9") == ()


def test_allowed_moves_are_distinct_in_edge_order() -> None:
    assert G.allowed_moves("G8") == ("G9", "G6", "G2", "G1", "BLOCKED")
    assert G.allowed_moves("G4") == ("G6", "G5", "WAITING_APPROVAL", "BLOCKED")
    assert G.allowed_moves("G9") == (
        "G1",
        "G2",
        "SUCCESS",
        "BLOCKED",
        "WAITING_APPROVAL",
        "OUT_OF_SCOPE",
    )


@pytest.mark.parametrize(
    ("gate", "routes"),
    [
        ("G0", 3),
        ("G1", 2),
        ("G2", 3),
        ("G3", 2),
        ("G4", 4),
        ("G5", 2),
        ("G6", 3),
        ("G7", 2),
        ("G8", 5),
        ("G9", 6),
    ],
)
def test_routes_out(gate: str, routes: int) -> None:
    assert G.routes_out(gate) == routes
    assert routes == len({e.dst for e in G.edges if e.src == gate})


# -- parse_gate ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("G4", "G4"),
        ("g4", "G4"),
        ("AUTHORIZE", "G4"),
        ("authorize", "G4"),
        ("G4 AUTHORIZE", "G4"),
        ("g4-authorize", "G4"),
        ("  `G4: Authorize`  ", "G4"),
        ("master plan", "G3"),
        ("G5 concern-loop", "G5"),
        ("out of scope", "OUT_OF_SCOPE"),
        ("Waiting-Approval", "WAITING_APPROVAL"),
        ("success", "SUCCESS"),
    ],
)
def test_parse_gate_examples(word: str, expected: str) -> None:
    assert parse_gate(word) == expected
    assert G.parse_gate(word) == expected


@pytest.mark.parametrize(
    "word", ["", "G", "G10", "G-4", "G44", "G4 UNDERSTAND", "authorise", "succeeded", "gate G4"]
)
def test_parse_gate_rejects_non_names(word: str) -> None:
    assert parse_gate(word) is None


def _spellings(node: str) -> list[list[str]]:
    """The word sequences that name ``node``: id, name, id + name; or a terminal."""
    if G.is_terminal(node):
        return [node.split("_")]
    gate = G.gate(node)
    name = gate.name.split("_")
    return [[gate.id], name, [gate.id, *name]]


@given(node=st.sampled_from(G.nodes), data=st.data())
def test_parse_gate_round_trips_any_case_and_separator(node: str, data: st.DataObject) -> None:
    words = data.draw(st.sampled_from(_spellings(node)))
    pieces: list[str] = []
    for i, word in enumerate(words):
        if i:
            pieces.append(data.draw(st.sampled_from([" ", "-", "_", "  ", " - ", "\t"])))
        flips = data.draw(st.lists(st.booleans(), min_size=len(word), max_size=len(word)))
        pieces.append(
            "".join(c.upper() if f else c.lower() for c, f in zip(word, flips, strict=True))
        )
    padding = data.draw(st.sampled_from(["", " ", "  "]))
    assert parse_gate(padding + "".join(pieces) + padding) == node


@given(st.text(max_size=40))
def test_parse_gate_is_total(word: str) -> None:
    result = parse_gate(word)
    assert result is None or result in G.nodes


# -- the validator ---------------------------------------------------------------


def _edge(src: str, dst: str, kind: EdgeKind, guard: str = "always") -> Edge:
    return Edge(src=src, dst=dst, kind=kind, guard=guard, condition="test edge")


def _with_edges(*extra: Edge) -> GateGraph:
    return dataclasses.replace(G, edges=(*G.edges, *extra))


def _without(pred: Callable[[Edge], bool], *extra: Edge) -> GateGraph:
    return dataclasses.replace(G, edges=(*(e for e in G.edges if not pred(e)), *extra))


def _rekind(src: str, dst: str, kind: EdgeKind) -> GateGraph:
    edges = tuple(
        dataclasses.replace(e, kind=kind) if (e.src, e.dst) == (src, dst) else e for e in G.edges
    )
    return dataclasses.replace(G, edges=edges)


def _set_mutates(**flags: bool) -> GateGraph:
    gates = tuple(
        dataclasses.replace(g, mutates=flags[g.id]) if g.id in flags else g for g in G.gates
    )
    return dataclasses.replace(G, gates=gates)


_EXTRA_GATE = Gate("G10", "EXTRA", "nothing")

BREAKERS: dict[str, list[Callable[[], GateGraph]]] = {
    "duplicate_node": [
        lambda: dataclasses.replace(G, gates=(*G.gates, G.gates[3])),
        lambda: dataclasses.replace(G, terminals=(*G.terminals, "BLOCKED")),
    ],
    "unknown_endpoint": [
        lambda: _with_edges(_edge("G3", "G42", EdgeKind.SIDE)),
        lambda: _with_edges(_edge("NOWHERE", "G3", EdgeKind.BACK)),
    ],
    "spine_invalid": [
        lambda: dataclasses.replace(G, spine=(*G.spine, "G2")),
        lambda: dataclasses.replace(G, spine=()),
        lambda: dataclasses.replace(G, spine=(*G.spine, "SUCCESS")),
    ],
    "terminal_kind_mismatch": [
        lambda: _rekind("G9", "SUCCESS", EdgeKind.BACK),
        lambda: _with_edges(_edge("G5", "G1", EdgeKind.TERMINAL)),
    ],
    "edge_from_terminal": [
        lambda: _with_edges(_edge("SUCCESS", "G0", EdgeKind.BACK)),
    ],
    "mutation_gate": [
        lambda: _set_mutates(G7=False),
        lambda: _set_mutates(G7=False, G5=True),
        lambda: _set_mutates(G9=True),
    ],
    "exit_after_mutation": [
        lambda: _with_edges(_edge("G7", "BLOCKED", EdgeKind.TERMINAL, "always")),
        lambda: _with_edges(_edge("G8", "SUCCESS", EdgeKind.TERMINAL, "closure_success")),
    ],
    "blocked_unreachable": [
        lambda: _without(lambda e: (e.src, e.dst) == ("G7", "BLOCKED")),
        lambda: _without(lambda e: e.dst == "BLOCKED" and e.src in ("G0", "G8")),
    ],
    "forward_not_spine": [
        lambda: _with_edges(_edge("G5", "G6", EdgeKind.FORWARD)),
        lambda: _rekind("G2", "G1", EdgeKind.FORWARD),
    ],
    "concern_loop_missing": [
        lambda: _rekind("G4", "G5", EdgeKind.BACK),
        lambda: _without(
            lambda e: (e.src, e.dst) == ("G5", "G2"),
            _edge("G5", "G1", EdgeKind.BACK, "open_questions_reduced"),
        ),
    ],
    "unknown_guard": [
        lambda: _without(
            lambda e: (e.src, e.dst) == ("G0", "G1"),
            _edge("G0", "G1", EdgeKind.FORWARD, "has_ledgr"),
        ),
    ],
    "duplicate_edge": [
        lambda: _with_edges(G.edges[5]),
        lambda: _with_edges(dataclasses.replace(G.edges[-1], condition="same edge, other prose")),
    ],
    "dead_end": [
        lambda: dataclasses.replace(
            _with_edges(_edge("G9", "G10", EdgeKind.SIDE)), gates=(*G.gates, _EXTRA_GATE)
        ),
        lambda: dataclasses.replace(
            _with_edges(_edge("G9", "G10", EdgeKind.SIDE), _edge("G10", "G10", EdgeKind.BACK)),
            gates=(*G.gates, _EXTRA_GATE),
        ),
    ],
    "unreachable": [
        lambda: dataclasses.replace(G, terminals=(*G.terminals, "ABANDONED")),
        lambda: dataclasses.replace(
            _with_edges(_edge("G10", "BLOCKED", EdgeKind.TERMINAL, "blocked")),
            gates=(*G.gates, _EXTRA_GATE),
        ),
    ],
}

BREAKER_CASES = [
    pytest.param(code, make, id=f"{code}-{i}")
    for code, makers in BREAKERS.items()
    for i, make in enumerate(makers)
]


@pytest.mark.parametrize(("code", "make"), BREAKER_CASES)
def test_each_broken_rule_is_reported_alone(code: str, make: Callable[[], GateGraph]) -> None:
    broken = make()
    issues = validate_graph(broken)
    assert {issue.code for issue in issues} == {code}, issues
    assert issues == CHECKS[code](broken)
    assert all(issue.message for issue in issues)
    with pytest.raises(GraphError, match=code):
        check_graph(broken)


def test_every_check_has_a_breaking_graph() -> None:
    assert set(BREAKERS) == set(CHECKS)
    assert all(BREAKERS.values())


def test_default_graph_passes_every_check() -> None:
    for check in CHECKS.values():
        assert check(G) == []
    check_graph(G)


def test_check_graph_lists_every_issue() -> None:
    broken = dataclasses.replace(
        _with_edges(_edge("G7", "BLOCKED", EdgeKind.TERMINAL, "always"), G.edges[0]),
        terminals=(*G.terminals, "ABANDONED"),
    )
    with pytest.raises(GraphError) as info:
        check_graph(broken)
    message = str(info.value)
    assert info.value.code == "graph_invalid"
    for code in ("exit_after_mutation", "duplicate_edge", "unreachable"):
        assert code in message
    assert "3 kernel rule" in message


def test_graph_issue_str() -> None:
    assert (
        str(GraphIssue("dead_end", "gate G10 has no way out"))
        == "dead_end: gate G10 has no way out"
    )


@given(
    src=st.sampled_from(["G7", "G8"]),
    dst=st.sampled_from(TERMINALS),
    guard=st.sampled_from(sorted(GUARDS)),
    at=st.integers(min_value=0, max_value=len(G.edges)),
)
def test_any_terminal_edge_after_mutation_is_rejected(
    src: str, dst: str, guard: str, at: int
) -> None:
    edges = list(G.edges)
    edges.insert(at, _edge(src, dst, EdgeKind.TERMINAL, guard))
    found = codes(dataclasses.replace(G, edges=tuple(edges)))
    if (dst, guard) == ("BLOCKED", "blocked"):  # the honest stop, lawful from every gate
        assert "exit_after_mutation" not in found and "duplicate_edge" in found
    else:
        assert "exit_after_mutation" in found


@given(step=st.integers(min_value=0, max_value=len(G.spine) - 2))
def test_removing_a_spine_step_is_rejected(step: int) -> None:
    pair = (G.spine[step], G.spine[step + 1])
    broken = _without(lambda e: e.kind is EdgeKind.FORWARD and (e.src, e.dst) == pair)
    assert "forward_not_spine" in codes(broken)


_NAMES = st.sampled_from([*G.nodes, "G42", "NOWHERE"])


@given(
    edges=st.lists(
        st.builds(
            _edge,
            _NAMES,
            _NAMES,
            st.sampled_from(list(EdgeKind)),
            st.sampled_from([*sorted(GUARDS), "made_up"]),
        ),
        max_size=30,
    ),
    spine=st.lists(_NAMES, max_size=12),
)
def test_validator_never_crashes_on_arbitrary_graphs(edges: list[Edge], spine: list[str]) -> None:
    graph = dataclasses.replace(G, edges=tuple(edges), spine=tuple(spine))
    issues = validate_graph(graph)
    assert all(issue.code in CHECKS for issue in issues)
    if issues:
        with pytest.raises(GraphError):
            check_graph(graph)
    else:
        check_graph(graph)


# -- rendering -------------------------------------------------------------------


def test_render_graph_text_lists_every_edge_under_its_gate() -> None:
    text = render_graph_text(G)
    assert text == render_graph_text(G)
    assert text.startswith("spine: G0 → G1 → G2 → G3 → G4 → G6 → G7 → G8 → G9\n")
    sections = {block.split(" ", 1)[0]: block for block in text.split("\n\n")[1:] if block.strip()}
    assert list(sections) == list(G.gate_ids)
    for e in G.edges:
        assert f"→ {e.dst}  if {e.guard}: {e.condition}" in sections[e.src]
    assert "[mutates]" in sections["G7"]
    assert sum(section.count("[mutates]") for section in sections.values()) == 1


# -- import hygiene --------------------------------------------------------------

_PROBE = """
import importlib, json, sys
before = set(sys.modules)
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def _foreign(modules: list[str]) -> list[str]:
    """Modules that are neither standard library nor ``infomark`` / ``infomark.kernel``.

    The package root and its version module (which imports nothing) load with any submodule.
    """
    return [
        name
        for name in modules
        if name.split(".")[0] not in sys.stdlib_module_names
        and name not in ("infomark", "infomark._version")
        and name != "infomark.kernel"
        and not name.startswith("infomark.kernel.")
    ]


def test_foreign_module_filter() -> None:
    sample = [
        "json",
        "_io",
        "infomark",
        "infomark.kernel.graph",
        "lark",
        "infomark.ledger.parse.parser",
    ]
    assert _foreign(sample) == ["lark", "infomark.ledger.parse.parser"]


def test_kernel_imports_only_the_standard_library(tmp_path: object) -> None:
    kernel = sorted(
        f"infomark.kernel.{info.name}" for info in pkgutil.iter_modules(infomark.kernel.__path__)
    )
    assert {"infomark.kernel.graph", "infomark.kernel.validate", "infomark.kernel.protocol"} <= set(
        kernel
    )
    result = subprocess.run(
        [sys.executable, "-I", "-c", _PROBE, *kernel],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(tmp_path),
        timeout=60,
    )
    loaded = json.loads(result.stdout)
    assert set(kernel) <= set(loaded)  # the probe really imported them
    assert _foreign(loaded) == []
