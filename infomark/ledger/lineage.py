"""Fork lineage: which sessions a fork descends from, and which of their evidence it inherits.

A fork's first event is ``forked_from {session, seq, head_hash, shift_until, logical_seq}``
(:mod:`infomark.ledger.fork` writes it). Evidence issued in an ancestor up to the fork point
(``logical_seq``, in the seq frame every session of one lineage shares) stays valid in the
fork; it is checked against the ancestor's own journal, never copied. Standard library only
(the engine calls it when a stamp names evidence from another session).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.ledger.store.base import BaseJournal

__all__ = ["MAX_DEPTH", "ancestry", "fork_origin", "inherits", "issued_in"]

MAX_DEPTH = 64  # forks of forks; a longer (or cyclic) chain is refused, not walked


def fork_origin(journal: BaseJournal, session: str) -> dict[str, Any] | None:
    """The ``forked_from`` payload of ``session`` when it is a fork (its first event), else None."""
    for row in journal.events(session, types=("forked_from",)):
        return dict(row.payload) if row.seq == 1 else None
    return None


def ancestry(journal: BaseJournal, session: str) -> list[tuple[str, int]]:
    """``[(ancestor, limit), …]`` nearest first: evidence of ``ancestor`` with seq <= limit
    is inherited by ``session``."""
    out: list[tuple[str, int]] = []
    seen = {session}
    limit: int | None = None
    current = session
    for _ in range(MAX_DEPTH):
        origin = fork_origin(journal, current)
        if origin is None:
            break
        parent = str(origin.get("session", ""))
        if not parent or parent in seen:
            break
        point = int(origin.get("logical_seq", 0))
        limit = point if limit is None else min(limit, point)
        out.append((parent, limit))
        seen.add(parent)
        current = parent
    return out


def issued_in(journal: BaseJournal, session: str, seq: int, ref: str) -> bool:
    """Does ``session``'s own journal hold the ``evidence_recorded`` event of ``ref`` at ``seq``?"""
    for row in journal.events(session, after=seq - 1, types=("evidence_recorded",)):
        return row.seq == seq and row.payload.get("ref") == ref
    return False


def inherits(journal: BaseJournal, session: str, ref_session: str, seq: int, ref: str) -> bool:
    """Is evidence ``ref`` (issued to ``ref_session`` at ``seq``) inherited by ``session``?"""
    for ancestor, limit in ancestry(journal, session):
        if ancestor == ref_session:
            return seq <= limit and issued_in(journal, ancestor, seq, ref)
    return False
