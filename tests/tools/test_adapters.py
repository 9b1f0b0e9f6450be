"""The message-shape adapters: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages.

Each drives a real gatekeeper on a real SQLite file: the response's text is ingested before
its tool calls run, each call is gated and answered in the provider's shape with the host's
call id, a response without tool calls meets the finish gate. The runnable example runs
against the scripted OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import GROUND_ORACLE, ledger_text, stamp
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from infomark.async_gatekeeper import AsyncGatekeeper
from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.tools.adapters import AnthropicMessages, OpenAIChat, OpenAIResponses, Turn

ROOT = Path(__file__).resolve().parents[2]
EDIT_ARGS = {"file_path": "a.py", "old_string": "1", "new_string": "2"}
KEYS = [
    "choices",
    "message",
    "content",
    "tool_calls",
    "function",
    "name",
    "arguments",
    "id",
    "output",
    "type",
    "call_id",
    "input",
    "text",
]
LEDGER = ledger_text(("C1", "Hypothetical", GROUND_ORACLE), premises=("C1",))


def _executors(ran: list[str]) -> dict[str, Any]:
    def bash(call: ToolCall) -> ToolOutcome:
        ran.append(str(call.input.get("command")))
        return ToolOutcome("ok", exit_code=0)

    def edit(call: ToolCall) -> ToolOutcome:
        ran.append("edit")
        return ToolOutcome("edited")

    return {"bash": bash, "edit": edit}


# -- the three shapes ------------------------------------------------------------------------


def chat(text: str, *calls: tuple[str, str, Any]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        msg["tool_calls"] = [
            {
                "id": cid,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for cid, name, args in calls
        ]
    return {"id": "chatcmpl-1", "choices": [{"index": 0, "message": msg}]}


def responses(text: str, *calls: tuple[str, str, Any]) -> dict[str, Any]:
    out: list[dict[str, Any]] = [{"type": "reasoning", "id": "rs_1", "summary": []}]
    if text:
        out.append(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text}],
            }
        )
    for cid, name, args in calls:
        out.append(
            {
                "type": "function_call",
                "call_id": cid,
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            }
        )
    return {"id": "resp_1", "output": out}


def anthropic(text: str, *calls: tuple[str, str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for cid, name, args in calls:
        content.append({"type": "tool_use", "id": cid, "name": name, "input": args})
    return {"id": "msg_1", "role": "assistant", "content": content, "stop_reason": "tool_use"}


SHAPES = {
    "chat": (OpenAIChat, chat),
    "responses": (OpenAIResponses, responses),
    "anthropic": (AnthropicMessages, anthropic),
}


def _tool_answers(kind: str, turn: Turn) -> list[tuple[str, str, bool]]:
    """``(call id, text, is_error)`` of each tool result in the turn's messages."""
    if kind == "chat":
        return [
            (m["tool_call_id"], m["content"], False) for m in turn.messages if m["role"] == "tool"
        ]
    if kind == "responses":
        return [
            (m["call_id"], m["output"], False)
            for m in turn.messages
            if m.get("type") == "function_call_output"
        ]
    return [
        (b["tool_use_id"], b["content"], bool(b.get("is_error")))
        for m in turn.messages
        if m.get("role") == "user" and isinstance(m["content"], list)
        for b in m["content"]
    ]


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_text_is_ingested_before_the_tools_of_the_same_message(gk: Gatekeeper, kind: str) -> None:
    cls, make = SHAPES[kind]
    ran: list[str] = []
    agent = cls(gk, _executors(ran))
    # The ledger and an edit in one message: the edit meets the ledger (ungrounded premise),
    # not "no ledger", because the text was ingested first.
    turn = agent.handle(make(LEDGER, ("call_e1", "edit", EDIT_ARGS)))
    (result,) = turn.results
    assert result.denied and result.code == "ungrounded_premises" and ran == []
    assert turn.ingested is not None and turn.ingested.ledger_updated
    (answer,) = _tool_answers(kind, turn)
    assert answer[0] == "call_e1" and answer[1] == result.text
    if kind == "anthropic":
        assert answer[2] is True  # a denial is flagged as an error result

    run = agent.handle(make("", ("call_b1", "bash", {"command": GROUND_ORACLE})))
    (ran_result,) = run.results
    assert ran_result.passed and ran_result.ref is not None
    assert ran_result.evidence is not None and ran_result.evidence.tool_call_id == "call_b1"
    (answer,) = _tool_answers(kind, run)
    assert answer[0] == "call_b1" and ran_result.evidence.tag in answer[1]

    # The stamp and the edit in one message: the stamp counts for the edit.
    turn = agent.handle(make(stamp("C1", ran_result.ref), ("call_e2", "edit", EDIT_ARGS)))
    assert turn.results[0].allowed and ran == [GROUND_ORACLE, "edit"]
    decisions = [e.payload for e in gk.events() if e.type == "decision"]
    assert [d["tool_call_id"] for d in decisions] == ["call_e1", "call_b1", "call_e2"]


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_a_reply_without_tools_meets_the_finish_gate(gk: Gatekeeper, kind: str) -> None:
    cls, make = SHAPES[kind]
    agent = cls(gk, _executors([]))
    gk.ingest(LEDGER)
    first = agent.handle(make("Done, all tests pass."))
    assert first.finish is not None and not first.done and first.results == ()
    refusal = first.messages[-1]
    assert refusal["role"] == "user" and refusal["content"].startswith(
        f"[infomark finish refused: {first.finish.code}] "
    )
    assert first.finish.reason in refusal["content"]
    # the refusal cap: never trapped
    cap = gk.config.finish_refusal_cap
    turns = [agent.handle(make("Done, all tests pass.")) for _ in range(cap)]
    assert not any(t.done for t in turns[:-1])
    assert turns[-1].done and turns[-1].finish is not None and turns[-1].finish.cap_reached


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_unknown_tools_and_bad_arguments_never_reach_the_gate(gk: Gatekeeper, kind: str) -> None:
    cls, make = SHAPES[kind]
    ran: list[str] = []
    agent = cls(gk, _executors(ran))
    bad_args: Any = "{not json" if kind != "anthropic" else ["not", "an", "object"]
    turn = agent.handle(make("", ("c1", "rm_everything", {}), ("c2", "bash", bad_args)))
    assert turn.results == () and ran == [] and len(turn.problems) == 2
    answers = _tool_answers(kind, turn)
    assert [a[0] for a in answers] == ["c1", "c2"]  # every call is answered, in order
    assert "unknown tool 'rm_everything'" in answers[0][1] and "nothing ran" in answers[1][1]
    assert not [e for e in gk.events() if e.type == "decision"]


