"""What infomark's byte-code cache saves a sandboxed run, by module size.

``python -m bench.attested_pycache [rounds]``: for modules of about 150 B, 300 B, 900 B and
3 KB (500 each, in a package in ``/dev/shm``), the CPU time (user + system) of a fresh
``python`` importing all of them with no byte code ("cold"), against the same import after
:func:`infomark.tools.attest.pycache.fill` wrote the cached pycs, plus the fill's own CPU time
in this process (the cache already holds the entries, as from the second check on);
alternated, medians (docs/performance.md, "Attested runs").
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

from infomark.tools.attest import pycache

SIZES = (1, 2, 7, 23)  # functions per module: ~150 B, ~300 B, ~900 B, ~3 KB
IMPORT = "import importlib\nfor i in range(500): importlib.import_module(f'pkg.m{i:03}')"


def _module(i: int, functions: int) -> str:
    body = "".join(
        f"def g{j}(x, y=None):\n    '''doc'''\n    if x > {j}:\n"
        f"        return [i * {j} for i in range(x) if i % 3]\n    return {{'k': x, 'v': y}}\n\n"
        for j in range(functions)
    )
    return f"import os\nX = {i}\n" + body


def _children_cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def measure(functions: int, n: int) -> tuple[int, float, float, float]:
    """(module bytes, cold CPU, filled CPU, fill CPU), medians of ``n`` alternated rounds."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    root = tempfile.mkdtemp(prefix="bench-pyc-", dir=base)
    home = tempfile.mkdtemp(prefix="bench-pyc-home-")
    try:
        os.makedirs(os.path.join(root, "pkg"))
        open(os.path.join(root, "pkg", "__init__.py"), "w").close()
        for i in range(500):
            with open(os.path.join(root, "pkg", f"m{i:03}.py"), "w") as fh:
                fh.write(_module(i, functions))
        size = len(_module(0, functions))
        pyc_dir = os.path.join(root, "pkg", "__pycache__")

        def imported() -> float:
            c0 = _children_cpu()
            subprocess.run([sys.executable, "-B", "-c", IMPORT], cwd=root, check=True)
            return _children_cpu() - c0

        pycache.fill(root, home)  # the cache holds the entries, as from the second check on
        cold, filled, fills = [], [], []
        for _ in range(n):
            shutil.rmtree(pyc_dir, ignore_errors=True)
            cold.append(imported())
            shutil.rmtree(pyc_dir, ignore_errors=True)
            t0 = time.process_time()
            pycache.fill(root, home)
            fills.append(time.process_time() - t0)
            filled.append(imported())
        med = statistics.median
        return size, med(cold), med(filled), med(fills)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 5
    print(f"500 modules each, {n} alternated rounds, CPU medians (user + system)")
    for functions in SIZES:
        size, cold, filled, fill = measure(functions, n)
        print(
            f"module {size:>5} B: import cold {cold * 1000:.0f} ms, with the cached pycs "
            f"{filled * 1000:.0f} ms + the fill {fill * 1000:.0f} ms: saves "
            f"{(cold - filled - fill) * 1000:.0f} ms"
        )
    print(f"load average: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
