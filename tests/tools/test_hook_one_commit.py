"""A PreToolUse after new prose commits the prose and its decision together.

Most tool calls follow a line or two of the agent's prose, with no block in it; the hook
used to ingest it in one write transaction and decide in another (0.45 M instructions a
call more, measured). Now one transaction holds both, begun relaxed: an allow that may
change something still reaches the disk before the answer (tests/tools/test_hook_syscalls.py
counts the fsync), and the wait for the call's transcript line stays outside the write
lock. A real gatekeeper on a real SQLite home, the hook's own handler.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hook_session import LEDGER

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import StoreBusyError
from infomark.ledger.store.journal import Journal
from infomark.tools.hooks import transcript
from infomark.tools.hooks.claude_code import handle

pytestmark = pytest.mark.sqlite_only


class _Project:
    def __init__(self, root: Path) -> None:
        self.root, self.home = root, root / ".infomark"
        (root / "a.py").write_text("x = 1\n")
        self.transcript = root.parent / f"{root.name}.jsonl"  # outside, as Claude Code's
        self.transcript.write_text("")
        self.gk = Gatekeeper.open(self.home, "s1", root=root)
        self.n = 0

    def say(self, text: str) -> str:
        self.n += 1
        use = f"toolu_{self.n:04d}"
        with self.transcript.open("a") as f:
            for block in ({"type": "text", "text": text}, {"type": "tool_use", "id": use}):
                line = {"type": "assistant", "message": {"content": [block]}}
                f.write(json.dumps(line) + "\n")
        return use

    def pre(self, tool: str, use: str) -> Any:
        tool_input = {"file_path": str(self.root / "a.py")}
        payload = {"session_id": "s1", "transcript_path": str(self.transcript),
                   "cwd": str(self.root), "hook_event_name": "PreToolUse", "tool_name": tool,
                   "tool_input": tool_input, "tool_use_id": use}  # fmt: skip
        return handle(payload, home=self.home, root=self.root, gatekeeper=self.gk)

    def ingested(self) -> list[str]:
        return [str(e.payload.get("source")) for e in self.gk.events()
                if e.type == "message_ingested"]  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> Iterator[_Project]:
    root = tmp_path / "p"
    root.mkdir()
    p = _Project(root)
    p.pre("Read", p.say("First, a look."))  # the first action (its baseline, if any)
    yield p
    p.gk.close()


def _writes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each write transaction the journal opens, by the event types it committed."""
    opened: list[str] = []
    real = Journal.write

    def write(self: Journal, session: str | None = None) -> Any:
        opened.append("write")
        return real(self, session)

    monkeypatch.setattr(Journal, "write", write)
    return opened


def test_prose_and_its_decision_are_one_write(
    project: _Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = project.ingested()
    opened = _writes(monkeypatch)
    answer = project.pre("Read", project.say("The tokenizer splits on spaces."))
    assert answer.exit_code == 0 and answer.stdout is None  # allowed, silently
    assert opened == ["write"]
    assert project.ingested() == [*before, "transcript"]  # the prose is in the journal


def test_a_block_is_ingested_in_its_own_write(
    project: _Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim ledger is parsed outside the write lock, and committed durably, by itself."""
    opened = _writes(monkeypatch)
    answer = project.pre("Edit", project.say(LEDGER))
    assert "ungrounded_premises" in json.dumps(answer.stdout)  # the ledger counted
    assert opened == ["write", "write"]


def test_no_new_text_is_one_write_as_before(
    project: _Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = _writes(monkeypatch)
    use = project.say("A look.")
    project.pre("Read", use)
    opened.clear()
    project.pre("Read", use)  # the same call again: nothing new in the transcript
    assert opened == ["write"]


def test_the_wait_for_a_late_line_holds_no_write_lock(
    project: _Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = project.gk.store.journal
    assert isinstance(journal, Journal)
    seen: list[bool] = []
    late = "toolu_late"

    def sleep(seconds: float) -> None:  # the hook's read waits: the line comes meanwhile
        seen.append(journal._in_tx)
        if len(seen) == 2:
            with project.transcript.open("a") as f:
                for block in ({"type": "text", "text": "Now."}, {"type": "tool_use", "id": late}):
                    f.write(json.dumps({"type": "assistant", "message": {"content": [block]}}))
                    f.write("\n")

    clock = SimpleNamespace(monotonic=time.monotonic, sleep=sleep)
    monkeypatch.setattr(transcript, "time", clock)
    monkeypatch.setattr(transcript, "WAIT_SECONDS", 3600.0)  # only the line ends the wait
    answer = project.pre("Read", late)
    assert answer.exit_code == 0
    assert len(seen) >= 2 and not any(seen)  # it waited, and never inside a transaction
    assert project.ingested()[-1] == "transcript"


def test_a_decision_that_fails_takes_the_prose_back_and_the_next_call_reads_it_again(
    project: _Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One transaction: all or nothing. The hook fails closed on the first call; the
    prose is ingested once, by the next one."""
    before = len(project.ingested())
    real = Gatekeeper.authorize
    calls: list[int] = []

    def authorize(self: Gatekeeper, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise StoreBusyError("the store is busy (a test)")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Gatekeeper, "authorize", authorize)
    use = project.say("Then an edit, with prose before it.")
    failed = project.pre("Edit", use)
    assert "deny" in json.dumps(failed.stdout)  # fail closed
    assert len(project.ingested()) == before  # the prose went back with the decision
    project.pre("Edit", use)
    assert len(project.ingested()) == before + 1
