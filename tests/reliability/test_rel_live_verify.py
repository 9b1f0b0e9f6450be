"""``audit --verify`` on a session that is live: one snapshot, no false alarm (issue 28).

A writer process (``rel_hook_writer.py``) drives real hook calls into a session while the
audit verifies it. Each verification waits, after it has read the session's rows and
before it reads the head, until the writer has committed again: the moment where reading
rows and head at different moments made every run report "events were removed". The
synchronisation is through the writer's stdout (the head it committed) and a fresh read of
the store, never a sleep. The same live session still reports every real tamper.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
from rel_support import run_cli
from store_backends import Backend

from infomark.ledger.audit import build_audit, verify_session
from infomark.ledger.engine import Ledger

WRITER = Path(__file__).with_name("rel_hook_writer.py")
SESSION = "live"


class Writer:
    """The live session's writer process and the heads it reports."""

    def __init__(self, tmp: Path) -> None:
        self.project = tmp / "project"
        self.project.mkdir()
        self.home = self.project / ".infomark"
        self.proc = subprocess.Popen(
            [sys.executable, str(WRITER), str(self.home), str(self.project), SESSION],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=self.project,
        )
        assert self.proc.stdout is not None
        self.out: IO[str] = self.proc.stdout
        self.head = 0

    def committed_past(self, seq: int) -> int:
        """Block until the writer reports a committed head past ``seq``; that head."""
        while self.head <= seq:
            line = self.out.readline()
            assert line, f"the writer exited ({self.proc.wait()})"
            self.head = int(line)
        return self.head

    def stop(self) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        self.out.read()
        assert self.proc.wait(timeout=60) == 0


@pytest.fixture
def writer(tmp_path: Path, backend: Backend) -> Iterator[Writer]:
    w = Writer(tmp_path)
    try:
        w.committed_past(0)
        yield w
    finally:
        if w.proc.poll() is None:
            w.stop()


def _committed_head(backend: Backend, home: Path) -> int:
    """The head as committed now (a fresh connection: not the audit's snapshot)."""
    rows = backend.rows(home, "SELECT seq FROM heads WHERE session = ?", (SESSION,))
    return int(rows[0][0]) if rows else 0


def test_verify_a_live_session_100_times_without_a_false_alarm(
    writer: Writer, backend: Backend
) -> None:
    overlapped = 0
    with Ledger(writer.home, SESSION) as led:
        for _ in range(100):
            seen: list[int] = []

            def commit_meanwhile(done: int, total: int, seen: list[int] = seen) -> None:
                # rows are read; before the head is: the writer commits once more
                now = _committed_head(backend, writer.home)
                seen.append(writer.committed_past(now))

            problems = verify_session(led, progress=commit_meanwhile)
            assert problems == [], [p.to_dict() for p in problems[:3]]
            assert seen, "the progress hook never ran: the race was not exercised"
            overlapped += 1
        report = build_audit(led, progress=lambda d, t: None)  # the report: one snapshot too
        assert report.verified is True and report.problems == []
    assert overlapped == 100
    # the real command, while the writer goes on
    proc = run_cli("audit", "--verify", "--json", "--home", str(writer.home), "--session", SESSION)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert json.loads(proc.stdout)["verified"] is True


def _edit_event(backend: Backend, home: Path) -> None:
    backend.sql(
        home,
        ("UPDATE events SET payload = ? WHERE session = ? AND seq = 3", ('{"x":1}', SESSION)),
    )


def _drop_last_event(backend: Backend, home: Path) -> None:
    last = _committed_head(backend, home)
    backend.sql(home, ("DELETE FROM events WHERE session = ? AND seq = ?", (SESSION, last)))


def _drop_evidence(backend: Backend, home: Path) -> None:
    rows = backend.rows(home, "SELECT ref FROM evidence WHERE session = ? ORDER BY seq", (SESSION,))
    backend.sql(home, ("DELETE FROM evidence WHERE ref = ?", (rows[0][0],)))


def _roll_head_back(backend: Backend, home: Path) -> None:
    seq = _committed_head(backend, home) - 1
    (h,) = backend.rows(
        home, "SELECT hash FROM events WHERE session = ? AND seq = ?", (SESSION, seq)
    )[0]
    backend.sql(home, ("UPDATE heads SET seq = ?, hash = ? WHERE session = ?", (seq, h, SESSION)))


TAMPERS = {
    "edited event": (_edit_event, {"edited"}),
    "tail event deleted": (_drop_last_event, {"missing", "reordered"}),
    "evidence row deleted": (_drop_evidence, {"evidence"}),
    "head rolled back": (_roll_head_back, {"missing", "head"}),
}


@pytest.mark.parametrize("form", sorted(TAMPERS))
def test_a_live_session_still_reports_each_tamper(
    writer: Writer, backend: Backend, form: str
) -> None:
    tamper, codes = TAMPERS[form]
    writer.committed_past(12)  # a few rounds: evidence, decisions, the ledger
    tamper(backend, writer.home)
    with Ledger(writer.home, SESSION) as led:
        for _ in range(3):  # the writer keeps going meanwhile (its hooks may now fail closed)
            problems = verify_session(led)
            found = {p.code for p in problems}
            assert found & codes, (form, [p.to_dict() for p in problems[:4]])
