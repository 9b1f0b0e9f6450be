"""OpenTelemetry from the CLI integrations, to a real OTLP/HTTP receiver on 127.0.0.1.

The hook, ``infomark serve``, ``infomark mcp-proxy`` and ``infomark run`` are real processes
here: only ``INFOMARK_OTEL=1`` turns their export on, and the standard ``OTEL_*`` variables
say where it goes.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Service, _Output, stop_service
from helpers import claude_sandbox_on
from hook_session import EXE
from otlp_receiver import Receiver, otlp_receiver
from test_mcp_proxy import SESSION, _ground, _proxy_params, _run, _tag

from infomark.kernel.errors import ConfigError
from infomark.tools.otel import otel_wanted

PARENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT_SPAN = "b7ad6b7169203331"


@pytest.fixture
def project(project: Path) -> Path:
    """The project with Claude Code's sandbox on, as `infomark install claude-code` leaves it:
    the hook's answers here are the export's, not the unsandboxed warning's."""
    claude_sandbox_on(project)
    return project


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with otlp_receiver() as r:
        yield r


def _env(receiver: Receiver | None = None, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("INFOMARK_", "OTEL_", "TRACEPARENT", "TRACESTATE"))
    }
    if receiver is not None:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.url
    env.update(extra)
    return env


