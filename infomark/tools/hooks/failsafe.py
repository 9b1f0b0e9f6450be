"""How the Claude Code hook fails: closed when enforcing, open (and saying so) in observe.

Claude Code treats a hook that crashes, exits non-zero (other than 2), times out or prints
nothing as "no opinion": the tool call goes ahead. So every failure the hook can notice is
turned into an explicit answer here:

* PreToolUse: a mutating call (or one that cannot be classified) is denied with a reason
  that says what broke and how to fix it; a read-only call that touches nothing protected
  may proceed (with a note on stderr).
* Stop / SubagentStop: refused while the ledger cannot be read.
* Other events: no opinion, with the error on stderr (they cannot hold anything).
* ``observe``: everything proceeds, and stderr says the hook failed open.

Standard library only (hot path).
"""

from __future__ import annotations

import os

from infomark.kernel.digest import compare_digest
from infomark.kernel.errors import (
    ConfigError,
    KeyFileError,
    StoreBusyError,
    StoreError,
    VerificationError,
)
from infomark.kernel.profiles import Profile
from infomark.kernel.tools import ToolClass
from infomark.tools.hooks.answer import HookAnswer, block, deny

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

__all__ = [
    "KeyChangedError",
    "TailMemo",
    "TailRewrittenError",
    "WitnessMismatchError",
    "check_key",
    "check_tail",
    "explain",
    "failure_answer",
    "not_evidence",
    "released",
    "sniff_event",
    "unattended_host",
    "unreadable_answer",
]

_BLOCKING = ("PreToolUse", "Stop", "SubagentStop")
_EVENT_KEY = b'"hook_event_name"'  # then \s* : \s* " and 1-40 ASCII letters and "
_SPACE = b" \t\n\r\f\v"  # what \s matches in a bytes pattern
_LETTERS = frozenset(range(0x61, 0x7B))  # a-z; a byte | 0x20 is in it exactly for A-Z a-z
_UNATTENDED_MODES = ("bypassPermissions", "dontAsk")


class KeyChangedError(KeyFileError):
    """The key in the home is not the key that signed the journal."""

    code = "key_changed"


class WitnessMismatchError(VerificationError):
    """The host's transcript witnessed a journal head that the journal no longer has."""

    code = "witness_mismatch"


def sniff_event(raw: bytes) -> str | None:
    """The ``hook_event_name`` of a payload too broken to parse (deep, truncated), if visible."""
    # what rb'"hook_event_name"\s*:\s*"([A-Za-z]{1,40})"' finds, first match wins, without
    # a regex compile on every hook call; a property test holds the two equal
    raw = raw[: 1 << 20]
    n = len(raw)
    at = raw.find(_EVENT_KEY)
    while at >= 0:
        i = at + len(_EVENT_KEY)
        while i < n and raw[i] in _SPACE:
            i += 1
        if i < n and raw[i] == 0x3A:  # :
            i += 1
            while i < n and raw[i] in _SPACE:
                i += 1
            if i < n and raw[i] == 0x22:  # "
                start = end = i + 1
                while end < n and end - start <= 40 and (raw[end] | 0x20) in _LETTERS:
                    end += 1
                if 0 < end - start <= 40 and end < n and raw[end] == 0x22:
                    return raw[start:end].decode()
        at = raw.find(_EVENT_KEY, at + 1)
    return None


def check_key(journal: Any) -> None:
    """Refuse a key that did not sign the journal's latest row (replaced, or deleted and
    silently re-created): every stamp and MAC would otherwise restart under a new key."""
    row = journal._db.execute("SELECT key_id FROM events ORDER BY rowid DESC LIMIT 1").fetchone()
    if row is not None and str(row[0]) != journal.key.key_id:
        home = os.path.dirname(journal.path)
        raise KeyChangedError(
            f"the key in {home} (id {journal.key.key_id}) is not the key that "
            f"signed the journal (id {row[0]}): it was replaced or deleted. Restore the original "
            "key file (mode 600), or move the home aside and start a new one with `infomark init`"
        )


