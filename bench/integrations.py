"""Integration benchmarks: HTTP hook round trip, MCP proxy overhead per forwarded call."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.core import row

ROOT = Path(__file__).resolve().parents[1]


def bench_http_hook() -> None:
    import httpx

    from infomark.ledger.init import ensure_token
    from infomark.tools.serve import READY_PREFIX

    with tempfile.TemporaryDirectory() as d:
        home = Path(d) / "home"
        token = ensure_token(home)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "infomark.tools.serve",
                "--home",
                str(home),
                "--port",
                "0",
                "--no-access-log",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=d,
        )
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
                for i in range(220):
                    t0 = time.perf_counter()
                    r = c.post("/v1/hooks/claude-code", json=payload)
                    if i >= 20:
                        samples.append(time.perf_counter() - t0)
                    r.raise_for_status()
            row("http hook round trip (PreToolUse Read)", statistics.median(samples))
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
