"""Hostile inputs: shapes that hurt backtracking parsers, big payloads, and how to time them.

``SHAPES`` maps a name to ``size -> text`` (about ``size`` characters). :func:`scaling`
times a function on the 50 KB and 400 KB versions (best of a few runs, cyclic GC paused)
and returns the ratio; a linear-time function stays near 8x. :func:`peak_rss` runs one ingest in a
fresh subprocess and returns its peak RSS (``resource.getrusage``), for the soak.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from rel_support import child_env

__all__ = [
    "BIG_SHAPES",
    "DENSE_SHAPES",
    "MEMORY_BOUND",
    "SHAPES",
    "SLOW_FLOOR_S",
    "Scaling",
    "peak_rss",
    "scaling",
]

SLOW_FLOOR_S = 0.05
"""Below this, the 400 KB run is too fast for the ratio to mean anything (a quadratic
400 KB run takes seconds)."""


def _repeat(unit: str, size: int, head: str = "", tail: str = "") -> str:
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


_CLAIMS_PER_BLOCK = 1_500  # well under the parser's per-block token cap


def _claims(size: int, *, dup: bool, status: str) -> str:
    """claim_ledger blocks of 1,500 claims each (ids repeated once within a block if
    ``dup``), so a big message is parsed and applied in full rather than cut at a cap."""
    out: list[str] = []
    length = i = 0
    while length < size:
        n = _CLAIMS_PER_BLOCK // 2 if dup else _CLAIMS_PER_BLOCK
        body = [f"    - id: C{i + k}\n      status: {status}\n" for k in range(n)]
        block = "claim_ledger:\n  claims:\n" + "".join(body + body if dup else body)
        out.append(block)
        length += len(block)
        i += n
    return "".join(out)


SHAPES: dict[str, Callable[[int], str]] = {
    "trailing whitespace": lambda n: _repeat(" ", n, "claim_ledger:", "x"),
    "spaces before a keyword": lambda n: _repeat(" ", n, "x", "gate: G1"),
    "open brackets": lambda n: _repeat("[", n, "claim_ledger: "),
    "flat flow list": lambda n: _repeat("a, ", n, "claim_ledger: {claims: [", "]}"),
    "backslashes in a quote": lambda n: _repeat("\\\\", n, 'claim_ledger:\n  claims: "'),
    "broken escapes": lambda n: _repeat('"\\x', n, "claim_ledger:\n  claims: "),
    "colons": lambda n: _repeat(": ", n, "oracle_stamp: "),
    "keyword-like prose": lambda n: _repeat("x gate: ", n),
    "empty stamps": lambda n: _repeat("oracle_stamp:\n", n),
    "dashes on a line": lambda n: _repeat("- ", n, "claim_ledger:\n  claims:\n    "),
    "deepening indentation": lambda n: (
        "claim_ledger:\n" + "".join(" " * (2 + i % 200) + "k:\n" for i in range(max(1, n // 104)))
    ),
    "folded plain text": lambda n: _repeat(
        "word\n        ", n, "claim_ledger:\n  claims:\n    - id: C1\n      text: "
    ),
    "inline pairs": lambda n: _repeat("a=b ", n, "oracle_stamp: "),
    "comment hashes": lambda n: _repeat("#", n, "claim_ledger: # "),
    "fence toggles": lambda n: _repeat("```\n", n),
    "CR-only newlines": lambda n: _repeat("claim_ledger:\r  claims:\r", n),
    "NUL bytes": lambda n: _repeat("claim_ledger:\n  claims:\x00\n", n),
    "unclosed quote per line": lambda n: _repeat('oracle_stamp: "\n', n),
    "gate lines": lambda n: _repeat("gate: G1\n", n),
    "many unique claims": lambda n: _claims(n, dup=False, status="Exact"),
    "duplicate claim ids": lambda n: _claims(n, dup=True, status="Guess"),
}

BIG_SHAPES: dict[str, Callable[[int], str]] = {
    "prose": lambda n: _repeat("The quick brown fox jumps over the lazy dog. ", n),
    "prose with CRLF": lambda n: _repeat("line of text\r\n", n),
    "one giant ledger value": lambda n: (
        "claim_ledger:\n  claims:\n    - id: C1\n      text: "
        + '"'
        + "y" * n
        + '"\n      status: Guess\n'
    ),
    "giant claim id": lambda n: "claim_ledger:\n  claims:\n    - id: " + "C" * n + "\n",
    "open brackets": SHAPES["open brackets"],
    "NUL bytes": SHAPES["NUL bytes"],
    "deepening indentation": SHAPES["deepening indentation"],
    "gate lines": SHAPES["gate lines"],
}


DENSE_SHAPES = (
    "inline pairs", "empty stamps", "gate lines", "NUL bytes", "unclosed quote per line",
    "colons", "flat flow list", "many unique claims", "duplicate claim ids",
)  # fmt: skip
"""Shapes that pack many tokens, blocks or diagnostics into each kilobyte."""

MEMORY_BOUND = 300
"""Peak RSS growth allowed per byte of message (300 MB for a 1 MB message)."""


class Scaling:
    """Timing of one function on a small and an 8x larger input."""

    def __init__(self, small: float, large: float) -> None:
        self.small = small
        self.large = large

    @property
    def ratio(self) -> float:
        return self.large / max(self.small, 1e-9)

    def linear(self, bound: float = 16.0) -> bool:
        # Linear code measures 8-9x at 8x the size (12.7x once on a machine at load 14: cache
        # contention inflates CPU time too); a quadratic step shows as 25x and more.
        return self.large < SLOW_FLOOR_S or self.ratio <= bound

    def __repr__(self) -> str:
        return f"{self.small * 1000:.1f} ms -> {self.large * 1000:.1f} ms ({self.ratio:.1f}x)"


def _best(fn: Callable[[str], object], text: str, runs: int) -> float:
    """Best CPU time of ``fn(text)``, with CPython's cyclic GC paused while it runs.

    CPU time of this process (``process_time``), not wall time: other processes competing
    for the cores (a loaded CI machine) do not inflate it, so the ratio stays a property of
    the code.

    With the GC on, every object-heavy input (many blocks, many diagnostics) costs 13-15x
    at 8x the size however linear the code is: the collector's full passes grow with the
    heap. Paused, the ratio measures infomark's algorithms (a linear parser stays at 8-9x,
    a quadratic step shows up as 25x and more).
    """
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        gc.disable()
        try:
            t0 = time.process_time()
            fn(text)
            best = min(best, time.process_time() - t0)
        finally:
            gc.enable()
    return best


def scaling(
    fn: Callable[[str], object],
    shape: Callable[[int], str],
    *,
    small: int = 50_000,
    factor: int = 8,
    runs: int = 3,
) -> Scaling:
    """Best-of-``runs`` time of ``fn`` on ``shape(small)`` and ``shape(small * factor)``."""
    a = shape(small)
    b = shape(small * factor)
    fn(a)  # warm up (lark loads on the first block)
    return Scaling(_best(fn, a, runs), _best(fn, b, runs))


_RSS_CHILD = r"""
import json, resource, sys, tempfile, time
from pathlib import Path
from infomark.gatekeeper import Gatekeeper