def _hook(project: Path, env: dict[str, str], event: str, **fields: Any) -> tuple[int, Any, str]:
    payload = {
        "session_id": "otel-1",
        "transcript_path": "",
        "cwd": str(project),
        "hook_event_name": event,
        **fields,
    }
    proc = subprocess.run(
        [EXE, "hook", "claude-code"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=60,
        check=False,
    )
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def _bash(project: Path, env: dict[str, str], use_id: str) -> str:
    """A Bash call through PreToolUse and PostToolUse; returns the evidence tag."""
    call = {"tool_name": "Bash", "tool_input": {"command": "echo hi"}, "tool_use_id": use_id}
    code, out, err = _hook(project, env, "PreToolUse", **call)
    assert (code, out) == (0, None), err  # allowed: no output
    response = {"stdout": "hi\n", "stderr": "", "interrupted": False}
    code, out, err = _hook(project, env, "PostToolUse", **call, tool_response=response)
    assert code == 0, err
    context = str(out["hookSpecificOutput"]["additionalContext"])
    assert context.startswith("[infomark evidence_ref="), context
    return context


def _ref(tag: str) -> str:
    m = re.search(r"evidence_ref=(ev_[0-9a-f]{24})", tag)
    assert m is not None, tag
    return m.group(1)


# --------------------------------------------------------------------------- the hook


def test_the_hook_sends_decision_and_evidence_spans_with_the_tool_use_id(
    project: Path, receiver: Receiver
) -> None:
    env = _env(receiver, INFOMARK_OTEL="1")
    env["TRACEPARENT"] = f"00-{PARENT_TRACE}-{PARENT_SPAN}-01"  # the host's span, if it has one
    tag = _bash(project, env, "toolu_otel_01")
    spans = receiver.wait_for({"infomark.authorize Bash", "infomark.record Bash"})
    assert {p for p, _ in receiver.requests} == {"/v1/traces"}  # OTLP/HTTP, protobuf
    auth = receiver.named("infomark.authorize Bash")[0]
    rec = receiver.named("infomark.record Bash")[0]
    for span in (auth, rec):
        assert span.attributes["gen_ai.tool.call.id"] == "toolu_otel_01"
        assert span.attributes["gen_ai.tool.name"] == "Bash"
        assert span.attributes["infomark.session"] == "otel-1"
        assert (span.trace_id, span.parent_span_id) == (PARENT_TRACE, PARENT_SPAN)
        assert span.resource["service.name"] == "infomark"
        assert span.start_ns > 0
    assert auth.attributes["infomark.decision"] == "allow"
    assert auth.attributes["infomark.tool.class"] == "execute"
    assert rec.attributes["infomark.evidence.ref"] == _ref(tag)
    assert rec.attributes["infomark.evidence.outcome"] == "PASS"
    # the span and the tag the model saw say the same: what this evidence can back
    assert "eligible=oracle_stamp,inference_stamp " in tag
    assert rec.attributes["infomark.evidence.eligible_for"] == ("oracle_stamp", "inference_stamp")
    assert rec.start_ns >= auth.start_ns  # timed at the journal's own timestamps
    assert "echo hi" not in json.dumps([s.attributes for s in spans])  # commands stay home


def test_the_hook_sends_nothing_unless_infomark_otel_is_set(
    project: Path, receiver: Receiver
) -> None:
    # A collector configured for the host (Claude Code's own telemetry) is not a switch.
    env = _env(receiver, OTEL_TRACES_EXPORTER="otlp")
    tag = _bash(project, env, "toolu_off")
    assert tag.startswith("[infomark evidence_ref=")
    # each hook process sends before it exits: nothing can still be on its way
    assert receiver.requests == []
    env_off = _env(receiver, INFOMARK_OTEL="0")
    _bash(project, env_off, "toolu_off2")
    assert receiver.requests == []


def test_a_collector_that_is_down_never_changes_the_hooks_answer(project: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = _env(None, INFOMARK_OTEL="1", OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}")
    ledger = "claim_ledger:\n  claims: []\n"
    edit = {"file_path": str(project / "a.py"), "old_string": "a", "new_string": "b"}
    code, out, err = _hook(project, env, "PreToolUse", tool_name="Edit", tool_input=edit)
    quiet_code, quiet_out, _ = _hook(
        project, _env(None), "PreToolUse", tool_name="Edit", tool_input=edit
    )
    assert (code, out) == (quiet_code, quiet_out)  # the same denial with or without OTel
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny", ledger
    assert "OpenTelemetry export skipped" in err and f"127.0.0.1:{port}" in err


def test_a_bad_switch_is_reported_and_the_hook_still_answers(project: Path) -> None:
    env = _env(None, INFOMARK_OTEL="maybe")
    tag = _bash(project, env, "toolu_bad")
    assert tag.startswith("[infomark evidence_ref=")
    code, _, err = _hook(
        project, env, "PreToolUse", tool_name="Read", tool_input={"file_path": "x"}
    )
    assert code == 0 and "INFOMARK_OTEL='maybe' is neither on nor off" in err


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"INFOMARK_OTEL": "maybe"}, "INFOMARK_OTEL='maybe' is neither on nor off"),
        (
            {"INFOMARK_OTEL": "1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "infomark exports OTLP over http/protobuf only",
        ),
        (
            {"INFOMARK_OTEL": "1", "OTEL_TRACES_EXPORTER": "zipkin"},
            "OTEL_TRACES_EXPORTER names 'zipkin'",
        ),
    ],
)
def test_the_cli_refuses_an_export_it_cannot_do_with_a_clear_error(
    project: Path, extra: dict[str, str], needle: str
) -> None:
    proc = subprocess.run(
        [EXE, "gate", "--json"],
        capture_output=True,
        text=True,
        cwd=project,
        env=_env(None, **extra),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and "Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["error"]["code"] == "config_error"


def test_the_switch_and_the_standard_off_switches() -> None:
    assert otel_wanted({}) is False
    for on in ("1", "true", "ON", " yes "):
        assert otel_wanted({"INFOMARK_OTEL": on}) is True
    for off in ("", "0", "false", "off", "no"):
        assert otel_wanted({"INFOMARK_OTEL": off}) is False
    assert otel_wanted({"INFOMARK_OTEL": "1", "OTEL_SDK_DISABLED": "true"}) is False
    assert otel_wanted({"INFOMARK_OTEL": "1", "OTEL_TRACES_EXPORTER": "none"}) is False
    assert otel_wanted({"INFOMARK_OTEL": "1", "OTEL_TRACES_EXPORTER": "console"}) is True
    with pytest.raises(ConfigError, match="http/protobuf"):
        otel_wanted({"INFOMARK_OTEL": "1", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"})


# --------------------------------------------------------------------------- serve


def _serve(project: Path, env: dict[str, str]) -> Service:
    """``infomark serve`` (the CLI command) on a free port, with ``env``."""
    home = project / ".infomark"
    cmd = [EXE, "serve", "--home", str(home), "--host", "127.0.0.1", "--port", "0"]
    proc = subprocess.Popen(
        cmd,
        cwd=project,
        env={**env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    output = _Output()
    reader = threading.Thread(target=output.drain, args=(proc.stdout,), daemon=True)
    reader.start()
    assert output.ready.wait(120) and output.url is not None, output.text()
    token = (home / "token").read_text().strip()
    return Service(output.url, home, project, token, proc, output, reader)


def test_serve_exports_every_session_it_opens_and_flushes_on_stop(
    project: Path, receiver: Receiver
) -> None:
    env = _env(receiver, INFOMARK_OTEL="1", OTEL_SERVICE_NAME="ledger-svc")
    env["OTEL_BSP_SCHEDULE_DELAY"] = "600000"  # only the stop sends them
    svc = _serve(project, env)
    try:
        headers = {"Authorization": f"Bearer {svc.token}"}
        call = {"tool": "Bash", "input": {"command": "echo ok"}, "tool_call_id": "call_77"}
        with httpx.Client(base_url=svc.url, headers=headers, timeout=30) as http:
            got = http.post("/v1/sessions/otel-s/authorize", json=call)
            assert got.status_code == 200, got.text
            assert got.json()["decision"] == "allow"
            body = {**call, "tool_call_id": got.json()["call_id"]}
            body |= {"output": "ok\n", "exit_code": 0}
            rec = http.post("/v1/sessions/otel-s/record", json=body)
            assert rec.status_code == 200, rec.text
        assert receiver.requests == []  # batched until the stop
    finally:
        stop_service(svc)
    receiver.wait_for({"infomark.authorize Bash", "infomark.record Bash"})
    (record,) = receiver.named("infomark.record Bash")
    assert record.attributes["gen_ai.tool.call.id"] == "call_77"
    assert record.attributes["infomark.evidence.ref"] == rec.json()["evidence_ref"]
    assert record.attributes["infomark.session"] == "otel-s"
    assert record.resource["service.name"] == "ledger-svc"  # OTEL_SERVICE_NAME wins


# --------------------------------------------------------------------------- mcp-proxy


def test_mcp_proxy_exports_the_calls_it_gates(
    project: Path, home: Path, notes: Path, tmp_path: Path, receiver: Receiver
) -> None:
    (project / "infomark.toml").write_text(
        '[tools]\nrun_check = "execute"\n\n[evidence_classes]\nrun_check = "execution"\n'
    )
    _ground(project, home)
    got: dict[str, str] = {}

    async def scenario(s: Any) -> None:
        result = await s.call_tool("run_check", {"name": "status.txt", "expect": "ready"})
        got["ref"] = _tag(result).group("ref")

    env = _env(receiver, INFOMARK_OTEL="1")
    _run(_proxy_params(project, home, notes, env=env), tmp_path / "err", scenario)
    receiver.wait_for({"infomark.authorize run_check", "infomark.record run_check"})
    (record,) = receiver.named("infomark.record run_check")
    assert record.attributes["infomark.evidence.ref"] == got["ref"]
    assert record.attributes["infomark.session"] == SESSION
    assert record.attributes["gen_ai.tool.name"] == "run_check"


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    d = tmp_path / "notes"
    d.mkdir()
    (d / "status.txt").write_text("ready", encoding="utf-8")
    return d


# --------------------------------------------------------------------------- run


def test_run_exports_the_agents_decisions_evidence_and_finish(
    tmp_path: Path, receiver: Receiver
) -> None:
    env = _env(receiver, INFOMARK_OTEL="1", TMPDIR=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-m", "infomark", "run", "--demo", "--quiet", "--json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    spans = receiver.wait_for({"infomark.finish"})
    finish = receiver.named("infomark.finish")[-1]
    assert finish.attributes["infomark.finish.allow"] is True
    recorded = [s for s in spans if s.name.startswith("infomark.record ")]
    assert recorded and all(s.attributes.get("gen_ai.tool.call.id") for s in recorded)
    assert {s.attributes["infomark.session"] for s in spans} == {"demo"}


def test_a_process_export_attaches_to_every_ledger_and_keeps_none_alive(
    tmp_path: Path, receiver: Receiver
) -> None:
    import gc

    from infomark.gatekeeper import Gatekeeper
    from infomark.ledger.calls import ToolCall
    from infomark.ledger.engine import ON_OPEN
    from infomark.tools.otel import start_process_export

    env = {"INFOMARK_OTEL": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
    export = start_process_export(env)
    assert export is not None and start_process_export(env) is export  # once per process
    try:
        for n in range(3):  # a service opens and closes sessions all day
            with Gatekeeper.open(tmp_path / "home", f"s{n}", root=tmp_path) as gk:
                gk.authorize(ToolCall("Read", {"file_path": "a"}, tool_call_id=f"toolu_{n}"))
        del gk
        gc.collect()
        assert len(export.exports) == 0  # closed ledgers are not kept alive by the export
    finally:
        export.shutdown()
    assert export.attach not in ON_OPEN
    spans = receiver.wait_for({"infomark.authorize Read"})
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in spans) == [
        "toolu_0",
        "toolu_1",
        "toolu_2",
    ]
    assert start_process_export({}) is None  # off: nothing attaches
