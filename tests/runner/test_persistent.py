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


def _start(
    server: ScriptedModelServer, project: Path, home: Path, session: str, agent_text: str
) -> tuple[subprocess.Popen[str], tuple[str, ...]]:
    """A persistent `infomark run` of the agent file ``agent_text``; ``(process, base args)``."""
    agent = project / "agent.toml"
    agent.write_text(agent_text)
    base = ("--home", str(home), "--root", str(project))
    run = _infomark(
        "run", *base, "--session", session, "--agent", str(agent), "--model", server.url,
        "--model-name", "scripted", "--quiet", "stay around", cwd=project,
    )  # fmt: skip
    proc = subprocess.Popen(
        run, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return proc, base


def _reap(proc: subprocess.Popen[str]) -> None:
    """Kill ``proc`` if it still runs, wait for it and close its pipes."""
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=30)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


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
    proc, base = _start(server, project, home, "p", AGENT)
    try:
        # the first sleep is the schedule's base (seed 003: no instant wakes)
        first = wait_event(home, "p", _is("waiting", level=0), alive=lambda: _alive(proc))  # type: ignore[arg-type]
        assert first[2]["delay"] == 120
        got = _send(home, project, "first steer")
        assert got.returncode == 0, got.stderr
        woke = wait_event(home, "p", _is("woken", reason="inbox"), after=first[0])  # type: ignore[arg-type]
        asleep = wait_event(
            home, "p", _is("waiting", level=0), after=woke[0], alive=lambda: _alive(proc)
        )  # type: ignore[arg-type]
        assert any("first steer" in r.text() for r in server.requests)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        _reap(proc)
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


BACKOFF_AGENT = """\
name = "backoff"
tools = ["read", "wait"]

[idle]
persistent = true
base_seconds = 0.05
cap_seconds = 300
poll_seconds = 0.01
"""


def test_sigkill_after_backing_off_resumes_at_the_same_level_not_at_zero(
    server: ScriptedModelServer, project: Path, home: Path
) -> None:
    """Three empty timer wakes (0.05, 0.1, 0.2 s) raise the level to 3; the third wake turn's
    model call is held open by the test, the runtime is SIGKILLed there, and `--resume`
    settles that wake turn and sleeps on level 3 (0.4 s), not on a fresh schedule."""
    import threading

    entered, release = threading.Event(), threading.Event()
    wake_turns = 0

    def model(_req: object) -> dict[str, str]:
        nonlocal wake_turns
        wake_turns += 1
        if wake_turns == 4:  # the working turn, then the third idle wake turn
            entered.set()
            release.wait(120)
        return {"role": "assistant", "content": "idle"}

    server.state.default = model
    proc, base = _start(server, project, home, "b", BACKOFF_AGENT)
    try:
        assert entered.wait(120), "the third wake turn never called the model"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        release.set()
        _reap(proc)
    before = events(home, "b")
    delays = [p["delay"] for _, t, p in before if t == "waiting" and p["by"] == "idle"]
    assert delays == [0.05, 0.1, 0.2]  # 5 s doubling, scaled: the seed's schedule
    killed_at = before[-1][0]
    proc2 = subprocess.Popen(
        _infomark("run", *base, "--resume", "b", "--quiet", cwd=project),
        cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        resumed = wait_event(
            home, "b", _is("run_resumed"), after=killed_at, alive=lambda: _alive(proc2)
        )  # type: ignore[arg-type]
        assert (resumed[2]["level"], resumed[2]["pending_sleep_until"]) == (2, None)
        assert resumed[2]["interrupted_wake"] == "timer"  # the killed wake turn is finished
        nxt = wait_event(
            home, "b", _is("waiting", by="idle"), after=resumed[0], alive=lambda: _alive(proc2)
        )  # type: ignore[arg-type]
        assert (nxt[2]["level"], nxt[2]["delay"]) == (3, 0.4)
        proc2.send_signal(signal.SIGTERM)
        proc2.wait(timeout=30)
    finally:
        if proc2.poll() is None:
            proc2.kill()
            proc2.wait(timeout=30)
        assert proc2.stderr is not None
        err = proc2.stderr.read()
        proc2.stderr.close()
    assert proc2.returncode == 0, err
