"""``infomark serve --workers N``: one listener, N worker processes, each connection handed
to the least busy, every worker on the same ledger.

Real processes throughout: the service in a subprocess on 127.0.0.1, real uvicorn in each
worker, real httpx connections, real signals. Which worker answered is read off
``GET /v1/health`` (``pid``); a kept-alive connection stays with the worker it was given.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import new_session
from helpers import claude_sandbox_on

from infomark.kernel.errors import InfomarkError, UserError
from infomark.tools.serve import parse_workers, serve
from infomark.tools.serve_workers import MAX_WORKERS, auto_workers

LEDGER = (
    'claim_ledger:\n  claims:\n    - id: C1\n      text: "a.py defines f"\n'
    '      status: Hypothetical\n      falsifier: "grep finds no f"\n'
    '      oracle: "pytest -q"\n  premises_for_plan: [C1]\n  open_questions: []\n'
)


def _children(pid: int) -> set[int]:
    """The live processes whose parent is ``pid``."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.add(int(entry))
    return found


def _client(svc: Any) -> httpx.Client:
    auth = {"authorization": f"Bearer {svc.token}"}
    return httpx.Client(base_url=svc.url, headers=auth, timeout=30)


def _pid(h: httpx.Client) -> int:
    r = h.get("/v1/health")
    assert r.status_code == 200, r.text
    return int(r.json()["pid"])


def _edit(sid: str, project: Path, use: str) -> dict[str, Any]:
    return {
        "session_id": sid,
        "hook_event_name": "PreToolUse",
        "cwd": str(project),
        "tool_name": "Edit",
        "tool_input": {"file_path": "a.py", "old_string": "1", "new_string": "2"},
        "tool_use_id": use,
    }


def test_open_connections_go_to_different_workers_and_a_session_is_one_ledger(
    spawn: Any,
) -> None:
    svc = spawn("--no-access-log", "--workers", "2")
    workers = _children(svc.proc.pid)
    assert len(workers) == 2
    sid = new_session("w")
    with _client(svc) as a, _client(svc) as b:
        pa = _pid(a)  # a's connection stays open: b's goes to the other worker
        pb = _pid(b)
        assert {pa, pb} == workers
        # the claim ledger arrives through one worker, the gate is asked through the other
        assert a.post(f"/v1/sessions/{sid}/ingest", json={"text": LEDGER}).status_code == 200
        r = b.post("/v1/hooks/claude-code", json=_edit(sid, svc.project, "toolu_1"))
        out = r.json()["hookSpecificOutput"]
        assert out["permissionDecision"] == "deny" and "C1" in out["permissionDecisionReason"]
        # and what the second worker journaled, the first one shows
        seen_by_a = [json.loads(x) for x in a.get(f"/v1/sessions/{sid}/events").text.splitlines()]
        assert any(e["payload"].get("tool_call_id") == "toolu_1" for e in seen_by_a)
        assert (_pid(a), _pid(b)) == (pa, pb)  # still the same two connections
    assert svc.stop() in (0, -signal.SIGTERM)
    assert "Traceback" not in svc.log()


