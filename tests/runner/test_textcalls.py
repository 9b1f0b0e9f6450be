"""Tool calls written as text (fenced JSON, ``<tool_call>`` tags, a bare object) run as calls.

The parser is checked on the shapes small local models write, by property on generated calls in
every shape with prose around them, and end to end through the runner against the scripted
model server: the call runs through the gate, and an unreadable one is answered, never fatal.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from infomark.tools.runner import AgentSpec, ModelSpec, Runner, ScriptedModelServer
from infomark.tools.runner.scripted import reply, tool_results
from infomark.tools.runner.textcalls import TextCall, extract
from tests.runner.conftest import events

TOOLS = ("bash", "read", "edit", "glob")
RECORDED = Path(__file__).parent / "data" / "qwen25_coder_1p5b_raw.jsonl"


def _recorded() -> list[dict[str, object]]:
    return [json.loads(line) for line in RECORDED.read_text().splitlines()]


def test_recorded_replies_of_a_real_small_model() -> None:
    """Four raw replies of Qwen2.5-Coder-1.5B (llama.cpp, tools offered, none structured)."""
    rows = _recorded()
    assert all(r["structured_tool_calls"] == [] for r in rows)
    got = [extract(str(r["content"]), r["tools"]) for r in rows]  # type: ignore[arg-type]
    # a plan in prose with ```python / ```bash fences: no call, nothing to complain about
    assert (got[0].calls, got[0].problems) == ((), ())
    assert (got[1].calls, got[1].problems) == ((), ())
    # "Reply DONE when the tests pass": DONE at once, without acting (the finish gate's case)
    assert (got[2].calls, got[2].text) == ((), "DONE")
    # the call written as a fenced JSON object
    assert got[3].calls == (TextCall("read", '{"file_path": "project/files"}'),)
    assert got[3].text == ""


def test_a_fenced_json_call_with_prose_around_it() -> None:
    text = (
        "I will run the tests first.\n\n```json\n"
        '{"name": "bash", "arguments": {"command": "pytest -q"}}\n```\nThen I will fix it.'
    )
    got = extract(text, TOOLS)
    assert got.calls == (TextCall("bash", '{"command": "pytest -q"}'),)
    assert got.text == "I will run the tests first.\n\nThen I will fix it."
    assert got.problems == ()


def test_hermes_tags_several_calls_and_an_unclosed_last_tag() -> None:
    text = (
        '<tool_call>\n{"name": "read", "arguments": {"path": "calc.py"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "glob", "arguments": {"pattern": "*.py"}}'
    )
    got = extract(text, TOOLS)
    assert [c.name for c in got.calls] == ["read", "glob"]
    assert json.loads(got.calls[1].arguments) == {"pattern": "*.py"}
    assert got.text == ""


def test_a_bare_object_with_parameters_and_arguments_as_json_text() -> None:
    got = extract('{"tool": "bash", "parameters": "{\\"command\\": \\"ls\\"}"}', TOOLS)
    assert got.calls == (TextCall("bash", '{"command": "ls"}'),)


def test_the_openai_shape_written_as_text_and_a_list_of_calls() -> None:
    text = (
        '```\n[{"function": {"name": "read", "arguments": {"path": "a"}}},'
        ' {"name": "read", "arguments": {"path": "b"}}]\n```'
    )
    assert [json.loads(c.arguments)["path"] for c in extract(text, TOOLS).calls] == ["a", "b"]


def test_json_that_is_not_a_call_stays_prose() -> None:
    text = 'The config is:\n```json\n{"name": "demo", "version": 2}\n```\nDONE'
    got = extract(text, TOOLS)
    assert got.calls == () and got.problems == () and got.text == text


def test_an_unreadable_call_is_a_problem_with_line_and_column() -> None:
    got = extract(
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}\n</tool_call>', TOOLS
    )
    assert got.calls == ()
    assert len(got.problems) == 1
    assert "line 1, column" in got.problems[0] and "could not be read as JSON" in got.problems[0]


def test_an_unknown_tool_is_named_with_the_tools_there_are() -> None:
    got = extract('```json\n{"name": "shell", "arguments": {"cmd": "ls"}}\n```', TOOLS)
    assert got.problems == ("unknown tool 'shell'; the tools are: bash, edit, glob, read",)


def test_arguments_that_are_not_an_object_are_a_problem() -> None:
    got = extract('{"name": "bash", "arguments": ["ls"]}', TOOLS)
    assert got.calls == ()
    assert got.problems == ("the arguments of 'bash' must be a JSON object, not list",)


_PROSE = st.text(
    alphabet=st.characters(blacklist_characters="`<{[", blacklist_categories=("Cs",)), max_size=40
)
#: text a call's arguments may hold that looks like the end of its block
_MARKUP = st.sampled_from(["```", "\n```\n", "</tool_call>", "<tool_call>", "`"])
_TEXT = st.one_of(
    st.text(max_size=20), _MARKUP, st.builds(str.__add__, _MARKUP, st.text(max_size=8))
)
_ARGS = st.dictionaries(
    st.one_of(st.text(min_size=1, max_size=8), _MARKUP),
    st.one_of(st.integers(), _TEXT, st.booleans(), st.none()),
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(TOOLS),
    args=_ARGS,
    style=st.sampled_from(["fence", "tag", "bare", "openai"]),
    before=_PROSE,
    after=_PROSE,
)
@example(name="bash", args={"```": None}, style="fence", before="", after="")  # found by CI
@example(name="bash", args={"command": "echo </tool_call>"}, style="tag", before="", after="")
def test_every_shape_round_trips(
    name: str, args: dict[str, object], style: str, before: str, after: str
) -> None:
    obj = {"name": name, "arguments": args}
    body = json.dumps({"function": obj} if style == "openai" else obj)
    text = {
        "fence": f"{before}\n```json\n{body}\n```\n{after}",
        "tag": f"{before}<tool_call>{body}</tool_call>{after}",
        "bare": body,
        "openai": f"```\n{body}\n```",
    }[style]
    got = extract(text, TOOLS)
    assert got.calls == (TextCall(name, json.dumps(args, ensure_ascii=False)),)
    assert got.problems == ()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_read_without_raising(text: str) -> None:
    got = extract(text, TOOLS)
    assert all(c.name in TOOLS for c in got.calls)
    assert isinstance(json.loads(next(iter(c.arguments for c in got.calls), "{}")), dict)


def _spec(server: ScriptedModelServer) -> AgentSpec:
    return AgentSpec(name="t", model=ModelSpec(url=server.url, name="scripted", retries=0))


def test_the_runner_runs_a_fenced_call_through_the_gate(
    server: ScriptedModelServer, project: Path, home: Path
) -> None:
    (project / "notes.txt").write_text("hello from the file\n")
    server.add(
        "tc",
        reply(
            'Let me look.\n```json\n{"name": "read", "arguments": {"file_path": "notes.txt"}}\n```'
        ),
        lambda req: reply("seen: " + " | ".join(tool_results(req))),
    )
    with Runner(_spec(server), home=home, session="tc", root=project) as runner:
        result = runner.start("read notes.txt")
    assert "hello from the file" in result.final_text
    decisions = [p for _, t, p in events(home, "tc") if t == "decision"]
    assert [(d["tool"], d["decision"]) for d in decisions] == [("read", "allow")]


def test_an_unreadable_text_call_is_answered_and_the_run_goes_on(
    server: ScriptedModelServer, project: Path, home: Path
) -> None:
    server.add(
        "bad",
        reply('<tool_call>{"name": "bash", "arguments": {"command": "ls"</tool_call>'),
        lambda req: reply("told: " + str(req.last["content"])),
    )
    with Runner(_spec(server), home=home, session="bad", root=project) as runner:
        result = runner.start("list the files")
    assert result.final_text.startswith("told: [infomark runner] your reply looked like a tool")
    assert "could not be read as JSON" in result.final_text
    assert "decision" not in [t for _, t, _ in events(home, "bad")]
