"""A quick integrity check of a home's journal, and the mark that keeps hooks out of it.

:func:`quick_verify` checks what a full ``infomark audit --verify`` would take long for:
SQLite's own ``PRAGMA quick_check`` (a page garbled on disk), then, per session, the hash
chain and MACs of the first :data:`HEAD_ROWS` events (the head of the journal: where the
ledger a session runs under is declared) and of the rows after the last snapshot up to the
MACed head (the tail). ``infomark doctor`` runs it; the Claude Code hook runs it when a
session starts. A failure is written to ``<home>/integrity-failed`` (0600); while that mark
is there every hook fails closed (mutations denied, Stop refused) with the reason and the
recovery commands, instead of writing into a store that does not verify
(docs/reliability.md#a-journal-that-fails-its-check). ``infomark doctor`` removes the mark
once the journal passes again.
"""

from __future__ import annotations

import os

from infomark.kernel.errors import InfomarkError, StoreError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

__all__ = [
    "HEAD_ROWS",
    "MARK",
    "IntegrityFailedError",
    "check_mark",
    "clear_mark",
    "integrity_findings",
    "quick_verify",
    "recovery",
    "write_mark",
]

HEAD_ROWS = 64
MARK = "integrity-failed"
PRAGMA_MAX_BYTES = 256 * 1024 * 1024  # the hook's SessionStart skips the page check above it


class IntegrityFailedError(StoreError):
    """The journal failed its quick integrity check: no hook writes into it."""

    code = "integrity_failed"


def recovery(home: StrPath) -> str:
    """The commands that bring a home back (docs/reliability.md)."""
    from infomark.ledger.home import journal_recovery

    return journal_recovery(home)


def _pragma(journal: Any) -> str | None:
    db = getattr(journal, "_db", None)
    if db is None or not hasattr(journal, "path"):
        return None  # PostgreSQL: its own checksums; the chain below still runs
    try:
        rows = db.execute("PRAGMA quick_check").fetchall()
    except Exception as exc:  # a malformed file can fail the check itself
        return f"SQLite cannot check {journal.path}: {exc}"
    found = [str(r[0]) for r in rows]
    if found != ["ok"]:
        lines = [line.strip() for f in found for line in f.splitlines() if line.strip()]
        more = f" (and {len(lines) - 4} more)" if len(lines) > 4 else ""
        return f"SQLite's quick_check of {journal.path} failed: " + "; ".join(lines[:4]) + more
    return None


def quick_verify(journal: Any, *, pages: bool = True) -> list[str]:
    """Problems found in the journal (empty: it passes): the page check (``pages``), then
    the head and the tail of every session's chain."""
    from infomark.ledger.store.journal import GENESIS, Journal
    from infomark.tools.hooks.failsafe import _ROW_SQL, _full_check, _verify_rows

    problems: list[str] = []
    if pages and isinstance(journal, Journal):
        bad = _pragma(journal)
        if bad:
            return [bad]
    try:
        sessions = list(journal.known_sessions())
    except Exception as exc:
        return [f"the journal's sessions cannot be listed: {exc}"]
    sqlite = isinstance(journal, Journal)  # PostgreSQL: the tail check only (as every hook does)
    for session in sessions:
        try:
            if sqlite:
                rows = journal._db.execute(_ROW_SQL, (session, 0)).fetchmany(HEAD_ROWS)
                _verify_rows(journal, session, rows, GENESIS, 0)
            _full_check(journal, session, None)
        except (InfomarkError, Exception) as exc:
            problems.append(f"session {session}: {exc}")
    return problems


def _mark_path(home: StrPath) -> str:
    return os.path.join(os.fspath(home), MARK)


def write_mark(home: StrPath, problems: list[str]) -> None:
    """Record that the journal failed (0600); hooks fail closed until it is cleared."""
    path = _mark_path(home)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(problems)[:4000] + "\n")


def clear_mark(home: StrPath) -> bool:
    """Remove the mark (the journal passes again); True when there was one."""
    try:
        os.unlink(_mark_path(home))
    except FileNotFoundError:
        return False
    return True


def check_mark(home: StrPath) -> None:
    """Raise :class:`IntegrityFailedError` while the home is marked as failing (one stat)."""
    path = _mark_path(home)
    if not os.path.lexists(path):
        return
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            why = f.read(2000).strip().splitlines()
    except OSError:
        why = []
    raise IntegrityFailedError(
        f"the ledger in {os.fspath(home)} failed its integrity check"
        + (f" ({why[0]})" if why else "")
        + ", so nothing is written into it: "
        + recovery(home)
    )


def integrity_findings(home: StrPath) -> list[Any]:
    """``infomark doctor``'s journal check: the quick verify; a failure marks the home (the
    hooks then fail closed), a pass clears an earlier mark."""
    from infomark.ledger.keys import load_key
    from infomark.ledger.store.journal import Journal
    from infomark.tools.doctor import Finding

    db = os.path.join(os.fspath(home), "ledger.db")
    if not os.path.isfile(db):
        return []  # no SQLite journal here (none yet, or a PostgreSQL store)
    try:
        journal = Journal(db, load_key(home, create=False))
    except Exception as exc:
        problems = [f"the journal cannot be opened: {exc}"]
    else:
        try:
            problems = quick_verify(journal)
        finally:
            journal.close()
    if problems:
        write_mark(home, problems)
        return [
            Finding(
                "home",
                "journal_integrity",
                "problem",
                "the journal failed its quick check: " + "; ".join(problems[:3]) + " (the "
                "hooks fail closed until it passes)",
                recovery(home),
            )
        ]
    cleared = clear_mark(home)
    note = " (the earlier failure mark is cleared)" if cleared else ""
    return [
        Finding(
            "home", "journal_integrity", "ok", f"the journal's pages, head and tail verify{note}"
        )
    ]
