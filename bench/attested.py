"""An attested ``pytest -q`` against the same oracle run bare, on a generated 1,000-file project.

``python -m bench.attested [rounds]``: a git project of 1,000 files (500 modules, 500 test
files with one test each), one changed source file; the bare run is ``pytest -q`` in the
project, the attested run is :func:`infomark.tools.attest.check` (the copy from the baseline
plus the change, bubblewrap, the report plugin, the signed evidence). Run in turn, the order
rotated each round (B A M U D, A M U D B …; M: the check with the modules' byte-code cache
only, :mod:`infomark.tools.attest.pycache`, as before pytest's rewritten test modules were
cached too, :mod:`infomark.tools.attest.rewrites`; U: without either cache; D: with its copy
on the disk, as before the copy went to ``/dev/shm``): medians, the median of the per-round
ratios, and the fixed cost (attested median minus bare median), infomark's own CPU time per
check, and the CPU time of the sandboxed program itself (the evidence's ``cpu_ms``, counted
inside the sandbox) against the bare run's (this process's ``RUSAGE_CHILDREN``); the last
line says whether the goal is met, on the wall clock and in CPU time; before it, the fixed
cost's breakdown (:data:`PARTS`: the copy, the byte-code fill, the sandboxed run, removing the
copy, the evidence; wall and infomark's CPU of each, medians over the attested rounds; the
sandboxed program's CPU beyond the bare run). Also reports the one-time
baseline capture, the first check (which also runs the oracle on the baseline), and the
parts alone: the copy in memory and on the disk (interleaved), its removal, bubblewrap's
start, the report plugin's CPU cost in a bare run, the sandboxed run inside the check, and
the cold start: bare ``pytest -q`` in a fresh copy of the project (no byte code; only the
modules' byte code; all of it) against the bare run in the project (interleaved;
docs/performance.md, "Attested runs").
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._timing import fmt, paired, rounds

FILES = 500  # modules; as many test files
#: the bare runs write and reuse their byte code, as a developer's ``pytest -q`` does, whatever
#: this process was started with (a ``PYTHONDONTWRITEBYTECODE`` here would make every bare run
#: a cold one, and the attested run look cheap beside it)
BARE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def generate(root: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    for i in range(FILES):
        (root / "pkg" / f"m{i:03}.py").write_text(f"def f(x):\n    return x + {i}\n")
        (root / "tests" / f"test_m{i:03}.py").write_text(
            f"from pkg.m{i:03} import f\n\n\ndef test_f():\n    assert f(1) == {i + 1}\n"
        )
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)


def _cpu() -> float:
    """CPU seconds of this process and its waited-for children (the sandbox, pytest)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _cpu_of(fn: Callable[[], object]) -> float:
    t0 = _cpu()
    fn()
    return _cpu() - t0


