"""The hook's cost with the OpenTelemetry export on (``INFOMARK_OTEL=1``) against off.

``python -m bench.otel_hook [pairs]``: one steady-state PreToolUse (an allowed Bash call in a
session that already has events) as its own process, run alternately without and with the
export (B A B A …), the export going to an OTLP/HTTP receiver on 127.0.0.1 that answers 200.
Reports the medians of the process's wall time (what the host waits for), of the per-pair
ratio, and of its CPU time (user + system: less sensitive to the machine's load)
(docs/performance.md, "OpenTelemetry from the hook").
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench._timing import fmt, paired


class _Sink(BaseHTTPRequestHandler):
    requests = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).requests += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


def main(argv: list[str]) -> int:
    pairs = int(argv[0]) if argv else 20
    exe = shutil.which("infomark") or str(Path(sys.executable).with_name("infomark"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory(prefix="infomark-bench-otel-") as tmp:
        project = Path(tmp)
        payload = json.dumps(
            {
                "session_id": "bench",
                "transcript_path": "",
                "cwd": str(project),
                "hook_event_name": "PreToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "echo hi"},
                "tool_use_id": "toolu_bench",
            }
        ).encode()
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(("INFOMARK_", "OTEL_"))}
        on_env = {
            **base_env,
            "INFOMARK_OTEL": "1",
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
        }
        argv_hook = [exe, "hook", "claude-code"]

        cpu: dict[str, list[float]] = {"on": [], "off": []}

        def one(env: dict[str, str], which: str) -> None:
            proc = subprocess.Popen(
                argv_hook,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                cwd=str(project),
            )
            assert proc.stdin is not None
            proc.stdin.write(payload)
            proc.stdin.close()
            _pid, status, usage = os.wait4(proc.pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
            cpu[which].append(usage.ru_utime + usage.ru_stime)

        def off() -> None:
            one(base_env, "off")

        def on() -> None:
            one(on_env, "on")

        result = paired(on, off, pairs=pairs)
    server.shutdown()
    load = os.getloadavg()[0]
    cpu_on, cpu_off = statistics.median(cpu["on"]), statistics.median(cpu["off"])
    print(
        f"PreToolUse process, INFOMARK_OTEL=1 vs unset ({result.pairs} pairs, load {load:.1f}): "
        f"wall {fmt(result.ours)} vs {fmt(result.base)} (ratio {result.ratio:.2f}x), "
        f"CPU {fmt(cpu_on)} vs {fmt(cpu_off)}; {_Sink.requests} OTLP requests received"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
