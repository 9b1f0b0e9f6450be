"""An attested ``pytest -q`` against the same oracle run bare, on a generated 1,000-file project.

``python -m bench.attested [pairs]``: a git project of 1,000 files (500 modules, 500 test files
with one test each), one changed source file; the bare run is ``pytest -q`` in the project, the
attested run is :func:`infomark.tools.attest.check` (the copy from the baseline plus the change,
bubblewrap, the report plugin, the signed evidence). Run alternately (B A B A …): medians, the
median of the per-pair ratios, and the fixed cost (attested median minus bare median). Also
reports the one-time baseline capture, the first check (which also runs the oracle on the
baseline), and the fixed parts alone: the copy, its removal, bubblewrap's start, and the report
plugin's CPU cost in a bare run (docs/performance.md, "Attested runs").
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._timing import fmt, paired

FILES = 500  # modules; as many test files


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


def main(argv: list[str]) -> int:
    from infomark.gatekeeper import Gatekeeper
    from infomark.gates import baseline
    from infomark.tools import sandbox
    from infomark.tools.attest import carry, check
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

        def copy_only() -> None:
            dest = tempfile.mkdtemp()
            dests.append(dest)
            carry.build(gk.store, manifest, os.path.join(dest, "p"), oracle)

        copy = _median(copy_only, 5)
        remove = _median(lambda: carry.remove(dests.pop()), 5)
        policy = sandbox.SandboxPolicy(cwd=str(root), env=sandbox.clean_env())
        bwrap = _median(lambda: sandbox.run(["true"], policy), 10)
        plugin_dir = Path(tmp) / "plugin"
        plugin_dir.mkdir()
        (plugin_dir / "infomark_attest_plugin.py").write_bytes(plugin_source())
        report = Path(tmp) / "report.jsonl"
        with_plugin = {
            **os.environ,
            "PYTEST_ADDOPTS": "-p infomark_attest_plugin",
            "PYTHONPATH": str(plugin_dir),
            "INFOMARK_ATTEST_REPORT": str(report),
        }

        def bare() -> None:
            subprocess.run(oracle.split(), cwd=root, capture_output=True, check=True)

        def plugged() -> None:
            report.write_bytes(b"")
            subprocess.run(oracle.split(), cwd=root, env=with_plugin, capture_output=True)

        def attested() -> None:
            result = check(gk, "C1")
            assert result.outcome == "PASS", result.text

        first = _median(attested, 1)  # the first check also runs the oracle on the baseline
        plugin = paired(plugged, bare, pairs=max(3, pairs // 2), warmup=1, measure=_cpu_of)
        p = paired(attested, bare, pairs=pairs, warmup=1)
        gk.close()
    print(f"project: {2 * FILES + 2} files (git), {FILES} tests; {p.pairs} pairs")
    print(f"baseline capture (once per session): {fmt(capture)}")
    print(f"first check (with the baseline run, once per oracle): {fmt(first[0])}")
    print(f"copy (baseline + change, surface discovery): {fmt(copy[0])} (CPU {fmt(copy[1])})")
    print(f"removing the copy: {fmt(remove[0])} (CPU {fmt(remove[1])})")
    print(f"bubblewrap start (`true`): {fmt(bwrap[0])} (CPU {fmt(bwrap[1])})")
    print(
        f"report plugin (CPU, unsandboxed): {fmt(plugin.base)} bare, {fmt(plugin.ours)} with it "
        f"({plugin.ratio:.2f}x)"
    )
    print(f"bare `pytest -q`: {fmt(p.base)}   attested: {fmt(p.ours)}   (wall)")
    print(
        f"ratio (median of pairs): {p.ratio:.2f}x   fixed cost (median difference): "
        f"{_signed(p.ours - p.base)}"
    )
    print(f"load average while measuring: {os.getloadavg()[0]:.1f}")
    return 0


def _signed(seconds: float) -> str:
    return ("-" if seconds < 0 else "") + fmt(abs(seconds))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
