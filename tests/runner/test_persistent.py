"""Acceptance (c): a persistent `infomark run` idles, is woken by `infomark send`, is killed
with SIGKILL while asleep, and `infomark run --resume` continues the same sleep on the same
schedule level. Real subprocesses; every wait is on journal events."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from infomark.tools.runner.scripted import ScriptedModelServer
from tests.runner.conftest import Row, events, wait_event

AGENT = """\
name = "watcher"
instructions = "Stay available; answer operator messages."
tools = ["read", "wait"]

[idle]
persistent = true
base_seconds = 120
poll_seconds = 0.05
lease_ttl_seconds = 60
"""


def _infomark(*args: str, cwd: Path) -> list[str]:
    return [sys.executable, "-m", "infomark", *args]


def _send(home: Path, project: Path, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _infomark("send", "--home", str(home), "--session", "p", text, cwd=project),
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _alive(proc: subprocess.Popen[str]) -> str | None:
    return None if proc.poll() is None else f"exit {proc.returncode}"


def _is(type_: str, **want: object) -> object:
    def match(row: Row) -> bool:
        return row[1] == type_ and all(row[2].get(k) == v for k, v in want.items())

    return match


def test_idle_wake_by_send_sigkill_and_resume_keeps_the_schedule(
    server: ScriptedModelServer, project: Path, home: Path
) -> None:
    server.state.default = {"role": "assistant", "content": "idle"}
    agent = project / "agent.toml"
    agent.write_text(AGENT)
    base = ("--home", str(home), "--root", str(project))
    run = _infomark(
        "run", *base, "--session", "p", "--agent", str(agent), "--model", server.url,
        "--model-name", "scripted", "--quiet", "stay around", cwd=project,
    )  # fmt: skip
    proc = subprocess.Popen(
        run, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        # three instant empty wakes at level 0, then a long sleep at level 1
        first = wait_event(home, "p", _is("waiting", level=1), alive=lambda: _alive(proc))  # type: ignore[arg-type]
        assert first[2]["delay"] == 120
        got = _send(home, project, "first steer")
        assert got.returncode == 0, got.stderr
        woke = wait_event(home, "p", _is("woken", reason="inbox"), after=first[0])  # type: ignore[arg-type]
        asleep = wait_event(
            home, "p", _is("waiting", level=1), after=woke[0], alive=lambda: _alive(proc)
        )  # type: ignore[arg-type]
        assert any("first steer" in r.text() for r in server.requests)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL

    # the dead runtime's inbox is not live: a send is refused, never reported delivered
    dead = _send(home, project, "anyone there?")
    assert dead.returncode == 3 and "lease_expired" in dead.stderr
    killed_at = events(home, "p")[-1][0]

    resume = _infomark("run", *base, "--resume", "p", "--quiet", cwd=project)
    proc2 = subprocess.Popen(
        resume, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        resumed = wait_event(
            home, "p", _is("run_resumed"), after=killed_at, alive=lambda: _alive(proc2)
        )  # type: ignore[arg-type]
        assert (resumed[2]["level"], resumed[2]["ticks"]) == (
            asleep[2]["level"],
            asleep[2]["ticks"],
        )
        assert resumed[2]["pending_sleep_until"] == asleep[2]["until"]  # the same sleep goes on
        opened = [p for s, t, p in events(home, "p") if t == "inbox_opened" and s > killed_at]
        assert opened and opened[0]["previous_state"] == "live"  # taken over from the dead pid
        got = _send(home, project, "second steer")
        assert got.returncode == 0, got.stderr
        woke2 = wait_event(home, "p", _is("woken", reason="inbox"), after=resumed[0])  # type: ignore[arg-type]
        between = [t for s, t, _ in events(home, "p") if resumed[0] < s < woke2[0]]
        assert "waiting" not in between  # no new schedule: the interrupted sleep was resumed
        wait_event(home, "p", _is("waiting", level=0), after=woke2[0], alive=lambda: _alive(proc2))  # type: ignore[arg-type]
        assert any("second steer" in r.text() for r in server.requests)
        proc2.send_signal(signal.SIGTERM)
        proc2.wait(timeout=30)
    finally:
        if proc2.poll() is None:
            proc2.kill()
            proc2.wait(timeout=30)
        assert proc2.stdout is not None and proc2.stderr is not None
        out, err = proc2.stdout.read(), proc2.stderr.read()
        proc2.stdout.close()
        proc2.stderr.close()
    assert proc2.returncode == 0, err
    rows = events(home, "p")
    assert [p["reason"] for _, t, p in rows if t == "run_finished"] == ["stopped"]
    assert rows[-1][1] == "inbox_closed"
    assert _send(home, project, "too late").returncode == 3
    del out
