"""The long reliability run: ``python -m bench.soak`` (``make soak``, after ``pytest -m slow``).

Runs the figure-producing parts of the slow reliability tests (the ``rel_*`` helpers in
tests/reliability) at soak scale, prints the figures as markdown on stdout, and rewrites
the region of docs/reliability.md between ``<!-- BEGIN FIGURES -->`` and
``<!-- END FIGURES -->``. A figure that shows a defect is reported, not hidden: the
runner's exit code is 1 when any campaign found a problem, 0 otherwise.

    python -m bench.soak [--quick] [--no-write] [--only forgery,tamper,...]

``--quick`` runs every part at smoke scale (a minute) to check the runner itself; it
never writes the docs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "reliability"))
sys.path.insert(0, str(REPO / "tests"))  # store_backends

import rel_crash  # noqa: E402
import rel_forgery  # noqa: E402
import rel_hostile  # noqa: E402
import rel_load  # noqa: E402
import rel_service  # noqa: E402
import rel_tamper  # noqa: E402

__all__ = ["DOC", "Scale", "Section", "main", "render", "update_doc"]

DOC = REPO / "docs" / "reliability.md"
BEGIN = "<!-- BEGIN FIGURES -->"
END = "<!-- END FIGURES -->"


@dataclass(frozen=True)
class Scale:
    forgery_examples: int = 10_000
    tamper_cli_every: int = 1
    crash_rounds: int = 40
    race_ops: int = 300
    shape_small: int = 50_000
    big_bytes: int = 10_000_000
    dense_bytes: int = 1_000_000
    load_seconds: float = 60.0


QUICK = Scale(
    forgery_examples=300,
    tamper_cli_every=25,
    crash_rounds=3,
    race_ops=20,
    shape_small=5_000,
    big_bytes=200_000,
    dense_bytes=50_000,
    load_seconds=5.0,
)


@dataclass
class Section:
    title: str
    rows: Sequence[tuple[str, ...]]
    header: tuple[str, ...]
    notes: list[str] = field(default_factory=list)
    problems: int = 0
    seconds: float = 0.0


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return out


def _ms(x: float) -> str:
    return f"{x:.1f} ms"


def _mb(kb: int) -> str:
    return f"{kb / 1024:.1f} MiB"


def _families(items: list[str]) -> str:
    if not items:
        return "none"
    kinds = Counter(item.split("@")[0].split(":")[0] for item in items)
    return ", ".join(f"{k} ×{n}" for k, n in sorted(kinds.items()))


# --------------------------------------------------------------------------- sections


def forgery(base: Path, scale: Scale) -> Section:
    f = rel_forgery.campaign(base, scale.forgery_examples)
    bad = int(f["accepted"]) + int(f["wrong_reason"])
    rows = [
        ("hypothesis examples (forged stamps)", f"{f['examples']:,}"),
        ("attack families", str(f["families"])),
        ("accepted", str(f["accepted"])),
        ("rejected with the wrong reason code", str(f["wrong_reason"])),
        ("accepted, by family", ", ".join(f"{k} ×{v}" for k, v in
                                          sorted(f["accepted_by_family"].items())) or "none"),
    ]  # fmt: skip
    firsts = dict.fromkeys(x.splitlines()[0] for x in f["first_failures"])
    notes = [f"failure: `{x}`" for x in list(firsts)[:3]]
    return Section("Forgery", rows, ("figure", "value"), notes, bad, float(f["seconds"]))


def tamper(base: Path, scale: Scale) -> Section:
    f = rel_tamper.campaign(base, cli_every=scale.tamper_cli_every)
    n = int(f["tampers"])
    rows = [
        ("single-row / single-blob tampers tried", f"{n} (every op on each of {f['events']} "
                                                   "events, every evidence row, blob, head)"),
        ("detected by the audit", f"{f['detected']} ({100 * int(f['detected']) / n:.1f} %)"),
        ("first bad event named correctly", f"{f['named_correctly']} "
                                            f"({100 * int(f['named_correctly']) / n:.1f} %)"),
        ("missed, by op", _families(list(f["missed"]))),
        ("detected but misnamed, by op", _families(list(f["misnamed"]))),
        ("checked through the real `infomark audit --verify --json`",
         f"{f['cli_runs']} (exit 1 naming the expected first bad event: {f['cli_agree']})"),
    ]  # fmt: skip
    bad = len(f["missed"]) + len(f["misnamed"])
    return Section("Tamper evidence", rows, ("figure", "value"), [], bad, float(f["seconds"]))


def crash(base: Path, scale: Scale) -> Section:
    f = rel_crash.crash_campaign(base, rounds=scale.crash_rounds, seed=2024)
    rows = [
        ("rounds (3 writers each: 2 on one session, 1 alone)", str(f["rounds"])),
        ("SIGKILLs at seeded points", str(f["kills"])),
        ("calls whose commit was printed", str(f["calls_seen"])),
        ("events printed after commit", str(f["events_printed"])),
        ("printed events lost, chains broken, replay mismatches", str(len(f["problems"]))),
    ]
    notes = [f"`{p}`" for p in f["problems"][:3]]
    return Section("Crashes", rows, ("figure", "value"), notes, len(f["problems"]),
                   float(f["seconds"]))  # fmt: skip


def concurrency(base: Path, scale: Scale) -> Section:
    rows: list[tuple[str, ...]] = []
    bad = 0
    seconds = 0.0
    for label, shared in (("4 on one session, 4 alone", 4), ("all 8 on one session", 8)):
        f = rel_crash.race(base / f"race{shared}", writers=8, ops=scale.race_ops, shared=shared)
        bad += len(f["problems"])
        seconds += float(f["seconds"])
        rows.append((f"8 processes × {scale.race_ops} calls ({label})",
                     f"{f['events']} events, {f['calls_per_s']:.0f} calls/s, "
                     f"problems: {len(f['problems'])}"))  # fmt: skip
    return Section("Concurrency (processes)", rows, ("run", "result"), [], bad, seconds)


def scaling(base: Path, scale: Scale) -> Section:
    from infomark.gatekeeper import Gatekeeper
    from infomark.ledger.parse.parser import parse_message

    rows: list[tuple[str, ...]] = []
    bad = 0
    started = time.perf_counter()
    with Gatekeeper.open(base / ".infomark", "scaling", root=base) as gk:
        for name, shape in sorted(rel_hostile.SHAPES.items()):
            p = rel_hostile.scaling(parse_message, shape, small=scale.shape_small)
            i = rel_hostile.scaling(gk.ingest, shape, small=scale.shape_small, runs=2)
            ok = p.linear() and i.linear()
            bad += not ok
            rows.append((name, repr(p), repr(i), "linear" if ok else "**superlinear**"))
    header = ("input shape", "parse_message", "Gatekeeper.ingest", "verdict")
    notes = [f"{scale.shape_small // 1000} KB vs {8 * scale.shape_small // 1000} KB, best of "
             f"2-3 runs; linear means at most 12x (or under {rel_hostile.SLOW_FLOOR_S * 1000:.0f} "
             "ms at the larger size)."]  # fmt: skip
    return Section("Linear time", rows, header, notes, bad, time.perf_counter() - started)


def big_inputs(base: Path, scale: Scale) -> Section:
    rows: list[tuple[str, ...]] = []
    bad = 0
    started = time.perf_counter()
    for name, shape in sorted(rel_hostile.BIG_SHAPES.items()):
        r = rel_hostile.peak_rss(shape(scale.big_bytes))
        if r.get("error"):
            bad += 1
            rows.append((name, "-", "-", f"**error**: {str(r['error'])[-120:]}"))
            continue
        peak, base_kb = int(r["peak_kb"]), int(r["base_kb"])
        rows.append((name, f"{float(r['seconds']):.1f} s", f"{_mb(peak)} (+{_mb(peak - base_kb)})",
                     f"ok, {r['diagnostics']} diagnostics"))  # fmt: skip
    size = (
        f"{scale.big_bytes / 1e6:g} MB"
        if scale.big_bytes >= 1e6
        else f"{scale.big_bytes // 1000} KB"
    )
    notes = [
        f"{size} messages, each ingested by a fresh interpreter (`resource`/`/proc`): peak RSS is "
        "its high-water mark (`VmHWM`), in brackets the growth over the peak before the "
        "message was read (interpreter, imports and a warm-up ingest)."
    ]
    header = ("input", "ingest time", "peak RSS (growth)", "outcome")
    return Section("Big inputs", rows, header, notes, bad, time.perf_counter() - started)


def memory(base: Path, scale: Scale) -> Section:
    rows: list[tuple[str, ...]] = []
    bad = 0
    started = time.perf_counter()
    size = scale.dense_bytes
    for name in rel_hostile.DENSE_SHAPES:
        r = rel_hostile.peak_rss(rel_hostile.SHAPES[name](size))
        if r.get("error"):
            bad += 1
            rows.append((name, "-", "-", f"**error**: {str(r['error'])[-120:]}"))
            continue
        growth = int(r["peak_kb"]) - int(r["base_kb"])
        per_byte = growth * 1024 / size
        ok = per_byte <= rel_hostile.MEMORY_BOUND
        bad += not ok
        rows.append((name, f"{float(r['seconds']):.1f} s", f"+{_mb(growth)} ({per_byte:.0f} B/B)",
                     "ok" if ok else "**over the bound**"))  # fmt: skip
    notes = [f"{size // 1000} KB messages; bound: {rel_hostile.MEMORY_BOUND} bytes of peak RSS "
             "growth per byte of message."]  # fmt: skip
    header = ("dense input", "ingest time", "peak RSS growth (per input byte)", "verdict")
    return Section("Memory per message byte", rows, header, notes, bad,
                   time.perf_counter() - started)  # fmt: skip


def load(base: Path, scale: Scale) -> Section:
    svc = rel_service.start_service(base, "--no-access-log")
    try:
        result = rel_load.run_load(svc, threads=8, shared=2, seconds=scale.load_seconds,
                                   prefix="soak", sample_every=2.0)  # fmt: skip
    finally:
        svc.stop()
    f = result.figures()
    rows = [
        ("agents (threads) × sessions", "8 threads on 7 sessions (2 share one)"),
        ("duration", f"{f['seconds']:.0f} s"),
        ("requests (authorize + record + ingest)", f"{f['requests']:,}"),
        ("errors", str(f["errors"])),
        ("throughput", f"{f['throughput_rps']:.0f} requests/s"),
        ("latency p50 / p99 / max", f"{_ms(f['p50_ms'])} / {_ms(f['p99_ms'])} / "
                                    f"{_ms(f['max_ms'])}"),
        ("server RSS first / last / max", f"{_mb(f['rss_first_kb'])} / {_mb(f['rss_last_kb'])} "
                                          f"/ {_mb(f['rss_max_kb'])}"),
        ("server RSS growth (middle third → last third)", f"{f['rss_growth_kb'] / 1024:+.1f} MiB"),
    ]  # fmt: skip
    series = ", ".join(f"{t:.0f}s {kb / 1024:.0f}" for t, kb in result.rss_kb[:: max(1, len(
        result.rss_kb) // 12)])  # fmt: skip
    notes = [f"RSS samples (MiB): {series}"]
    bad = int(f["errors"]) + int(f["rss_growth_kb"] > 50_000)
    return Section("Load (HTTP service)", rows, ("figure", "value"), notes, bad, f["seconds"])


SECTIONS: dict[str, Callable[[Path, Scale], Section]] = {
    "forgery": forgery,
    "tamper": tamper,
    "crash": crash,
    "concurrency": concurrency,
    "scaling": scaling,
    "big": big_inputs,
    "memory": memory,
    "load": load,
}


# --------------------------------------------------------------------------- output


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), *args],
                             capture_output=True, text=True, check=False, timeout=10)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip()


def _commit() -> str:
    """The commit measured (read-only git), noting uncommitted changes to the package."""
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    changed = _git("diff", "--name-only", "HEAD", "--", "infomark").splitlines()
    return (
        f"{commit} + uncommitted changes to {len(changed)} file(s) of infomark/"
        if changed
        else commit
    )


def render(sections: list[Section], scale: Scale) -> str:
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"Measured {when} on `{_commit()}`: Python {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs"
        + (" (quick scale: smoke figures only)." if scale == QUICK else "."),
        "",
    ]
    summary = [(s.title, "none" if not s.problems else f"**{s.problems}**", f"{s.seconds:.0f} s")
               for s in sections]  # fmt: skip
    lines += _table(("part", "problems found", "time"), summary)
    for s in sections:
        lines += ["", f"#### {s.title}", ""]
        lines += _table(s.header, s.rows)
        if s.notes:
            lines.append("")
            lines += [f"- {n}" for n in s.notes]
    return "\n".join(lines) + "\n"


def update_doc(figures: str, doc: Path = DOC) -> None:
    text = doc.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{doc} lacks the {BEGIN} / {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(f"{head}{BEGIN}\n{figures}{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smoke scale; never writes docs")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--only", default="", help="comma-separated: " + ",".join(SECTIONS))
    args = parser.parse_args(argv)
    scale = QUICK if args.quick else Scale()
    chosen = [s for s in args.only.split(",") if s] or list(SECTIONS)
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown part(s) {unknown}; use {', '.join(SECTIONS)}")
    sections: list[Section] = []
    with tempfile.TemporaryDirectory(prefix="infomark-soak-") as tmp:
        for name in chosen:
            print(f"[soak] {name} …", file=sys.stderr, flush=True)
            base = Path(tmp) / name
            base.mkdir()
            t0 = time.perf_counter()
            section = SECTIONS[name](base, scale)
            section.seconds = section.seconds or time.perf_counter() - t0
            print(f"[soak] {name}: {section.problems} problem(s), "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)  # fmt: skip
            sections.append(section)
    figures = render(sections, scale)
    sys.stdout.write(figures)
    if not args.quick and not args.no_write and len(chosen) == len(SECTIONS):
        update_doc(figures)
        print(f"[soak] updated {DOC.relative_to(REPO)}", file=sys.stderr)
    return 1 if any(s.problems for s in sections) else 0


if __name__ == "__main__":
    sys.exit(main())
