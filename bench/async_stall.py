"""How long journaling stalls an asyncio event loop: the sync facade vs ``AsyncGatekeeper``.

``python -m bench.async_stall [RECORDS] [ROUNDS]`` (default 1,000 records, 4 rounds). A ticker
task asks the loop for a 1 ms sleep over and over and notes how late each wake-up is; meanwhile
one coroutine records RECORDS tool results (each a durable SQLite commit):

* **A, before**: ``Gatekeeper.record`` called from the coroutine, yielding to the loop between
  records (``await asyncio.sleep(0)``): the loop is stalled for the length of each commit.
* **B, after**: ``await AsyncGatekeeper.record``: the commit runs on the session's worker thread.

Rounds alternate A B A B on fresh sessions of one home, so both see the same load. Printed per
side: the median over rounds of the worst stall, of the p99 stall, and of the wall time.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from infomark.async_gatekeeper import AsyncGatekeeper
from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome

TICK = 0.001


async def _ticker(stop: asyncio.Event, lateness: list[float]) -> None:
    while not stop.is_set():
        t0 = time.perf_counter()
        await asyncio.sleep(TICK)
        lateness.append(time.perf_counter() - t0 - TICK)


def _p99(xs: list[float]) -> float:
    ordered = sorted(xs)
    return ordered[max(0, int(len(ordered) * 0.99) - 1)]


async def _round(home: Path, root: Path, session: str, records: int, use_async: bool) -> tuple:
    lateness: list[float] = []
    stop = asyncio.Event()
    outcome = ToolOutcome("3 passed", exit_code=0)
    if use_async:
        agk = await AsyncGatekeeper.open(home, session, root=root)
        ticker = asyncio.create_task(_ticker(stop, lateness))
        await asyncio.sleep(0.01)
        t0 = time.perf_counter()
        for i in range(records):
            await agk.record(ToolCall("bash", {"command": f"pytest -q -k t{i}"}), outcome)
        wall = time.perf_counter() - t0
        stop.set()
        await ticker
        await agk.close()
    else:
        gk = Gatekeeper.open(home, session, root=root)
        ticker = asyncio.create_task(_ticker(stop, lateness))
        await asyncio.sleep(0.01)
        t0 = time.perf_counter()
        for i in range(records):
            gk.record(ToolCall("bash", {"command": f"pytest -q -k t{i}"}), outcome)
            await asyncio.sleep(0)
        wall = time.perf_counter() - t0
        stop.set()
        await ticker
        gk.close()
    return max(lateness), _p99(lateness), wall, len(lateness)


def main(argv: list[str]) -> int:
    records = int(argv[0]) if argv else 1000
    rounds = int(argv[1]) if len(argv) > 1 else 4
    results: dict[str, list[tuple]] = {"sync": [], "async": []}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        home = root / ".infomark"
        for r in range(rounds):
            for side in ("sync", "async"):  # A B A B …
                got = asyncio.run(_round(home, root, f"{side}-{r}", records, side == "async"))
                results[side].append(got)
                print(
                    f"round {r} {side:>5}: worst {got[0] * 1000:7.2f} ms  "
                    f"p99 {got[1] * 1000:6.2f} ms  wall {got[2]:6.2f} s  ticks {got[3]}",
                    flush=True,
                )
    print(f"\n{records} records, {rounds} rounds each, interleaved; medians over rounds:")
    med = {s: [statistics.median(x[i] for x in v) for i in range(3)] for s, v in results.items()}
    for side, (worst, p99, wall) in med.items():
        label = "Gatekeeper (before)" if side == "sync" else "AsyncGatekeeper (after)"
        print(
            f"{label:<26} worst stall {worst * 1000:7.2f} ms  p99 {p99 * 1000:6.2f} ms  "
            f"wall {wall:6.2f} s"
        )
    ratio = statistics.median(
        a[0] / b[0] for a, b in zip(results["sync"], results["async"], strict=True)
    )
    print(f"worst-stall ratio before/after (median of pairs): {ratio:.1f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
