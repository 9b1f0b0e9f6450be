"""Integration benchmarks: HTTP hook round trip, MCP proxy overhead per forwarded call."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.core import row

ROOT = Path(__file__).resolve().parents[1]


def _p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, int(len(ordered) * 0.99) - 1)]


def bench_http_hook() -> None:
    """The http hook on a warm service: the route itself, and the hook as installed.

    ``install claude-code --http URL`` installs a *command* hook that forwards the payload
    to the service (``infomark hook claude-code --url URL``), so what Claude Code waits for
    is that process's start-up plus the route: both are measured, the process paired with
    a bare interpreter (A B A B).
    """
    import httpx

    from bench import core
    from bench._timing import paired, run_measured
    from infomark.ledger.init import ensure_token
    from infomark.tools.serve import READY_PREFIX

    with tempfile.TemporaryDirectory() as d:
        home = Path(d) / "home"
        token = ensure_token(home)
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
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as c:
                samples = []
                for i in range(core.n(420, 120)):
                    t0 = time.perf_counter()
                    r = c.post("/v1/hooks/claude-code", json=payload)
                    if i >= 20:
                        samples.append(time.perf_counter() - t0)
                    r.raise_for_status()
            med, p99 = statistics.median(samples), _p99(samples)
            core.add("http hook route, warm service (httpx keep-alive)",
                     f"{med * 1e3:.2f} ms", f"p99 {p99 * 1e3:.2f} ms",
                     "the service path alone: route, session pool, durable commit")  # fmt: skip
            data = json.dumps(payload).encode()
            env = {**os.environ, "INFOMARK_HOME": str(home)}
            core.warm_bytecode()
            hook = [*core.HOOK, "--url", url]
            p = paired(lambda: run_measured(hook, stdin=data, env=env, cwd=d),
                       lambda: run_measured(core.BARE), pairs=core.n(12, 6),
                       measure=lambda fn: fn()[0])  # fmt: skip
            core.timed_row("http hook as installed (command process → service)", p.ours, p.base,
                           p.ratio, "bare `python -I -S -c pass`")  # fmt: skip
        finally:
            proc.terminate()
            proc.wait(timeout=15)


async def _mcp_median(command: list[str], tool: str, args: dict[str, object], n: int) -> float:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        samples = []
        for i in range(n + 5):
            t0 = time.perf_counter()
            await s.call_tool(tool, args)
            if i >= 5:
                samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def bench_mcp_proxy() -> None:
    server = ROOT / "tests" / "tools" / "mcp_downstream_server.py"
    with tempfile.TemporaryDirectory() as d:
        notes = Path(d) / "notes"
        notes.mkdir()
        (notes / "a.txt").write_text("hello")
        downstream = [sys.executable, str(server), str(notes)]
        direct = asyncio.run(_mcp_median(downstream, "read_note", {"name": "a.txt"}, 50))
        proxied = asyncio.run(
            _mcp_median(
                [
                    sys.executable,
                    "-m",
                    "infomark.tools.mcp_proxy",
                    "--home",
                    str(Path(d) / "h"),
                    "--",
                    *downstream,
                ],
                "read_note",
                {"name": "a.txt"},
                50,
            )
        )
        row("MCP proxy: forwarded read-only call", proxied, direct, "direct call")


ALL = [bench_http_hook, bench_mcp_proxy]
