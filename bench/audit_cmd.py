"""``infomark audit --verify --json`` as a command: ``python -m bench.audit_cmd [PAIRS]``
(or ``--icount``).

The real command (a fresh process: its imports, the verification pass with the replay and
the story, the streamed JSON report, read by this process through a pipe) on the bench's
sessions of 10⁴ and 10⁵ events (``bench.core.grow``), timed in CPU (user + system of the
command) and paired B A B A with the stdlib chain+HMAC loop over the same 10⁵ rows (CPU of
this process), so both see the same load. The command is forked from a small measuring
interpreter (:func:`bench._timing.run_own_rss`), so its peak RSS is its own, not this
process's (which grows the homes). On an idle machine the loop runs ~120k events/s, so
the command's rate at idle is about that rate divided by the ratio.

``--icount`` counts instructions instead (``valgrind --tool=callgrind``: load-independent,
but valgrind's CPU has no SHA extensions, so hashing weighs more than on most hardware): the
command, and the stdlib loop alone (a process that runs it, less one that only imports it),
at 10⁵ events, for each tree.

``--base DIR`` runs another checkout's command too (``git worktree add DIR main``, run with
``PYTHONPATH=DIR`` by this interpreter), in each pair beside this tree's (after it in even
pairs, before it in odd ones, so that neither always runs first): ratios and peaks per tree.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import statistics
import sys
import time
from pathlib import Path

from bench._timing import run_own_rss
from bench.core import _KEY_HEX, grow
from infomark.ledger.keys import Key

ROOT = Path(__file__).resolve().parent.parent  # this checkout


def _env(home: str) -> dict[str, str]:
    """The command's environment: the home and its key, and bytecode written (an environment
    with ``PYTHONDONTWRITEBYTECODE`` would have a fresh checkout compile every module on
    every run: ~0.56 G instructions, ~5 % of the command, charged to that tree alone)."""
    env = {**os.environ, "INFOMARK_HOME": home, "INFOMARK_KEY": _KEY_HEX}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_command(home: str, tree: Path | None = None) -> tuple[float, float]:
    """CPU seconds and own peak RSS (MiB) of one ``infomark audit --verify --json``."""
    env = _env(home)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    argv = [sys.executable, "-m", "infomark", "audit", "--verify", "--json", "--session", "bench"]
    # run from the tree's root: ``-m`` puts the working directory first on sys.path
    run = run_own_rss(argv, stdin_path=os.devnull, env=env, cwd=str(tree or ROOT))
    if run.returncode != 0:
        raise SystemExit(f"audit exited {run.returncode}: {run.stderr[-400:]!r}")
    return run.cpu, run.peak_kib / 1024


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


def icount(home: str, trees: dict[str, Path | None]) -> None:
    """Instructions of the command (per tree) and of the stdlib loop alone, at ``home``."""
    from bench.icount import count

    env = _env(home)
    loop = [sys.executable, "-c", f"from bench.audit_cmd import stdlib_loop; stdlib_loop({home!r})"]
    imports = [sys.executable, "-c", "import bench.audit_cmd"]
    own = count(loop, b"", env, str(ROOT)) - count(imports, b"", env, str(ROOT))
    print(f"instructions (callgrind), 100,000 events: the stdlib loop alone {own / 1e9:.2f} G")
    argv = [sys.executable, "-m", "infomark", "audit", "--verify", "--json", "--session", "bench"]
    for name, tree in trees.items():
        tree_env = env if tree is None else {**env, "PYTHONPATH": str(tree)}
        took = count(argv, b"", tree_env, str(tree or ROOT))
        print(f"  {name}: the command {took / 1e9:.2f} G = {took / own:.2f}× the loop")


def main(argv: list[str]) -> int:
    base = Path(argv[argv.index("--base") + 1]).resolve() if "--base" in argv else None
    rest = [a for i, a in enumerate(argv) if a != "--base" and (i == 0 or argv[i - 1] != "--base")]
    trees: dict[str, Path | None] = {"this": None}
    if base is not None:
        trees["base"] = base
    if "--icount" in rest:
        icount(str(grow(100_000)), trees)
        return 0
    pairs = int(rest[0]) if rest else 5
    big, small = str(grow(100_000)), str(grow(10_000))
    for tree in trees.values():
        run_command(big, tree)  # warm: bytecode, page cache
    loops: list[float] = []
    cpu: dict[str, list[float]] = {name: [] for name in trees}
    ratio: dict[str, list[float]] = {name: [] for name in trees}
    rss_big: dict[str, list[float]] = {name: [] for name in trees}
    for n in range(pairs):
        loop = stdlib_loop(big)
        loops.append(loop)
        order = list(trees.items())
        for name, tree in order if n % 2 == 0 else order[::-1]:  # neither always goes first
            took, rss = run_command(big, tree)
            cpu[name].append(took)
            ratio[name].append(took / loop)
            rss_big[name].append(rss)
    load = os.getloadavg()[0]
    print(f"audit --verify --json, 100,000 events, {pairs} pairs, load average {load:.1f}")
    loop = statistics.median(loops)
    print(f"  stdlib chain+HMAC loop CPU median {loop:.2f} s = {100 / loop:.0f}k events/s")
    for name, tree in trees.items():
        rss_small = [run_command(small, tree)[1] for _ in range(3)]
        took = statistics.median(cpu[name])
        print(f"  {name}: command CPU median {took:.2f} s = "
              f"{100_000 / took / 1000:.0f}k events/s, {statistics.median(ratio[name]):.2f}× "
              f"the loop (median of pairs); own peak RSS 100,000 events "
              f"{statistics.median(rss_big[name]):.1f} MiB, "
              f"10,000 events {statistics.median(rss_small):.1f} MiB")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
