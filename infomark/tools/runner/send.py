"""``send_message``: the Python API of ``infomark send`` (the CLI and the HTTP route use it)."""

from __future__ import annotations

from pathlib import Path

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.inbox import Delivery, Inbox

__all__ = ["send_message"]


def send_message(
    home: Path | str, session: str, text: str, *, sender: str = "operator", root: Path | None = None
) -> Delivery:
    """Deliver ``text`` to the live inbox of ``session``; :class:`InboxRefused` if none.

    The refusal names the reason (``never_had_inbox``, ``finished``, ``lease_expired``,
    ``empty``, ``too_large``) and is journaled on the target session, as is a delivery.
    """
    with Gatekeeper.open(home, session, root=root) as gk:
        inbox = Inbox(gk.store.journal)
        try:
            return inbox.send(gk.session, text, sender=sender)
        finally:
            inbox.close()