_ROW_SQL = (
    "SELECT seq, type, payload, ts, prev_hash, hash, mac, key_id FROM events "
    "WHERE session = ? AND seq > ? ORDER BY seq"
)


class TailMemo:
    """What one check of a session's tail verified, on one journal handle (a pooled session
    keeps it between calls): the snapshot it started from, every row after it (as stored),
    the head, and SQLite's ``data_version`` when it began."""

    __slots__ = ("anchor", "foreign", "head", "journal", "key_id", "last", "prev", "rows",
                 "session", "snap", "start", "version")  # fmt: skip

    def __init__(
        self,
        journal: Any,
        session: str,
        version: int | None,
        snap: tuple[Any, ...] | None,
        start: tuple[int, str],
        rows: tuple[tuple[Any, ...], ...],
        head: tuple[int, str, str] | None,
        last: int,
        prev: str,
        foreign: int | None = None,
    ) -> None:
        self.journal, self.session, self.key_id = journal, session, journal.key.key_id
        self.version, self.snap, self.rows, self.head = version, snap, rows, head
        self.foreign = foreign  # the journal's foreign_commits() when the check began
        self.start, self.anchor = start  # the row the chain continues from, and its hash
        self.last, self.prev = last, prev


class TailRewrittenError(VerificationError):
    """Rows this process verified earlier are no longer in the journal as they were."""

    code = "tail_rewritten"


def check_tail(journal: Any, session: str, memo: TailMemo | None = None) -> TailMemo:
    """Verify what the projection is built from: the rows after the last valid snapshot
    (hash chain, MAC, gap-free seq) and the MACed head. A garbled or edited row would
    otherwise be skipped in silence and could drop the claim_ledger that holds the gate.
    Costs at most one snapshot interval of HMACs.

    The rows and the head are two reads, and other hooks of the session append between
    them (Claude Code runs the hooks of parallel tool calls at the same time): rows and head
    commit together and the head is read second, so a head past the last row read means
    rows committed since; they are read and verified too. A head behind the rows, or rows
    that never catch up with it, is a mismatch.

    ``memo``: what an earlier call verified on this same journal handle (the HTTP service's
    pooled session). Then only the rows appended since are verified (chain, MAC, head);
    the rows it verified before are compared with what is stored now, byte for byte, unless
    SQLite's ``data_version`` says no other connection has committed since (this handle
    never rewrites a row, so nothing it verified can have changed) or, under the HTTP
    service's group commit (instead of ``data_version``), the process's write gate says
    every commit since was one of its own sessions' appends
    (:meth:`~infomark.ledger.store.journal.Journal.foreign_commits`: a commit by another
    process or another connection always moves that count). A verified row that
    changed or went missing, or a head behind it, raises :class:`TailRewrittenError`, and
    keeps raising: the memo is not replaced by a failed check. A new snapshot starts a
    full check (once per snapshot interval), which must still hold every verified row that
    is past it. Returns the memo of this check."""
    version = _data_version(journal)
    foreign = journal.foreign_commits() if version is not None else None
    if memo is None or memo.journal is not journal or memo.session != session:
        return _full_check(journal, session, version, foreign)
    if memo.key_id != journal.key.key_id:
        return _full_check(journal, session, version, foreign)
    snap = _snapshot_id(journal, session)
    if snap != memo.snap:
        fresh = _full_check(journal, session, version, foreign)
        _still_there(memo, fresh)
        return fresh
    # Either signal alone vouches for the rows verified, never the two mixed: they are read
    # at different moments, and an outside commit between them would be in one memo's count
    # and not its data_version (tests/security/test_pooled_tail.py). Under the write gate its
    # count alone; without it, data_version.
    same = version == memo.version if foreign is None else foreign == memo.foreign
    if version is not None and same:
        # No other connection committed since, or only this process's own sessions (which
        # append, never rewrite): of the rows verified, re-read the last one
        known = memo.rows[-1:]
        after = memo.last - len(known)
    else:  # another connection committed: every row verified before must be unchanged
        known, after = memo.rows, memo.start
        if _start_hash(journal, session, memo.start) != memo.anchor:
            _rewritten(memo, memo.start)
    rows = journal._db.execute(_ROW_SQL, (session, after)).fetchall()
    if tuple(tuple(r) for r in rows[: len(known)]) != known:
        _rewritten(memo, _first_changed(known, rows))
    prev, last, verified, head = _verify_tail(
        journal, session, rows[len(known) :], memo.prev, memo.last, memo.head
    )
    rows_now = memo.rows + verified
    anchor = (memo.start, memo.anchor)
    return TailMemo(journal, session, version, snap, anchor, rows_now, head, last, prev, foreign)