def _median(fn: Callable[[], object], n: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds) of ``n`` calls."""
    walls, cpus = [], []
    for _ in range(n):
        c0, t0 = _cpu(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(_cpu() - c0)
    return statistics.median(walls), statistics.median(cpus)


#: the parts of one check timed on their own (label, module, function): what the fixed cost
#: is made of; the rest of the check (the baseline's manifest, the report, the judgement)
#: is the check's total less these
PARTS = (
    ("copy (baseline + change, surface)", "infomark.tools.attest.carry", "build"),
    ("byte-code fill (both caches)", "infomark.tools.attest.pycache", "fill"),
    ("sandboxed run (bubblewrap + program)", "infomark.tools.sandbox", "run"),
    ("removing the copy", "infomark.tools.attest.carry", "remove"),
    ("evidence + stamp", "infomark.tools.attest.run", "_record"),
)


class Parts:
    """Wall and CPU (this process) of each of :data:`PARTS` per check, while ``on``."""

    def __init__(self) -> None:
        import importlib

        self.on = False
        self.now: dict[str, list[float]] = {}
        self.samples: dict[str, list[tuple[float, float]]] = {}
        for label, module, name in PARTS:
            mod = importlib.import_module(module)
            setattr(mod, name, self._timed(label, getattr(mod, name)))

    def _timed(self, label: str, fn: Callable[..., object]) -> Callable[..., object]:
        def timed(*args: object, **kwargs: object) -> object:
            if not self.on:
                return fn(*args, **kwargs)
            c0, t0 = time.process_time(), time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                got = self.now.setdefault(label, [0.0, 0.0])
                got[0] += time.perf_counter() - t0
                got[1] += time.process_time() - c0

        return timed

    def check(self, fn: Callable[[], object]) -> None:
        """Run one check with its parts timed; the whole check is the part ``total``."""
        self.now, self.on = {}, True
        c0, t0 = time.process_time(), time.perf_counter()
        try:
            fn()
        finally:
            self.on = False
        self.now["total"] = [time.perf_counter() - t0, time.process_time() - c0]
        for label, (wall, cpu) in self.now.items():
            self.samples.setdefault(label, []).append((wall, cpu))

    def report(self, program: float) -> list[str]:
        """The breakdown's lines (medians); ``program``: the sandboxed program's CPU beyond
        the bare run's (median), which the sandboxed run's own CPU here does not hold."""
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
               for k, v in self.samples.items()}  # fmt: skip
        lines = ["the attested check's parts (medians; CPU: infomark's process)   wall      CPU"]
        parts = 0.0
        for label, _module, _name in PARTS:
            wall, cpu = med.get(label, (0.0, 0.0))
            parts += cpu
            lines.append(f"  {label:62} {fmt(wall):9} {fmt(cpu)}")
        wall, cpu = med.get("total", (0.0, 0.0))
        lines.append(f"  {'the rest (manifest, surface, report, judgement)':62} {'':9} "
                     f"{_signed(cpu - parts)}")  # fmt: skip
        lines.append(f"  {'the whole check, in infomark':62} {fmt(wall):9} {fmt(cpu)}")
        lines.append(f"  {'the sandboxed program beyond the bare run (its own CPU)':62} {'':9} "
                     f"{_signed(program)}")  # fmt: skip
        return lines


def main(argv: list[str]) -> int:
    from infomark.gatekeeper import Gatekeeper
    from infomark.gates import baseline
    from infomark.tools import sandbox
    from infomark.tools.attest import carry, check, pycache, rewrites
    from infomark.tools.attest_report import plugin_source

    if not sandbox.probe().available:
        print(f"SKIPPED: no sandbox here ({sandbox.probe().detail})")
        return 0
    pairs = int(argv[0]) if argv else 10
    oracle = f"{sys.executable} -m pytest -q -p no:cacheprovider"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        generate(root)
        home = Path(tmp) / "home"
        gk = Gatekeeper.open(home, "bench", root=root)
        ledger = (
            "claim_ledger:\n  claims:\n    - id: C1\n      text: t\n      status: Guess\n"
            f'      falsifier: f\n      oracle: "{oracle}"\n  premises_for_plan: []\n'
        )
        gk.ingest(ledger)
        t0 = time.perf_counter()
        baseline.ensure(gk.store)
        capture = time.perf_counter() - t0
        (root / "pkg" / "m001.py").write_text("def f(x):\n    return x + 1  # changed\n")
        manifest = baseline.load(gk.store, gk.store.refresh().baseline)
        dests: list[str] = []

        def copy_in(memory: bool) -> Callable[[], None]:
            def copy_only() -> None:
                dest = _scratch(memory)
                dests.append(dest)
                carry.build(gk.store, manifest, os.path.join(dest, "p"), oracle)

            return copy_only

        copy = paired(copy_in(True), copy_in(False), pairs=8, warmup=1)
        for dest in dests:
            carry.remove(dest)
        dests.clear()
        copy_cpu = _median(copy_in(True), 5)
        remove = _median(lambda: carry.remove(dests.pop()), 5)
        policy = sandbox.SandboxPolicy(cwd=str(root), env=sandbox.clean_env())
        bwrap = _median(lambda: sandbox.run(["true"], policy), 10)
        plugin_dir = Path(tmp) / "plugin"
        plugin_dir.mkdir()
        (plugin_dir / "infomark_attest_plugin.py").write_bytes(plugin_source())
        report = Path(tmp) / "report.jsonl"
        with_plugin = {
            **BARE_ENV,
            "PYTEST_ADDOPTS": "-p infomark_attest_plugin",
            "PYTHONPATH": str(plugin_dir),
            "INFOMARK_ATTEST_REPORT": str(report),
        }

        parts = Parts()
        kinds = ("attested", "modules", "uncached", "disk")
        prog: dict[str, list[float]] = {k: [] for k in ("bare", *kinds)}

        def bare() -> None:
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(oracle.split(), cwd=root, env=BARE_ENV, capture_output=True, check=True)
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            prog["bare"].append(c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime)

        def plugged() -> None:
            report.write_bytes(b"")
            subprocess.run(oracle.split(), cwd=root, env=with_plugin, capture_output=True)

        walls: dict[str, list[float]] = {k: [] for k in kinds}

        def attested(into: str = "attested") -> None:
            got: list[Any] = []
            if into == "attested":
                parts.check(lambda: got.append(check(gk, "C1")))
            else:
                got.append(check(gk, "C1"))
            result = got[0]
            assert result.outcome == "PASS", result.text
            record = result.evidence.record if result.evidence else {}
            walls[into].append(record["attested"]["wall_ms"] / 1000)
            prog[into].append(record["attested"]["cpu_ms"] / 1000)

        def attested_uncached() -> None:
            fill = pycache.fill
            pycache.fill = lambda *_: pycache.Filled()
            try:
                attested("uncached")
            finally:
                pycache.fill = fill

        def attested_modules_only() -> None:
            rewriter = rewrites.rewriter
            rewrites.rewriter = lambda *_: None
            try:
                attested("modules")
            finally:
                rewrites.rewriter = rewriter

        def attested_on_disk() -> None:
            os.environ["TMPDIR"] = tempfile.gettempdir()  # the rule: $TMPDIR set, the disk
            try:
                attested("disk")
            finally:
                del os.environ["TMPDIR"]

        first = _median(attested, 1)  # the first check also runs the oracle on the baseline
        plugin = paired(plugged, bare, pairs=max(3, pairs // 2), warmup=1, measure=_cpu_of)
        cold = rounds(
            {
                "bare": bare,
                "cold": _fresh(root, oracle, keep=()),
                "modules": _fresh(root, oracle, keep=("modules",)),
                "warm": _fresh(root, oracle, keep=("modules", "rewrites")),
            },
            max(3, pairs // 2),
        )
        cpu: dict[str, list[float]] = {}
        runs = rounds(
            {
                "bare": bare,
                "attested": attested,
                "modules": attested_modules_only,
                "uncached": attested_uncached,
                "disk": attested_on_disk,
            },
            pairs,
            cpu=cpu,
        )
        used = {k: statistics.median(v[-pairs:]) for k, v in prog.items()}
        sandboxed = {k: statistics.median(v[-pairs:]) for k, v in walls.items()}
        gk.close()
    med = {k: statistics.median(runs[k]) for k in ("bare", *kinds)}
    base, ours = med["bare"], med["attested"]
    print(
        f"project: {2 * FILES + 2} files (git), {FILES} tests; {pairs} rounds (B A M U D, rotated)"
    )
    print(f"baseline capture (once per session): {fmt(capture)}")
    print(f"first check (with the baseline run, once per oracle): {fmt(first[0])}")
    print(
        f"copy (baseline + change, surface discovery): {fmt(copy.ours)} in /dev/shm, "
        f"{fmt(copy.base)} on the disk ({copy.ratio:.2f}x, {copy.pairs} pairs); "
        f"CPU {fmt(copy_cpu[1])} in /dev/shm"
    )
    print(f"removing the copy (/dev/shm): {fmt(remove[0])} (CPU {fmt(remove[1])})")
    print(f"bubblewrap start (`true`): {fmt(bwrap[0])} (CPU {fmt(bwrap[1])})")
    print(
        f"report plugin (CPU, unsandboxed): {fmt(plugin.base)} bare, {fmt(plugin.ours)} with it "
        f"({plugin.ratio:.2f}x)"
    )
    c = {k: statistics.median(v) for k, v in cold.items()}
    print(
        f"cold start, bare `pytest -q` in a fresh copy in /dev/shm ({len(cold['bare'])} rounds): "
        f"no byte code {fmt(c['cold'])}, the modules' byte code {fmt(c['modules'])}, all of "
        f"it (pytest's rewritten tests too) {fmt(c['warm'])}; in the project {fmt(c['bare'])}"
    )
    names = {
        "attested": "attested (both caches)",
        "modules": "modules' cache only (before)",
        "uncached": "no cache",
        "disk": "copy on disk",
    }
    own = {k: statistics.median(cpu[k]) for k in kinds}
    print("what (medians)                 wall     sandboxed  program CPU  infomark CPU")
    print(f"{'bare `pytest -q`':30} {fmt(base):8} {'':10} {fmt(used['bare']):12}")
    for k in kinds:
        print(
            f"{names[k]:30} {fmt(med[k]):8} {fmt(sandboxed[k]):10} {fmt(used[k]):12} {fmt(own[k])}"
        )
    for k in kinds:
        extra_cpu = used[k] - used["bare"] + own[k]
        print(
            f"{names[k]:30} ratio {_ratio(runs[k], runs['bare']):.2f}x  fixed cost (wall, "
            f"median difference) {_signed(med[k] - base)}  CPU over the bare run "
            f"{_signed(extra_cpu)}"
        )
    extra = statistics.median(
        a - b for a, b in zip(prog["attested"][-pairs:], prog["bare"][-pairs:], strict=True)
    )
    for line in parts.report(extra):
        print(line)
    print(
        f"GOAL (<= 1.3x and <= 300 ms fixed): attested ratio "
        f"{_ratio(runs['attested'], runs['bare']):.2f}x, fixed cost {_signed(ours - base)} "
        f"wall, {_signed(used['attested'] - used['bare'] + own['attested'])} CPU"
    )
    print(f"load average while measuring: {os.getloadavg()[0]:.1f}")
    return 0


def _ratio(ours: list[float], base: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(ours, base, strict=True) if b > 0)


def _scratch(memory: bool) -> str:
    """A new private directory in /dev/shm (``memory``) or on the disk."""
    return tempfile.mkdtemp(dir="/dev/shm" if memory else None)


def _fresh(root: Path, oracle: str, keep: tuple[str, ...]) -> Callable[[], float]:
    """Bare ``oracle`` in a fresh copy of ``root`` in /dev/shm, timed alone (the copying is
    not): ``keep`` names the byte code copied along (mtimes kept, so it stays valid):
    ``modules`` (``*.cpython-*.pyc``), ``rewrites`` (pytest's ``*-pytest-*.pyc``)."""

    def ignore(_dir: str, names: list[str]) -> list[str]:
        def dropped(name: str) -> bool:
            if name == ".git":
                return True
            if not name.endswith(".pyc"):
                return False
            return ("rewrites" if "-pytest-" in name else "modules") not in keep

        return [n for n in names if dropped(n)]

    def run() -> float:
        dest = _scratch(True)
        try:
            copy = Path(dest) / "proj"
            shutil.copytree(root, copy, ignore=ignore)
            t0 = time.perf_counter()
            subprocess.run(oracle.split(), cwd=copy, env=BARE_ENV, capture_output=True, check=True)
            return time.perf_counter() - t0
        finally:
            shutil.rmtree(dest, ignore_errors=True)

    return run


def _signed(seconds: float) -> str:
    return ("-" if seconds < 0 else "") + fmt(abs(seconds))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
