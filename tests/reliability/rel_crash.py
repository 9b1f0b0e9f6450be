"""Writer processes on one ledger home: SIGKILLed at seeded points, or racing to completion.

Each writer (``rel_writer.py``) prints the events of every call after the call has
committed. :func:`crash_campaign` starts writers, reads a seeded number of their
progress lines, SIGKILLs them (no sleeps: the kill follows the N-th line), and then
checks the home: every printed event exists with its type, every chain verifies, and
a fresh engine's state equals a full replay. :func:`race` runs writers to completion
at the same time and checks nothing was lost, duplicated or reported as "locked".
"""

from __future__ import annotations

import os
import random
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rel_support import HERE, child_env

from infomark.ledger.audit import verify_session
from infomark.ledger.engine import Ledger

__all__ = [
    "BAD_STDERR",
    "Printed",
    "Writer",
    "check_home",
    "crash_campaign",
    "kill_after",
    "race",
    "spawn_writer",
]

WRITER = HERE / "rel_writer.py"
_HANG_S = 120.0
BAD_STDERR = ("Traceback", "StoreError", "StoreBusyError", "OperationalError", "locked")

Printed = dict[tuple[str, int], str]  # (session, seq) -> event type


@dataclass
class Writer:
    session: str
    proc: subprocess.Popen[bytes]
    err_path: Path
    printed: Printed = field(default_factory=dict)
    lines: int = 0

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")


def spawn_writer(home: Path, session: str, seed: int, ops: int, err_path: Path) -> Writer:
    err: IO[bytes]
    with err_path.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, str(WRITER), str(home), session, str(seed), str(ops)],
            stdout=subprocess.PIPE,
            stderr=err,
            env=child_env(),
            cwd=home.parent,
        )
    return Writer(session, proc, err_path)


def _take(writer: Writer, line: bytes) -> None:
    parts = line.decode().split()
    session = parts[0]
    for item in parts[2:]:
        seq, _, type_ = item.partition(":")
        key = (session, int(seq))
        if key in writer.printed:
            raise AssertionError(f"{session} seq {seq} printed twice by one writer")
        writer.printed[key] = type_
    writer.lines += 1


def kill_after(crew: list[Writer], targets: dict[int, int]) -> Iterator[tuple[Writer, bool]]:
    """SIGKILL each writer as soon as its target number of lines has arrived.

    All pipes are read as data arrives (``selectors``), so no writer runs far past its kill
    point while another is being read; every complete line, also those that arrive after
    the kill, is taken. Yields ``(writer, exited_before_its_target)`` at each EOF.
    """
    sel = selectors.DefaultSelector()
    partial: dict[int, bytes] = {}
    killed: set[int] = set()
    for w in crew:
        assert w.proc.stdout is not None
        sel.register(w.proc.stdout, selectors.EVENT_READ, w)
        partial[id(w)] = b""
    pending = len(crew)
    deadline = time.monotonic() + _HANG_S
    while pending:
        if time.monotonic() > deadline:
            raise AssertionError(f"writers produced nothing for {_HANG_S}s")
        for key, _ in sel.select(timeout=5):
            w = key.data
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                pending -= 1
                yield w, id(w) not in killed
                continue
            deadline = time.monotonic() + _HANG_S
            *lines, partial[id(w)] = (partial[id(w)] + chunk).split(b"\n")
            for line in lines:
                _take(w, line + b"\n")
            if id(w) not in killed and w.lines >= targets[id(w)]:
                w.proc.send_signal(signal.SIGKILL)
                killed.add(id(w))
    sel.close()


def drain(writer: Writer) -> None:
    """Read the rest of a finished (or killed) writer's output."""
    assert writer.proc.stdout is not None
    for line in writer.proc.stdout:
        if line.endswith(b"\n"):
            _take(writer, line)
    writer.proc.stdout.close()


