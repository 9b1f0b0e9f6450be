"""``infomark eval --agent claude-code:BIN``: tasks of the shipped suite through the real Claude
Code CLI, infomark's hooks installed in each run's copy of the tree, graded by the hidden check.

The model is the scripted agent, behind the Messages API stub on 127.0.0.1. It shows two failure
modes on every run (it edits before declaring or grounding anything, and it claims "done" too
early) and follows every denial and refusal. Two tasks (Python, shell) under observe and
default: four real Claude Code sessions, two at a time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infomark.tools.eval.agents import MODES

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "evals" / "suite"
EXE = Path(sys.executable).with_name("infomark")
TASKS = ("py-add", "sh-max")
ON = ("premature_done", "ungrounded_edits")


@pytest.fixture(scope="module")
def report(claude_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("eval-cc")
    rates = [f"--rate={m}={1.0 if m in ON else 0.0}" for m in MODES]
    args = [str(EXE), "eval", str(SUITE), "--policy", "observe", "--policy", "default"]
    for t in TASKS:
        args += ["--task", t]
    args += [f"--agent=claude-code:{claude_bin}", *rates, "--rate=compliance=1.0"]
    args += ["--seed", "3", "--jobs", "2", "--json", "--no-journal", "--resamples", "200"]
    proc = subprocess.run(args, cwd=base, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    parsed: dict[str, Any] = json.loads(proc.stdout)
    return parsed


def _run(report: dict[str, Any], task: str, policy: str) -> dict[str, Any]:
    (run,) = [r for r in report["runs"] if r["task"] == task and r["policy"] == policy]
    return run


def test_the_runs_went_through_the_real_binary(report: dict[str, Any], claude_bin: Path) -> None:
    assert report["eval"]["agent"] == f"claude-code:{claude_bin}"
    assert sorted({r["task"] for r in report["runs"]}) == sorted(TASKS)
    for r in report["runs"]:
        assert r["error"] == "" and r["end"] == "finished", r
        assert sorted(r["modes"]) == sorted(ON) and r["turns"] >= 1


@pytest.mark.parametrize("task", TASKS)
def test_the_hooks_stop_what_the_baseline_lets_through(report: dict[str, Any], task: str) -> None:
    obs, dft = _run(report, task, "observe"), _run(report, task, "default")
    # observe: nothing intervenes, so one of the two failures got through
    assert obs["denials"] == obs["refusals"] == 0
    assert obs["false_done_accepted"] == 1 or obs["ungrounded_landed"] >= 1, obs
    # default: the PreToolUse hook denied the ungrounded edit, the Stop hook refused the
    # early "done", the agent followed both, and the hidden check passes on its tree
    kinds = {(e["kind"], e["name"]) for e in dft["timeline"]}
    assert ("denial", "pre_tool_use") in kinds and dft["ungrounded_landed"] == 0, dft
    assert ("refusal", "stop_hook") in kinds and dft["refusals"] >= 1, dft
    assert dft["solved"] and dft["false_done_accepted"] == 0, dft
    assert dft["ungrounded_attempted"] >= 1 and dft["ungrounded_blocked"] >= 1


def test_the_report_compares_them(report: dict[str, Any]) -> None:
    (c,) = report["comparisons"]
    assert c["a"] == "observe" and c["b"] == "default" and c["tasks"] == len(TASKS)
    s = {x["policy"]: x for x in report["summaries"]}
    assert s["default"]["solved"]["value"] == 1.0 >= s["observe"]["solved"]["value"]
    assert s["default"]["false_done"]["value"] == 0.0
    (p,) = report["promotions"]
    assert p["decision"] == "refuse" and any("at least 6" in x for x in p["reasons"])


def test_a_missing_binary_is_a_clear_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(EXE), "eval", str(SUITE), "--policy", "observe", "--policy", "default",
         "--task", "py-add", f"--agent=claude-code:{tmp_path / 'nope'}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and "not an executable file" in proc.stderr
    assert "Traceback" not in proc.stderr
