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

The CLI integrations (the Claude Code hook, ``infomark serve``, ``infomark mcp-proxy``,
``infomark run`` and every other ``infomark`` command) export only when ``INFOMARK_OTEL=1``
is set in their environment (:func:`otel_wanted`); the exporter then follows the standard
``OTEL_*`` variables (endpoint, headers, service name; OTLP over HTTP/protobuf only). A
long-lived process attaches to every ledger it opens (:func:`start_process_export`, through
:data:`infomark.ledger.engine.ON_OPEN`); the hook collects what its one call committed and
sends it after its answer is out (:func:`export_rows`), within the hook's deadline.
``TRACEPARENT``/``TRACESTATE`` in the environment (the OpenTelemetry environment carrier)
make the spans children of that span.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from infomark.kernel.errors import ConfigError, UserError
from infomark.ledger.engine import ON_OPEN, Ledger
from infomark.ledger.store.journal import EventRow

__all__ = [
    "OTEL_ENV",
    "SPAN_NAMES",
    "OtelExport",
    "OtelExportFailed",
    "OtelUnavailable",
    "ProcessExport",
    "export_rows",
    "instrument",
    "otel_wanted",
    "shutdown_process_export",
    "start_process_export",
]

#: The switch of the CLI integrations' export: ``1`` (or ``true``/``on``/``yes``) on,
#: unset or ``0`` (``false``/``off``/``no``) off; any other value is a configuration error.
OTEL_ENV = "INFOMARK_OTEL"
_ON = ("1", "true", "on", "yes")
_OFF = ("", "0", "false", "off", "no")
_PROTOCOL = "http/protobuf"

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


def _unavailable(exc: ImportError) -> OtelUnavailable:
    return OtelUnavailable(
        f"OpenTelemetry export is configured, but {exc.name or 'opentelemetry'} is not "
        f"importable ({exc}). Install the extra: pip install 'infomark[otel]' "
        "(opentelemetry-api, -sdk and -exporter-otlp-proto-http), or stop configuring the "
        f"export (unset {OTEL_ENV})."
    )


def _tracer(tracer_provider: Any | None) -> Any:
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise _unavailable(exc) from exc
    from infomark._version import __version__

    if tracer_provider is not None:
        return tracer_provider.get_tracer(_INSTRUMENTATION, __version__)
    return trace.get_tracer(_INSTRUMENTATION, __version__)


@dataclass(eq=False)
class OtelExport:
    """An attached exporter: turns committed journal events into spans. :meth:`close` detaches."""

    tracer: Any
    ledger: Ledger | None
    spans: int = 0
    #: The parent context (from ``TRACEPARENT``); None: the caller's current context.
    parent: Any | None = None
    #: Time each span at its event's journal timestamp (an export after the fact).
    event_time: bool = False

    def __call__(self, rows: list[EventRow]) -> None:
        for row in rows:
            attrs = _attributes(row)
            if attrs is None:
                continue
            tool = str(row.payload.get("tool") or row.payload.get("record", {}).get("tool", ""))
            name = SPAN_NAMES[row.type].format(tool=tool or "?")
            at = _event_ns(row.timestamp) if self.event_time else None
            span = self.tracer.start_span(
                name, context=self.parent, attributes=attrs, start_time=at
            )
            span.end(end_time=at)
            self.spans += 1

    def close(self) -> None:
        """Detach: no span for the events committed from now on."""
        while self.ledger is not None and self in self.ledger.listeners:
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


def otel_wanted(env: Mapping[str, str] | None = None) -> bool:
    """Whether the environment turns the CLI integrations' export on.

    ``INFOMARK_OTEL`` decides; the standard ``OTEL_SDK_DISABLED=true`` or
    ``OTEL_TRACES_EXPORTER=none`` turn it off again. Raises :class:`ConfigError` for a value
    that is neither on nor off.
    """
    env = os.environ if env is None else env
    value = env.get(OTEL_ENV, "").strip().lower()
    if value in _OFF:
        return False
    if value not in _ON:
        raise ConfigError(
            f"{OTEL_ENV}={env.get(OTEL_ENV, '')[:40]!r} is neither on nor off: set it to 1 to "
            "export OpenTelemetry spans (the endpoint comes from OTEL_EXPORTER_OTLP_ENDPOINT), "
            "or unset it"
        )
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return _exporter_names(env) != ()


def _exporter_names(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get("OTEL_TRACES_EXPORTER", "").strip().lower() or "otlp"
    names = tuple(n.strip() for n in raw.split(",") if n.strip() and n.strip() != "none")
    for name in names:
        if name not in ("otlp", "console"):
            raise ConfigError(
                f"OTEL_TRACES_EXPORTER names {name!r}: infomark exports to otlp (OTLP over "
                "HTTP/protobuf) or console (stderr), comma-separated, or none"
            )
    if "otlp" in names:
        protocol = (
            env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or _PROTOCOL
        )
        if protocol.strip().lower() != _PROTOCOL:
            raise ConfigError(
                f"OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL is {protocol[:40]!r}: infomark exports "
                f"OTLP over {_PROTOCOL} only; set it to {_PROTOCOL} or unset it (a collector "
                "listens for it on port 4318)"
            )
    return names


def _exporters(env: Mapping[str, str], timeout_s: float | None) -> list[Any]:
    """The span exporters the environment names (import errors: :class:`OtelUnavailable`)."""
    out: list[Any] = []
    try:
        for name in _exporter_names(env):
            if name == "console":
                from opentelemetry.sdk.trace.export import ConsoleSpanExporter

                out.append(ConsoleSpanExporter(out=sys.stderr))  # stdout is the hook's answer
            else:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter,
                )

                out.append(OTLPSpanExporter(endpoint=_endpoint(env), timeout=timeout_s))
    except ImportError as exc:
        raise _unavailable(exc) from exc
    return out


