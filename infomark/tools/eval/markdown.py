"""An eval report (``infomark eval --json``) as the Markdown tables docs/eval.md shows.

The tables in the docs are this function's output on a committed report, checked by a test,
so no number in them is typed by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["BEGIN", "END", "report_tables"]

BEGIN = (
    "<!-- eval-table: generated from {path} by "
    "`python -m infomark.tools.eval.local_model table {path}` -->"
)
END = "<!-- /eval-table -->"


def _rate(iv: Mapping[str, Any] | None, of: int | None = None) -> str:
    if not iv or iv.get("value") is None:
        return "–"
    text = f"{iv['value']:.2f} [{iv['low']:.2f}, {iv['high']:.2f}]"
    return text if of is None else f"{text} of {of}"


def _policy_rows(report: Mapping[str, Any]) -> list[str]:
    head = (
        '| policy | runs | honest success | false "done" accepted | cheated (impossible) '
        "| cheat caught | ungrounded landed / tried | refusals | turns | tool calls "
        "| wall per run |"
    )
    rows = [head, "|" + "---|" * 11]
    for s in report["summaries"]:
        rows.append(
            f"| `{s['policy']}` | {s['runs']} | {_rate(s['honest_success'])} "
            f"| {_rate(s['false_done'])} | {_rate(s['cheated'], s['impossible_runs'])} "
            f"| {_rate(s['cheat_caught'])} "
            f"| {s['ungrounded_landed']} / {s['ungrounded_attempted']} | {s['refusals']} "
            f"| {s['turns']:.2f} | {s['tool_calls']:.2f} | {s['wall_ms'] / 1000:.0f} s |"
        )
    return rows


def _promotion_rows(report: Mapping[str, Any]) -> list[str]:
    rows = ["| over the baseline | decision | score improvement | why |", "|---|---|---|---|"]
    for p in report["promotions"]:
        why = "; ".join(str(r) for r in p.get("reasons") or []) or "–"
        rows.append(
            f"| `{p['b']}` over `{p['a']}` | {p['decision']} | {_rate(p['improvement'])} | {why} |"
        )
    return rows


def report_tables(report: Mapping[str, Any], path: str) -> str:
    """The per-policy table and the promotion table, between the markers the test finds."""
    ev = report["eval"]
    runs = report["runs"]
    total_s = sum(float(r["wall_ms"]) for r in runs) / 1000
    caps = ev.get("caps") or {}
    facts = [
        f"Agent `{ev['agent']}`; suite `{ev['suite']}` (digest `{ev['suite_digest'][:12]}…`); "
        f"seed {ev['seed']}, {ev['repeat']} repeat(s); caps: "
        + (", ".join(f"{k} {v}" for k, v in caps.items()) or "none recorded")
        + f"; {len(runs)} runs, {total_s / 60:.1f} min of run time in all.",
    ]
    machine = ev.get("machine") or {}
    if machine:
        facts.append(
            f"Machine: {machine.get('platform')}, {machine.get('cpus')} CPUs, Python "
            f"{machine.get('python')}; load average at the start "
            f"{' / '.join(str(x) for x in machine.get('load_start') or [])}, at the end "
            f"{' / '.join(str(x) for x in machine.get('load_end') or [])}; the eval took "
            f"{float(machine.get('wall_s') or 0) / 60:.1f} min."
        )
    if ev.get("skipped"):
        facts.append("Skipped: " + ", ".join(f"{k} ({v})" for k, v in ev["skipped"].items()))
    errors = [r for r in runs if r.get("error")]
    if errors:
        facts.append(
            "Runs that ended on an error: "
            + ", ".join(f"{r['task']}/{r['policy']}" for r in errors)
        )
    lines = [
        BEGIN.format(path=path),
        "",
        *facts,
        "",
        *_policy_rows(report),
        "",
        *_promotion_rows(report),
        "",
        END,
    ]
    return "\n".join(lines)
