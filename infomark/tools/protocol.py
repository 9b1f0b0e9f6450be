"""What the integrations need from a gatekeeper, as a :class:`typing.Protocol`.

The HTTP service's handlers, its session pool and the MCP proxy drive a session through
:class:`SessionLike` (and the MCP ledger tools through :class:`LedgerTools`); they never
need the concrete :class:`~infomark.gatekeeper.Gatekeeper` class. Only the composition
roots that *open* sessions (``create_app``, ``run_proxy``) name it. ``Gatekeeper``
satisfies both protocols structurally; mypy checks that where they are wired.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from infomark.wrapping import GatedSession

if TYPE_CHECKING:
    from infomark.gatekeeper import GateView, LedgerView
    from infomark.gates.decision import FinishDecision
    from infomark.ledger.audit import AuditReport
    from infomark.ledger.calls import ToolCall
    from infomark.ledger.evidence import Evidence
    from infomark.ledger.report import IngestReport
    from infomark.ledger.store.journal import EventRow

__all__ = ["LedgerTools", "SessionLike"]


class LedgerTools(GatedSession, Protocol):
    """What the MCP proxy and its ledger tools use: gate a call, read and write the ledger."""

    @property
    def session(self) -> str: ...

    def ingest(
        self,
        text: str,
        *,
        source: str = "assistant",
        cursor: tuple[str, int] | None = None,
        dedupe: bool = False,
    ) -> IngestReport: ...

    def ledger(self) -> LedgerView: ...

    def gate(self) -> GateView: ...

    def can_finish(self, final_text: str = "") -> FinishDecision: ...

    def evidence(self, ref: str) -> Evidence | None: ...


class SessionLike(LedgerTools, Protocol):
    """Everything the HTTP service serves: one session, one method per route."""

    def close(self) -> None: ...

    def classify(
        self, call: ToolCall, tool_class: str | None = None
    ) -> tuple[str, tuple[str, ...], tuple[str, ...]]: ...

    def approve(self, *, by: str = "operator", note: str = "") -> None: ...

    def new_turn(self, prompt: str | None = None) -> str: ...

    def move(self, gate: str) -> dict[str, Any]: ...

    def host_report(
        self,
        *,
        tokens_used: int | None = None,
        context_window: int | None = None,
        compacted: bool = False,
    ) -> str: ...

    def context_view(self, budget: int = 1200) -> str: ...

    def compaction_context(self) -> str: ...

    def state_document(self) -> dict[str, Any]: ...

    def audit(self, verify: bool = True) -> AuditReport: ...

    def fork(self, as_session: str, upto: int | None = None) -> SessionLike: ...

    def merge_from(self, session: str) -> dict[str, Any]: ...

    def events(self, *, after: int = 0) -> Iterator[EventRow]: ...
