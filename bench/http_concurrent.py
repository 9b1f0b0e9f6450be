"""The warm path under concurrency: ``python -m bench.http_concurrent [--base DIR]``.

What ``infomark install claude-code --http`` sets up: a running ``infomark serve`` (real
uvicorn on 127.0.0.1) that each hook call is posted to. Three clients (threads, one kept-alive
httpx connection and one Claude Code session each) post, round after round, a PreToolUse
Read, a PreToolUse Bash and the PostToolUse of that Bash call's output (a durable decision,
a blob and a durable record), as a busy agent's hook does. The table gives the median and
p99 round trip of every hook request. ``--base DIR`` serves from another checkout of
infomark (``git worktree add DIR main``), alternated with this one (B A B A), so both see
the same load. The goal (issue 28): p99 ≤ 10 ms.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from infomark.ledger.init import ensure_token
from infomark.tools.serve import READY_PREFIX

CLIENTS = 3
ROUNDS = 60  # per client and run: 3 requests each
WARMUP = 5


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, int(len(ordered) * q) - 1))]


def _client(
    url: str, token: str, d: str, sid: str, out: list[float], go: threading.Barrier
) -> None:
    def payload(
        event: str, tool: str, tool_input: dict[str, object], use: str
    ) -> dict[str, object]:
        data: dict[str, object] = {"session_id": sid, "transcript_path": "", "cwd": d,
                                   "hook_event_name": event, "tool_name": tool,
                                   "tool_input": tool_input, "tool_use_id": use}  # fmt: skip
        if event == "PostToolUse":
            data["tool_response"] = {"stdout": f"{use}: ok\n" * 40, "stderr": "",
                                     "interrupted": False}  # fmt: skip
        return data

    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as c:
        go.wait()
        for i in range(WARMUP + ROUNDS):
            use = f"{sid}-{i}"
            for body in (
                payload("PreToolUse", "Read", {"file_path": "x.py"}, use + "r"),
                payload("PreToolUse", "Bash", {"command": f"echo {i}"}, use),
                payload("PostToolUse", "Bash", {"command": f"echo {i}"}, use),
            ):
                t0 = time.perf_counter()
                r = c.post("/v1/hooks/claude-code", json=body)
                took = (time.perf_counter() - t0) * 1000
                assert r.status_code == 200, r.text
                if i >= WARMUP:
                    out.append(took)


def run(tree: Path) -> list[float]:
    """Every hook round trip (ms) of one run of the three clients on a fresh home."""
    with tempfile.TemporaryDirectory() as d:
        home = Path(d) / ".infomark"
        token = ensure_token(home)
        env = {**os.environ, "PYTHONPATH": str(tree)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "infomark.tools.serve", "--home", str(home), "--root", d,
             "--port", "0", "--no-access-log"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=d, env=env,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().split(READY_PREFIX, 1)[1].split("/v1")[0]
            outs: list[list[float]] = [[] for _ in range(CLIENTS)]
            go = threading.Barrier(CLIENTS)
            threads = [
                threading.Thread(target=_client, args=(url, token, d, f"c{k}", outs[k], go))
                for k in range(CLIENTS)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return [x for o in outs for x in o]
        finally:
            proc.terminate()
            proc.wait(15)


def main(argv: list[str]) -> int:
    ours = Path(__file__).resolve().parents[1]
    trees = {"this tree": ours}
    if "--base" in argv:
        trees = {"base": Path(argv[argv.index("--base") + 1]).resolve(), **trees}
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 2
    samples: dict[str, list[float]] = {k: [] for k in trees}
    for _ in range(runs):  # B A B A: both sides see the same load
        for label, tree in trees.items():
            samples[label] += run(tree)
    print(f"| {CLIENTS} clients, hook requests | n | median ms | p99 ms | max ms |")
    print("|---|---|---|---|---|")
    for label, xs in samples.items():
        print(f"| {label} | {len(xs)} | {statistics.median(xs):.2f} | {_p(xs, 0.99):.2f} | "
              f"{max(xs):.2f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
