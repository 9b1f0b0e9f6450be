"""What a hook process asks of the disk, counted with strace (issue 28).

A steady-state read changes nothing durable: its PreToolUse must not wait for the disk at
all. A decision that allows a mutation, an applied stamp and a recorded result are durable:
each commit syncs the WAL once (plus, once per process, the home directory: SQLite syncs
the directory of a WAL it opened with create rights on its first sync). And no hook
process deletes and re-creates ``ledger.db-wal`` / ``-shm``: they stay for the next one.
The session is shaped like real use (``bench/session.py``): a transcript, a grounded
5-claim ledger with applied stamps, the installed ``.claude/infomark-hook`` launcher.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from bench.session import CASES, RealSession

STRACE = shutil.which("strace")
pytestmark = pytest.mark.skipif(
    STRACE is None, reason="STRACE NOT INSTALLED: the hook's syscalls are not counted"
)

# case -> (fsync + fdatasync calls, why)
SYNCS = {
    "PreToolUse Read": (0, "a read's allow: nothing durable changes"),
    "PreToolUse Read after prose": (0, "prose holds no block: read again if lost, no fsync"),
    # one commit for the prose and the allow, begun relaxed and fsync'd by infomark once the
    # allow asked for the disk: the WAL alone (SQLite's own first sync adds its directory;
    # the WAL is never deleted, so its entry is long on disk)
    "PreToolUse Edit after prose": (1, "the prose and the allow: one commit, the WAL synced"),
    "PreToolUse Edit": (2, "an allowed mutation: one durable commit (WAL + its directory)"),
    "PreToolUse Bash": (2, "an allowed execute may mutate: one durable commit"),
    "PreToolUse after an applied stamp": (2, "the stamp's commit; the Read's allow: none"),
    # a small output is a row committed with its evidence: no blob file to fsync first
    "PostToolUse Bash result": (2, "one durable commit, the output in it (WAL + dir)"),
    "PostToolUse Read result": (2, "one durable commit, the output in it (WAL + dir)"),
}
_SYNC = re.compile(r"\b(fsync|fdatasync|syncfs|sync_file_range)\(")
_UNLINK = re.compile(r'\bunlink(?:at)?\((?:AT_FDCWD, )?"([^"]+)"')
_LOADED = re.compile(
    r'\bopenat\(AT_FDCWD, "[^"]*/infomark/([^"]+?)\.(?:cpython-\d+\.pyc|py)", O_RDONLY'
)
# What a line of prose (no block) before a call must not load: the parser and the gate
# machine with its finish rules (~1.5 M instructions of imports: "Edit after prose" went
# from 4.68x to 4.48x bare Python when the check and the position tracking moved out).
_NOT_FOR_PROSE = ("ledger/parse/", "gates/machine", "gates/moves", "gates/finalize")  # fmt: skip


def _restart_wal(s: RealSession) -> None:
    """Checkpoint the WAL now, then let one hook call restart it (that call writes and syncs
    the WAL header): the measured call then starts far below the hook's checkpoint size
    (``journal._HOOK_WAL_PAGES``), whose own syncs are not what is counted here."""
    db = sqlite3.connect(s.home / "ledger.db")
    try:
        busy, _log, _done = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        db.close()
    assert busy == 0
    use = s.next_use()
    s.run(s.payload("PreToolUse", "Grep", {"pattern": "x", "path": str(s.project)}, use))


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> RealSession:
    s = RealSession(tmp_path_factory.mktemp("syscalls"))
    s.ground()
    return s


def _traced(s: RealSession, stdin: bytes, log: Path) -> tuple[list[str], list[str], str, set[str]]:
    assert STRACE is not None
    done = subprocess.run(
        [
            STRACE,
            "-f",
            "-qq",
            "-o",
            str(log),
            "-e",
            "trace=%file,fsync,fdatasync,syncfs,sync_file_range",
            *s.argv,
        ],
        input=stdin,
        capture_output=True,
        env=s.env,
        cwd=s.project,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = log.read_text().splitlines()
    syncs = [line for line in lines if _SYNC.search(line)]
    unlinked = [m.group(1) for line in lines for m in [_UNLINK.search(line)] if m]
    loaded = {
        m.group(1).replace("__pycache__/", "")
        for line in lines
        for m in [_LOADED.search(line)]
        if m
    }
    return syncs, unlinked, done.stdout.decode(), loaded


@pytest.mark.parametrize("case", list(SYNCS))
def test_syncs_per_hook_call_in_a_real_session(
    session: RealSession, case: str, tmp_path: Path
) -> None:
    expected, why = SYNCS[case]
    _restart_wal(session)
    stdin = CASES[case](session)
    wal = session.home / "ledger.db-wal"
    before = wal.stat().st_ino
    syncs, unlinked, out, _loaded = _traced(session, stdin, tmp_path / "strace.log")
    assert len(syncs) == expected, (why, syncs)
    assert not [u for u in unlinked if u.endswith(("-wal", "-shm"))], unlinked
    assert wal.stat().st_ino == before, "the WAL was deleted and re-created"
    assert (session.home / "ledger.db-shm").exists()
    assert '"deny"' not in out and '"ask"' not in out, out  # the grounded session proceeds


@pytest.fixture(scope="module")
def prose_session(tmp_path_factory: pytest.TempPathFactory) -> RealSession:
    """A session of its own: each case's prose is new to it (a message the session has
    already read is skipped, and would load nothing)."""
    s = RealSession(tmp_path_factory.mktemp("prose"))
    s.ground()
    return s


@pytest.mark.parametrize("case", ["PreToolUse Read after prose", "PreToolUse Edit after prose"])
def test_prose_before_a_call_loads_neither_the_parser_nor_the_gate_machine(
    prose_session: RealSession, case: str, tmp_path: Path
) -> None:
    stdin = CASES[case](prose_session)
    _syncs, _unlinked, out, loaded = _traced(prose_session, stdin, tmp_path / "strace.log")
    assert {"ledger/sniff", "gates/position"} <= loaded, sorted(loaded)  # it ran
    assert not [m for m in loaded if m.startswith(_NOT_FOR_PROSE)], sorted(loaded)
    assert '"deny"' not in out and '"ask"' not in out, out
