"""A PreToolUse's wait for its transcript line holds no other session (tools/service_transcript.py).

Claude Code writes the line of a ``tool_use`` (after the assistant text whose claim ledger
the decision must count) in the background; at PreToolUse it can be late. The command hook
waits for it, polling the file. In the service that wait ran inside the pooled call, on the
event loop for a short call: every other session waited with it, up to half a second. Real
gatekeepers on a real SQLite home, the service's own hook route and pool.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from hook_session import LEDGER
from test_service_on_loop import GUARD, _opened, _pool, _serve, _service

from infomark.tools import service_transcript
from infomark.tools.hooks import transcript
from infomark.tools.service import _Service
from infomark.tools.service_pool import SessionPool
from infomark.tools.service_transcript import TranscriptWait

pytestmark = pytest.mark.sqlite_only


def _say(path: Path, text: str, use: str) -> None:
    """An assistant message and its tool_use, as Claude Code appends them."""
    with path.open("a") as f:
        for block in ({"type": "text", "text": text}, {"type": "tool_use", "id": use}):
            line = {"type": "assistant", "message": {"role": "assistant", "content": [block]}}
            f.write(json.dumps(line) + "\n")


def _pre(root: Path, sid: str, tool: str, use: str, path: Path) -> bytes:
    tool_input = {"file_path": str(root / "a.py")}
    if tool == "Edit":
        tool_input |= {"old_string": "1", "new_string": "2"}
    payload = {"session_id": sid, "transcript_path": str(path), "cwd": str(root),
               "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input,
               "tool_use_id": use}  # fmt: skip
    return json.dumps(payload).encode()


def _reason(answer: bytes) -> str:
    out: dict[str, Any] = json.loads(answer).get("hookSpecificOutput", {})
    return str(out.get("permissionDecision")) + " " + str(out.get("permissionDecisionReason"))


def _project(tmp_path: Path) -> tuple[Path, SessionPool, _Service]:
    """A project (``a.py``), an empty transcript, a pool of its sessions and the routes."""
    (tmp_path / "a.py").write_text("x = 1\n")
    path = tmp_path / "t.jsonl"
    path.write_text("")
    pool = _pool(tmp_path)
    return path, pool, _service(pool)


class _Sleeps:
    """The hook's own transcript read: how often it slept waiting for a line (the module's
    clock replaced, so no other code's sleeps count)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0

        def sleep(seconds: float) -> None:
            self.count += 1
            time.sleep(seconds)

        clock = SimpleNamespace(monotonic=time.monotonic, sleep=sleep)
        monkeypatch.setattr(transcript, "time", clock)


def test_while_a_pretooluse_waits_for_its_line_the_other_sessions_are_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    late, other = tmp_path / "late.jsonl", tmp_path / "other.jsonl"
    late.write_text("")
    monkeypatch.setattr(service_transcript, "WAIT_SECONDS", GUARD)  # only the line ends it
    polling = anyio.Event()
    real_size = service_transcript._size

    def size(path: str) -> int:  # observes the wait; changes nothing
        if path == str(late):
            polling.set()
        return real_size(path)

    monkeypatch.setattr(service_transcript, "_size", size)
    sleeps = _Sleeps(monkeypatch)
    pool = _pool(tmp_path)
    service = _service(pool)
    order: list[str] = []
    answers: dict[str, bytes] = {}

    async def call(name: str, body: bytes) -> None:
        answers[name] = await service.hook_answer(body, None)
        order.append(name)

    async def main() -> None:
        await _opened(pool, "s-late", "s-other")
        with anyio.fail_after(GUARD):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "late", _pre(tmp_path, "s-late", "Edit", "u-late", late))
                await polling.wait()  # its line is not written: it waits
                _say(other, "Reading.", "u-other")
                await call("other", _pre(tmp_path, "s-other", "Read", "u-other", other))
                order.append("line written")
                _say(late, LEDGER, "u-late")  # the ledger and the Edit's tool_use, late

    _serve(pool, main)
    assert order == ["other", "line written", "late"]
    assert "ungrounded_premises" in _reason(answers["late"])  # decided on the late ledger
    assert "C1" in _reason(answers["late"])
    assert sleeps.count == 0  # neither call's own read waited: the service did, off the lane
    assert pool.ran_on_loop == 2


