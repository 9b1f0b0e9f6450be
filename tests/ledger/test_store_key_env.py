"""docs/deploy.md's secret-manager route: the key only in ``INFOMARK_KEY`` (no ``<home>/key``)
and the journal on PostgreSQL. Right after ``infomark init`` the read-only commands
(``sessions``, ``audit``, ``report``) find the home: real CLI, real PostgreSQL."""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from store_backends import PG_BASE, drop_schema, new_schema, pg_unreachable, schema_url

LEDGER = (
    'claim_ledger:\n  claims:\n    - id: C1\n      text: "the check passes"\n'
    '      status: Guess\n      falsifier: "it fails"\n      oracle: "sh check.sh"\n'
    "  premises_for_plan: [C1]\n"
)


def test_read_only_commands_work_right_after_init_with_the_key_in_the_environment(
    tmp_path: Path,
) -> None:
    why = pg_unreachable()
    if why is not None:
        pytest.skip(f"PostgreSQL is needed for this test and is not reachable: {why}")
    schema, url = new_schema()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("INFOMARK_")}
        env["INFOMARK_KEY"] = secrets.token_hex(32)
        home = tmp_path / "agents" / ".infomark"

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "infomark", *args, "--home", str(home)],
                capture_output=True, text=True, timeout=120, check=False, env=env,
                cwd=tmp_path,
            )  # fmt: skip

        init = cli("init", "--store", url)
        assert init.returncode == 0, init.stderr
        assert not (home / "key").exists()  # the key stays in the secret manager
        empty = cli("sessions", "--json")
        assert empty.returncode == 0, empty.stderr
        assert json.loads(empty.stdout) == []
        made = subprocess.run(
            [sys.executable, "-m", "infomark", "ingest", "-", "--home", str(home),
             "--session", "task-42"],
            input=LEDGER, capture_output=True, text=True, timeout=120, check=False, env=env,
            cwd=tmp_path,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        listed = cli("sessions", "--json")
        assert [r["session"] for r in json.loads(listed.stdout)] == ["task-42"]
        audit = cli("audit", "task-42", "--json")
        assert audit.returncode == 0, audit.stderr
        assert json.loads(audit.stdout)["verified"] is True
        report = cli("report", "task-42")
        assert report.returncode == 0 and "task-42" in report.stdout, report.stderr
        env.pop("INFOMARK_KEY")
        keyless = cli("audit", "task-42")  # no key anywhere: a clear error, not a new home
        assert keyless.returncode == 2 and "no ledger home" in keyless.stderr
    finally:
        drop_schema(schema)


DEPLOY = Path(__file__).parents[2] / "docs" / "deploy.md"
DOC_HOME = "/srv/agents/.infomark"
DOC_URL = "postgresql://infomark@db.internal:5432/ledger"


def test_deploy_md_commands_print_what_it_says(tmp_path: Path) -> None:
    """deploy.md's `infomark` commands, run as written with the home and the store URL
    pointed at this machine: `init` prints the documented store line, `audit --verify` of a
    session made on the shared store verifies."""
    why = pg_unreachable()
    if why is not None:
        pytest.skip(f"PostgreSQL is needed for this test and is not reachable: {why}")
    text = DEPLOY.read_text(encoding="utf-8")
    lines = [ln.strip()[2:] for ln in text.splitlines() if ln.strip().startswith("$ infomark ")]
    init_line = next(ln for ln in lines if ln.startswith("infomark init"))
    audit_line = next(ln for ln in lines if ln.startswith("infomark audit"))
    printed = re.search(r"It prints `([^`]+)`", text)
    assert printed is not None and DOC_URL in printed[1] and DOC_URL in init_line
    import uuid

    import psycopg

    schema = "t_" + uuid.uuid4().hex[:16]  # empty: `init` applies the migrations itself
    with psycopg.connect(PG_BASE, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}".encode())
    url = schema_url(schema)
    try:
        home = tmp_path / "srv" / "agents" / ".infomark"
        env = {k: v for k, v in os.environ.items() if not k.startswith("INFOMARK_")}
        env["INFOMARK_KEY"] = secrets.token_hex(32)

        def run(line: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
            args = shlex.split(line.replace(DOC_HOME, str(home)).replace(DOC_URL, url))
            return subprocess.run(
                [sys.executable, "-m", "infomark", *args[1:]], input=stdin,
                capture_output=True, text=True, timeout=120, check=False, env=env, cwd=tmp_path,
            )  # fmt: skip

        init = run(init_line)
        assert init.returncode == 0, init.stderr
        shown_url = re.search(r"^store (\S+): ", init.stdout, re.M)
        assert shown_url is not None, init.stdout
        assert printed[1].replace(DOC_URL, shown_url[1]) in init.stdout
        made = run(f"infomark ingest - --home {DOC_HOME} --session task-42", LEDGER)
        assert made.returncode == 0, made.stderr
        audit = run(audit_line)
        assert audit.returncode == 0, audit.stderr
        assert "task-42" in audit.stdout + audit.stderr
    finally:
        drop_schema(schema)
