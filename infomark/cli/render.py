"""Human output with rich: audit tables and ingest summaries."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from infomark.kernel.infomark import InfoMark

__all__ = ["Column", "column_table", "console", "print_audit", "print_ingest"]

#: a table column: its header, and the cell it shows for a row
Column = tuple[str, Callable[[dict[str, Any]], str]]


def _console() -> Console:
    """A terminal gets rich's layout; a pipe or file gets long lines, never hard wraps."""
    if sys.stdout.isatty():
        return Console(highlight=False)
    return Console(highlight=False, soft_wrap=True, width=200)


console = _console()

_STYLE = {
    InfoMark.EXACT.label: "bold green",
    InfoMark.INFERRED.label: "green",
    InfoMark.HYPOTHETICAL.label: "yellow",
    InfoMark.GUESS.label: "magenta",
    InfoMark.UNKNOWN.label: "red",
}


def column_table(title: str, columns: Sequence[Column], rows: Iterable[dict[str, Any]]) -> Table:
    """A table with one row per ``rows`` item, each column's cell computed by its function."""
    table = Table(title=title)
    for header, _ in columns:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*(cell(row) for _, cell in columns))
    return table


def _rank(status: str) -> str:
    return f"[{_STYLE.get(status, 'white')}]{escape(status)}[/]"


def _cause(step: dict[str, Any]) -> str:
    """A history step's cause; a merged one names where its grade came from (docs/fork.md)."""
    cause = escape(str(step["cause"]))
    if step.get("from_session"):
        cause += f" from {escape(str(step['from_session']))}"
        if step.get("evidence_session"):
            cause += f" seq {step.get('from_seq')}, evidence of {escape(step['evidence_session'])}"
    return cause


def print_audit(data: dict[str, Any]) -> None:
    for f in data.get("unverified_finishes", []):  # first: what was never verified
        console.print(
            f"[bold red]FINISHED UNVERIFIED[/] at seq {f['seq']} (refusal cap {f.get('cap')}): "
            + escape(str(f.get("unresolved", ""))[:400])
        )
    for g in data.get("grading_changes", []):
        console.print(
            f"[bold red]grading file changed[/] at seq {g['seq']}: "
            + escape(f"{g.get('path')} ({g.get('summary')})")
        )
    refused = data.get("refused_records", [])
    if refused:
        console.print(f"[bold red]records refused (no evidence): {len(refused)}[/]")
        for r in refused[:10]:
            console.print(
                f"  seq {r['seq']}: {escape(str(r.get('tool')))} {escape(str(r.get('reason')))}"
            )
    for b in data.get("blocked_finishes", []):
        console.print(
            f"[yellow]finished blocked[/] at seq {b['seq']} ({escape(str(b.get('gate')))}): "
            + escape(str(b.get("reason", ""))[:200])
        )
    table = Table(title=f"infomark audit: session {escape(data['session'])}")
    for col in ("id", "rank", "stamp", "oracle / ran", "falsifier", "history"):
        table.add_column(col, overflow="fold")
    for c in data["claims"]:
        stamp = c["evidence_ref"] or "-"
        if c.get("undeclared_oracle"):
            stamp += " (undeclared_oracle)"
        if c.get("stale"):
            stamp += " (stale)"
        hist = " → ".join(f"{h['status']}({_cause(h)})" for h in c["history"][-4:])
        ran = c.get("ran")
        oracle = escape(c.get("oracle") or "-") + (f" / ran `{escape(ran)}`" if ran else "")
        table.add_row(
            escape(c["id"]),
            _rank(c["status"]),
            stamp,
            oracle,
            escape(c.get("falsifier") or "-"),
            hist,
        )
    console.print(table)
    prem = ", ".join(
        f"{p['id']}={p['status']}" + ("" if p["grounded"] else " ✗") for p in data["premises"]
    )
    console.print(
        f"premises: {escape(prem) or '-'}   grounded: {data['grounded']}   gate: {data['gate']}"
    )
    if data["open_questions"]:
        console.print("open questions: " + escape(", ".join(data["open_questions"])))
    if data["bypasses"]:
        console.print(f"[bold red]bypassed decisions: {len(data['bypasses'])}[/]")
        for b in data["bypasses"]:
            console.print(
                f"  seq {b['seq']}: {escape(b['tool'])} ({b['tool_class']}) via {b['env']}=1"
            )
    if data["verified"] is not None:
        verdict = "[green]verified[/]" if data["verified"] else "[bold red]FAILED[/]"
        console.print(f"journal: {data['events']} events, {verdict} (key id {data['key_id']})")
        for p in data["problems"][:10]:
            console.print(f"  seq {p['seq']}: {p['code']}: {escape(p['message'])}")


def print_ingest(data: dict[str, Any]) -> None:
    if data["ledger_updated"]:
        console.print(
            "ledger updated: "
            + escape(", ".join(f"{c['id']}={c['status']}" for c in data["claims"]))
        )
    for cid in data["demoted"]:
        console.print(
            f"[yellow]demoted[/] {escape(cid)}: self-declared rank without a runtime stamp"
        )
    for s in data["stamps_applied"]:
        console.print(
            f"[green]stamped[/] {escape(s['claim_id'])} → {s['status']} ({s['evidence_ref']})"
        )
    for s in data["stamps_rejected"]:
        console.print(
            f"[red]rejected[/] {escape(str(s['claim_id']))}: {s['reason']}: "
            f"{escape(s.get('message', ''))}"
        )
    for i in data["invalidated"]:
        console.print(f"[red]revoked[/] {escape(i['claim_id'])}: {i['cause']}")
    for d in data["diagnostics"]:
        console.print(
            f"line {d['line']}, column {d['column']}: {d.get('severity', 'error')}: "
            f"{escape(d['message'])}"
        )
    for m in data.get("gate_moves", []):
        verdict = "moved" if m["ok"] else "refused"
        console.print(f"gate {verdict}: {m['from']} → {m['to']}: {escape(m['reason'])}")
