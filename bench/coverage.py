"""Gate coverage benchmarks: the working-tree fingerprint, and a scripted agent session.

``python -m bench coverage`` runs both:

- ``fingerprint``: mark + compare on a 10,000-file git repository (issue 12's budget: 15 ms),
  interleaved with ``git status --porcelain -uno`` answering the same question, so machine
  load hits both alike;
- ``session``: a scripted agent with one ungrounded premise writes a reproduction script,
  runs it, reads, searches, then edits tracked files; the first denial must be the first edit
  of a tracked file (:func:`simulate` is also run by tests/gates/test_session_simulation.py).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.core import row
from infomark.gatekeeper import Gatekeeper
from infomark.gates import fingerprint
from infomark.ledger.calls import ToolCall, ToolOutcome

_GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=_GIT_ENV, check=True, capture_output=True)


def make_repo(root: Path, files: int = 10_000) -> Path:
    """A git repository of ``files`` tracked files (100 per directory), committed."""
    per_dir = 100
    for d in range(files // per_dir):
        sub = root / f"pkg{d:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        for i in range(per_dir):
            (sub / f"mod{i:03d}.py").write_text(f"VALUE = {d * per_dir + i}\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "bench")
    return root


def measure_fingerprint(root: Path, rounds: int = 15) -> tuple[float, float]:
    """Median seconds of (mark + changes_since) and of ``git status``, interleaved."""
    watch = Path(tempfile.mkdtemp(prefix="infomark-watch-"))
    fingerprint.tracked_paths(root, watch)  # the session's first call parses and caches
    ours: list[float] = []
    base: list[float] = []
    for i in range(rounds):
        t0 = time.perf_counter()
        fingerprint.mark(watch, "bench", seq=i)
        change = fingerprint.changes_since(watch, "bench", root)
        ours.append(time.perf_counter() - t0)
        assert change is not None and change.complete
        t0 = time.perf_counter()
        subprocess.run(
            ["git", "status", "--porcelain", "-z", "-uno"], cwd=root, capture_output=True
        )
        base.append(time.perf_counter() - t0)
    return statistics.median(ours), statistics.median(base)


def bench_fingerprint() -> None:
    with tempfile.TemporaryDirectory(prefix="infomark-fp-") as tmp:
        root = make_repo(Path(tmp) / "repo")
        ours, base = measure_fingerprint(root)
        row("fingerprint, 10k tracked files (mark+compare)", ours, base, "git status -uno")


@dataclass(frozen=True, slots=True)
class Step:
    what: str
    call: ToolCall
    code: str
    allowed: bool


FIX_SCRIPT = "from pathlib import Path\nimport app\nprint('repro: f() =', app.f())\n"


def simulate(root: Path, home: Path) -> list[Step]:
    """The scripted session; returns every decision in order."""
    src = root / "app.py"
    src.write_text("def f():\n    return 1\n")
    (root / "test_app.py").write_text("import app\n\ndef test_f():\n    assert app.f() == 2\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "start")
    steps: list[Step] = []
    with Gatekeeper.open(home, "bench-session", root=root) as gk:
        gk.ingest(
            "claim_ledger:\n  claims:\n"
            '    - {id: C1, text: "f() returns 1 because of the constant", status: Guess,\n'
            '       falsifier: "f() returns 2", oracle: "python -m pytest -q test_app.py"}\n'
            "  premises_for_plan: [C1]\n"
        )

        def act(what: str, call: ToolCall, perform: bool = True) -> None:
            d = gk.authorize(call)
            steps.append(Step(what, call, str(d.code), d.allowed))
            if not d.allowed or not perform:
                return
            if call.tool == "Write":
                (root / str(call.input["file_path"])).write_text(str(call.input["content"]))
                gk.record(call, ToolOutcome("written"), call_id=d.call_id)
            elif call.tool == "Bash":
                proc = subprocess.run(
                    [sys.executable, *str(call.input["command"]).split()[1:]],
                    cwd=root,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                gk.record(
                    call,
                    ToolOutcome(proc.stdout + proc.stderr, exit_code=proc.returncode),
                    call_id=d.call_id,
                )
            else:
                gk.record(call, ToolOutcome(src.read_text()), call_id=d.call_id)

        act(
            "write a reproduction script",
            ToolCall("Write", {"file_path": "repro.py", "content": FIX_SCRIPT}),
        )
        act("run it", ToolCall("Bash", {"command": "python repro.py"}))
        act("read the code", ToolCall("Read", {"file_path": "app.py"}))
        act("search", ToolCall("Grep", {"pattern": "def f"}), perform=False)
        act("run the tests", ToolCall("Bash", {"command": "python -m pytest -q test_app.py"}))
        act(
            "write a second scratch file",
            ToolCall("Write", {"file_path": "notes_scratch.md", "content": "n"}),
        )
        act(
            "edit the tracked file",
            ToolCall("Edit", {"file_path": "app.py", "old_string": "1", "new_string": "2"}),
            perform=False,
        )
        act(
            "edit the test",
            ToolCall("Edit", {"file_path": "test_app.py", "old_string": "2", "new_string": "1"}),
            perform=False,
        )
    return steps


def bench_session() -> None:
    with tempfile.TemporaryDirectory(prefix="infomark-session-") as tmp:
        root = Path(tmp) / "proj"
        root.mkdir()
        t0 = time.perf_counter()
        steps = simulate(root, root / ".infomark")
        elapsed = time.perf_counter() - t0
    first = next(i for i, s in enumerate(steps) if not s.allowed)
    for s in steps:
        print(f"    {s.what:<32} {'allow' if s.allowed else 'DENY ':<6} {s.code}")
    ok = steps[first].what == "edit the tracked file"
    print(f"    first denial: step {first + 1} ({steps[first].what}) -> {'ok' if ok else 'WRONG'}")
    row(f"session simulation, {len(steps)} calls (first denial ok={ok})", elapsed)


ALL = [bench_fingerprint, bench_session]
