"""Optional OpenTelemetry export: each decision, evidence record and finish decision as a span.

Off unless configured: nothing is exported until :func:`instrument` attaches an exporter to a
session (``pip install 'infomark[otel]'`` for ``opentelemetry-api``/``-sdk``). Without the
packages, :func:`instrument` raises :class:`OtelUnavailable` saying what to install.

Spans are made after each transaction commits, in the caller's OpenTelemetry context, so a
host that runs its tool call inside its own span (``execute_tool {name}``) gets ours as its
children; and each span carries the host's call id (``gen_ai.tool.call.id``: Claude Code's
``tool_use_id``, OpenAI's ``tool_call_id`` / ``call_id``), so a backend joins them by id
when the host traces in another process. Attribute names follow the OpenTelemetry GenAI
semantic conventions where they fit (``gen_ai.tool.name``, ``gen_ai.tool.call.id``); ours are
under ``infomark.``. Our spans do not claim ``gen_ai.operation.name = execute_tool``: they
describe a gate's decision and a record of a run, not the run (the host's span is the run).

Tool inputs, outputs and commands are not exported (they may hold secrets), only their
classes, outcomes, refs and codes; a decision's or a finish's reason text is (cut to 1,000
characters), and it can quote a claim's oracle command.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from infomark.kernel.errors import UserError
from infomark.ledger.engine import Ledger
from infomark.ledger.journal import EventRow

__all__ = ["SPAN_NAMES", "OtelExport", "OtelUnavailable", "instrument"]

#: The span name per journal event type (``{tool}`` is the tool's name).
SPAN_NAMES: Mapping[str, str] = {
    "decision": "infomark.authorize {tool}",
    "evidence_recorded": "infomark.record {tool}",
    "finish_decision": "infomark.finish",
}
_REASON_CHARS = 1000
_INSTRUMENTATION = "infomark"


class OtelUnavailable(UserError):
    """OpenTelemetry export was asked for, but the packages are not installed."""

    code = "otel_unavailable"


class _HasStore(Protocol):
    @property
    def store(self) -> Ledger: ...


def _tracer(tracer_provider: Any | None) -> Any:
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise OtelUnavailable(
            "OpenTelemetry export is configured, but opentelemetry-api is not importable "
            f"({exc}). Install the extra: pip install 'infomark[otel]' (opentelemetry-api and "
            "opentelemetry-sdk), or stop configuring the export."
        ) from None
    from infomark._version import __version__

    if tracer_provider is not None:
        return tracer_provider.get_tracer(_INSTRUMENTATION, __version__)
    return trace.get_tracer(_INSTRUMENTATION, __version__)


@dataclass(eq=False)
class OtelExport:
    """An attached exporter: turns committed journal events into spans. :meth:`close` detaches."""

    tracer: Any
    ledger: Ledger
    spans: int = 0

    def __call__(self, rows: list[EventRow]) -> None:
        for row in rows:
            attrs = _attributes(row)
            if attrs is None:
                continue
            tool = str(row.payload.get("tool") or row.payload.get("record", {}).get("tool", ""))
            name = SPAN_NAMES[row.type].format(tool=tool or "?")
            span = self.tracer.start_span(name, attributes=attrs)
            span.end()
            self.spans += 1

    def close(self) -> None:
        """Detach: no span for the events committed from now on."""
        while self in self.ledger.listeners:
            self.ledger.listeners.remove(self)


def instrument(session: _HasStore | Ledger, *, tracer_provider: Any | None = None) -> OtelExport:
    """Export ``session``'s decisions, evidence and finish decisions as spans from now on.

    ``session``: a :class:`~infomark.gatekeeper.Gatekeeper`, an
    :class:`~infomark.async_gatekeeper.AsyncGatekeeper` or a ledger engine.
    ``tracer_provider``: the SDK's ``TracerProvider`` to use (default: the global one).
    Raises :class:`OtelUnavailable` when opentelemetry-api is not installed.
    """
    tracer = _tracer(tracer_provider)
    ledger = session if isinstance(session, Ledger) else session.store
    export = OtelExport(tracer=tracer, ledger=ledger)
    ledger.listeners.append(export)
    return export


def _common(row: EventRow) -> dict[str, Any]:
    return {"infomark.session": row.session, "infomark.seq": row.seq}


def _tool(attrs: dict[str, Any], tool: Any, call_id: Any) -> None:
    if tool:
        attrs["gen_ai.tool.name"] = str(tool)
    if call_id:
        attrs["gen_ai.tool.call.id"] = str(call_id)


def _attributes(row: EventRow) -> dict[str, Any] | None:
    p = row.payload
    if row.type == "decision":
        attrs = _common(row)
        _tool(attrs, p.get("tool"), p.get("tool_call_id"))
        attrs.update(
            {
                "infomark.decision": str(p.get("decision", "")),
                "infomark.decision.code": str(p.get("code", "")),
                "infomark.decision.id": str(p.get("decision_id", "")),
                "infomark.decision.reason": str(p.get("reason", ""))[:_REASON_CHARS],
                "infomark.tool.class": str(p.get("tool_class", "")),
                "infomark.gate": str(p.get("gate", "")),
                "infomark.profile": str(p.get("profile", "")),
                "infomark.bypass": bool(p.get("bypass")),
                "infomark.dryrun": bool(p.get("dryrun")),
                "infomark.ungrounded": [
                    str(u.get("id")) for u in p.get("ungrounded") or () if isinstance(u, dict)
                ],
            }
        )
        return attrs
    if row.type == "evidence_recorded":
        rec = p.get("record") or {}
        attrs = _common(row)
        _tool(attrs, rec.get("tool"), rec.get("tool_call_id"))
        from infomark.ledger.evidence import EvidenceClass

        try:
            eligible = list(EvidenceClass(str(rec.get("evidence_class"))).eligible_for)
        except ValueError:
            eligible = []
        attrs.update(
            {
                "infomark.evidence.ref": str(p.get("ref", "")),
                "infomark.evidence.outcome": str(rec.get("outcome", "")),
                "infomark.evidence.class": str(rec.get("evidence_class", "")),
                "infomark.evidence.eligible_for": eligible,
                "infomark.tool.class": str(rec.get("tool_class") or ""),
            }
        )
        if isinstance(rec.get("exit_code"), int):
            attrs["infomark.evidence.exit_code"] = rec["exit_code"]
        if isinstance(rec.get("duration_ms"), int | float):
            attrs["infomark.evidence.duration_ms"] = float(rec["duration_ms"])
        return attrs
    if row.type == "finish_decision":
        attrs = _common(row)
        attrs.update(
            {
                "infomark.finish.allow": bool(p.get("allow")),
                "infomark.finish.code": str(p.get("code", "")),
                "infomark.finish.cap_reached": bool(p.get("cap_reached")),
                "infomark.finish.reason": str(p.get("reason", ""))[:_REASON_CHARS],
            }
        )
        return attrs
    return None
