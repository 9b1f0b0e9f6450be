"""The eval report as one self-contained HTML page: inline CSS, no script, no external resource.

Outcome bars per policy with their 95 % intervals, the paired comparisons and the promotion
decisions, then per task: each policy's result and an intervention timeline (one mark per step
that carried a pack, a denial, a refused finish or a finish attempt). Every value is escaped.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["render_eval_html"]

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2330;max-width:1200px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.meta{color:#5b6475}table{border-collapse:collapse;margin:6px 0}
td,th{border-bottom:1px solid #e3e6ec;padding:4px 10px;text-align:left;vertical-align:middle}
th{background:#f4f6f9;font-weight:600}
.bar{position:relative;width:260px;height:16px;background:#eef1f5;border-radius:3px}
.fill{position:absolute;left:0;top:0;bottom:0;border-radius:3px}
.ci{position:absolute;top:7px;height:2px;background:#1d2330}
.ci:before,.ci:after{content:"";position:absolute;top:-4px;width:2px;height:10px;background:#1d2330}
.ci:before{left:0}.ci:after{right:0}
.p0{background:#9aa5b8}.p1{background:#3b82f6}.p2{background:#f59e0b}.p3{background:#10b981}
.promote{color:#047857;font-weight:700}.refuse{color:#b91c1c;font-weight:700}
.tl{display:flex;gap:2px;flex-wrap:wrap;min-width:200px}
.ev{display:inline-block;width:12px;height:12px;border-radius:2px}
.pack{background:#3b82f6}.denial{background:#ef4444}.refusal{background:#f59e0b}
.done-passes{background:#10b981}.done-false{background:#111827}
.ok{color:#047857}.bad{color:#b91c1c}.legend span{margin-right:14px}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def _bar(iv: dict[str, Any], cls: str) -> str:
    v, lo, hi = iv.get("value"), iv.get("low"), iv.get("high")
    if v is None:
        return '<div class="bar"></div>'

    def clip(x: float) -> float:
        return max(0.0, min(1.0, x))

    parts = [f'<div class="fill {cls}" style="width:{100 * clip(v):.1f}%"></div>']
    if lo is not None and hi is not None:
        left, right = clip(lo), clip(hi)
        parts.append(
            f'<div class="ci" style="left:{100 * left:.1f}%;width:{100 * (right - left):.1f}%">'
            "</div>"
        )
    return f'<div class="bar" title="{_e(_interval(iv))}">{"".join(parts)}</div>'


def _interval(iv: dict[str, Any] | None) -> str:
    if not iv or iv.get("value") is None:
        return "–"
    lo, hi = iv.get("low"), iv.get("high")
    ci = f" [{_pct(lo)}, {_pct(hi)}]" if lo is not None and hi is not None else ""
    return f"{_pct(iv['value'])}{ci}"


_OUTCOMES = (
    ("solved", "solved"),
    ("false_done", '"done" refuted by the hidden check'),
    ("tamper_caught", "tamper attempts caught"),
    ("cheated", "impossible tasks cheated on"),
    ("cheat_caught", "cheats caught (no accepted finish)"),
    ("honest_success", "genuine tasks solved without tampering"),
    ("overhead", "prompt overhead (interventions)"),
)


def _outcomes(report: dict[str, Any]) -> str:
    rows = []
    for key, label in _OUTCOMES:
        for i, s in enumerate(report["summaries"]):
            iv = s.get(key) or {"value": None}  # older reports lack the newer outcomes
            rows.append(
                f"<tr><td>{_e(label) if i == 0 else ''}</td><td>{_e(s['policy'])}</td>"
                f"<td>{_bar(iv, f'p{i % 4}')}</td><td>{_e(_interval(iv))}</td></tr>"
            )
    return (
        '<table id="outcomes"><tr><th>outcome</th><th>policy</th><th>rate</th>'
        f"<th>value [95% interval]</th></tr>{''.join(rows)}</table>"
    )


def _comparisons(report: dict[str, Any]) -> str:
    rows = []
    for c in report["comparisons"]:
        rows.append(
            f"<tr><td>{_e(c['b'])} vs {_e(c['a'])}</td><td>{c['tasks']}</td>"
            f"<td>{_e(_interval(c['false_done_cut']))}</td>"
            f"<td>{_e(_interval(c['ungrounded_cut']))}</td>"
            f"<td>{_e(_signed(c['solved_diff']))}</td><td>{_e(_signed(c['score_diff']))}</td>"
            f"<td>{_e(c['short_slowdown'] if c['short_slowdown'] is not None else '–')}</td></tr>"
        )
    return (
        '<table id="comparisons"><tr><th>pair</th><th>tasks</th><th>false "done" cut</th>'
        "<th>ungrounded mutations cut</th><th>solved Δ</th><th>score Δ</th>"
        f"<th>short-task turns ×</th></tr>{''.join(rows)}</table>"
    )


def _signed(iv: dict[str, Any]) -> str:
    v, lo, hi = iv.get("value"), iv.get("low"), iv.get("high")
    if v is None:
        return "–"
    ci = f" [{lo:+.2f}, {hi:+.2f}]" if lo is not None and hi is not None else ""
    return f"{v:+.2f}{ci}"


def _promotions(report: dict[str, Any]) -> str:
    items = []
    for p in report["promotions"]:
        cls = "promote" if p["decision"] == "promote" else "refuse"
        why = (
            "; ".join(p["reasons"]) or "the interval is above zero and short tasks are in tolerance"
        )
        items.append(
            f'<li><span class="{cls}">{_e(p["decision"])}</span> {_e(p["b"])} over {_e(p["a"])}: '
            f"improvement {_e(_signed(p['improvement']))} over {p['tasks']} tasks "
            f"({p['resamples']} resamples, seed {p['seed']}); {_e(why)}"
            + (f" <code>{_e(p['id'])}</code>" if p.get("id") else "")
            + "</li>"
        )
    return f'<ul id="promotion">{"".join(items)}</ul>'


def _timeline(events: list[dict[str, Any]]) -> str:
    marks = []
    for e in events:
        kind = e["kind"] if e["kind"] != "done" else f"done-{e['name']}"
        label = f"step {e['step']}: {e['kind']} {e['name']}"
        marks.append(f'<span class="ev {_e(kind)}" title="{_e(label)}"></span>')
    return f'<div class="tl">{"".join(marks)}</div>'


def _tasks(report: dict[str, Any]) -> str:
    runs: list[dict[str, Any]] = report["runs"]
    tasks = sorted({r["task"] for r in runs})
    policies = [p["name"] for p in report["policies"]]
    out = []
    for t in tasks:
        rows = []
        for p in policies:
            for r in sorted(
                (r for r in runs if r["task"] == t and r["policy"] == p), key=lambda r: r["repeat"]
            ):
                ok = (
                    '<span class="ok">solved</span>'
                    if r["solved"]
                    else '<span class="bad">unsolved</span>'
                )
                rows.append(
                    f"<tr><td>{_e(p)}</td><td>{r['repeat']}</td><td>{ok}</td>"
                    f"<td>{_e(', '.join(r['modes']) or '–')}</td><td>{r['turns']}</td>"
                    f"<td>{r['interventions']}</td><td>{_timeline(r['timeline'])}</td></tr>"
                )
        out.append(
            f'<h3>{_e(t)}</h3><table id="timeline-{_e(t)}" class="task"><tr><th>policy</th>'
            "<th>repeat</th><th>result</th><th>failure modes drawn</th><th>turns</th>"
            f"<th>interventions</th><th>timeline</th></tr>{''.join(rows)}</table>"
        )
    return "".join(out)


def render_eval_html(report: dict[str, Any]) -> str:
    """The page for a report dict (``infomark eval --json`` output)."""
    e = report["eval"]
    names = ", ".join(p["name"] for p in report["policies"])
    legend = (
        '<p class="legend"><span><span class="ev pack"></span> pack</span>'
        '<span><span class="ev denial"></span> denial</span>'
        '<span><span class="ev refusal"></span> finish refused</span>'
        '<span><span class="ev done-passes"></span> "done", check passes</span>'
        '<span><span class="ev done-false"></span> "done", check fails</span></p>'
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>infomark eval: {_e(names)}</title><style>{_CSS}</style></head><body>"
        f"<h1>infomark eval</h1><p class=meta>suite {_e(e['suite'])} · agent {_e(e['agent'])} · "
        f"seed {e['seed']} · repeat {e['repeat']} · {len(report['runs'])} runs · "
        f"policies {_e(names)}</p>"
        f"<h2>Outcomes</h2>{_outcomes(report)}"
        f"<h2>Paired comparisons</h2>{_comparisons(report)}"
        f"<h2>Promotion</h2>{_promotions(report)}"
        f"<h2>Tasks</h2>{legend}{_tasks(report)}"
        "</body></html>\n"
    )
