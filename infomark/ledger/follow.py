"""Stream journal events, optionally following new ones (``infomark events --follow``)."""

from __future__ import annotations

import time
from collections.abc import Iterator

from infomark.ledger.engine import Ledger
from infomark.ledger.store.journal import EventRow

__all__ = ["follow_events"]


def follow_events(
    ledger: Ledger,
    *,
    after: int = 0,
    follow: bool = False,
    all_sessions: bool = False,
    poll_seconds: float = 0.25,
) -> Iterator[EventRow]:
    """Yield events after ``after``; with ``follow``, poll for new ones until interrupted."""
    last: dict[str, int] = {}
    while True:
        sessions = ledger.journal.sessions() if all_sessions else [ledger.session]
        rows = [r for s in sessions for r in ledger.journal.events(s, after=last.get(s, after))]
        for row in rows:
            last[row.session] = row.seq
            yield row
        if not follow:
            return
        time.sleep(poll_seconds)  # a polling reader; writers never wait on it
