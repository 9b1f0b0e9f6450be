"""A PreToolUse's wait for its transcript line, on the HTTP service's event loop, off the lane.

Claude Code writes its transcript in the background: at PreToolUse the line holding the
call's ``tool_use`` (after the assistant text whose claim ledger the decision must count) can
lag by tens of milliseconds. The command hook waits for it, polling the file, for at most
:data:`~infomark.tools.hooks.transcript.WAIT_SECONDS`. In the service that wait ran inside the
pooled call: on the event loop (a short call) it held every other session until the line
came, up to half a second; in a worker thread it held the lane for its lease. Here the
service waits before the call takes its turn, with ``await``: the loop serves the other
sessions meanwhile. The call then reads the transcript without waiting (``transcript_wait``
0): the line is there, or the bound is spent, as the command hook's would be.

The wait is a hint, never the judge: the call's own read decides what was written, and
:func:`~infomark.tools.hooks.transcript.find_tool_use` answers as that read would. Each look
starts where the last one stopped, so a transcript that grows fast (a process the agent left
appending to it) is read once, not once a poll. And the wait tells the pool what the read
will cost: past :data:`BACKLOG` bytes since the session's cursor (a huge tool result, a
transcript the agent padded) the call runs in a worker thread, not on the loop, and the loop
does not read it at all. A transcript that is not a regular file (a FIFO the agent put in its
place would block the read that opens it) is never opened: it reads as nothing.
"""

from __future__ import annotations

import asyncio
import os
import stat
from typing import Any

from infomark.tools.hooks.transcript import WAIT_SECONDS, find_tool_use
from infomark.tools.protocol import SessionLike

__all__ = ["BACKLOG", "POLL_SECONDS", "TranscriptWait"]

POLL_SECONDS = 0.005
"""How often the wait looks at the transcript's size (a ``stat``); it reads only a grown file."""

BACKLOG = 1 << 20
"""Bytes since the session's cursor past which the call's own read (it parses every line)
may outlast the lane's lease: the call then runs in a worker thread."""


class TranscriptWait:
    """The wait of one PreToolUse hook call: awaited by the pool once the session's earlier
    calls are done (their reads moved its cursor), before the call's turn on the lane."""

    __slots__ = ("_path", "_use", "left")

    def __init__(self, path: str, tool_use_id: str) -> None:
        self._path, self._use = path, tool_use_id
        self.left: float | None = None
        """What the call's own read may still wait, in seconds: ``None`` until this waited
        (the session was not open: its first call waits in a thread, as the command hook
        does); then 0, or what is left of the bound when the backlog outgrew the loop (the
        call's read, in a thread, waits the rest)."""

    @classmethod
    def of(cls, event: str, payload: dict[str, Any]) -> TranscriptWait | None:
        """The wait of a Claude Code PreToolUse that names its transcript and its
        ``tool_use``; ``None`` for any other call (another host's transcript is read without
        waiting)."""
        path, use = payload.get("transcript_path"), payload.get("tool_use_id")
        if (
            event != "PreToolUse"
            or not isinstance(path, str)
            or not path
            or not isinstance(use, str)
            or not use
            or payload.get("transcript_format")
        ):
            return None
        return cls(path, use)

    async def __call__(self, gk: SessionLike) -> bool:
        """Wait, on the event loop, until the transcript after the session's cursor holds the
        call's ``tool_use`` line, for at most ``WAIT_SECONDS``; then whether the call's read
        is small enough for the loop (at most :data:`BACKLOG` bytes)."""
        cursor = gk.store.state.cursors.get("transcript", 0)  # no catch-up: no store read
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_SECONDS
        size, at = -1, cursor
        while loop.time() < deadline:
            now = _size(self._path)
            if now != size:  # grown, truncated or replaced: look again
                size = now
                if now < at:  # as the read would: from the cursor, or from 0 if it is past
                    at = cursor if cursor <= now else 0
                if now - at > BACKLOG:  # more than the loop should read: a thread will
                    self.left = max(0.0, deadline - loop.time())
                    return False
                found, at = find_tool_use(self._path, at, self._use, limit=BACKLOG)
                if found:
                    break
            await asyncio.sleep(POLL_SECONDS)
        self.left = 0.0
        return _size(self._path) - (cursor if cursor <= size else 0) <= BACKLOG


def _size(path: str) -> int:
    """The size of the regular file ``path``; -1 if it is missing or anything else (a FIFO
    is never opened: the read would block the loop)."""
    try:
        info = os.stat(path)
    except OSError:
        return -1
    return info.st_size if stat.S_ISREG(info.st_mode) else -1
