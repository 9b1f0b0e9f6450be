"""Render a :class:`~infomark.ledger.timeline.SessionStory`: terminal, Markdown, HTML.

The HTML page is self-contained: inline CSS, no script, no external resource, every value
escaped. It shows the verdict first, then the timeline, each claim's rank history with the
evidence and the command actually run, the files changed and the verification result.
"""

from __future__ import annotations

import html
from typing import Any

from rich.markup import escape

from infomark.cli.render import Column, column_table, console
from infomark.ledger.timeline import SessionStory

__all__ = ["print_sessions", "print_story", "render_html", "render_markdown"]

_VERDICT_STYLE = {
    "finished": "bold green",
    "open": "yellow",
    "refused": "yellow",
    "blocked": "yellow",
    "bypassed": "bold red",
    "finished_unverified": "bold red",
    "finished_unchecked": "bold red",
    "finished_unchanged": "yellow",
    "tampered": "bold red",
}


_SESSION_COLUMNS: tuple[Column, ...] = (
    ("session", lambda r: escape(r["session"])),
    ("host", lambda r: r["host"]),
    ("started", lambda r: r["started"][:19]),
    ("last activity", lambda r: r["last_activity"][:19]),
    ("events", lambda r: str(r["events"])),
    ("verdict", lambda r: f"[{_VERDICT_STYLE.get(r['verdict'], 'white')}]{r['verdict']}[/]"),
)


def print_sessions(rows: list[dict[str, Any]]) -> None:
    console.print(column_table("infomark sessions (newest first)", _SESSION_COLUMNS, rows))


def print_story(story: SessionStory, *, timeline: bool) -> None:
    style = _VERDICT_STYLE.get(story.verdict, "white")
    console.print(
        f"[{style}]verdict: {escape(story.verdict_text)}[/]  "
        f"(session {escape(story.session)}, {story.host}, {story.events} events)"
    )
    console.print(
        f"denied calls: {story.denied}   rejected stamps: {story.rejected}   "
        f"bypassed: {story.bypassed}   files changed: {len(story.files_changed)}"
    )
    for f in story.files_changed[:20]:
        console.print(f"  changed: {escape(f)}")
    if story.final_message:
        console.print(f"final message: {escape(story.final_message[:300])}")
    if timeline:
        console.print("[bold]timeline[/]")
        for e in story.timeline:
            console.print(f"  {e.seq:>5}  {e.kind:<9} {escape(e.text)}")
        for cid, steps in story.history.items():
            claim = story.claims.get(cid, {})
            console.print(f"[bold]{escape(cid)}[/] {escape(str(claim.get('text') or ''))}")
            for s in steps:
                run = f"  `{escape(s.command)}` → {s.outcome}" if s.command else ""
                ref = f" {s.evidence_ref}" if s.evidence_ref else ""
                console.print(f"  seq {s.seq}: {s.status} ({s.cause}{ref}){run}")


def _md_cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(story: SessionStory, *, key_id: str = "") -> str:
    """A Markdown summary for a pull request."""
    out = [
        f"## infomark: session `{story.session}`",
        "",
        f"**Verdict: {story.verdict}** — {story.verdict_text}",
        "",
        f"- host: {story.host}; events: {story.events}; key id: `{key_id}`",
        f"- denied calls: {story.denied}; rejected stamps: {story.rejected}; "
        f"bypassed: {story.bypassed}",
        f"- verification: {'FAILED' if story.verdict == 'tampered' else 'verified'}",
        "",
        "### Claims",
        "",
        "| claim | text | oracle | rank history | command run |",
        "|---|---|---|---|---|",
    ]
    for cid, steps in story.history.items():
        claim = story.claims.get(cid, {})
        hist = " → ".join(f"{s.status} ({s.cause})" for s in steps)
        runs = "; ".join(f"`{s.command}` {s.outcome}" for s in steps if s.command)
        out.append(
            f"| {_md_cell(cid)} | {_md_cell(claim.get('text') or '')} | "
            f"{_md_cell(claim.get('oracle') or '-')} | {_md_cell(hist)} | {_md_cell(runs or '-')} |"
        )
    if story.files_changed:
        out += ["", "### Files changed", ""]
        out += [f"- `{f}`" for f in story.files_changed]
    out += ["", "### Timeline", "", "| seq | what | detail |", "|---|---|---|"]
    out += [f"| {e.seq} | {e.kind} | {_md_cell(e.text)} |" for e in story.timeline]
    if story.final_message:
        out += ["", "### Final message", "", "> " + _md_cell(story.final_message)]
    return "\n".join(out) + "\n"


