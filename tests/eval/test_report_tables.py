"""The eval's Markdown tables: generated from a report, and docs/eval.md's copy of the real
model's run is exactly what the committed report generates (no number typed by hand)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from infomark.tools.eval.agents import MODES, FailureRates
from infomark.tools.eval.harness import run_eval
from infomark.tools.eval.markdown import END, report_tables
from infomark.tools.eval.policy import load_policy
from infomark.tools.eval.report import build_report
from infomark.tools.eval.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]
REAL = "evals/reports/real-model.json"


def test_tables_of_a_scripted_eval(tmp_path: Path) -> None:
    rates = FailureRates(**{**dict.fromkeys(MODES, 0.0), "premature_done": 1.0}, compliance=1.0)
    res = run_eval(
        load_suite(ROOT / "evals" / "suite", only=("sh-words",)),
        [load_policy("nogate"), load_policy("default")],
        rates=rates,
        workdir=tmp_path,
        max_steps=30,
        max_tokens=100,
    )
    report, _ = build_report(res, resamples=200)
    text = report_tables(json.loads(json.dumps(report)), "r.json")
    lines = text.splitlines()
    assert lines[0].startswith("<!-- eval-table: generated from r.json") and lines[-1] == END
    assert "caps: max_steps 30, max_tokens 100; 2 runs" in text
    assert f"{res.machine['cpus']} CPUs" in text and "the eval took" in text
    nogate = next(ln for ln in lines if ln.startswith("| `nogate` |"))
    default = next(ln for ln in lines if ln.startswith("| `default` |"))
    # the premature "done" lands without a gate and is refused by the default policy
    assert "| 1.00 [1.00, 1.00] |" in nogate
    assert "| 0.00 [0.00, 0.00] |" in default and "| 0 / 0 |" in default
    assert any(ln.startswith("| `default` over `nogate` | refuse |") for ln in lines)


def test_the_docs_show_the_committed_real_model_report() -> None:
    generated = subprocess.run(
        [sys.executable, "-m", "infomark.tools.eval.local_model", "table", REAL],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    docs = (ROOT / "docs" / "eval.md").read_text("utf-8")
    begin = generated.splitlines()[0]
    assert begin in docs, "docs/eval.md lacks the real model's table; paste the command's output"
    shown = docs[docs.index(begin) : docs.index(END, docs.index(begin)) + len(END)]
    assert shown == generated, "docs/eval.md's table differs from the committed report"
    report = json.loads((ROOT / REAL).read_text("utf-8"))
    assert {s["policy"] for s in report["summaries"]} >= {"nogate", "verify", "default"}
    assert len({r["task"] for r in report["runs"]}) >= 8
    html = (ROOT / REAL).with_suffix(".html").read_text("utf-8")
    assert html.lstrip().lower().startswith("<!doctype html")
