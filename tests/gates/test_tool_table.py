"""The kernel's one tool table: the gate, the ledger, the hook, the proxy and the docs agree."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import grounded, ledger_text, observed, run

from infomark.gatekeeper import Gatekeeper
from infomark.gates.classify import SHELL_TOOLS, classify_tool
from infomark.kernel import tools as kernel_tools
from infomark.kernel.tools import (
    INFOMARK_TOOL_NAMES,
    TOOL_TABLE,
    EvidenceClass,
    ToolClass,
    lookup_tool,
    tool_table_markdown,
)
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.evidence import evidence_class_for

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted(TOOL_TABLE.values(), key=lambda s: s.name)


def test_every_listed_name_is_one_row() -> None:
    listed = [n for *_, names in kernel_tools._ROWS for n in names]
    assert len(listed) == len(TOOL_TABLE)  # _build raises on a name listed twice


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.spelling)
def test_the_gate_and_the_ledger_read_the_same_row(spec: kernel_tools.ToolSpec) -> None:
    for name in (spec.spelling, spec.spelling.upper(), f"mcp__srv__{spec.spelling}"):
        assert evidence_class_for(name) is spec.evidence_class, name
        if spec.shell:
            assert classify_tool(name, {"command": "ls"}).tool_class is ToolClass.EXECUTE
            assert classify_tool(name, {"command": "rm -rf build"}).tool_class is (
                ToolClass.DESTRUCTIVE
            )
        elif spec.editor:
            assert classify_tool(name, {"command": "view"}).tool_class is ToolClass.READ
            assert classify_tool(name, {"command": "create"}).tool_class is ToolClass.MODIFY
        else:
            assert classify_tool(name, {}).tool_class is spec.tool_class, name


def test_runs_are_execution_and_reads_observation() -> None:
    for spec in SPECS:
        if spec.shell:
            assert spec.evidence_class is EvidenceClass.EXECUTION
        if spec.tool_class in (ToolClass.READ, ToolClass.SEARCH):
            assert spec.evidence_class is EvidenceClass.OBSERVATION, spec
        if spec.tool_class is ToolClass.WEB:
            assert spec.evidence_class is EvidenceClass.WEB, spec
        if spec.tool_class in (ToolClass.DELEGATION, ToolClass.LEDGER, ToolClass.DESTRUCTIVE):
            assert spec.evidence_class is EvidenceClass.INELIGIBLE, spec


@pytest.mark.parametrize(
    ("name", "tool_input"),
    [
        ("execute", {"command": "rm -rf build"}),
        ("pwsh", {"command": "rm -rf build"}),
        ("shellcommand", {"command": "rm -rf build"}),
        ("run_terminal_cmd", {"command": "rm -rf build"}),
        ("execute_command", {"command": "rm -rf build"}),
        ("run_shell_command", {"command": "rm -rf build"}),
        ("execute_bash", {"command": "rm -rf build"}),
        ("developer__shell", {"command": "rm -rf build"}),
        ("write_to_file", {"path": "a.py"}),
        ("code_interpreter", {"code": "import os"}),
        ("execute_ipython_cell", {"code": "import os"}),
        ("mcp__fs__move_file", {"source": "a", "destination": "b"}),
        ("mcp__git__git_reset", {"repo_path": "."}),
        ("mcp__github__push_files", {}),
        ("mcp__memory__delete_entities", {}),
    ],
)
def test_the_names_the_issue_found_open_now_mutate(name: str, tool_input: dict[str, str]) -> None:
    assert classify_tool(name, tool_input).tool_class.mutates, name


def test_no_other_module_spells_a_tool_name_table() -> None:
    """The 21-name disagreement came from two tables; now only the kernel holds names."""
    for rel in ("infomark/gates/classify.py", "infomark/ledger/evidence.py"):
        tree = ast.parse((ROOT / rel).read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Set | ast.List | ast.Tuple | ast.Dict):
                elts = node.keys if isinstance(node, ast.Dict) else node.elts
                strings = [
                    e for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
                ]
                names = [s.value for s in strings if lookup_tool(str(s.value)) is not None]
                assert len(names) < 3, (rel, names)


def test_the_docs_show_the_table() -> None:
    assert tool_table_markdown() in (ROOT / "docs" / "gates.md").read_text("utf-8")


def test_the_proxy_serves_exactly_the_kernels_own_tool_names() -> None:
    from infomark.tools.mcp_tools import OWN_TOOL_NAMES

    assert OWN_TOOL_NAMES == INFOMARK_TOOL_NAMES
    assert frozenset(k for k, s in TOOL_TABLE.items() if s.shell) == SHELL_TOOLS


@pytest.mark.parametrize(
    "name",
    ["infomark_ledger", "mcp__tools__infomark_stamp", "mcp__evil__infomark_status", "infomarkX"],
)
def test_a_name_starting_with_infomark_is_not_trusted(name: str) -> None:
    assert classify_tool(name, {}).tool_class is ToolClass.UNKNOWN
    assert classify_tool("mcp__infomark__infomark_stamp", {}).tool_class is ToolClass.LEDGER


# -- unknown tools and annotations through the gate ------------------------------------------------


def test_an_unknown_tool_is_denied_while_ungrounded_with_the_fix(gk: Gatekeeper) -> None:
    gk.ingest(ledger_text(("C1", "Guess", None), premises=("C1",)))
    d = gk.authorize(ToolCall("frobnicate", {}))
    assert d.verdict.value == "deny" and d.code == "ungrounded_premises"
    assert "[tools]" in d.reason and "frobnicate" in d.reason
    gk.config = type(gk.config)(**{**_fields(gk), "tools": {"frobnicate": "read"}})
    assert gk.authorize(ToolCall("frobnicate", {})).code == "allowed"


def _fields(gk: Gatekeeper) -> dict[str, object]:
    return {f: getattr(gk.config, f) for f in gk.config.__dataclass_fields__}


def test_an_unknown_tool_is_allowed_once_grounded_and_only_journaled_in_observe(
    gk: Gatekeeper,
) -> None:
    gk.config = type(gk.config)(**{**_fields(gk), "profile": "observe"})
    d = gk.authorize(ToolCall("frobnicate", {}))
    assert d.allowed and d.dryrun and "would deny" in d.reason
    gk.config = type(gk.config)(**{**_fields(gk), "profile": "ledger"})
    grounded(gk)
    assert gk.authorize(ToolCall("frobnicate", {})).code == "grounded"


def test_destructive_hint_holds_a_call_whose_name_says_modify(gk: Gatekeeper) -> None:
    grounded(gk)
    call = ToolCall("write_file", {"path": "x"}, annotations={"destructiveHint": True})
    d = gk.authorize(call)
    assert d.verdict.value == "ask" and d.tool_class == "destructive"
    ro = ToolCall("mcp__x__write_file", {"path": "x"}, annotations={"readOnlyHint": True})
    assert gk.authorize(ro).tool_class == "modify"  # the stricter of name and annotation


# -- delegation ------------------------------------------------------------------------------------


def test_a_sub_agents_answer_backs_a_divergence_never_a_stamp(gk: Gatekeeper) -> None:
    oracle = "pytest -q"
    gk.ingest(ledger_text(("C1", "Hypothetical", oracle), premises=("C1",)))
    task = observed(gk, ToolCall("Task", {"prompt": "run the tests"}), ToolOutcome("all pass"))
    for kind in ("oracle_stamp", "inference_stamp"):
        report = gk.ingest(f"{kind}: claim_id=C1 evidence_ref={task.ref} result=PASS")
        rejected = [r["reason"] for r in report.stamps_rejected]
        assert rejected == ["delegated_evidence"], report.stamps_rejected
    ev = run(gk, oracle)
    gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ev.ref} result=PASS")
    assert gk.ledger().status("C1") == "Exact"
    gk.ingest(f"divergence_event: claim_id=C1 evidence_ref={task.ref}")
    assert gk.ledger().status("C1") == "Unknown"