def hwm_kb():
    # VmHWM is this process's own high-water mark; ru_maxrss would also count the parent
    # it was forked from (Linux keeps the larger value across exec).
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


d = Path(tempfile.mkdtemp())
error = None
with Gatekeeper.open(d / ".infomark", "s", root=d) as gk:
    gk.ingest("warm up:\nclaim_ledger:\n  claims: []\n")  # imports parser, lark, pydantic
    base = hwm_kb()
    text = sys.stdin.buffer.read().decode("utf-8", "surrogatepass")
    t0 = time.perf_counter()
    try:
        report = gk.ingest(text)
        diags = len(report.diagnostics)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:300]
        diags = -1
    elapsed = time.perf_counter() - t0
print(json.dumps({"base_kb": base, "peak_kb": hwm_kb(), "seconds": elapsed,
                  "diagnostics": diags, "error": error}))
"""


def peak_rss(text: str, timeout: float = 600) -> dict[str, Any]:
    """Ingest ``text`` in a fresh interpreter: peak RSS (KiB, ``VmHWM``; ``base_kb`` is the
    peak before the text was read), ingest time and outcome."""
    proc = subprocess.run(
        [sys.executable, "-c", _RSS_CHILD],
        input=text.encode("utf-8", "surrogatepass"),
        capture_output=True,
        env=child_env(),
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.decode(errors="replace")[-500:]}
    result: dict[str, Any] = json.loads(proc.stdout)
    return result
