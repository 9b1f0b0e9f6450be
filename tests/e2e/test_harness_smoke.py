"""The e2e harness itself: the scripted Messages API stub over real HTTP, then one real session.

The stub tests need nothing but 127.0.0.1. The ``e2e`` test runs the real Claude Code CLI with a
tiny Python hook wired to every event the gatekeeper uses, and checks what reaches the hook and
what comes back to the model.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .anthropic_stub import (
    AnthropicStub,
    MessagesRequest,
    Reply,
    Step,
    StubScriptError,
    ToolCall,
)
from .claude_harness import (
    HOOK_EVENTS,
    hook_command,
    result_json,
    run_claude,
    write_hook_settings,
)

_TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
_TOOL_ID = re.compile(r"^[A-Za-z0-9_-]+$")


# -- a tiny client, independent of the stub's own code -------------------------------------------


def _post(url: str, body: Mapping[str, Any] | bytes, path: str = "/v1/messages") -> tuple[int, str]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url + path, data=data, method="POST", headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _body(
    *, tools: bool = True, stream: bool = False, messages: Sequence[Any] = ()
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-test",
        "max_tokens": 100,
        "stream": stream,
        "messages": list(messages) or [{"role": "user", "content": "hi"}],
    }
    if tools:
        body["tools"] = _TOOLS
    return body


def _assemble(sse: str) -> dict[str, Any]:
    """Rebuild the message from an event stream, checking the event grammar on the way."""
    events: list[tuple[str, dict[str, Any]]] = []
    for frame in sse.split("\n\n"):
        if not frame.strip():
            continue
        fields = dict(line.split(": ", 1) for line in frame.splitlines())
        data = json.loads(fields["data"])
        assert data["type"] == fields["event"]
        events.append((fields["event"], data))
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    message = dict(events[0][1]["message"])
    assert message["content"] == [] and message["stop_reason"] is None
    blocks: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    open_index: int | None = None
    for name, data in events[1:-2]:
        if name == "content_block_start":
            assert open_index is None and data["index"] == len(blocks)
            open_index = data["index"]
            blocks.append(dict(data["content_block"]))
            partial[data["index"]] = ""
        elif name == "content_block_delta":
            assert data["index"] == open_index
            delta = data["delta"]
            if delta["type"] == "text_delta":
                blocks[data["index"]]["text"] += delta["text"]
            else:
                assert delta["type"] == "input_json_delta"
                partial[data["index"]] += delta["partial_json"]
        else:
            assert name == "content_block_stop" and data["index"] == open_index
            if blocks[data["index"]]["type"] == "tool_use":
                blocks[data["index"]]["input"] = json.loads(partial[data["index"]])
            open_index = None
    assert open_index is None
    message["content"] = blocks
    message["stop_reason"] = events[-2][1]["delta"]["stop_reason"]
    message["usage"] = events[-2][1]["usage"]
    return message


def _expected_content(reply: Reply, ids: Sequence[str]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call, tool_id in zip(reply.tool_calls, ids, strict=True):
        content.append({"type": "tool_use", "id": tool_id, "name": call.name, "input": call.input})
    return content


# -- stub over real HTTP --------------------------------------------------------------------------

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_tool_calls = st.builds(
    ToolCall,
    name=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True),
    input=st.dictionaries(st.text(max_size=8), _json_values, max_size=4),
    id=st.none() | st.from_regex(r"toolu_[a-z0-9]{1,12}", fullmatch=True),
)
_stop_reasons = st.sampled_from([None, "end_turn", "tool_use", "max_tokens"])
_replies = st.builds(
    Reply,
    text=st.text(min_size=1, max_size=80),
    tool_calls=st.lists(_tool_calls, max_size=3).map(tuple),
    stop_reason=_stop_reasons,
) | st.builds(
    Reply,
    text=st.none() | st.just(""),
    tool_calls=st.lists(_tool_calls, min_size=1, max_size=3).map(tuple),
    stop_reason=_stop_reasons,
)


@settings(max_examples=40, deadline=None)
@given(reply=_replies)
def test_streamed_and_plain_answers_carry_the_same_scripted_message(reply: Reply) -> None:
    with AnthropicStub([reply, reply]) as stub:
        status_s, streamed_raw = _post(stub.url, _body(stream=True), "/v1/messages?beta=true")
        status_p, plain_raw = _post(stub.url, _body(stream=False))
    assert (status_s, status_p) == (200, 200)
    streamed, plain = _assemble(streamed_raw), json.loads(plain_raw)
    expected_stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
    all_ids: list[str] = []
    for message in (streamed, plain):
        ids = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        for call, tool_id in zip(reply.tool_calls, ids, strict=True):
            assert tool_id == call.id if call.id else _TOOL_ID.match(tool_id)
        assert message["content"] == _expected_content(reply, ids)
        assert message["stop_reason"] == expected_stop
        assert message["role"] == "assistant" and message["model"] == "claude-test"
        assert message["usage"]["output_tokens"] >= 1
        all_ids += [i for i, c in zip(ids, reply.tool_calls, strict=True) if c.id is None]
    assert len(set(all_ids)) == len(all_ids)
    assert stub.steps_used == 2 and [r.stream for r in stub.requests] == [True, False]
    stub.check(complete=True)


def test_side_call_without_tools_does_not_consume_the_script() -> None:
    with AnthropicStub([Reply(text="scripted")]) as stub:
        _, side = _post(stub.url, _body(tools=False))
        _, scripted = _post(stub.url, _body())
        _, after = _post(stub.url, _body())
    assert json.loads(side)["content"][0]["text"] == "ok."
    assert json.loads(scripted)["content"][0]["text"] == "scripted"
    assert json.loads(after)["content"] == [{"type": "text", "text": "done."}]
    assert json.loads(after)["stop_reason"] == "end_turn"
    assert len(stub.model_requests) == 3 and len(stub.scripted_requests) == 2
    assert stub.steps_used == 1
    stub.check(complete=True)


def test_raising_step_is_answered_400_recorded_and_the_script_moves_on() -> None:
    def broken(request: MessagesRequest) -> Reply:
        raise ValueError("step exploded")

    with AnthropicStub([broken, Reply(text="next")]) as stub:
        status, error = _post(stub.url, _body())
        _, following = _post(stub.url, _body())
    assert status == 400
    assert json.loads(error)["type"] == "error"
    assert "step exploded" in json.loads(error)["error"]["message"]
    assert json.loads(following)["content"][0]["text"] == "next"
    assert len(stub.errors) == 1 and "ValueError: step exploded" in stub.errors[0]
    with pytest.raises(StubScriptError, match="step exploded"):
        stub.check()


def test_bad_body_and_unknown_path_are_errors_not_hangs() -> None:
    with AnthropicStub([Reply(text="unused")]) as stub:
        bad_status, _ = _post(stub.url, b"{not json")
        missing_status, _ = _post(stub.url, _body(), "/v1/complete")
    assert (bad_status, missing_status) == (400, 404)
    assert stub.steps_used == 0 and len(stub.requests) == 2 and not stub.model_requests[1:]
    assert len(stub.errors) == 2
    with pytest.raises(StubScriptError, match="1 script steps"):
        AnthropicStub([Reply(text="x")]).check(complete=True)


def test_callable_step_reads_only_what_came_after_the_last_assistant_turn() -> None:
    seen: list[MessagesRequest] = []

    def echo(request: MessagesRequest) -> Reply:
        seen.append(request)
        refs = [r.content for r in request.tool_results() if not r.is_error]
        return Reply(text="saw " + ",".join(refs))

    conversation = [
        {"role": "user", "content": "old prompt"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ev_0123"},
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": [{"type": "text", "text": "bad"}],
                    "is_error": True,
                },
            ],
        },
        {"role": "system", "content": [{"type": "text", "text": "hook context"}]},
    ]
    with AnthropicStub([echo]) as stub:
        _, answer = _post(stub.url, _body(messages=conversation))
    assert json.loads(answer)["content"][0]["text"] == "saw ev_0123"
    (request,) = seen
    assert [m["role"] for m in request.new_messages()] == ["user", "system"]
    assert [r.is_error for r in request.tool_results()] == [False, True]
    assert request.tool_results()[1].content == "bad"
    assert request.texts() == ["hook context"]
    assert request.texts(new_only=False) == ["old prompt", "hook context"]
    assert "old prompt" in request.all_text() and "hook context" in request.all_text()
    assert request.has_tools and request.tool_names == ["Bash"] and request.model == "claude-test"
    stub.check(complete=True)


def test_write_hook_settings_keeps_existing_entries(tmp_path: Path) -> None:
    settings_file = tmp_path / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    existing = {"model": "x", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a"}]}]}}
    settings_file.write_text(json.dumps(existing))
    assert write_hook_settings(tmp_path, "b", events=("Stop", "PreToolUse")) == settings_file
    written = json.loads(settings_file.read_text())
    assert written["model"] == "x"
    assert [e["hooks"][0]["command"] for e in written["hooks"]["Stop"]] == ["a", "b"]
    assert "matcher" not in written["hooks"]["Stop"][1]
    assert written["hooks"]["PreToolUse"] == [
        {"matcher": "*", "hooks": [{"type": "command", "command": "b", "timeout": 30}]}
    ]


# -- the real Claude Code CLI ------------------------------------------------------------------

_HOOK_SCRIPT = """\
import json
import sys

