"""Crash and resume of a working turn: SIGKILL while a tool runs, then `--resume` gives that
call an explicit *interrupted* result (never re-runs it) and the turn goes on."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from infomark.tools.runner.scripted import Request, ScriptedModelServer, call, reply, tool_results
from tests.runner.conftest import events, wait_event


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "infomark", *args]


def test_sigkill_during_a_tool_call_then_resume(
    server: ScriptedModelServer, project: Path, home: Path
) -> None:
    seen: list[str] = []

    def after_resume(req: Request) -> dict[str, Any]:
        seen.extend(tool_results(req))
        return reply("The long command was interrupted; I will not rely on it. Stopping here.")

    # `sleep` stands for any long tool call; the marker file shows it never runs twice
    # issue 12: no mutation without a ledger; this test is about resuming, so the project
    # declares its shell tool as execute
    (project / "infomark.toml").write_text('[tools]\nbash = "execute"\n', encoding="utf-8")
    server.add("r", reply("", call("bash", command="echo started >> runs.txt; sleep 20")))
    base = ("--home", str(home), "--root", str(project), "--quiet")
    proc = subprocess.Popen(
        _cli("run", *base, "--session", "r", "--model", server.url, "work"),
        cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_event(home, "r", lambda row: row[1] == "decision" and row[2]["tool"] == "bash")
        wait_event(home, "r", lambda row: (project / "runs.txt").exists())
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        assert proc.stderr is not None
        proc.stderr.close()
    before = events(home, "r")
    assert "run_finished" not in [t for _, t, _ in before]  # it died mid-turn

    # a second runtime cannot take a live lease of a living process, but this one is dead
    server.add("r", after_resume)
    got = subprocess.run(_cli("run", *base, "--resume", "r"), cwd=project, capture_output=True,
                         text=True, timeout=120, check=False)  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert seen and seen[0].startswith("[infomark runner] interrupted")
    assert (project / "runs.txt").read_text() == "started\n"  # never re-run
    after = events(home, "r")
    assert after[: len(before)] == before  # nothing committed was lost or rewritten
    resumed = next(p for _, t, p in after if t == "run_resumed")
    assert len(resumed["interrupted_calls"]) == 1 and resumed["pending_sleep_until"] is None
    assert [p["reason"] for _, t, p in after if t == "run_finished"] == ["finished"]

    again = subprocess.run(_cli("run", *base, "--resume", "r"), cwd=project, capture_output=True,
                           text=True, timeout=60, check=False)  # fmt: skip
    assert again.returncode == 2 and "already ended (finished)" in again.stderr


def test_a_live_run_cannot_be_run_twice(
    server: ScriptedModelServer, project: Path, home: Path
) -> None:
    server.add("live", reply("", call("wait", seconds=60)))
    base = ("--home", str(home), "--root", str(project), "--quiet")
    proc = subprocess.Popen(
        _cli("run", *base, "--session", "live", "--model", server.url, "wait"),
        cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_event(home, "live", lambda row: row[1] == "waiting" and row[2]["by"] == "wait_tool")
        second = subprocess.run(
            _cli("run", *base, "--session", "live", "--model", server.url, "me too"),
            cwd=project, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert second.returncode == 2 and "already run by runner:" in second.stderr
        resume = subprocess.run(
            _cli("run", *base, "--resume", "live"),
            cwd=project, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert resume.returncode == 2 and "already run by" in resume.stderr
        woke = subprocess.run(_cli("send", "--home", str(home), "--session", "live", "go on"),
                              cwd=project, capture_output=True, text=True, timeout=60,
                              check=False)  # fmt: skip
        assert woke.returncode == 0, woke.stderr
        assert proc.wait(timeout=60) == 0  # the wait woke on the message and the run finished
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    woken = [p for _, t, p in events(home, "live") if t == "woken"]
    assert woken[0]["reason"] == "inbox"