def test_a_line_that_never_comes_costs_one_bound_and_the_call_reads_without_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, pool, service = _project(tmp_path)
    monkeypatch.setattr(service_transcript, "WAIT_SECONDS", 0.05)
    sleeps = _Sleeps(monkeypatch)
    answers: list[bytes] = []

    async def main() -> None:
        await _opened(pool, "s1")
        answers.append(await service.hook_answer(_pre(tmp_path, "s1", "Edit", "u1", path), None))

    _serve(pool, main)
    assert _reason(answers[0]).startswith("deny [infomark no_ledger]")  # decided on what is there
    assert sleeps.count == 0  # the bound was spent by the service's wait, not again


def test_a_sessions_first_call_waits_in_its_thread_as_the_command_hook_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its session is not open: nothing holds its cursor yet, so the call's own read waits."""
    path, pool, service = _project(tmp_path)
    monkeypatch.setattr(transcript, "WAIT_SECONDS", 0.02)
    sleeps = _Sleeps(monkeypatch)

    async def main() -> None:
        await service.hook_answer(_pre(tmp_path, "s1", "Read", "u1", path), None)

    _serve(pool, main)
    assert sleeps.count > 0 and pool.ran_on_loop == 0


def test_a_transcript_growing_while_the_call_waits_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent that leaves a process appending to the transcript makes each look find it
    grown: each look goes on from where the last stopped, so the loop reads each byte once,
    not the whole backlog every 5 ms."""
    (tmp_path / "a.py").write_text("x = 1\n")
    path = tmp_path / "t.jsonl"
    path.write_text("")
    monkeypatch.setattr(service_transcript, "WAIT_SECONDS", GUARD)
    junk = (json.dumps({"type": "progress", "data": "x" * 10_000}) + "\n").encode()
    real_size, real_find = service_transcript._size, service_transcript.find_tool_use
    looks: list[int] = []

    def size(p: str) -> int:  # the writer: it appends between looks, 30 times, then the line
        if p == str(path) and looks and len(looks) < 31:
            if len(looks) == 30:
                _say(path, LEDGER, "u1")
            else:
                with path.open("ab") as f:
                    f.write(junk)
        return real_size(p)

    def find(p: str, at: int, use: str, *, limit: int | None = None) -> tuple[bool, int]:
        looks.append(real_size(p) - at)  # the bytes this look reads
        return real_find(p, at, use, limit=limit)

    monkeypatch.setattr(service_transcript, "_size", size)
    monkeypatch.setattr(service_transcript, "find_tool_use", find)
    pool = _pool(tmp_path)
    service = _service(pool)
    answers: list[bytes] = []

    async def main() -> None:
        await _opened(pool, "s1")
        with anyio.fail_after(GUARD):
            answers.append(
                await service.hook_answer(_pre(tmp_path, "s1", "Edit", "u1", path), None)
            )

    _serve(pool, main)
    assert "ungrounded_premises" in _reason(answers[0])  # the line came, and was read
    assert len(looks) == 31
    assert sum(looks) < 2 * path.stat().st_size  # each byte once (all of them each time: 15×)


def test_a_long_backlog_is_read_in_a_thread_not_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The call's own read parses every line since the cursor: past ``BACKLOG`` bytes (a
    huge tool result, a padded transcript) it could outlast the lease on the loop."""
    path, pool, service = _project(tmp_path)
    monkeypatch.setattr(service_transcript, "BACKLOG", 4096)
    answers: list[bytes] = []

    async def main() -> None:
        await _opened(pool, "s1")
        _say(path, "short", "u1")
        answers.append(await service.hook_answer(_pre(tmp_path, "s1", "Read", "u1", path), None))
        assert pool.ran_on_loop == 1  # a small backlog: on the loop
        _say(path, "x" * 8000, "u2")  # more than BACKLOG since the cursor
        answers.append(await service.hook_answer(_pre(tmp_path, "s1", "Read", "u2", path), None))
        assert pool.ran_on_loop == 1  # in a thread
        _say(path, "short again", "u3")
        answers.append(await service.hook_answer(_pre(tmp_path, "s1", "Read", "u3", path), None))
        assert pool.ran_on_loop == 2  # the cursor moved past it: back on the loop

    _serve(pool, main)
    assert [json.loads(a).get("hookSpecificOutput") for a in answers] == [None] * 3  # allowed


