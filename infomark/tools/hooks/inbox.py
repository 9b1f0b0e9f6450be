"""The steering inbox of a Claude Code session, from its hooks (standard library only).

Each hook event but PreToolUse checks the session in: it holds the session's inbox lease
(kind ``claude-code``, no single process: a hook is a process per event, so the lease lives
by its heartbeat, 30 minutes, renewed at most once a minute), so ``infomark send`` delivers
to it while the session's hooks keep coming. At ``UserPromptSubmit`` and ``PostToolUse``
pending messages are appended to the hook's ``additionalContext`` (as many as fit; the rest
wait for the next event, never cut). ``SessionEnd`` releases the lease (later sends:
``finished``). A live lease of another runtime (``infomark run`` on the same session id) is
left alone. Never raises: the inbox must not break a hook.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


if TYPE_CHECKING:
    from infomark.gatekeeper import Gatekeeper

__all__ = ["CLAUDE_TTL", "steer"]

CLAUDE_TTL = 1800.0
_BEAT_EVERY = 60.0
_DELIVER = ("UserPromptSubmit", "PostToolUse")
_MAX_CONTEXT = 9_500


def steer(gk: Gatekeeper, event: str, stdout: dict[str, Any] | None) -> dict[str, Any] | None:
    """Check the session in; return ``stdout`` with pending messages added to its context."""
    if event in ("PreToolUse", "PermissionRequest"):
        return stdout  # the decision path stays as it was
    try:
        return _steer(gk, event, stdout)
    except Exception:  # the hook's answer matters more than the inbox
        return stdout


def _steer(gk: Gatekeeper, event: str, stdout: dict[str, Any] | None) -> dict[str, Any] | None:
    from infomark.ledger.inbox import Inbox

    session = gk.session
    holder = f"claude-code:{session}"
    inbox = gk._inbox
    if not isinstance(inbox, Inbox):  # kept on the session (closed with it): one connection
        inbox = gk._inbox = Inbox(gk.store.journal)
    lease = inbox.lease(session)
    mine = lease is not None and lease.holder == holder
    if event == "SessionEnd":
        if mine:
            inbox.release(session, holder, "session_end")
        return stdout
    now = inbox.clock()
    if mine and lease is not None and lease.state(now) == "live":
        if now - lease.heartbeat > _BEAT_EVERY:  # a write (fsync) at most once a minute
            inbox.heartbeat(session, holder)
    elif lease is None or lease.state(now) != "live":
        inbox.acquire(session, holder=holder, kind="claude-code", ttl=CLAUDE_TTL, pid=0)
    else:
        return stdout  # another runtime holds this session's inbox
    if event not in _DELIVER:
        return stdout
    out = dict(stdout or {})
    spec = dict(out.get("hookSpecificOutput") or {"hookEventName": event})
    context = str(spec.get("additionalContext") or "")
    room = _MAX_CONTEXT - len(context) - 200
    if room <= 0 or not inbox.pending(session):
        return stdout
    got = inbox.read(session, holder, where=event, max_chars=room)
    text = "\n\n".join(
        f"[operator message from {m.sender} via infomark send, #{m.id}]\n{m.text}" for m in got
    )
    spec["additionalContext"] = (context + "\n\n" + text if context else text)[:_MAX_CONTEXT]
    out["hookSpecificOutput"] = spec
    return out
