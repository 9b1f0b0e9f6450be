"""The infomark HTTP client: ``from infomark.client import Client``.

A remote ledger is used exactly like a local :class:`~infomark.gatekeeper.Gatekeeper`::

    from infomark.client import Client
    from infomark.ledger.calls import ToolCall

    with Client("http://127.0.0.1:8765", session="agent-1") as gk:
        decision = gk.authorize(ToolCall("Edit", {"file_path": "a.py"}))

See :mod:`infomark.tools.http_client` for the details.
"""

from __future__ import annotations

from infomark.tools.http_client import AsyncClient, Client, ServiceError, ServiceUnavailable

__all__ = ["AsyncClient", "Client", "ServiceError", "ServiceUnavailable"]
