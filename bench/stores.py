"""Appends per second and p99 append latency: SQLite beside PostgreSQL (issue 19).

``python -m bench.stores [--quick] [--pg URL]`` runs 1, 8 and 32 writer **processes**, all on
one session and spread over 32 sessions, on a fresh SQLite home and on a fresh PostgreSQL
schema, interleaved (SQLite, PostgreSQL, SQLite, PostgreSQL, …) so both see the same load.
Each append is one committed write transaction of the engine (``Ledger.transaction`` +
one ``decision`` event: lock, catch up, chain, MAC, manifest, commit). Writers are released
together by a barrier; the clock runs from the barrier to the last commit. The table goes
into docs/performance.md between ``<!-- stores:begin -->`` and ``<!-- stores:end -->``
(a full run; ``--quick`` only prints).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
BEGIN, END = "<!-- stores:begin -->", "<!-- stores:end -->"
PG = os.environ.get("INFOMARK_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
KEY = b"b" * 32
_CTX = mp.get_context("fork")
PAYLOAD = {
    "decision": "allow",
    "tool": "Bash",
    "tool_class": "execute",
    "reason": "premises grounded",
    "command": "pytest -q tests/test_parser.py",
}


def _writer(home: str, store: str | None, sessions: list[str], ops: int, barrier: Any,
            out: Any) -> None:  # fmt: skip
    from infomark.ledger.engine import Ledger
    from infomark.ledger.keys import Key

    key = Key.from_bytes(KEY)
    ledgers = {s: Ledger(home, s, key=key, root=Path(home), store=store) for s in sessions}
    lat: list[float] = []
    barrier.wait(120)
    start = time.monotonic()
    for i in range(ops):
        led = ledgers[sessions[i % len(sessions)]]
        t0 = time.perf_counter()
        with led.transaction():
            led.emit("decision", {**PAYLOAD, "i": i})
        lat.append(time.perf_counter() - t0)
    end = time.monotonic()
    for led in ledgers.values():
        led.close()
    out.put((start, end, lat))


def _store(kind: str, base: Path) -> tuple[str | None, str | None]:
    """``(store url, schema)`` of a fresh store of ``kind``."""
    if kind == "sqlite":
        return None, None
    import psycopg

    from infomark.ledger.store.pg import init_store

    schema = "bench_" + uuid.uuid4().hex[:12]
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}".encode())
    sep = "&" if "?" in PG else "?"
    url = f"{PG}{sep}options=-csearch_path%3D{schema}"
    init_store(url)
    return url, schema


def _drop(schema: str | None) -> None:
    if schema is None:
        return
    import psycopg

    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE".encode())


def run(kind: str, writers: int, spread: int, total: int) -> dict[str, float]:
    """``writers`` processes, ``total`` appends in all, over ``spread`` sessions."""
    base = Path(tempfile.mkdtemp(prefix="bench-stores-"))
    home = base / ".infomark"
    home.mkdir(mode=0o700)
    url, schema = _store(kind, base)
    try:
        names = [f"s{i}" for i in range(spread)]
        plan = [names[w::writers] or [names[w % spread]] for w in range(writers)]
        ops = max(1, total // writers)
        barrier, out = _CTX.Barrier(writers), _CTX.Queue()
        procs = [
            _CTX.Process(target=_writer, args=(str(home), url, plan[w], ops, barrier, out))
            for w in range(writers)
        ]
        for p in procs:
            p.start()
        results = [out.get(timeout=600) for _ in procs]
        for p in procs:
            p.join(60)
            if p.exitcode != 0:
                raise SystemExit(f"a {kind} writer failed (exit {p.exitcode})")
        start = min(r[0] for r in results)
        end = max(r[1] for r in results)
        lat = sorted(x for r in results for x in r[2])
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        return {"rate": len(lat) / (end - start), "p99_ms": p99 * 1000, "n": len(lat)}
    finally:
        _drop(schema)
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str]) -> int:
    global PG
    quick = "--quick" in argv
    if "--pg" in argv:
        PG = argv[argv.index("--pg") + 1]
    rounds, total = (1, 96) if quick else (3, 320)
    rows = []
    started = time.monotonic()
    py = platform.python_version()
    print(f"appends: SQLite vs PostgreSQL · Python {py} · {os.cpu_count()} cpus")
    for spread in (1, 32):
        for writers in (1, 8, 32):
            got: dict[str, list[dict[str, float]]] = {"sqlite": [], "postgresql": []}
            for _ in range(rounds):  # A B A B: both backends under the same load
                for kind in ("sqlite", "postgresql"):
                    got[kind].append(run(kind, writers, spread, total))
            med = {
                k: {m: statistics.median(r[m] for r in v) for m in ("rate", "p99_ms")}
                for k, v in got.items()
            }
            ratio = statistics.median(
                p["rate"] / s["rate"] for s, p in zip(got["sqlite"], got["postgresql"], strict=True)
            )
            where = "1 session" if spread == 1 else "32 sessions"
            row = (
                f"| {writers} | {where} | {med['sqlite']['rate']:.0f} | "
                f"{med['sqlite']['p99_ms']:.1f} | {med['postgresql']['rate']:.0f} | "
                f"{med['postgresql']['p99_ms']:.1f} | {ratio:.2f} |"
            )
            print(row, flush=True)
            rows.append(row)
    seconds = time.monotonic() - started
    table = (
        f"`python -m bench.stores` · Python {platform.python_version()} · "
        f"{platform.machine()} · {os.cpu_count()} cpus · {rounds} interleaved rounds of "
        f"{total} appends · {seconds:.0f} s\n\n"
        "| writers | on | SQLite appends/s | SQLite p99 ms | PostgreSQL appends/s | "
        "PostgreSQL p99 ms | PG/SQLite rate (median of pairs) |\n"
        "|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )
    if not quick:
        doc = DOC.read_text("utf-8")
        if BEGIN not in doc or END not in doc:
            raise SystemExit(f"{DOC} has no {BEGIN} … {END} markers")
        before, rest = doc.split(BEGIN, 1)
        _old, after = rest.split(END, 1)
        DOC.write_text(f"{before}{BEGIN}\n{table}{END}{after}", "utf-8")
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
