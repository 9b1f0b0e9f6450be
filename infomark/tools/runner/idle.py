"""The runner's idle cycle: sleep on the schedule, wake on a message, a file or the timer.

A mixin of :class:`~infomark.tools.runner.loop.Runner` (one job: idling between turns of a
persistent run; the loop calls :meth:`IdleMixin._idle_cycle`). docs/runner.md, "Persistent".
"""

from __future__ import annotations

import fnmatch
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infomark.ledger.inbox import Inbox, Message
from infomark.tools.runner.schedule import Clock, IdleSchedule, PendingSleep, sleep_until

if TYPE_CHECKING:
    from infomark.tools.runner.agentfile import AgentSpec

__all__ = ["IdleMixin", "Stop", "operator_text"]


class Stop(Exception):
    """The run stops here, for ``reason`` (``lease_lost``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class IdleMixin:
    """``_idle_cycle`` and what it watches."""

    spec: AgentSpec
    root: Path
    session: str
    holder: str
    inbox: Inbox
    clock: Clock
    schedule: IdleSchedule
    idle_wakes: int
    _lease_lost: threading.Event
    _watch: dict[str, tuple[int, int]]

    if TYPE_CHECKING:

        def emit(self, type_: str, payload: Mapping[str, Any]) -> int: ...

    def _snapshot(self) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        if not self.spec.idle.watch:
            return out
        for dirpath, dirnames, files in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if d not in (".git", ".infomark", "__pycache__")]
            for f in files:
                p = Path(dirpath) / f
                rel = os.path.relpath(p, self.root)
                if any(fnmatch.fnmatch(rel, w) for w in self.spec.idle.watch):
                    try:
                        st = p.stat()
                    except OSError:
                        continue
                    out[rel] = (st.st_mtime_ns, st.st_size)
        return out

    def _wake_reason(self) -> str | None:
        if self._lease_lost.is_set():
            return "lease_lost"
        if self.inbox.pending(self.session):
            return "inbox"
        if self.spec.idle.watch:
            now = self._snapshot()
            if now != self._watch:
                self._watch = now
                return "file_change"
        return None

    def _idle_cycle(self, pending: PendingSleep | None) -> tuple[str, str] | None:
        """Sleep on the schedule; ``(reason, operator prompt)`` on wake, None to stop."""
        max_wakes = self.spec.idle.max_wakes
        if max_wakes and self.idle_wakes >= max_wakes:
            return None
        start = self.clock.now()
        if pending is None:
            delay = self.schedule.delay()
            until = start + delay
            self.emit("waiting", {"by": "idle", "until": until, **self.schedule.to_dict()})
        else:
            until = pending.until
        reason = sleep_until(
            self.clock,
            until,
            self._wake_reason,
            poll=self.spec.idle.poll_seconds,
        )
        if reason == "lease_lost":
            raise Stop("lease_lost")
        if reason != "timer":
            self.schedule.reset()
        slept = self.clock.now() - start
        self.emit(
            "woken",
            {"by": "idle", "reason": reason, "slept": round(slept, 3), **self.schedule.to_dict()},
        )
        self.idle_wakes += 1
        got = self.inbox.read(self.session, self.holder, where="idle_wake")
        if got:
            return reason, operator_text(got)
        if reason == "file_change":
            return reason, "[infomark idle] woken: a watched file changed. Look, then continue."
        return reason, (
            f"[infomark idle] woken by the timer after {slept:.0f}s; nothing new arrived. "
            "Continue if there is work; otherwise reply briefly (or call wait)."
        )


def operator_text(messages: list[Message]) -> str:
    return "\n\n".join(
        f"[operator message from {m.sender} via infomark send, #{m.id}]\n{m.text}" for m in messages
    )
