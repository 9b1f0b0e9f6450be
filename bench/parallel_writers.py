"""Writers in parallel processes on one home: ``python -m bench.parallel_writers [N…]``.

What Claude Code's parallel tool calls do to a home (their hooks run at once, each its own
process): N processes (default 1, 2 and 4), each authorizing durable Bash calls on its own
session of one fresh home, released together by a barrier; the table gives the per-call
wall-clock median, p90, p99 and worst, over all the calls. Each process's writes wait for the
others' in the cross-process writer queue (``ledger/store/writer_queue.py``); before it,
they met on SQLite's write lock and its busy handler's sleeps (1, 2, 5 … 100 ms). Wall clock:
run it on a quiet machine, alternating with another checkout (``PYTHONPATH=DIR python -m
bench.parallel_writers``) to compare.
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CALLS = 80  # per process


def _worker(home: Path, root: Path, k: int, go: Any, out: Any) -> None:
    from infomark.gatekeeper import Gatekeeper
    from infomark.ledger.calls import ToolCall

    with Gatekeeper.open(home, f"p{k}", root=root) as gk:
        gk.authorize(ToolCall("Bash", {"command": "echo warm"}))
        go.wait()
        took = []
        for i in range(CALLS):
            t0 = time.perf_counter()
            gk.authorize(ToolCall("Bash", {"command": f"echo {k} {i}"}))
            took.append((time.perf_counter() - t0) * 1000)
    out.put(took)


def run(procs: int) -> list[float]:
    """Every call's wall-clock milliseconds, ``procs`` processes at once on one home."""
    from infomark.gatekeeper import Gatekeeper

    with tempfile.TemporaryDirectory() as d:
        home, root = Path(d) / ".infomark", Path(d)
        Gatekeeper.open(home, "init", root=root).close()
        ctx = mp.get_context("fork")
        go, out = ctx.Barrier(procs), ctx.Queue()
        workers = [ctx.Process(target=_worker, args=(home, root, k, go, out)) for k in range(procs)]
        for w in workers:
            w.start()
        took = [x for _ in workers for x in out.get()]
        for w in workers:
            w.join()
    return sorted(took)


def main(argv: list[str]) -> int:
    print("| processes | calls | median ms | p90 ms | p99 ms | worst ms |")
    print("|---|---|---|---|---|---|")
    for procs in [int(a) for a in argv] or [1, 2, 4]:
        xs = run(procs)
        p90, p99 = xs[int(len(xs) * 0.9)], xs[int(len(xs) * 0.99)]
        print(f"| {procs} | {len(xs)} | {statistics.median(xs):.2f} | {p90:.2f} | {p99:.2f} | "
              f"{xs[-1]:.2f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
