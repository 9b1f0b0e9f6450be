"""The eval numbers of docs/eval.md:
``python -m bench.eval_numbers [--seeds 0 1 2] [--repeats 1 3] [--write]``.

Runs the shipped suite under observe, default and noise (scripted agents, default rates) for
each seed and number of repeats and prints one Markdown row for each: the acceptance numbers
of issue 16 and both promotion decisions. ``--write`` puts the table into docs/eval.md between the
``<!-- eval:begin -->`` and ``<!-- eval:end -->`` markers.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from infomark.tools.eval.harness import run_eval
from infomark.tools.eval.policy import load_policy
from infomark.tools.eval.report import build_report
from infomark.tools.eval.suite import load_suite

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "eval.md"
BEGIN, END = "<!-- eval:begin -->", "<!-- eval:end -->"
HEAD = (
    '| seed × repeats | solved observe → default | false "done" cut | ungrounded cut '
    "| tamper caught | overhead (default / noise) | default over observe | noise over observe |\n"
    "|---|---|---|---|---|---|---|---|\n"
)


def _iv(iv: dict[str, float | None]) -> str:
    v, lo, hi = iv.get("value"), iv.get("low"), iv.get("high")
    if v is None:
        return "–"
    ci = f" [{100 * lo:.0f}, {100 * hi:.0f}]" if lo is not None and hi is not None else ""
    return f"{100 * v:.0f}%{ci}"


def row(seed: int, jobs: int, repeat: int = 1) -> str:
    suite = load_suite(ROOT / "evals" / "suite")
    policies = [load_policy(n) for n in ("observe", "default", "noise")]
    res = run_eval(suite, policies, seed=seed, jobs=jobs, repeat=repeat)
    rep, _ = build_report(res)
    s = {x["policy"]: x for x in rep["summaries"]}
    c = rep["comparisons"][0]
    p = {x["b"]: x for x in rep["promotions"]}

    def dec(name: str) -> str:
        d = p[name]
        imp = d["improvement"]
        low, short = imp["low"], d["short_slowdown"]
        return f"{d['decision']} (Δ {imp['value']:+.2f}, low {low:+.2f}, short ×{short})"

    return (
        f"| {seed} × {repeat} | {_iv(s['observe']['solved'])} → {_iv(s['default']['solved'])} "
        f"| {_iv(c['false_done_cut'])} | {_iv(c['ungrounded_cut'])} "
        f"| {_iv(s['default']['tamper_caught'])} of {s['default']['tamper_attempted']} "
        f"| {_iv(s['default']['overhead'])} / {_iv(s['noise']['overhead'])} "
        f"| {dec('default')} | {dec('noise')} |\n"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.eval_numbers", description=__doc__)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--repeats", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    table = HEAD + "".join(row(s, args.jobs, n) for n in args.repeats for s in args.seeds)
    took = time.perf_counter() - started
    table += f"\n`python -m bench.eval_numbers --seeds {' '.join(map(str, args.seeds))} "
    table += f"--repeats {' '.join(map(str, args.repeats))} --write`: {took:.0f} s.\n"
    print(table)
    if args.write:
        doc = DOC.read_text("utf-8")
        before, rest = doc.split(BEGIN, 1)
        _old, after = rest.split(END, 1)
        DOC.write_text(f"{before}{BEGIN}\n{table}{END}{after}", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
