"""``infomark serve`` under yappi, for ``bench.http_concurrent --profile``.

``python bench/_serve_profiled.py OUT SERVE-ARGS…``: serves as ``python -m
infomark.tools.serve SERVE-ARGS…``; SIGUSR1 starts yappi (CPU clock, every thread), SIGUSR2
stops it and writes the stats to ``OUT`` (pstats format, renamed into place when complete:
uvicorn ends the process by re-raising SIGTERM, so nothing runs at its exit). Run as a
script, so the infomark it imports is the one ``PYTHONPATH`` names (``--base`` too).
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

import yappi  # type: ignore[import-not-found, import-untyped, unused-ignore]


def _start(signum: int, frame: FrameType | None) -> None:
    yappi.set_clock_type("cpu")
    yappi.start(builtins=True, profile_threads=True)


def _save(out: str) -> None:
    yappi.stop()
    yappi.get_func_stats().save(out + ".tmp", type="pstat")
    os.replace(out + ".tmp", out)


def main() -> int:
    out = sys.argv[1]
    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, lambda signum, frame: _save(out))
    from infomark.tools.serve import main as serve_main

    return serve_main(sys.argv[2:])


if __name__ == "__main__":
    raise SystemExit(main())
