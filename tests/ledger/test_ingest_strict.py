"""``infomark ingest --strict`` (issue 14 §4): a syntax error is reported at its line, nothing is
ingested and the exit code is 2; without --strict the valid blocks still apply."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

EXE = shutil.which("infomark") or str(Path(sys.executable).with_name("infomark"))
BROKEN = (
    "Plan below.\n"
    "claim_ledger:\n"
    "  claims:\n"
    "    - id: C1\n"
    '      text: "never closed\n'
    "      status: Guess\n"
    "gate: G1\n"
)


def run(home: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, "ingest", "-", *args, "--home", str(home), "--session", "strict"],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=home.parent,
    )


def events(home: Path) -> list[str]:
    proc = subprocess.run(
        [EXE, "events", "--home", str(home), "--session", "strict", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=home.parent,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line)["type"] for line in proc.stdout.splitlines() if line.strip()]


def test_strict_refuses_a_syntax_error_at_its_line_and_ingests_nothing(tmp_path: Path) -> None:
    home = tmp_path / ".infomark"
    proc = run(home, "--strict", stdin=BROKEN)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "line 5, column 13: error: unterminated double-quoted value" in proc.stderr
    assert "nothing was ingested" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not home.exists() or "message_ingested" not in events(home)


def test_strict_json_lists_the_diagnostics(tmp_path: Path) -> None:
    proc = run(tmp_path / ".infomark", "--strict", "--json", stdin=BROKEN)
    assert proc.returncode == 2
    data = json.loads(proc.stdout)
    assert data["ingested"] is False
    assert [(d["line"], d["column"]) for d in data["diagnostics"]] == [(5, 13)]


def test_strict_refuses_a_ledger_written_without_its_keyword(tmp_path: Path) -> None:
    proc = run(tmp_path / ".infomark", "--strict", stdin="claims:\n  - id: C1\n")
    assert proc.returncode == 2
    assert "line 1, column 1: error: this looks like a claim_ledger" in proc.stderr


def test_strict_accepts_clean_text_and_lenient_mode_applies_what_is_valid(tmp_path: Path) -> None:
    home = tmp_path / ".infomark"
    ok = run(home, "--strict", "--json", stdin="claim_ledger:\n  claims:\n    - id: C1\n")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["ledger_updated"] is True
    lenient = run(home, "--json", stdin=BROKEN)
    assert lenient.returncode == 0
    report = json.loads(lenient.stdout)
    assert [(d["line"], d["column"]) for d in report["diagnostics"]] == [(5, 13)]
