"""What the integrations need from a gatekeeper.

The session API is declared once, by :class:`~infomark.gatekeeper.Gatekeeper`'s public
methods: the async facade forwards each of them (``_off_loop``), the HTTP routes
(:data:`~infomark.tools.routes.OPERATIONS`, ``facade=``) serve them and both clients mirror
them (``tests/tools/test_client_mirror.py``, ``tests/test_session_api.py``). So the HTTP
service and its session pool drive a session as :data:`SessionLike`, the facade itself, not a
copy of its signatures. The MCP ledger tools use the small :class:`LedgerTools` protocol: the
calls they make, as they make them (``Gatekeeper`` satisfies it; mypy checks that where the
proxy is wired).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeAlias

from infomark.gatekeeper import Gatekeeper
from infomark.wrapping import GatedSession

if TYPE_CHECKING:
    from infomark.gatekeeper import GateView, LedgerView
    from infomark.gates.decision import FinishDecision
    from infomark.ledger.evidence import Evidence
    from infomark.ledger.report import IngestReport

__all__ = ["LedgerTools", "SessionLike"]

#: Everything the HTTP service serves: one session, one method per route (the facade).
SessionLike: TypeAlias = Gatekeeper


class LedgerTools(GatedSession, Protocol):
    """What the MCP proxy and its ledger tools use: gate a call, read and write the ledger."""

    @property
    def session(self) -> str: ...

    def ingest(self, text: str, *, source: str = "assistant") -> IngestReport: ...

    def ledger(self) -> LedgerView: ...

    def gate(self) -> GateView: ...

    def can_finish(self, final_text: str = "") -> FinishDecision: ...

    def evidence(self, ref: str) -> Evidence | None: ...