def _full_check(
    journal: Any, session: str, version: int | None, foreign: int | None = None
) -> TailMemo:
    snap_id = _snapshot_id(journal, session)  # read first: a snapshot saved after it differs
    snap = journal.load_snapshot(session)
    start = snap[0] if snap is not None else 0
    anchor = _start_hash(journal, session, start)
    rows = journal._db.execute(_ROW_SQL, (session, start)).fetchall()
    prev, last, verified, head = _verify_tail(journal, session, rows, anchor, start, None)
    return TailMemo(
        journal, session, version, snap_id, (start, anchor), verified, head, last, prev, foreign
    )


def _start_hash(journal: Any, session: str, start: int) -> str:
    from infomark.ledger.store.journal import GENESIS

    if not start:
        return GENESIS
    row = journal._db.execute(
        "SELECT hash FROM events WHERE session = ? AND seq = ?", (session, start)
    ).fetchone()
    if row is None:
        raise VerificationError(f"event {start} of session {session} is missing")
    return str(row[0])


def _verify_tail(
    journal: Any,
    session: str,
    rows: list[Any],
    prev: str,
    last: int,
    known_head: tuple[int, str, str] | None,
) -> tuple[str, int, tuple[tuple[Any, ...], ...], tuple[int, str, str] | None]:
    """Verify ``rows`` (read after ``(last, prev)``), then the head, reading the rows other
    writers commit in between; ``(prev, last, rows verified, head)``."""
    verified: list[tuple[Any, ...]] = []
    head = None
    for _ in range(_CATCH_UP):
        prev, last = _verify_rows(journal, session, rows, prev, last)
        verified.extend(tuple(r) for r in rows)
        if head is not None and last < head[0]:
            break  # rows below a head read before them are missing: a mismatch
        head = journal.head_row(session)
        if head is None or head[0] <= last:
            break  # nothing was committed between the two reads
        rows = journal._db.execute(_ROW_SQL, (session, last)).fetchall()
    if head is None:
        if last:
            raise VerificationError(f"the head of session {session} is missing")
        return prev, last, tuple(verified), None
    seq, hash_, mac = head
    if (
        seq != last
        or hash_ != prev
        or (head != known_head and not compare_digest(journal.head_mac(session, seq, hash_), mac))
    ):
        raise VerificationError(
            f"the head of session {session} (seq {seq}) does not match its last event "
            f"(seq {last}): the journal was truncated or rewritten; run `infomark audit --verify`"
        )
    return prev, last, tuple(verified), head


def _data_version(journal: Any) -> int | None:
    """SQLite's count of commits by other connections, as this handle sees it (else None)."""
    if getattr(journal, "kind", None) != "sqlite":
        return None
    return int(journal._one("PRAGMA data_version")[0])


def _snapshot_id(journal: Any, session: str) -> tuple[Any, ...] | None:
    row = journal._one("SELECT seq, mac FROM snapshots WHERE session = ?", (session,))
    return tuple(row) if row is not None else None


def _still_there(memo: TailMemo, fresh: TailMemo) -> None:
    """Every row ``memo`` verified that ``fresh`` covers is in it unchanged, and none is gone."""
    if memo.last > fresh.last:
        _rewritten(memo, fresh.last + 1)
    known = tuple(r for r in memo.rows if r[0] > fresh.start)
    if known and _first_changed(known, list(fresh.rows)) is not None:
        _rewritten(memo, _first_changed(known, list(fresh.rows)))


