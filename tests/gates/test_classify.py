"""Tool-name classification: defaults, normalisation, MCP names and annotations, overrides."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.gates.classify import (
    SHELL_TOOLS,
    Classification,
    ToolClass,
    classify_tool,
    normalise_tool_name,
)
from infomark.gates.config_model import ToolClassName, validate_config
from infomark.kernel.errors import ConfigError


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Read", ToolClass.READ),
        ("view", ToolClass.READ),
        ("NotebookRead", ToolClass.READ),
        ("read_file", ToolClass.READ),
        ("LS", ToolClass.READ),
        ("Grep", ToolClass.SEARCH),
        ("Glob", ToolClass.SEARCH),
        ("code-search", ToolClass.SEARCH),
        ("codegraph", ToolClass.SEARCH),
        ("rg", ToolClass.SEARCH),
        ("WebFetch", ToolClass.WEB),
        ("web_search", ToolClass.WEB),
        ("browse", ToolClass.WEB),
        ("Write", ToolClass.MODIFY),
        ("Edit", ToolClass.MODIFY),
        ("MultiEdit", ToolClass.MODIFY),
        ("apply_patch", ToolClass.MODIFY),
        ("NotebookEdit", ToolClass.MODIFY),
        ("str_replace_editor", ToolClass.MODIFY),
        ("str_replace_based_edit_tool", ToolClass.MODIFY),
        ("mkdir", ToolClass.MODIFY),
        ("rename", ToolClass.MODIFY),
        ("TodoWrite", ToolClass.LEDGER),
        ("ExitPlanMode", ToolClass.LEDGER),
        # issue 12 §1: a name merely starting with infomark is not trusted (was: ledger)
        ("infomark_ledger", ToolClass.UNKNOWN),
        ("infomark_stamp", ToolClass.UNKNOWN),
        ("InfomarkStatus", ToolClass.UNKNOWN),
        ("Task", ToolClass.DELEGATION),
        ("frobnicate", ToolClass.UNKNOWN),
        ("", ToolClass.UNKNOWN),
    ],
)
def test_defaults_by_name(name: str, expected: ToolClass) -> None:
    result = classify_tool(name, {})
    assert result.tool_class is expected, result
    assert result.reasons


@pytest.mark.parametrize("name", ["Delete", "remove", "RM", "re-move"])
def test_delete_tools_are_destructive_file(name: str) -> None:
    result = classify_tool(name, {"path": "x"})
    assert result == Classification(ToolClass.DESTRUCTIVE, ("file",), result.reasons)


@pytest.mark.parametrize("name", ["Task", "agent", "AGENT", "new_task"])
def test_subagents_are_delegation(name: str) -> None:
    # issue 12 §1 (was: execute with family subagent)
    result = classify_tool(name, {"prompt": "look around"})
    assert result.tool_class is ToolClass.DELEGATION
    assert not result.tool_class.mutates


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("Notebook-Read", "notebookread"),
        ("web_fetch", "webfetch"),
        ("Web.Fetch", "webfetch"),
        ("Run Command", "runcommand"),
        ("mcp__srv__Tool_X", "mcpsrvtoolx"),
    ],
)
def test_normalise(raw: str, normal: str) -> None:
    assert normalise_tool_name(raw) == normal


def test_str_replace_editor_view_reads() -> None:
    view = classify_tool("str_replace_based_edit_tool", {"command": "view", "path": "a.py"})
    edit = classify_tool("str_replace_based_edit_tool", {"command": "str_replace", "path": "a"})
    assert view.tool_class is ToolClass.READ
    assert edit.tool_class is ToolClass.MODIFY


# --- shell tools ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*sorted(SHELL_TOOLS), "Bash", "run_command", "Run-Command"])
def test_shell_tools_classify_their_command(name: str) -> None:
    assert classify_tool(name, {"command": "ls -la"}).tool_class is ToolClass.EXECUTE
    assert classify_tool(name, {"command": "echo hi > f"}).tool_class is ToolClass.MODIFY
    destructive = classify_tool(name, {"command": "git reset --hard"})
    assert destructive.tool_class is ToolClass.DESTRUCTIVE
    assert destructive.families == ("git",)


@pytest.mark.parametrize(
    "tool_input",
    [None, {}, {"cmd": "ls"}, {"command": 3}, {"command": None}, {"command": []}],
)
def test_shell_tool_without_a_command_fails_closed(tool_input: dict[str, object] | None) -> None:
    result = classify_tool("Bash", tool_input)
    assert result.tool_class is ToolClass.MODIFY
    assert any("command" in r and "fail-closed" in r for r in result.reasons)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["ls", "-la"], ToolClass.EXECUTE),
        (["rm", "-rf", "build"], ToolClass.DESTRUCTIVE),
        (["sed", "-i", "s/a/b/", "f.py"], ToolClass.MODIFY),
        (["echo", "rm -rf /"], ToolClass.EXECUTE),  # one argv word: quoted text, not code
    ],
)
def test_argv_form_commands_are_classified_as_their_shell_line(
    argv: list[str], expected: ToolClass
) -> None:
    assert classify_tool("shell", {"command": argv}).tool_class is expected


# --- MCP -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "expected", "families"),
    [
        ({"readOnlyHint": True}, ToolClass.READ, ()),
        ({"read_only_hint": True}, ToolClass.READ, ()),
        ({"readOnlyHint": True, "destructiveHint": True}, ToolClass.DESTRUCTIVE, ("mcp",)),
        ({"destructiveHint": True}, ToolClass.DESTRUCTIVE, ("mcp",)),
        ({"destructive_hint": "true"}, ToolClass.DESTRUCTIVE, ("mcp",)),
        ({"readOnlyHint": False, "destructiveHint": False}, ToolClass.MODIFY, ()),
        ({"title": "Create issue"}, ToolClass.MODIFY, ()),
        ({"readOnlyHint": "yes"}, ToolClass.MODIFY, ()),
    ],
)
def test_mcp_annotations_decide(
    annotations: dict[str, object], expected: ToolClass, families: tuple[str, ...]
) -> None:
    result = classify_tool("mcp__github__frobnicate", {}, mcp_annotations=annotations)
    assert result.tool_class is expected
    assert result.families == families


def test_mcp_annotations_beat_a_known_tool_part() -> None:
    result = classify_tool("mcp__fs__read_file", {}, mcp_annotations={"destructiveHint": True})
    assert result.tool_class is ToolClass.DESTRUCTIVE


@pytest.mark.parametrize(
    ("name", "tool_input", "expected"),
    [
        ("mcp__fs__read_file", {"path": "a"}, ToolClass.READ),
        ("mcp__fs__write_file", {"path": "a"}, ToolClass.MODIFY),
        ("mcp__search__web_search", {"q": "x"}, ToolClass.WEB),
        ("mcp__files__delete", {"path": "a"}, ToolClass.DESTRUCTIVE),
        ("mcp__shell__bash", {"command": "rm -rf build"}, ToolClass.DESTRUCTIVE),
        ("mcp__shell__bash", {}, ToolClass.MODIFY),
        ("mcp__github__create_pull_request", {}, ToolClass.MODIFY),
        ("mcp__github__frobnicate", {}, ToolClass.UNKNOWN),
        ("mcp__weird", {}, ToolClass.UNKNOWN),
        ("mcp__infomark__infomark_stamp", {}, ToolClass.LEDGER),
        ("mcp__infomark__stamp", {}, ToolClass.UNKNOWN),  # not one of infomark's tools
        ("mcp__tools__infomark_status", {}, ToolClass.UNKNOWN),  # not infomark's server
    ],
)
def test_mcp_without_annotations_uses_the_tool_part(
    name: str, tool_input: dict[str, object], expected: ToolClass
) -> None:
    assert classify_tool(name, tool_input).tool_class is expected


def test_empty_annotations_count_as_absent() -> None:
    assert classify_tool("mcp__fs__read_file", {}, mcp_annotations={}).tool_class is ToolClass.READ


def test_annotations_classify_an_unknown_plain_name() -> None:
    result = classify_tool("frobnicate_issue", {}, mcp_annotations={"readOnlyHint": True})
    assert result.tool_class is ToolClass.READ
    known = classify_tool("Write", {}, mcp_annotations={"readOnlyHint": True})
    assert known.tool_class is ToolClass.MODIFY


# --- overrides -----------------------------------------------------------------------------------


def test_override_wins_over_everything() -> None:
    overrides = {"Bash": "read", "mcp__github__create_issue": "execute", "my-tool": "Destructive"}
    assert classify_tool("bash", {"command": "rm -rf /"}, overrides=overrides).tool_class is (
        ToolClass.READ
    )
    mcp = classify_tool(
        "mcp__github__create_issue",
        {},
        overrides=overrides,
        mcp_annotations={"destructiveHint": True},
    )
    assert mcp.tool_class is ToolClass.EXECUTE
    assert classify_tool("MY_TOOL", None, overrides=overrides).tool_class is ToolClass.DESTRUCTIVE


def test_override_keys_are_normalised_and_meta_means_ledger() -> None:
    assert classify_tool("Plan.Tool", {}, overrides={"plan_tool": "meta"}).tool_class is (
        ToolClass.LEDGER
    )


def test_override_does_not_leak_to_other_names() -> None:
    result = classify_tool("mcp__x__bash", {"command": "ls"}, overrides={"bash": "destructive"})
    assert result.tool_class is ToolClass.EXECUTE


def test_invalid_override_fails_closed_to_unknown() -> None:
    result = classify_tool("Read", {}, overrides={"read": "harmless"})
    assert result.tool_class is ToolClass.UNKNOWN
    assert any("harmless" in r for r in result.reasons)


# --- contract ------------------------------------------------------------------------------------


def test_classification_is_frozen() -> None:
    result = classify_tool("Read", {})
    with pytest.raises(AttributeError):
        result.tool_class = ToolClass.MODIFY  # type: ignore[misc]


def test_tool_class_values_match_the_config_vocabulary() -> None:
    assert [c.value for c in ToolClass] == [
        "read",
        "search",
        "web",
        "execute",
        "delegation",
        "modify",
        "destructive",
        "ledger",
        "unknown",
    ]
    assert ToolClassName is ToolClass  # the configuration validates the enum, no copy of it
    for c in ToolClass:
        assert validate_config({"tools": {"x": c.value}}, source="t")["tools"] == {"x": c}
    with pytest.raises(ConfigError, match="Input should be 'read', 'search'"):
        validate_config({"tools": {"x": "nope"}}, source="t")


NAMES = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["Bash", "mcp__a__b", "mcp__", "mcp____", "Read", "infomark", "Task"]),
)
VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=40))


@settings(max_examples=300, deadline=None)
@given(
    NAMES,
    st.one_of(st.none(), st.dictionaries(st.sampled_from(["command", "path", "x"]), VALUES)),
    st.one_of(st.none(), st.dictionaries(st.text(max_size=10), st.text(max_size=12))),
    st.one_of(
        st.none(),
        st.dictionaries(
            st.sampled_from(["readOnlyHint", "destructiveHint", "read_only_hint", "title"]),
            VALUES,
        ),
    ),
)
def test_classify_tool_is_total(
    name: str,
    tool_input: dict[str, object] | None,
    overrides: dict[str, str] | None,
    annotations: dict[str, object] | None,
) -> None:
    result = classify_tool(name, tool_input, overrides=overrides, mcp_annotations=annotations)
    assert isinstance(result.tool_class, ToolClass)
    assert result.reasons
    assert not any(r.startswith("internal error") for r in result.reasons), result.reasons
    if result.tool_class is ToolClass.DESTRUCTIVE and not overrides:
        assert result.families


def test_malformed_annotations_are_ignored() -> None:
    result = classify_tool("mcp__fs__read_file", {}, mcp_annotations=["readOnlyHint"])  # type: ignore[arg-type]
    assert result.tool_class is ToolClass.READ


def test_non_shell_classification_does_not_load_the_parser() -> None:
    code = (
        "import sys\n"
        "from infomark.gates.classify import classify_tool\n"
        "classify_tool('Read', {'file_path': 'x'})\n"
        "classify_tool('mcp__a__b', {}, mcp_annotations={'readOnlyHint': True})\n"
        "bad = [m for m in ('tree_sitter', 'tree_sitter_bash', 'infomark.gates.shell',"
        " 'pydantic', 'lark') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "classify_tool('Bash', {'command': 'ls'})\n"
        "assert 'tree_sitter._binding' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