_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:70rem;color:#1d1d1f}
h1{font-size:1.4rem} h2{font-size:1.1rem;margin-top:2rem}
.verdict{padding:.8rem 1rem;border-radius:.4rem;font-weight:600}
.ok{background:#e3f5e6;color:#10561f} .warn{background:#fff4d6;color:#6b4e00}
.bad{background:#fde2e1;color:#8a1410}
table{border-collapse:collapse;width:100%} td,th{border-bottom:1px solid #ddd;
padding:.3rem .5rem;text-align:left;vertical-align:top} code{font-size:.9em}
.k-denied,.k-held,.k-rejected,.k-bypass,.k-revoked{color:#8a1410}
.k-stamp,.k-run{color:#10561f}
"""

_CLASS = {
    "finished": "ok",
    "finished_unchanged": "warn",
    "open": "warn",
    "refused": "warn",
    "blocked": "warn",
}


def render_html(story: SessionStory, *, key_id: str = "") -> str:
    """A self-contained HTML page of the session (no script, no external resource)."""
    e = html.escape
    cls = _CLASS.get(story.verdict, "bad")
    rows_claims = []
    for cid, steps in story.history.items():
        claim = story.claims.get(cid, {})
        hist = "<br>".join(
            f"seq {s.seq}: <b>{e(s.status)}</b> ({e(s.cause)}"
            + (f" <code>{e(s.evidence_ref)}</code>" if s.evidence_ref else "")
            + ")"
            + (f" — ran <code>{e(s.command)}</code> → {e(str(s.outcome))}" if s.command else "")
            for s in steps
        )
        rows_claims.append(
            f"<tr><td><b>{e(cid)}</b></td><td>{e(str(claim.get('text') or ''))}</td>"
            f"<td><code>{e(str(claim.get('oracle') or '-'))}</code></td><td>{hist}</td></tr>"
        )
    rows_tl = "".join(
        f'<tr class="k-{e(x.kind)}"><td>{x.seq}</td><td>{e(x.timestamp[11:19])}</td>'
        f"<td>{e(x.kind)}</td><td>{e(x.text)}</td></tr>"
        for x in story.timeline
    )
    files = "".join(f"<li><code>{e(f)}</code></li>" for f in story.files_changed) or "<li>none</li>"
    verified = "FAILED" if story.verdict == "tampered" else "verified"
    final = (
        f"<h2>Final message</h2><blockquote>{e(story.final_message)}</blockquote>"
        if story.final_message
        else ""
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>infomark report: {e(story.session)}</title><style>{_CSS}</style></head>
<body>
<h1>infomark report: session <code>{e(story.session)}</code></h1>
<p id="verdict" class="verdict {cls}">Verdict: {e(story.verdict)} — {e(story.verdict_text)}</p>
<p>host {e(story.host)} · {story.events} events · started {e(story.started[:19])} ·
last activity {e(story.last_activity[:19])} · journal <b id="verified">{verified}</b>
(key id <code>{e(key_id)}</code>)</p>
<p>denied calls: {story.denied} · rejected stamps: {story.rejected} ·
bypassed: {story.bypassed}</p>
<h2>Claims</h2>
<table id="claims"><tr><th>claim</th><th>text</th><th>oracle</th><th>rank history</th></tr>
{"".join(rows_claims)}</table>
<h2>Files changed</h2><ul id="files">{files}</ul>
<h2>Timeline</h2>
<table id="timeline"><tr><th>seq</th><th>time</th><th>what</th><th>detail</th></tr>
{rows_tl}</table>
{final}
</body></html>
"""
