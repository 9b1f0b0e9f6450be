"""The CLI, run as the installed executable: JSON keys, exit codes, errors without tracebacks."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXE = shutil.which("infomark") or str(Path(sys.executable).with_name("infomark"))
LEDGER = (
    'claim_ledger:\n  claims:\n    - id: C1\n      text: "t"\n      status: Exact\n'
    '      falsifier: "f"\n      oracle: "pytest -q"\n  premises_for_plan: [C1]\n'
)


def cli(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args, "--home", str(home), "--session", "cli"],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=home.parent,
    )


def js(proc: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(proc.stdout)


def test_init_creates_private_key_and_token(home: Path) -> None:
    proc = cli(home, "init", "--json")
    assert proc.returncode == 0
    info = js(proc)
    assert set(info) == {"home", "key_id", "db"}
    assert (home / "key").stat().st_mode & 0o777 == 0o600
    assert (home / "token").stat().st_mode & 0o777 == 0o600
    assert (home / "key").read_bytes().hex() not in proc.stdout + proc.stderr


def test_ingest_record_stamp_authorize_finish_round_trip(home: Path) -> None:
    from helpers import OWN_RUNS_TOML

    (home.parent / "infomark.toml").write_text(OWN_RUNS_TOML)  # the CLI's shapes, not grounding
    report = js(cli(home, "ingest", "-", "--json", stdin=LEDGER))
    assert set(report) >= {
        "ledger_updated",
        "claims",
        "demoted",
        "stamps_applied",
        "stamps_rejected",
        "invalidated",
        "diagnostics",
    }
    assert report["demoted"] == ["C1"]
    denied = cli(home, "authorize", "--tool", "Edit", "--input", '{"file_path": "a"}', "--json")
    assert denied.returncode == 3 and js(denied)["ungrounded"] == [
        {"id": "C1", "status": "Hypothetical"}
    ]
    allowed = cli(
        home, "authorize", "--tool", "bash", "--input", '{"command": "pytest -q"}', "--json"
    )
    rec = cli(
        home,
        "record",
        "--tool",
        "bash",
        "--input",
        '{"command": "pytest -q"}',
        "--call-id",
        js(allowed)["call_id"],
        "--exit-code",
        "0",
        "--json",
        stdin="3 passed",
    )
    ev = js(rec)
    assert set(ev) == {
        "evidence_ref",
        "tool",
        "evidence_class",
        "outcome",
        "eligible_for",
        "output_digest",
    }
    assert ev["outcome"] == "PASS" and ev["eligible_for"][0] == "oracle_stamp"
    stamp = f"oracle_stamp: claim_id=C1 evidence_ref={ev['evidence_ref']} result=PASS"
    applied = js(cli(home, "ingest", "-", "--json", stdin=stamp))
    assert applied["stamps_applied"][0]["status"] == "Exact"
    assert cli(home, "authorize", "--tool", "Edit", "--input", '{"file_path": "a"}').returncode == 0
    held = cli(home, "authorize", "--tool", "Bash", "--input", '{"command": "rm -rf build"}')
    assert held.returncode == 4
    assert cli(home, "finish", "-", stdin="Done.").returncode == 0
    gate = js(cli(home, "gate", "--json"))
    assert set(gate) >= {"position", "allowed_moves", "loop_budget"}


def test_audit_verify_names_the_first_bad_event_and_exits_1(home: Path) -> None:
    cli(home, "ingest", "-", stdin=LEDGER)
    cli(home, "record", "--tool", "bash", "--input", '{"command": "x"}', "--exit-code", "1")
    ok = cli(home, "audit", "--verify", "--json")
    assert ok.returncode == 0 and js(ok)["verified"] is True
    data = js(ok)
    assert set(data) >= {
        "session",
        "claims",
        "premises",
        "open_questions",
        "grounded",
        "verified",
        "events",
    }
    assert set(data["claims"][0]) >= {
        "id",
        "text",
        "status",
        "stamped",
        "evidence_ref",
        "falsifier",
        "history",
    }
    db = sqlite3.connect(home / "ledger.db")
    db.execute("UPDATE events SET payload = replace(payload, 'Exact', 'Guess') WHERE seq = 1")
    db.commit()
    db.close()
    bad = cli(home, "audit", "--verify")
    assert bad.returncode == 1 and "seq 1" in bad.stderr and "Traceback" not in bad.stderr


def test_export_and_verify_bundle_without_the_home(home: Path, tmp_path: Path) -> None:
    cli(home, "ingest", "-", stdin=LEDGER)
    bundle = tmp_path / "b.json"
    assert cli(home, "audit", "--export", str(bundle)).returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved = elsewhere / "bundle.json"
    shutil.copy(bundle, moved)
    shutil.rmtree(home)  # no home, no HMAC key: the public key in the bundle suffices
    ok = subprocess.run(
        [EXE, "verify-bundle", str(moved), "--json"], capture_output=True, text=True, check=False
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"] is True
    data = json.loads(moved.read_text())
    data["events"][0]["payload"] = data["events"][0]["payload"].replace("Exact", "Guess")
    moved.write_text(json.dumps(data))
    bad = subprocess.run(
        [EXE, "verify-bundle", str(moved)], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 1 and "INVALID" in bad.stderr


def test_events_are_json_lines_with_stable_keys(home: Path) -> None:
    cli(home, "ingest", "-", stdin=LEDGER)
    lines = cli(home, "events").stdout.strip().splitlines()
    rows = [json.loads(line) for line in lines]
    assert rows and all(
        set(r) == {"session", "seq", "type", "payload", "timestamp", "hash"} for r in rows
    )
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))


@pytest.mark.parametrize(
    "args",
    [
        ("authorize", "--tool", "Edit", "--input", "{not json"),
        ("authorize", "--tool", "Edit", "--input", "[1]"),
        ("record", "--tool", "bash", "--output-file", "/nonexistent/file"),
        ("ingest", "/nonexistent/file"),
        ("nosuchcommand",),
    ],
)
def test_bad_input_is_exit_2_with_a_message(home: Path, args: tuple[str, ...]) -> None:
    proc = cli(home, *args)
    assert proc.returncode == 2
    assert proc.stderr.strip() and "Traceback" not in proc.stderr


def test_bad_config_is_a_clear_error(home: Path) -> None:
    home.mkdir()
    (home.parent / "infomark.toml").write_text('profile = "paranoid"\nfinish_refusal_cap = -1\n')
    proc = cli(home, "gate")
    assert proc.returncode == 2
    assert "profile" in proc.stderr and "finish_refusal_cap" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_kernel_validate_and_render(home: Path) -> None:
    v = subprocess.run(
        [EXE, "kernel", "validate", "--json"], capture_output=True, text=True, check=False
    )
    assert v.returncode == 0 and json.loads(v.stdout) == {"ok": True, "issues": []}
    r = subprocess.run(
        [EXE, "kernel", "render", "--json"], capture_output=True, text=True, check=False
    )
    doc = json.loads(r.stdout)
    assert doc["bytes"] <= 6656 and len(doc["sha256"]) == 64 and "claim_ledger" in doc["text"]


def test_install_claude_code_is_idempotent_and_keeps_other_hooks(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = {"type": "command", "command": "echo mine"}
    settings.write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [mine]}]}, "x": 1})
    )
    for _ in range(2):
        p = subprocess.run(
            [EXE, "install", "claude-code", "--root", str(tmp_path)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert p.returncode == 0
    data = json.loads(settings.read_text())
    pre = data["hooks"]["PreToolUse"]
    assert pre[0]["hooks"] == [mine] and len(pre) == 2 and data["x"] == 1
    assert set(data["hooks"]) == {
        "SessionStart",
        "PreCompact",
        "PostCompact",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "SubagentStop",
    }
    subprocess.run(
        [EXE, "install", "claude-code", "--root", str(tmp_path), "--uninstall"],
        check=True,
        capture_output=True,
    )
    assert json.loads(settings.read_text()) == {
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [mine]}]},
        "x": 1,
    }


def test_install_refuses_to_clobber_broken_settings(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{broken")
    p = subprocess.run(
        [EXE, "install", "claude-code", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 2 and "not valid JSON" in p.stderr
    assert settings.read_text() == "{broken"


def test_the_lazy_command_table_names_what_each_module_registers() -> None:
    """``COMMANDS`` (which module to import for a command) is exactly what registers."""
    import importlib

    import click

    from infomark.cli.app import COMMANDS

    found: dict[str, str] = {}
    for module in sorted(set(COMMANDS.values())):
        group = click.Group()
        importlib.import_module(f"infomark.cli.commands_{module}").register(group)
        found.update(dict.fromkeys(group.commands, module))
    assert found == COMMANDS


def test_audit_json_imports_neither_rich_nor_the_other_commands(home: Path) -> None:
    """``audit --json`` loads its own command module only: no rich, no eval harness."""
    assert cli(home, "ingest", "-", stdin=LEDGER).returncode == 0
    code = (
        "import sys, contextlib, io\n"
        "from infomark.cli.entry import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(['audit', '--json', '--home', sys.argv[1], '--session', 'cli'])\n"
        "mods = sorted(m for m in sys.modules if m.split('.')[0] == 'rich'"
        " or m.startswith('infomark.cli.commands_'))\n"
        "print(code, mods)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(home)], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["0", "['infomark.cli.commands_audit']"]
