"""``infomark audit --verify --json`` as a command: ``python -m bench.audit_cmd [PAIRS]``.

The real command (a fresh process: its imports, the verification pass, the story and the
streamed JSON report, written to /dev/null) on the bench's sessions of 10⁴ and 10⁵ events
(``bench.core.grow``), timed in CPU (user + system of the child, from ``wait4``) and paired
B A B A with the stdlib chain+HMAC loop over the same 10⁵ rows (CPU of this process), so both
see the same load; peak RSS is the child's ``ru_maxrss``. On an idle machine the loop runs
~120k events/s, so the command's rate at idle is about that rate divided by the ratio.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time

from bench.core import _KEY_HEX, grow
from infomark.ledger.keys import Key


def run_command(home: str) -> tuple[float, float]:
    """CPU seconds and peak RSS (MiB) of one ``infomark audit --verify --json`` process."""
    env = {**os.environ, "INFOMARK_HOME": home, "INFOMARK_KEY": _KEY_HEX}
    argv = [sys.executable, "-m", "infomark", "audit", "--verify", "--json", "--session", "bench"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err = proc.stderr.read() if proc.stderr else b""
        raise SystemExit(f"audit exited {proc.returncode}: {err[-400:]!r}")
    if proc.stderr:
        proc.stderr.close()
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def stdlib_loop(home: str) -> float:
    """CPU seconds of the stdlib chain+HMAC loop over the session's rows."""
    secret = Key.from_bytes(bytes.fromhex(_KEY_HEX)).secret
    t0 = time.process_time()
    db = sqlite3.connect(os.path.join(home, "ledger.db"))
    enc = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
    prev = "0" * 64
    for s, seq, t, p, ts, ph, h, mac, kid in db.execute(
        "SELECT session, seq, type, payload, ts, prev_hash, hash, mac, key_id FROM events "
        "WHERE session = 'bench' ORDER BY seq"
    ):
        body = enc([s, seq, t, p, ts, kid]).encode()
        got = hashlib.sha256(ph.encode() + b"\n" + body).hexdigest()
        ok = got == h and ph == prev
        ok = ok and hmac.compare_digest(hmac.digest(secret, h.encode(), "sha256").hex(), mac)
        assert ok
        prev = h
    db.close()
    return time.process_time() - t0


def main(argv: list[str]) -> int:
    pairs = int(argv[0]) if argv else 5
    big, small = str(grow(100_000)), str(grow(10_000))
    run_command(big)  # warm: bytecode, page cache
    ours: list[float] = []
    base: list[float] = []
    rss_big: list[float] = []
    for _ in range(pairs):
        base.append(stdlib_loop(big))
        cpu, rss = run_command(big)
        ours.append(cpu)
        rss_big.append(rss)
    rss_small = [run_command(small)[1] for _ in range(3)]
    ratio = statistics.median(a / b for a, b in zip(ours, base, strict=True))
    load = os.getloadavg()[0]
    print(f"audit --verify --json, 100,000 events, {pairs} pairs, load average {load:.1f}")
    print(f"  command CPU median {statistics.median(ours):.2f} s = "
          f"{100_000 / statistics.median(ours) / 1000:.0f}k events/s")  # fmt: skip
    print(f"  stdlib chain+HMAC loop CPU median {statistics.median(base):.2f} s = "
          f"{100_000 / statistics.median(base) / 1000:.0f}k events/s")  # fmt: skip
    print(f"  ratio (median of pairs) {ratio:.2f}×")
    print(f"  peak RSS: 100,000 events {statistics.median(rss_big):.1f} MiB, "
          f"10,000 events {statistics.median(rss_small):.1f} MiB")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
