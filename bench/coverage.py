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
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench._timing import Paired, paired
from bench.core import row, timed_row
from infomark.gatekeeper import Gatekeeper
from infomark.gates import feed, fingerprint
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


def _cpu(fn: Callable[[], object]) -> float:
    """CPU seconds (user + system) of one call, its child processes included."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    fn()
    after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return sum(
        (b.ru_utime - a.ru_utime) + (b.ru_stime - a.ru_stime)
        for a, b in zip(before, after, strict=True)
    )


def _cpu_with(pid: int) -> Callable[[Callable[[], object]], float]:
    """:func:`_cpu` plus the CPU the process ``pid`` (the feed's watcher) spent meanwhile."""

    def ticks() -> int:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        fields = stat[stat.rindex(b")") + 2 :].split()
        return int(fields[11]) + int(fields[12])  # utime + stime

    hz = os.sysconf("SC_CLK_TCK")

    def measure(fn: Callable[[], object]) -> float:
        before = ticks()
        own = _cpu(fn)
        return own + (ticks() - before) / hz

    return measure


def measure_fingerprint(root: Path, pairs: int = 15) -> dict[str, Paired]:
    """Mark + compare, with the change feed and with the full scan, each interleaved with
    ``git status -uno`` (B A B A): wall and CPU (the feed's CPU includes its watcher's)."""
    watch = Path(tempfile.mkdtemp(prefix="infomark-watch-"))
    fingerprint.tracked_paths(root, watch)  # the session's first call parses and caches
    found = fingerprint.find_git_dir(root)
    assert found is not None
    pin = feed.launch(watch, found[0], wait=120)
    assert pin is not None, "the watcher did not start"
    seq = [0]

    def run(*, fed: bool) -> Callable[[], None]:
        def go() -> None:
            seq[0] += 1
            fingerprint.mark(watch, "bench", seq=seq[0], root=root if fed else None)
            change = fingerprint.changes_since(watch, "bench", root)
            assert change is not None and change.complete
            assert change.method == ("feed" if fed else "git-index"), change.method

        return go

    def git() -> None:
        subprocess.run(
            ["git", "status", "--porcelain", "-z", "-uno"], cwd=root, capture_output=True
        )

    try:
        return {
            "feed wall": paired(run(fed=True), git, pairs=pairs),
            "feed CPU": paired(run(fed=True), git, pairs=pairs, measure=_cpu_with(pin["pid"])),
            "walk wall": paired(run(fed=False), git, pairs=pairs),
            "walk CPU": paired(run(fed=False), git, pairs=pairs, measure=_cpu),
        }
    finally:
        feed.stop(watch, found[0])


def bench_fingerprint() -> None:
    with tempfile.TemporaryDirectory(prefix="infomark-fp-") as tmp:
        root = make_repo(Path(tmp) / "repo")
        got = measure_fingerprint(root)
        for name, what in (
            ("feed", "change feed (watcher live)"),
            ("walk", "full scan (no watcher)"),
        ):
            for kind, base in (("wall", "git status -uno"), ("CPU", "git status -uno (user+sys)")):
                p = got[f"{name} {kind}"]
                timed_row(
                    f"fingerprint, 10k tracked files, {what}, {kind}",
                    p.ours,
                    p.base,
                    p.ratio,
                    base,
                )


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
