"""Issue 12's session simulation (bench/coverage.py): scratch first, the first denial is the
first edit of a tracked file. Runs the bench's scripted agent for real (git, python, pytest)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.coverage import simulate  # noqa: E402 - the bench package lives at the repo root


def test_the_first_denial_is_the_first_edit_of_a_tracked_file(tmp_path: Path) -> None:
    steps = simulate(tmp_path, tmp_path / ".infomark")
    first = next(i for i, s in enumerate(steps) if not s.allowed)
    assert steps[first].what == "edit the tracked file", steps
    assert [s.code for s in steps[:first]] == [
        "scratch",  # write repro.py
        "scratch",  # run it: the agent's own script, watched
        "allowed",
        "allowed",
        "allowed",
        "scratch",
    ]
    assert steps[first].code == "ungrounded_premises"