def check_home(home: Path, printed: Printed) -> list[str]:
    """What is wrong with the home: lost printed events, broken chains, state != replay."""
    problems: list[str] = []
    sessions = sorted({s for s, _ in printed})
    for session in sessions:
        with Ledger(home, session) as led:
            stored = {e.seq: e.type for e in led.journal.events(session)}
            for (s, seq), type_ in sorted(printed.items()):
                if s == session and stored.get(seq) != type_:
                    problems.append(
                        f"{s} seq {seq} ({type_}) printed but stored as {stored.get(seq)}"
                    )
            problems.extend(
                f"{session}: {p.code}@{p.seq}: {p.message}" for p in verify_session(led)
            )
            if led.state.to_dict() != led.replay().to_dict():
                problems.append(f"{session}: the fresh engine's state differs from a replay")
            if sorted(stored) != list(range(1, len(stored) + 1)):
                problems.append(f"{session}: seqs are not 1..{len(stored)}")
    return problems


def crash_campaign(
    base: Path, *, rounds: int, writers: int = 3, max_lines: int = 25, seed: int = 7
) -> dict[str, Any]:
    """``rounds`` rounds of start-writers / read N lines each / SIGKILL / check the home."""
    rng = random.Random(seed)
    home = base / "project" / ".infomark"
    home.parent.mkdir(parents=True, exist_ok=True)
    printed: Printed = {}
    problems: list[str] = []
    kills = lines = 0
    started = time.perf_counter()
    for r in range(rounds):
        crew = []
        for w in range(writers):
            session = "shared" if w < 2 else f"solo-{w}"
            crew.append(
                spawn_writer(home, session, rng.randrange(1 << 30), 0, base / f"err-{r}-{w}.txt")
            )
        targets = {id(w): rng.randint(1, max_lines) for w in crew}
        for writer, early in kill_after(crew, targets):
            kills += 1
            if early:  # the writer died on its own: that is a failure
                problems.append(f"round {r}: writer exited early: {writer.stderr()[-2000:]}")
        for writer in crew:
            writer.proc.wait()
            assert writer.proc.stdout is not None
            writer.proc.stdout.close()
            lines += writer.lines
            for key, type_ in writer.printed.items():
                if printed.setdefault(key, type_) != type_:
                    problems.append(f"{key} printed by two writers with different types")
        problems.extend(f"round {r}: {p}" for p in check_home(home, printed))
        if problems:
            break
    return {
        "rounds": rounds,
        "kills": kills,
        "calls_seen": lines,
        "events_printed": len(printed),
        "problems": problems,
        "seconds": time.perf_counter() - started,
    }


def race(
    base: Path, *, writers: int = 8, ops: int = 40, shared: int = 4, seed: int = 11
) -> dict[str, Any]:
    """``writers`` processes at once (``shared`` of them on one session), to completion."""
    rng = random.Random(seed)
    home = base / "project" / ".infomark"
    home.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    crew = [
        spawn_writer(
            home,
            "shared" if w < shared else f"own-{w}",
            rng.randrange(1 << 30),
            ops,
            base / f"race-err-{w}.txt",
        )
        for w in range(writers)
    ]
    problems: list[str] = []
    printed: Printed = {}
    for writer in crew:
        drain(writer)
        code = writer.proc.wait()
        err = writer.stderr()
        if code != 0 or any(bad in err for bad in BAD_STDERR):
            problems.append(f"writer {writer.session} exited {code}: {err[-2000:]}")
        if writer.lines != ops:
            problems.append(f"writer {writer.session} printed {writer.lines} of {ops} calls")
        for key in writer.printed:
            if key in printed:
                problems.append(f"{key} handed out twice")
        printed.update(writer.printed)
    problems.extend(check_home(home, printed))
    elapsed = time.perf_counter() - started
    return {
        "writers": writers,
        "calls": writers * ops,
        "events": len(printed),
        "problems": problems,
        "seconds": elapsed,
        "calls_per_s": writers * ops / elapsed,
    }
