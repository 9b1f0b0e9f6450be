"""docs/deploy.md's secret-manager route: the key only in ``INFOMARK_KEY`` (no ``<home>/key``)
and the journal on PostgreSQL. Right after ``infomark init`` the read-only commands
(``sessions``, ``audit``, ``report``) find the home: real CLI, real PostgreSQL."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from store_backends import drop_schema, new_schema, pg_unreachable

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
