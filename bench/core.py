"""Core benchmarks: parser, evidence record, authorize, shell classification, hook start-up."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._timing import fmt, median_seconds

ROWS: list[tuple[str, str, str, str]] = []  # (bench, ours, baseline, ratio)


def row(name: str, ours: float, base: float | None = None, base_name: str = "") -> None:
    ratio = f"{ours / base:.2f}x {base_name}" if base else "-"
    ROWS.append((name, fmt(ours), fmt(base) if base else "-", ratio))
    print(f"{name:<48} {fmt(ours):>12} {fmt(base) if base else '-':>12}  {ratio}", flush=True)


def _message_3kb() -> str:
    claims = "".join(
        f'    - id: C{i}\n      text: "claim number {i} about the window size"\n'
        f'      status: Hypothetical\n      falsifier: "read module {i}"\n'
        f'      oracle: "pytest tests/test_{i}.py -q"\n'
        for i in range(5)
    )
    prose = "The agent explains its plan in ordinary prose. " * 40
    tail = "  premises_for_plan: [C0, C1]\n  open_questions: [C4]\n"
    return f"{prose}\n\nclaim_ledger:\n  claims:\n{claims}{tail}\n{prose}"


def bench_parser() -> None:
    from infomark.ledger.parser import parse_message

    msg = _message_3kb()
    assert len(msg) > 2500
    ours = median_seconds(lambda: parse_message(msg), repeat=200)
    regex = re.compile(r"^claim_ledger:", re.M)
    base = median_seconds(lambda: regex.search(msg), repeat=200)
    row(f"parse 3 KB message, 5-claim ledger ({len(msg)} B)", ours, base, "plain regex")
    from infomark.ledger.engine import Ledger

    with tempfile.TemporaryDirectory() as d:
        led = Ledger(Path(d) / "home", "bench")
        ours = median_seconds(lambda: led.ingest(msg), repeat=100)
        led.close()
    row("ingest 3 KB message (parse + apply + durable commit)", ours)
    prose = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n" * 18_000)[:1_000_000]
    ours = median_seconds(lambda: parse_message(prose), repeat=20)
    base = median_seconds(lambda: regex.search(prose), repeat=20)
    row("parse 1 MB prose (no block)", ours, base, "plain regex")
    for name, unit in (
        ("adversarial: nested [[[", "["),
        ("adversarial: unclosed quotes", 'x: "'),
        ("adversarial: keyword lines", "claim_ledger:\n"),
        ("adversarial: deep indentation", "  " * 50 + "- a:\n"),
    ):
        small = unit * (50_000 // len(unit))
        large = unit * (200_000 // len(unit))
        t_small = median_seconds(lambda s=small: parse_message(s), repeat=5, warmup=1)
        t_large = median_seconds(lambda s=large: parse_message(s), repeat=5, warmup=1)
        row(f"{name} 200 KB (vs 50 KB: x{t_large / t_small:.1f})", t_large, t_small, "50 KB")


def bench_record() -> None:
    from infomark.ledger.calls import ToolCall, ToolOutcome
    from infomark.ledger.engine import Ledger

    with tempfile.TemporaryDirectory() as d:
        led = Ledger(Path(d) / "home", "bench")
        i = iter(range(10**9))
        ours = median_seconds(
            lambda: led.record(
                ToolCall("bash", {"command": f"pytest -q {next(i)}"}), ToolOutcome("3 passed", 0)
            ),
            repeat=200,
        )
        led.close()
        db = sqlite3.connect(Path(d) / "raw.db", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute(
            "CREATE TABLE t (session TEXT, seq INTEGER, payload TEXT, PRIMARY KEY(session, seq))"
        )
        j = iter(range(10**9))
        payload = json.dumps({"x": "y" * 400})

        def raw() -> None:
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t VALUES ('s', ?, ?)", (next(j), payload))
            db.execute("COMMIT")

        base = median_seconds(raw, repeat=200)
        row("record() with durable commit", ours, base, "raw sqlite3 insert+commit")


def bench_authorize() -> None:
    from infomark.gatekeeper import Gatekeeper
    from infomark.gates.authorize import authorize_call
    from infomark.gates.config import Config
    from infomark.ledger.calls import ToolCall, ToolOutcome

    with tempfile.TemporaryDirectory() as d:
        gk = Gatekeeper.open(Path(d) / "home", "bench", root=Path(d))
        claims = "".join(
            f'    - id: C{i}\n      text: "claim {i}"\n      status: Hypothetical\n'
            f'      falsifier: "f{i}"\n      oracle: "make t{i}"\n'
            for i in range(50)
        )
        gk.ingest(f"claim_ledger:\n  claims:\n{claims}  premises_for_plan: [C0, C1, C2]\n")
        for i in range(3):
            ev = gk.record(ToolCall("bash", {"command": f"make t{i}"}), ToolOutcome("ok", 0))
            gk.ingest(f"oracle_stamp: claim_id=C{i} evidence_ref={ev.ref} result=PASS")
        edit = ToolCall("Edit", {"file_path": "a.py", "old_string": "a", "new_string": "b"})
        state = gk.store.state
        cfg = Config()
        pure = median_seconds(
            lambda: authorize_call(
                state,
                tool="Edit",
                tool_class="modify",
                families=(),
                why=(),
                config=cfg,
                bypass=False,
            ),
            repeat=2000,
        )
        row("authorize decision, 50 claims (pure, in-process)", pure)
        full = median_seconds(lambda: gk.authorize(edit), repeat=200)
        row("gk.authorize(), 50 claims, journaled (durable)", full, pure, "pure decision")
        gk.close()


def bench_shell() -> None:
    from infomark.gates.shell import classify_shell

    parts = [
        "git status",
        "ls -la | grep foo",
        "pytest -q tests/test_a.py",
        "echo 'done' > /dev/null",
    ]
    cmd = " && ".join(parts * 40)[:1024]
    classify_shell(cmd)
    ours = median_seconds(lambda: classify_shell(cmd), repeat=200)
    row(f"classify a 1 KB shell command ({len(cmd)} B)", ours)


def bench_hook_cold_start() -> None:
    exe = Path(sys.executable).with_name("infomark")
    with tempfile.TemporaryDirectory() as d:
        payload = json.dumps(
            {
                "session_id": "bench",
                "transcript_path": "",
                "cwd": d,
                "hook_event_name": "PreToolUse",
                "tool_name": "Read",
                "tool_input": {"file_path": "x"},
                "tool_use_id": "t",
            }
        )
        env = {**os.environ, "INFOMARK_HOME": str(Path(d) / "home")}

        def hook() -> None:
            subprocess.run(
                [str(exe), "hook", "claude-code"],
                input=payload,
                text=True,
                capture_output=True,
                env=env,
                check=True,
            )

        def bare() -> None:
            subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)

        ours = median_seconds(hook, repeat=20, warmup=2)
        base = median_seconds(bare, repeat=20, warmup=2)
        row("PreToolUse hook cold start (Read)", ours, base, "bare `python -I -S -c pass`")
        payload_bash = payload.replace('"Read"', '"Bash"').replace(
            '{"file_path": "x"}', '{"command": "sed -i s/a/b/ x.py"}'
        )

        def hook_bash() -> None:
            subprocess.run(
                [str(exe), "hook", "claude-code"],
                input=payload_bash,
                text=True,
                capture_output=True,
                env=env,
                check=True,
            )

        ours = median_seconds(hook_bash, repeat=20, warmup=2)
        row("PreToolUse hook cold start (Bash, tree-sitter)", ours, base, "bare interpreter")


ALL = [bench_parser, bench_record, bench_authorize, bench_shell, bench_hook_cold_start]
