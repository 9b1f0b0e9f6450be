"""Load on one HTTP service: agent threads doing authorize + record + ingest, timed.

:func:`run_load` drives ``threads`` agents (``shared`` of them on one session, the others
on their own) through the real :class:`~infomark.tools.http_client.Client` for ``seconds``
(or ``rounds`` rounds each), samples the server's RSS, and returns latencies, throughput,
errors and the RSS series. Used by the fast threaded test (a few rounds) and the soak (60 s).
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from rel_service import RelService
from rel_support import ORACLE

from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.tools.http_client import Client

__all__ = ["LoadResult", "run_load"]


@dataclass
class LoadResult:
    latencies: list[float] = field(default_factory=list)  # seconds, one per request
    errors: list[str] = field(default_factory=list)
    rounds: int = 0
    seconds: float = 0.0
    rss_kb: list[tuple[float, int]] = field(default_factory=list)  # (t, RSS)
    sessions: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def figures(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        n = len(lat)

        def pct(p: float) -> float:
            return lat[min(n - 1, int(p * n))] * 1000 if n else 0.0

        rss = [kb for _, kb in self.rss_kb]
        third = max(1, len(rss) // 3)
        return {
            "requests": n,
            "errors": len(self.errors),
            "seconds": self.seconds,
            "throughput_rps": n / self.seconds if self.seconds else 0.0,
            "p50_ms": pct(0.50),
            "p99_ms": pct(0.99),
            "max_ms": lat[-1] * 1000 if n else 0.0,
            "rss_first_kb": rss[0] if rss else 0,
            "rss_last_kb": rss[-1] if rss else 0,
            "rss_max_kb": max(rss) if rss else 0,
            # growth between the first and the last third (the first third includes warm-up)
            "rss_growth_kb": (
                int(statistics.median(rss[-third:]) - statistics.median(rss[third : 2 * third]))
                if len(rss) >= 3
                else 0
            ),
        }


def _ledger(i: int) -> str:
    return (
        f"Step {i}.\n\nclaim_ledger:\n  claims:\n    - id: C1\n"
        f'      text: "claim of step {i % 5}"\n      status: Hypothetical\n'
        f'      falsifier: "a failing run"\n      oracle: "{ORACLE}"\n'
        "  premises_for_plan: [C1]\n"
    )


def _authorized_record(client: Client, call: ToolCall, outcome: ToolOutcome) -> None:
    """What an integration does: authorize, then record under the decision's call id."""
    client.record(call, outcome, call_id=client.authorize(call).call_id)


def _agent(svc: RelService, session: str, result: LoadResult, stop: threading.Event,
           rounds: int) -> None:  # fmt: skip
    with Client(svc.url, token=svc.token, session=session) as client:
        i = 0
        while not stop.is_set() and (rounds == 0 or i < rounds):
            steps = (
                partial(client.authorize, ToolCall("Edit", {"file_path": f"f{i}.py"})),
                partial(
                    _authorized_record,
                    client,
                    ToolCall("bash", {"command": ORACLE}),
                    ToolOutcome(output=f"run {i}\n" * 20, exit_code=i % 3 and 1),
                ),
                partial(client.ingest, _ledger(i)),
            )
            for step in steps:
                t0 = time.perf_counter()
                try:
                    step()
                except Exception as exc:  # every failure is a figure, not a crash
                    with result.lock:
                        result.errors.append(f"{session}: {type(exc).__name__}: {exc}"[:300])
                elapsed = time.perf_counter() - t0
                with result.lock:
                    result.latencies.append(elapsed)
            i += 1
        with result.lock:
            result.rounds += i


def run_load(
    svc: RelService,
    *,
    threads: int = 6,
    shared: int = 2,
    seconds: float = 0.0,
    rounds: int = 0,
    prefix: str = "load",
    sample_every: float = 1.0,
) -> LoadResult:
    """Run the agents for ``seconds`` (or ``rounds`` rounds each); sample RSS meanwhile."""
    result = LoadResult()
    stop = threading.Event()
    sessions = [f"{prefix}-shared" if t < shared else f"{prefix}-{t}" for t in range(threads)]
    result.sessions = sorted(set(sessions))
    crew = [
        threading.Thread(target=_agent, args=(svc, s, result, stop, rounds), daemon=True)
        for s in sessions
    ]
    started = time.perf_counter()
    result.rss_kb.append((0.0, svc.rss_kb()))
    for t in crew:
        t.start()
    deadline = started + seconds if seconds else None
    while alive := [t for t in crew if t.is_alive()]:
        if deadline is not None and time.perf_counter() >= deadline:
            stop.set()
        alive[0].join(sample_every)  # pace the RSS samples on the agents themselves
        result.rss_kb.append((time.perf_counter() - started, svc.rss_kb()))
    for t in crew:
        t.join(60)
    result.seconds = time.perf_counter() - started
    return result