def _endpoint(env: Mapping[str, str]) -> str | None:
    """The OTLP traces URL ``env`` names (None: the SDK's default, localhost:4318)."""
    url = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if url:
        return url
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return base.rstrip("/") + "/v1/traces" if base else None


def _resource() -> Any:
    """The SDK's resource from ``OTEL_SERVICE_NAME``/``OTEL_RESOURCE_ATTRIBUTES``; its service
    is ``infomark`` unless those name one."""
    from opentelemetry.sdk.resources import Resource

    from infomark._version import __version__

    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "infomark"}))
    return resource.merge(Resource({"service.version": __version__}))


def _parent(env: Mapping[str, str]) -> Any | None:
    """The context ``TRACEPARENT``/``TRACESTATE`` carry (W3C trace context), if any."""
    carrier = {k.lower(): env[k] for k in ("TRACEPARENT", "TRACESTATE") if env.get(k)}
    if "traceparent" not in carrier:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract(carrier)


def _event_ns(timestamp: str) -> int | None:
    try:
        at = datetime.fromisoformat(timestamp)
    except (TypeError, ValueError):
        return None
    return int(at.timestamp()) * 1_000_000_000 + at.microsecond * 1000


@dataclass(eq=False)
class ProcessExport:
    """The export of a long-lived process: a span for every ledger it opens, batched."""

    provider: Any
    parent: Any | None
    #: The attached exports, held only by their ledgers (a closed ledger is not kept alive).
    exports: weakref.WeakSet[OtelExport] = field(default_factory=weakref.WeakSet)

    def attach(self, ledger: Ledger) -> None:
        export = OtelExport(tracer=_tracer(self.provider), ledger=ledger, parent=self.parent)
        ledger.listeners.append(export)
        self.exports.add(export)

    def shutdown(self) -> None:
        """Stop attaching, detach, and send what is still batched (the SDK's own timeouts)."""
        while self.attach in ON_OPEN:
            ON_OPEN.remove(self.attach)
        for export in list(self.exports):
            export.close()
        if _ACTIVE and _ACTIVE[0] is self:
            _ACTIVE.clear()
        self.provider.shutdown()


_ACTIVE: list[ProcessExport] = []


def start_process_export(env: Mapping[str, str] | None = None) -> ProcessExport | None:
    """Export every ledger this process opens from now on, if :func:`otel_wanted` (else None).

    Once per process: a second call returns the running export. Spans go through the SDK's
    ``BatchSpanProcessor`` (its ``OTEL_BSP_*`` settings); :meth:`ProcessExport.shutdown`
    sends the rest. Raises :class:`ConfigError` or :class:`OtelUnavailable`.
    """
    env = os.environ if env is None else env
    if not otel_wanted(env):
        return None
    if _ACTIVE:
        return _ACTIVE[0]
    exporters = _exporters(env, None)
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=_resource())
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    export = ProcessExport(provider=provider, parent=_parent(env))
    _ACTIVE.append(export)
    ON_OPEN.append(export.attach)
    return export


def shutdown_process_export() -> None:
    """Send what the running process export still holds, and stop it (no-op without one)."""
    if _ACTIVE:
        _ACTIVE[0].shutdown()


def export_rows(
    rows: list[EventRow], *, timeout_s: float, env: Mapping[str, str] | None = None
) -> int:
    """Send ``rows`` (committed events, collected by a short-lived process) as spans now.

    Each span is timed at its event's journal timestamp. One request per exporter, bounded
    by ``timeout_s`` (retries included); returns the number of spans sent. Raises
    :class:`ConfigError`, :class:`OtelUnavailable`, or :class:`OtelExportFailed` when an
    exporter did not take them.
    """
    env = os.environ if env is None else env
    if not rows or not otel_wanted(env):
        return 0
    exporters = _exporters(env, timeout_s)
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=_resource())
    provider.add_span_processor(SimpleSpanProcessor(spans))
    OtelExport(tracer=_tracer(provider), ledger=None, parent=_parent(env), event_time=True)(rows)
    finished = spans.get_finished_spans()
    if not finished:
        return 0
    failed: list[str] = []
    import logging

    sdk_log = logging.getLogger("opentelemetry")  # the caller reports a failure, once
    was, sdk_log.disabled = sdk_log.disabled, True
    try:
        for exporter in exporters:
            try:
                if exporter.export(finished) is not SpanExportResult.SUCCESS:
                    failed.append(getattr(exporter, "_endpoint", type(exporter).__name__))
            finally:
                exporter.shutdown()
    finally:
        sdk_log.disabled = was
    if failed:
        raise OtelExportFailed(
            f"{len(finished)} spans were not accepted by {', '.join(map(str, failed))} within "
            f"{timeout_s:.1f} s (is the collector running? OTEL_EXPORTER_OTLP_ENDPOINT names it)"
        )
    return len(finished)


class OtelExportFailed(UserError):
    """The exporter did not take the spans (no collector, a refusal, a timeout)."""

    code = "otel_export_failed"


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
        from infomark.ledger.evidence import stamps_backed  # the tag's rule: what it can back

        eligible = list(stamps_backed(str(rec.get("evidence_class")), str(rec.get("outcome")), rec))
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
