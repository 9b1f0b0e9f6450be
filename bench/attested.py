"""An attested ``pytest -q`` against the same oracle run bare, on a generated 1,000-file project.

``python -m bench.attested [pairs]``: a git project of 1,000 files (500 modules, 500 test files
with one test each), one changed source file; the bare run is ``pytest -q`` in the project, the
attested run is :func:`infomark.tools.attest.check` (the copy from the baseline plus the change,
bubblewrap, the report plugin, the signed evidence). Run alternately (B A B A …): medians, the
median of the per-pair ratios, and the fixed cost (attested median minus bare median). Also
reports the one-time baseline capture and the copy alone (docs/performance.md, "Attested runs").
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
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


def main(argv: list[str]) -> int:
    from infomark.gatekeeper import Gatekeeper
    from infomark.gates import baseline
    from infomark.tools.attest import carry, check
    from infomark.tools.sandbox import probe

    if not probe().available:
        print(f"SKIPPED: no sandbox here ({probe().detail})")
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

        def copy_only() -> None:
            dest = tempfile.mkdtemp()
            try:
                carry.build(gk.store, manifest, os.path.join(dest, "p"), oracle)
            finally:
                carry.remove(dest)

        copies = []
        for _ in range(5):
            t1 = time.perf_counter()
            copy_only()
            copies.append(time.perf_counter() - t1)

        def bare() -> None:
            subprocess.run(oracle.split(), cwd=root, capture_output=True, check=True)

        def attested() -> None:
            result = check(gk, "C1")
            assert result.outcome == "PASS", result.text

        p = paired(attested, bare, pairs=pairs, warmup=1)
        gk.close()
    fixed = p.ours - p.base
    print(f"project: {2 * FILES + 2} files (git), {FILES} tests; {p.pairs} pairs")
    print(f"baseline capture (once per session): {fmt(capture)}")
    print(f"copy (baseline + change, surface discovery): {fmt(statistics.median(copies))}")
    print(f"bare `pytest -q`: {fmt(p.base)}   attested: {fmt(p.ours)}")
    sign = "-" if fixed < 0 else ""
    print(
        f"ratio (median of pairs): {p.ratio:.2f}x   fixed cost (median difference): "
        f"{sign}{fmt(abs(fixed))}"
    )
    print(f"load average while measuring: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