def test_a_backlog_too_long_for_the_loop_is_not_read_there_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A transcript padded past ``BACKLOG`` since the cursor (here a 64 MiB hole: an agent's
    ``truncate -s``) is not looked at on the loop: the call, in a thread, reads it and waits
    what is left of the bound there."""
    path, pool, service = _project(tmp_path)
    looks: list[int] = []
    real_find = service_transcript.find_tool_use

    def find(p: str, at: int, use: str, *, limit: int | None = None) -> tuple[bool, int]:
        looks.append(at)
        return real_find(p, at, use, limit=limit)

    monkeypatch.setattr(service_transcript, "find_tool_use", find)
    answers: list[bytes] = []

    async def main() -> None:
        await _opened(pool, "s1")
        with path.open("r+b") as f:
            f.truncate(64 << 20)
        _say(path, "After the hole.", "u1")
        with anyio.fail_after(GUARD):
            answers.append(
                await service.hook_answer(_pre(tmp_path, "s1", "Read", "u1", path), None)
            )

    _serve(pool, main)
    assert looks == []  # nothing read on the loop
    assert pool.ran_on_loop == 0  # the call ran in a thread
    assert json.loads(answers[0]).get("hookSpecificOutput") is None  # allowed


def test_a_fifo_in_the_transcripts_place_holds_no_session(tmp_path: Path) -> None:
    """A FIFO whose open would block: the service's wait only ``stat``s it and the call's
    read never opens it, so the call is answered (denied: no ledger was read) and the loop
    stays free. A regression would block the loop: a release valve opens the FIFO's writing
    end after ``GUARD`` seconds, so the test fails instead of hanging."""
    _, pool, service = _project(tmp_path)
    fifo = tmp_path.parent / f"{tmp_path.name}-fifo.jsonl"  # outside, as a transcript is
    os.mkfifo(fifo)
    released, fired = threading.Event(), threading.Event()

    def valve() -> None:
        if not released.wait(GUARD):
            fired.set()
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    threading.Thread(target=valve, daemon=True).start()
    answers: list[bytes] = []

    async def main() -> None:
        await _opened(pool, "s1")
        answers.append(await service.hook_answer(_pre(tmp_path, "s1", "Edit", "u1", fifo), None))
        released.set()

    try:
        _serve(pool, main)
    finally:
        released.set()
    assert not fired.is_set()  # answered without the valve: nothing blocked on the FIFO
    assert _reason(answers[0]).startswith("deny [infomark no_ledger]")


@pytest.mark.parametrize(
    ("event", "fields", "waits"),
    [
        ("PreToolUse", {}, True),
        ("PostToolUse", {}, False),
        ("Stop", {}, False),
        ("PreToolUse", {"transcript_path": ""}, False),
        ("PreToolUse", {"transcript_path": None}, False),
        ("PreToolUse", {"tool_use_id": ""}, False),
        ("PreToolUse", {"tool_use_id": 7}, False),
        ("PreToolUse", {"transcript_format": "gemini"}, False),  # another host: no wait
    ],
)
def test_which_calls_wait_for_a_transcript_line(
    event: str, fields: dict[str, Any], waits: bool
) -> None:
    payload = {"transcript_path": "/t.jsonl", "tool_use_id": "toolu_1", **fields}
    assert (TranscriptWait.of(event, payload) is not None) is waits