def _first_changed(known: tuple[tuple[Any, ...], ...], rows: list[Any]) -> int | None:
    """The seq of the first row of ``known`` that ``rows`` do not hold unchanged."""
    now = {r[0]: tuple(r) for r in rows}
    return next((int(r[0]) for r in known if now.get(r[0]) != r), None)


def _rewritten(memo: TailMemo, seq: int | None) -> None:
    seq = memo.last if seq is None else seq
    raise TailRewrittenError(
        f"event {seq} of session {memo.session}, verified earlier by this process, was "
        "changed or removed since: the journal was rewritten or rolled back behind its "
        "back; run `infomark audit --verify`"
    )


_CATCH_UP = 20  # rounds of rows committed by other writers while the tail is checked


def _verify_rows(
    journal: Any, session: str, rows: list[Any], prev: str, last: int
) -> tuple[str, int]:
    """Check ``rows`` continue the chain after ``(last, prev)``; the new ``(prev, last)``."""
    from infomark.ledger.store.journal import event_hash

    for seq, type_, payload, ts, prev_hash, hash_, mac, kid in rows:
        recomputed = event_hash(prev, session, seq, type_, payload, ts, kid)
        if (
            seq != last + 1
            or prev_hash != prev
            or recomputed != hash_
            or not journal.key.verify(str(hash_).encode(), str(mac))
        ):
            raise VerificationError(
                f"event {seq} of session {session} does not verify (edited, deleted or "
                "corrupted); run `infomark audit --verify`"
            )
        prev, last = str(hash_), last + 1
    return prev, last


def explain(exc: BaseException, home: StrPath) -> str:
    """What broke, in one sentence, and what the user can do about it."""
    if isinstance(exc, KeyChangedError):
        return str(exc)
    if isinstance(exc, KeyFileError):
        return f"infomark's key is unusable: {exc}"
    if isinstance(exc, StoreBusyError):
        db = os.path.join(home, "ledger.db")
        return (
            f"the ledger {db} is locked by another process: {exc}. Find it with "
            f"`fuser {db}` and stop it"
        )
    if isinstance(exc, WitnessMismatchError) or getattr(exc, "code", "") == "integrity_failed":
        return str(exc)
    if isinstance(exc, StoreError | VerificationError):
        from infomark.ledger.home import journal_recovery as recovery

        return (
            f"the ledger in {home} cannot be read: {exc}. Run `infomark audit --verify` to see "
            f"what is wrong; to recover: {recovery(home)}"
        )
    if isinstance(exc, ConfigError):
        return f"infomark's configuration is invalid: {exc}"
    if isinstance(exc, OSError):
        return f"infomark cannot use its home {home}: {exc}"
    if isinstance(exc, ImportError):  # the installation moved under the hook (a rebuilt venv)
        return (
            f"infomark cannot import {exc.name or 'a module it needs'} ({str(exc)[:200]}): its "
            "installation changed since the hook was installed; re-run "
            "`infomark install claude-code` in the environment infomark is installed in"
        )
    return (
        f"infomark hit an internal error ({type(exc).__name__}: {str(exc)[:300]}); "
        "run `infomark audit --verify` and report it"
    )


def _read_only(payload: dict[str, Any], home: StrPath, root: StrPath) -> bool:
    """Whether the call only reads and touches nothing protected (judged with the defaults)."""
    try:
        from infomark.gates.classify import classify_tool
        from infomark.gates.protect import protected

        name = payload.get("tool_name")
        tool_input = payload.get("tool_input")
        if not isinstance(name, str) or not isinstance(tool_input, dict):
            return False
        cwd = payload.get("cwd")
        cwd = cwd if isinstance(cwd, str) and cwd else None
        c = classify_tool(name, tool_input, cwd=cwd)
        if c.tool_class.mutates or c.tool_class in (ToolClass.EXECUTE, ToolClass.UNKNOWN):
            return False
        return protected(name, tool_input, c, home=home, root=root, cwd=cwd) is None
    except Exception:
        return False