def test_calls_on_fresh_connections_from_many_threads_are_all_journaled_once(
    spawn: Any,
) -> None:
    svc = spawn("--no-access-log", "--workers", "2")
    sessions = [new_session("wt") for _ in range(3)]
    pids: list[int] = []
    errors: list[str] = []

    def drive(k: int) -> None:
        for i in range(12):
            sid = sessions[(k + i) % len(sessions)]  # each session hears from every thread
            body = {"tool": "Bash", "input": {"command": f"echo {k}-{i}"},
                    "tool_call_id": f"t{k}-{i}"}  # fmt: skip
            with _client(svc) as h:  # a new connection per call, as the forwarding hook
                r = h.post(f"/v1/sessions/{sid}/authorize", json=body)
                if r.status_code != 200:
                    errors.append(r.text)
                pids.append(_pid(h))

    threads = [threading.Thread(target=drive, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert set(pids) == _children(svc.proc.pid)  # both workers served
    with _client(svc) as h:
        ids = []
        for sid in sessions:
            lines = h.get(f"/v1/sessions/{sid}/events").text.splitlines()
            ids += [json.loads(x)["payload"]["tool_call_id"] for x in lines]
            assert h.get(f"/v1/sessions/{sid}/audit").json()["verified"] is True
    assert sorted(ids) == sorted(f"t{k}-{i}" for k in range(4) for i in range(12))


def test_a_killed_worker_is_replaced_and_the_service_goes_on(spawn: Any) -> None:
    svc = spawn("--no-access-log", "--workers", "2")
    first = _children(svc.proc.pid)
    victim = min(first)
    os.kill(victim, signal.SIGKILL)
    log = svc.log(after=") serves again")
    assert f"(pid {victim}) exited with status -9; starting another" in log
    now = _children(svc.proc.pid)
    assert victim not in now and len(now) == 2
    with _client(svc) as a, _client(svc) as b:
        assert {_pid(a), _pid(b)} == now
        r = a.post(f"/v1/sessions/{new_session('k')}/authorize", json={"tool": "Read"})
        assert r.status_code == 200
    assert svc.stop() in (0, -signal.SIGTERM)


def test_stopping_the_service_stops_every_worker(spawn: Any, tmp_path: Path) -> None:
    port_file = tmp_path / "port.json"
    svc = spawn("--no-access-log", "--workers", "3", "--port-file", str(port_file))
    assert json.loads(port_file.read_text())["pid"] == svc.proc.pid  # the listener's
    workers = _children(svc.proc.pid)
    assert len(workers) == 3
    assert svc.stop() in (0, -signal.SIGTERM)
    log = svc.log()
    assert log.count("Application shutdown complete") == 3  # each closed its sessions
    assert "Traceback" not in log
    assert not any(Path(f"/proc/{p}").exists() for p in workers)  # reaped by the listener


def test_workers_whose_listener_is_killed_stop_by_themselves(spawn: Any) -> None:
    svc = spawn("--no-access-log", "--workers", "2")
    assert len(_children(svc.proc.pid)) == 2
    svc.proc.kill()
    svc.proc.wait(15)
    # the workers hold the service's output pipe: it ends when the last of them exits
    svc.reader.join(30)
    assert not svc.reader.is_alive()
    assert svc.log().count("Application shutdown complete") == 2


def test_the_operator_token_reaches_every_worker_on_a_pipe(spawn: Any, tmp_path: Path) -> None:
    operator = "op-" + "k" * 40
    svc = spawn(
        "--no-access-log", "--workers", "2", env_extra={"INFOMARK_OPERATOR_TOKEN": operator}
    )
    for pid in _children(svc.proc.pid):  # neither its command line nor its environment
        assert operator not in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
        assert operator not in Path(f"/proc/{pid}/environ").read_text(errors="replace")
    sid = new_session("op")
    with _client(svc) as a, _client(svc) as b:
        assert _pid(a) != _pid(b)
        for h, note in ((a, "via one"), (b, "via the other")):
            wrong = h.post(f"/v1/sessions/{sid}/approve", json={"by": "u", "operator_token": "x"})
            assert wrong.status_code == 403
            body = {"by": "operator", "note": note, "operator_token": operator}
            assert h.post(f"/v1/sessions/{sid}/approve", json=body).status_code == 200
    assert operator not in svc.log()


@pytest.mark.parametrize("where", ["main thread", "another thread"])
def test_a_worker_that_cannot_start_stops_the_service_with_its_reason(
    tmp_path: Path, where: str
) -> None:
    # the listener checks the home and the configuration itself; a worker that still fails
    # (here: a profile no worker accepts) stops the start, named, and leaves no process;
    # called from another thread (no signals there), the same
    home = tmp_path / ".infomark"

    def start() -> None:
        serve(home, port=0, root=tmp_path, profile="no-such-profile", workers=2)

    with pytest.raises(InfomarkError, match="exited with status 2 before it was ready"):
        if where == "main thread":
            start()
        else:
            with ThreadPoolExecutor(1) as pool:
                pool.submit(start).result(120)


def test_a_broken_configuration_fails_once_in_the_listener(tmp_path: Path) -> None:
    (tmp_path / "infomark.toml").write_text("[gates\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "infomark.tools.serve", "--home", str(tmp_path / ".infomark"),
         "--root", str(tmp_path), "--port", "0", "--workers", "2"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("Error: ") and "infomark.toml" in proc.stderr
    assert "serving" not in proc.stdout and "Started server process" not in proc.stderr


@pytest.mark.parametrize("text", ["0", "-1", str(MAX_WORKERS + 1), "two", ""])
def test_a_bad_worker_count_is_refused_with_the_range(text: str) -> None:
    with pytest.raises(UserError, match=f"give a number from 1 to {MAX_WORKERS}, or auto"):
        parse_workers(text)


def test_auto_is_one_worker_per_usable_cpu() -> None:
    assert parse_workers("auto") == auto_workers() == min(len(os.sched_getaffinity(0)), 8)
    assert parse_workers(" 3 ") == 3


def test_the_cli_refuses_a_bad_count_before_it_binds(tmp_path: Path) -> None:
    exe = str(Path(sys.executable).with_name("infomark"))
    proc = subprocess.run(
        [exe, "serve", "--home", str(tmp_path / ".infomark"), "--port", "0", "--workers", "0"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--workers '0': give a number from 1 to" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_forwarding_hook_is_answered_by_the_workers_not_locally(spawn: Any) -> None:
    # what `install claude-code --http` installs: one connection per call, handed to a worker
    svc = spawn("--no-access-log", "--workers", "2")
    claude_sandbox_on(svc.project)  # else the first decision carries the sandbox warning
    sid = new_session("fwd")
    hook = [str(Path(sys.executable).with_name("infomark")), "hook", "claude-code",
            "--url", svc.url, "--home", str(svc.home), "--root", str(svc.project)]  # fmt: skip
    answers = []
    for i in range(4):
        payload = _edit(sid, svc.project, f"toolu_f{i}")
        done = subprocess.run(hook, input=json.dumps(payload).encode(), capture_output=True,
                              timeout=60, check=True)  # fmt: skip
        assert b"judged locally" not in done.stderr, done.stderr
        out = json.loads(done.stdout)["hookSpecificOutput"]
        answers.append((out["permissionDecision"], "no_ledger" in out["permissionDecisionReason"]))
    assert answers == [("deny", True)] * 4  # no claim ledger yet: an edit is denied, named
    with _client(svc) as h:
        lines = h.get(f"/v1/sessions/{sid}/events").text.splitlines()
    calls = [json.loads(x)["payload"].get("tool_call_id") for x in lines]
    assert [c for c in calls if c] == [f"toolu_f{i}" for i in range(4)]
