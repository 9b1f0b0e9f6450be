"""The Claude Code http hook on a warm service, at several session sizes (issue 13's target).

``python -m bench.http_hook_sizes [N …]`` starts a real ``infomark serve`` (uvicorn) on
127.0.0.1, fills one session with N prior events (default 100 and 10,000), then posts
PreToolUse payloads with httpx over one kept-alive connection and prints the median and
p99 round trip per size. Each hook call is interleaved with a ``GET /v1/health`` and a
``POST …/authorize`` of the same call on the same connection (A B C A B C …), so the table
also shows what a bare HTTP round trip and the pooled API route cost at that moment.
The target: ≤ 3 ms median, p99 ≤ 10 ms at any size.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.init import ensure_token
from infomark.tools.serve import READY_PREFIX

WARMUP = 20
SAMPLES = 400


def _fill(home: Path, root: Path, session: str, events: int) -> None:
    """``events`` prior events in the session, written in one transaction."""
    with Gatekeeper.open(home, session, root=root) as gk, gk.store.transaction():
        for _ in range(events):
            gk.store.emit("turn_started", {"prompt_digest": None})


def _p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, int(len(ordered) * 0.99) - 1)]


def measure(events: int) -> tuple[float, ...]:
    """Median and p99 ms of (hook, health, authorize) at ``events`` prior events."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        home = root / ".infomark"
        token = ensure_token(home)
        _fill(home, root, "bench", events)
        proc = subprocess.Popen(
            [sys.executable, "-m", "infomark.tools.serve", "--home", str(home), "--root", d,
             "--port", "0", "--no-access-log"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=d,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            url = line.split(READY_PREFIX, 1)[1].split("/v1")[0]
            payload = {
                "session_id": "bench",
                "transcript_path": "",
                "cwd": d,
                "hook_event_name": "PreToolUse",
                "tool_name": "Read",
                "tool_input": {"file_path": "x"},
                "tool_use_id": "t",
            }
            hook: list[float] = []
            health: list[float] = []
            authorize: list[float] = []
            call = {"tool": "Read", "input": {"file_path": "x"}, "tool_call_id": "t"}
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as c:
                for i in range(WARMUP + SAMPLES):
                    t0 = time.perf_counter()
                    assert c.get("/v1/health").status_code == 200
                    t1 = time.perf_counter()
                    r = c.post("/v1/hooks/claude-code", json=payload)
                    t2 = time.perf_counter()
                    assert c.post("/v1/sessions/bench/authorize", json=call).status_code == 200
                    t3 = time.perf_counter()
                    assert r.status_code == 200 and r.json() == {}, r.text
                    if i >= WARMUP:
                        health.append((t1 - t0) * 1000)
                        hook.append((t2 - t1) * 1000)
                        authorize.append((t3 - t2) * 1000)
            return tuple(f(x) for x in (hook, health, authorize) for f in (statistics.median, _p99))
        finally:
            proc.terminate()
            proc.wait(15)


def main(argv: list[str]) -> int:
    sizes = [int(a) for a in argv] or [100, 10_000]
    print("| prior events | hook median / p99 ms | health median / p99 | authorize median / p99 |")
    print("|---|---|---|---|")
    for n in sizes:
        m = measure(n)
        cells = " | ".join(f"{m[i]:.2f} / {m[i + 1]:.2f}" for i in (0, 2, 4))
        print(f"| {n:,} | {cells} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