def failure_answer(
    event: str | None,
    payload: object,
    profile: Profile,
    why: str,
    *,
    home: StrPath,
    root: StrPath,
) -> HookAnswer:
    """The answer to ``event`` when the gatekeeper could not judge it (``why`` says why)."""
    if event in _RESULTS:  # in every profile: the model must know its result proves nothing
        return HookAnswer(
            {
                "hookSpecificOutput": {
                    "hookEventName": event,
                    "additionalContext": not_evidence(why),
                }
            },
            stderr=f"infomark ({profile}): {why}; the result was not recorded",
        )
    if not profile.enforcing:
        return HookAnswer(stderr=f"infomark ({profile}): {why}; failing open (observe profile)")
    if event == "PreToolUse":
        if isinstance(payload, dict) and _read_only(payload, home, root):
            return HookAnswer(stderr=f"infomark: {why}; a read-only call may proceed")
        return deny(
            f"infomark cannot judge this call, so it is denied (profile {profile}): {why}. "
            "Read-only tools still work; ask the user to fix this, then retry.",
            stderr=f"infomark: {why}; failing closed",
        )
    if event in ("Stop", "SubagentStop"):
        if released(event, payload):
            return HookAnswer(
                {"systemMessage": f"infomark: finished UNVERIFIED: {why}"[:9_500]},
                stderr=f"infomark: {why}; the stop was refused once, so this one goes through "
                "UNVERIFIED (the host would otherwise loop)",
            )
        return block(
            f"infomark cannot read its ledger, so it cannot check this finish (profile "
            f"{profile}): {why}. Tell the user what broke. This stop is refused; if it is "
            "still broken at your next stop, that one goes through, recorded as UNVERIFIED.",
            stderr=f"infomark: {why}; refusing the stop",
        )
    if event is None:  # not even the event is known: exit 2 blocks whatever can be blocked
        return HookAnswer(exit_code=2, stderr=f"infomark: {why}; failing closed")
    return HookAnswer(stderr=f"infomark: {why}")


_RESULTS = ("PostToolUse", "PostToolUseFailure")


def released(event: str | None, payload: object) -> bool:
    """Whether a Stop the gatekeeper cannot judge goes through: the host says it is already
    continuing because a stop hook refused (``stop_hook_active``: Claude Code, Codex, and
    Gemini CLI's AfterAgent retry). The journal's refusal cap cannot count when the journal
    is what broke, so the host's own flag is the cap: one refusal, then an UNVERIFIED stop,
    never an endless loop."""
    return (
        event in ("Stop", "SubagentStop")
        and isinstance(payload, dict)
        and payload.get("stop_hook_active") is True
    )


def not_evidence(why: str) -> str:
    """What the model is told when its tool result could not be recorded."""
    return (
        f"[infomark: no evidence for this result (hook_error): {why}. This result was not "
        "recorded, so it cannot ground a claim or back a stamp. To get evidence, run the call "
        "again so that it prints less (e.g. filter or summarise its output in the command)]"
    )[:9_500]


def unreadable_answer(
    event: str | None, profile: Profile, detail: str, *, home: StrPath, root: StrPath
) -> HookAnswer:
    why = f"the hook input is not a usable Claude Code payload ({detail})"
    return failure_answer(event, None, profile, why, home=home, root=root)


def unattended_host(payload: dict[str, Any]) -> str | None:
    """Why nobody can answer an ``ask`` in this run, or None when someone can.

    Claude Code's ``permission_mode`` ``bypassPermissions`` / ``dontAsk``, or print mode
    (``-p``: ``CLAUDE_CODE_SESSION_ATTENDED=0``, or an SDK entry point with no terminal).
    """
    mode = payload.get("permission_mode")
    if mode in _UNATTENDED_MODES:
        return f"permission_mode {mode}"
    if os.environ.get("CLAUDE_CODE_SESSION_ATTENDED") == "0":
        return "an unattended Claude Code session (-p)"
    if os.environ.get("CLAUDE_CODE_ENTRYPOINT", "").startswith("sdk") and not _has_tty():
        return "Claude Code in print mode (-p) without a terminal"
    return None


def _has_tty() -> bool:
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def event_can_block(event: str | None) -> bool:
    return event in _BLOCKING