payload = json.load(sys.stdin)
with open(sys.argv[1], "a", encoding="utf-8") as log:
    log.write(json.dumps(payload) + "\\n")
event = payload["hook_event_name"]
answer = None
if event == "PreToolUse" and "forbidden" in payload["tool_input"].get("command", ""):
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
              "permissionDecision": "deny", "permissionDecisionReason": "DENY-REASON-456"}}
elif event == "PostToolUse":
    answer = {"hookSpecificOutput": {"hookEventName": "PostToolUse",
              "additionalContext": "EVIDENCE-TAG-123"}}
elif event == "Stop" and not payload["stop_hook_active"]:
    answer = {"decision": "block", "reason": "STOP-REASON-XYZ"}
if answer is not None:
    print(json.dumps(answer))
"""


def _bash(command: str, tool_id: str) -> ToolCall:
    return ToolCall("Bash", {"command": command, "description": "scripted"}, id=tool_id)


def _quote_stop_feedback(request: MessagesRequest) -> Reply:
    feedback = [t for t in request.texts() if t.startswith("Stop hook feedback:\n")]
    return Reply(text="Saw: " + feedback[0].removeprefix("Stop hook feedback:\n"))


@pytest.mark.e2e
def test_real_claude_code_runs_every_hook_and_feeds_answers_back(
    claude_bin: Path, tmp_path: Path
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    hook, log = tmp_path / "hook.py", tmp_path / "hook-log.jsonl"
    hook.write_text(_HOOK_SCRIPT, encoding="utf-8")
    write_hook_settings(project, hook_command(hook, str(log)), events=HOOK_EVENTS)
    script: list[Step] = [
        Reply(text="Checking.", tool_calls=(_bash("echo hi", "toolu_hi"),)),
        Reply(tool_calls=(_bash("false", "toolu_false"),)),
        Reply(tool_calls=(_bash("echo forbidden", "toolu_forbidden"),)),
        Reply(text="All done."),
        _quote_stop_feedback,
    ]

    with AnthropicStub(script) as stub:
        proc = run_claude(project, "run the checks", stub, claude_bin=claude_bin, home=home)

    stub.check(complete=True)
    result = result_json(proc)
    assert proc.returncode == 0 and result["is_error"] is False, proc.stderr
    assert result["result"] == "Saw: STOP-REASON-XYZ"

    payloads = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    fired = [
        (p["hook_event_name"], p.get("tool_input", {}).get("command"), p.get("stop_hook_active"))
        for p in payloads
    ]
    assert fired == [
        ("SessionStart", None, None),
        ("UserPromptSubmit", None, None),
        ("PreToolUse", "echo hi", None),
        ("PostToolUse", "echo hi", None),
        ("PreToolUse", "false", None),
        ("PostToolUseFailure", "false", None),
        ("PreToolUse", "echo forbidden", None),
        ("Stop", None, False),
        ("Stop", None, True),
    ]
    by_event = {p["hook_event_name"]: p for p in payloads}
    assert by_event["UserPromptSubmit"]["prompt"] == "run the checks"
    assert by_event["PostToolUseFailure"]["error"].startswith("Exit code 1")
    assert payloads[-1]["last_assistant_message"] == "Saw: STOP-REASON-XYZ"
    assert {Path(p["cwd"]).resolve() for p in payloads} == {project.resolve()}

    first, after_hi, after_false, after_forbidden, after_stop = stub.scripted_requests
    assert "run the checks" in first.texts() and "Bash" in first.tool_names
    assert [(r.tool_use_id, r.content, r.is_error) for r in after_hi.tool_results()] == [
        ("toolu_hi", "hi", False)
    ]
    assert "PostToolUse:Bash hook additional context: EVIDENCE-TAG-123" in after_hi.texts()
    (failed,) = after_false.tool_results()
    assert failed.is_error and failed.content.startswith("Exit code 1")
    assert "EVIDENCE-TAG-123" not in "".join(after_false.texts())
    assert [(r.tool_use_id, r.content, r.is_error) for r in after_forbidden.tool_results()] == [
        ("toolu_forbidden", "PreToolUse:Bash hook error: DENY-REASON-456", True)
    ]
    assert "Stop hook feedback:\nSTOP-REASON-XYZ" in after_stop.texts()
