"""Where PostgreSQL cannot be reached, its half of the store tests is skipped loudly.

The real pytest on a real store test, with ``INFOMARK_TEST_PG`` pointing at a port where
nothing listens: the SQLite half passes, the PostgreSQL half is skipped with the reason on
the skip line, a non-zero skipped count, and a banner at the end of the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_an_unreachable_postgresql_is_skipped_loudly(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFOMARK_")}
    env["INFOMARK_TEST_PG"] = "postgresql://postgres@127.0.0.1:9/test?connect_timeout=2"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/ledger/test_store_manifest.py::test_a_pristine_home_verifies",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "1 passed, 1 skipped" in out
    assert "POSTGRESQL NOT TESTED: cannot connect to postgresql://postgres@127.0.0.1:9/" in out
    assert "POSTGRESQL BACKEND NOT TESTED" in out
    assert "1 PostgreSQL test(s) SKIPPED" in out