def test_the_chat_echo_is_a_valid_assistant_message(gk: Gatekeeper) -> None:
    agent = OpenAIChat(gk, _executors([]))
    turn = agent.handle(chat("", ("call_1", "bash", {"command": "true"})))
    echo = turn.messages[0]
    assert echo == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "true"}'},
            }
        ],
    }
    assert agent.tool_calls(chat("", ("x", "bash", {"command": "ls"}))) == [
        ToolCall("bash", {"command": "ls"}, "x")
    ]


def test_the_responses_echo_keeps_reasoning_items(gk: Gatekeeper) -> None:
    turn = OpenAIResponses(gk, _executors([])).handle(
        responses("", ("fc_1", "bash", {"command": "true"}))
    )
    assert [m.get("type") for m in turn.messages] == [
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert [m.get("type") for m in turn.answers] == ["function_call_output"]


def test_anthropic_results_are_one_user_message(gk: Gatekeeper) -> None:
    agent = AnthropicMessages(gk, _executors([]))
    turn = agent.handle(
        anthropic("", ("tu_1", "bash", {"command": "true"}), ("tu_2", "bash", {"command": "ls"}))
    )
    assert [m["role"] for m in turn.messages] == ["assistant", "user"]
    assert [b["tool_use_id"] for b in turn.messages[1]["content"]] == ["tu_1", "tu_2"]
    assert all("is_error" not in b for b in turn.messages[1]["content"])


def test_sdk_objects_are_read_through_model_dump(gk: Gatekeeper) -> None:
    class Block(BaseModel):
        type: str
        id: str | None = None
        name: str | None = None
        input: dict[str, Any] | None = None
        text: str | None = None

    class Message(BaseModel):
        role: str
        content: list[Block]

    msg = Message(
        role="assistant",
        content=[
            Block(type="text", text="running it"),
            Block(type="tool_use", id="tu_9", name="bash", input={"command": "true"}),
        ],
    )
    turn = AnthropicMessages(gk, _executors([])).handle(msg)
    assert turn.results[0].evidence is not None
    assert turn.results[0].evidence.tool_call_id == "tu_9"


def test_the_system_prompt_and_the_user_turn(gk: Gatekeeper) -> None:
    from infomark.kernel.protocol import render_protocol

    agent = OpenAIChat(gk, {})
    assert agent.system_prompt("Be brief.") == "Be brief.\n\n" + render_protocol()
    assert agent.system_prompt() == render_protocol()
    message = agent.user("fix it")
    assert message["role"] == "user" and message["content"].startswith("fix it")
    assert [e.type for e in gk.events()][-1] in {"turn_started", "policy_updated"}
    assert any(e.type == "turn_started" for e in gk.events())


def test_a_declared_tool_class_decides_the_evidence_class(gk: Gatekeeper) -> None:
    def check(call: ToolCall) -> ToolOutcome:
        return ToolOutcome("1 passed", exit_code=0)

    agent = OpenAIChat(gk, {"check": check}, tool_classes={"check": "execute"})
    turn = agent.handle(chat("", ("c1", "check", {})))
    assert turn.results[0].evidence is not None
    assert turn.results[0].evidence.evidence_class.value == "execution"


def test_the_async_session_drives_the_same_loop(home: Path, project: Path) -> None:
    async def scenario() -> tuple[Turn, Turn]:
        async with await AsyncGatekeeper.open(home, "async-loop", root=project) as agk:
            agent = AnthropicMessages(agk, _executors([]))
            await agent.auser("fix it")
            first = await agent.ahandle(anthropic(LEDGER, ("tu_1", "edit", EDIT_ARGS)))
            with pytest.raises(TypeError, match="ahandle"):
                agent.handle(anthropic("Done."))
            done = await agent.ahandle(anthropic("Nothing to report."))
            return first, done

    first, done = asyncio.run(scenario())
    assert first.results[0].code == "ungrounded_premises"
    assert done.finish is not None


@pytest.mark.parametrize("kind", sorted(SHAPES))
@given(
    response=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(KEYS),
                inner,
                max_size=5,
            )
        ),
        max_leaves=20,
    )
)
def test_any_shape_either_parses_or_is_a_clear_error(kind: str, response: Any) -> None:
    cls, _ = SHAPES[kind]
    agent = cls.__new__(cls)  # parsing needs no session
    try:
        parsed = agent.parse(response)
    except ValueError as exc:
        assert str(exc).startswith("not a model response: ")
    else:
        assert isinstance(parsed.text, str)
        for raw in parsed.calls:
            assert isinstance(raw.name, str) and isinstance(raw.id, str)
            assert raw.arguments is None or isinstance(raw.arguments, dict)
            assert raw.arguments is not None or raw.problem


# -- the runnable example ----------------------------------------------------------------------


def test_the_example_runs_against_the_scripted_server(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFOMARK_")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "openai_chat_loop.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "finish allowed: True (allowed); calc.py fixed: True"


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def test_the_docs_show_the_example_loop() -> None:
    example = (ROOT / "examples" / "openai_chat_loop.py").read_text()
    loop = _between(example, "docs/python-api.md) ---", "# -- end of the loop")
    doc = (ROOT / "docs" / "python-api.md").read_text()
    assert loop.split("\n", 1)[1].strip() in doc  # the docs run the same loop
