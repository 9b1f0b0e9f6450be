"""The runner's lease on its session's inbox: take it, beat it from a thread, give it up.

A mixin of :class:`~infomark.tools.runner.loop.Runner` (one job: the lease; the loop and the
idle cycle read :attr:`_lease_lost`). docs/runner.md, "The steering inbox".
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from infomark.ledger.inbox import Inbox, LeaseLost

if TYPE_CHECKING:
    from infomark.gatekeeper import Gatekeeper
    from infomark.tools.runner.agentfile import AgentSpec

__all__ = ["LeaseMixin"]


class LeaseMixin:
    """``open_inbox`` / ``release`` and the heartbeat thread."""

    gk: Gatekeeper
    spec: AgentSpec
    session: str
    holder: str
    parent: str | None
    inbox: Inbox
    _lease_lost: threading.Event
    _beat_stop: threading.Event
    _beater: threading.Thread | None

    def open_inbox(self) -> None:
        """Hold this session's inbox (from here on ``infomark send`` delivers to it)."""
        self.inbox.acquire(
            self.session,
            holder=self.holder,
            ttl=self.spec.idle.lease_ttl_seconds,
            parent=self.parent,
        )
        self._beater = threading.Thread(target=self._beat, name=f"lease:{self.session}")
        self._beater.daemon = True
        self._beater.start()

    def _beat(self) -> None:
        every = max(0.05, self.spec.idle.lease_ttl_seconds / 4)
        journal = self.gk.store.journal.reopen()
        inbox = Inbox(journal)
        try:
            while not self._beat_stop.wait(every):
                try:
                    inbox.heartbeat(self.session, self.holder)
                except LeaseLost:
                    self._lease_lost.set()
                    return
        finally:
            inbox.close()
            journal.close()

    def release(self, reason: str) -> None:
        """Give the inbox up (sends are refused with ``finished`` from now on)."""
        self._release(reason)

    def _release(self, reason: str) -> None:
        self._beat_stop.set()
        self.inbox.release(self.session, self.holder, reason)
