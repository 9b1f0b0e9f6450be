"""OpenTelemetry export of decisions and evidence, through the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import EDIT, ledger_text
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from infomark.async_gatekeeper import AsyncGatekeeper
from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.tools.otel import OtelUnavailable, instrument

SECRET = "hunter2-s3cr3t"


@pytest.fixture
def traced() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, dict[str, Any]]:
    return {s.name: dict(s.attributes or {}) for s in spans}


def test_decisions_evidence_and_finish_become_spans_with_the_host_call_id(
    gk: Gatekeeper, traced: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = traced
    instrument(gk, tracer_provider=provider)
    gk.ingest(ledger_text(("C1", "Guess", None), premises=("C1",)))
    edit = ToolCall(EDIT.tool, EDIT.input, tool_call_id="toolu_01A")
    decision = gk.authorize(edit)
    run = ToolCall("Bash", {"command": f"echo {SECRET}"}, tool_call_id="toolu_02B")
    assert gk.authorize(run).allowed  # only an authorized call's result becomes evidence
    ev = gk.record(run, ToolOutcome(f"{SECRET}\n", exit_code=0, duration_ms=12.5))
    fin = gk.can_finish("Done.")
    spans = _by_name(exporter.get_finished_spans())
    assert set(spans) == {
        "infomark.authorize Edit",
        "infomark.authorize Bash",
        "infomark.record Bash",
        "infomark.finish",
    }

    d = spans["infomark.authorize Edit"]
    assert d["gen_ai.tool.name"] == "Edit" and d["gen_ai.tool.call.id"] == "toolu_01A"
    assert (d["infomark.decision"], d["infomark.decision.code"]) == ("deny", decision.code)
    assert d["infomark.decision.id"] == decision.decision_id
    assert d["infomark.ungrounded"] == ("C1",) and d["infomark.session"] == gk.session

    r = spans["infomark.record Bash"]
    assert r["gen_ai.tool.call.id"] == "toolu_02B" and r["infomark.evidence.ref"] == ev.ref
    assert r["infomark.evidence.outcome"] == "PASS" and r["infomark.evidence.class"] == "execution"
    assert r["infomark.evidence.eligible_for"] == ("oracle_stamp", "inference_stamp")
    assert r["infomark.evidence.exit_code"] == 0 and r["infomark.evidence.duration_ms"] == 12.5

    f = spans["infomark.finish"]
    assert f["infomark.finish.allow"] is fin.allow and f["infomark.finish.code"] == fin.code
    # inputs, outputs and commands stay in the journal
    values = [str(v) for attrs in spans.values() for v in attrs.values()]
    assert not any(SECRET in v for v in values)


def test_spans_join_the_hosts_current_trace(
    gk: Gatekeeper, traced: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = traced
    instrument(gk, tracer_provider=provider)
    host = provider.get_tracer("host-agent")
    with host.start_as_current_span("execute_tool Read") as parent:
        gk.authorize(ToolCall("Read", {"file_path": "a.py"}, tool_call_id="toolu_r"))
    (ours,) = [s for s in exporter.get_finished_spans() if s.name.startswith("infomark.")]
    assert ours.parent is not None and ours.parent.span_id == parent.get_span_context().span_id
    assert ours.context is not None
    assert ours.context.trace_id == parent.get_span_context().trace_id


def test_the_async_facade_keeps_the_hosts_context(
    home: Path, project: Path, traced: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = traced
    host = provider.get_tracer("host-agent")

    async def scenario() -> int:
        async with await AsyncGatekeeper.open(home, "otel-async", root=project) as agk:
            instrument(agk, tracer_provider=provider)
            with host.start_as_current_span("execute_tool Read") as parent:
                await agk.authorize(ToolCall("Read", {"file_path": "a.py"}, tool_call_id="t1"))
                return parent.get_span_context().span_id

    parent_id = asyncio.run(scenario())
    (ours,) = [s for s in exporter.get_finished_spans() if s.name.startswith("infomark.")]
    assert ours.parent is not None and ours.parent.span_id == parent_id


def test_off_unless_configured_and_close_detaches(
    home: Path, project: Path, traced: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = traced
    with Gatekeeper.open(home, "plain", root=project) as plain:
        assert plain.store.listeners == []
        plain.authorize(ToolCall("Read", {"file_path": "a"}))
        with Gatekeeper.open(home, "traced", root=project) as other:
            export = instrument(other, tracer_provider=provider)
            other.authorize(ToolCall("Read", {"file_path": "a"}))
            plain.authorize(ToolCall("Read", {"file_path": "b"}))  # another session: no span
            export.close()
            other.authorize(ToolCall("Read", {"file_path": "c"}))
    assert len(exporter.get_finished_spans()) == 1 == export.spans


def test_a_rolled_back_transaction_exports_nothing(
    gk: Gatekeeper, traced: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    provider, exporter = traced
    instrument(gk, tracer_provider=provider)
    with pytest.raises(RuntimeError), gk.store.transaction():
        gk.store.emit("decision", {"tool": "Edit", "decision": "allow"})
        raise RuntimeError("crash before the commit")
    assert exporter.get_finished_spans() == ()
    assert not [e for e in gk.events() if e.type == "decision"]


def test_a_failing_exporter_never_fails_the_decision(
    gk: Gatekeeper, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(rows: list[Any]) -> None:
        raise OSError("collector unreachable")

    gk.store.listeners.append(broken)
    decision = gk.authorize(ToolCall("Read", {"file_path": "a"}))
    assert decision.allowed
    assert [e.type for e in gk.events()].count("decision") == 1
    assert "an event listener failed" in caplog.text and "collector unreachable" in caplog.text


def test_without_the_packages_it_says_what_to_install(
    gk: Gatekeeper, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # import opentelemetry fails
    with pytest.raises(OtelUnavailable, match=r"pip install 'infomark\[otel\]'") as info:
        instrument(gk)
    assert info.value.code == "otel_unavailable"
    assert gk.store.listeners == []  # nothing half attached
