"""Before a mutation, re-fetch the web pages its grounded premises rest on.

A premise grounded by a ``source_stamp`` stands on a page as it was fetched; when the host can
fetch again (``Gatekeeper.refetch``), the page is fetched once more before a mutating call and
a premise whose page changed, or could not be fetched, loses its stamp (``divergence``,
``source_changed``; docs/blocks.md). Loaded only when the host set a refetch.
"""

from __future__ import annotations

from infomark.ledger.engine import Ledger
from infomark.ledger.stamps.source import Refetch, recheck_sources, web_premises

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["recheck_premises"]


def recheck_premises(ledger: Ledger, refetch: Refetch) -> list[dict[str, Any]]:
    """Re-fetch the pages grounded premises rest on; revoke those that changed.

    The fetches run outside the write lock (network I/O); the revocations in one transaction.
    Returns what changed, for the denial's reason.
    """
    ledger.refresh()
    todo = web_premises(ledger)
    if not todo:
        return []
    fetched: dict[str, str | bytes | None] = {}
    for _, ev in todo:
        try:
            fetched[ev.ref] = refetch(ev.tool, dict(ev.record.get("input") or {}))
        except Exception:  # a fetch that fails cannot confirm the page: it counts as changed
            fetched[ev.ref] = None
    with ledger.transaction():
        return recheck_sources(ledger, fetched)
