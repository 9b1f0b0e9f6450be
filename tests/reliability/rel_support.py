"""Shared builders of the reliability suite: ledger texts, evidence, the CLI, subprocess env.

Plain functions (no fixtures), imported by the ``test_rel_*`` modules and by
``bench.soak``. Nothing here mocks an infomark component: every helper drives the
real facade, engine, CLI or hook.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers import record_paired
from hypothesis import settings
from hypothesis.errors import InvalidArgument

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.evidence import Evidence

__all__ = [
    "EXE",
    "HERE",
    "ORACLE",
    "REPO",
    "child_env",
    "claim_status",
    "examples",
    "ledger_block",
    "read_file",
    "run_cli",
    "run_command",
    "soak_examples",
    "stamp_line",
]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
EXE = str(Path(sys.executable).with_name("infomark"))
ORACLE = "pytest -q tests/test_x.py"


def examples(fast: int) -> int:
    """``fast`` normally; the loaded profile's count under ``HYPOTHESIS_PROFILE=soak``."""
    loaded = settings.default
    current = int(loaded.max_examples) if loaded is not None else fast
    return current if current >= 1000 else fast


def soak_examples() -> int:
    """The soak profile's example count (10,000), registered in tests/conftest.py."""
    try:
        return int(settings.get_profile("soak").max_examples)
    except InvalidArgument:
        return 10_000


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child process: no INFOMARK_* leaking in from the caller, except
    the store under test (``INFOMARK_STORE``, set by the ``backend`` fixture)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("INFOMARK_") or k == "INFOMARK_STORE"
    }
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def ledger_block(
    cid: str = "C1",
    *,
    text: str = "the parser drops the last token",
    status: str = "Hypothetical",
    oracle: str | None = ORACLE,
    falsifier: str | None = "pytest passes on the unmodified parser",
    premise: bool = True,
) -> str:
    """One claim_ledger block with one claim (double-quoted values)."""
    lines = ["claim_ledger:", "  claims:", f"    - id: {cid}", f'      text: "{text}"']
    lines.append(f"      status: {status}")
    if falsifier is not None:
        lines.append(f'      falsifier: "{falsifier}"')
    if oracle is not None:
        lines.append(f'      oracle: "{oracle}"')
    lines.append(f"  premises_for_plan: [{cid if premise else ''}]")
    return "\n".join(lines) + "\n"


def stamp_line(
    cid: str, ref: str, *, kind: str = "oracle_stamp", result: str | None = "PASS", extra: str = ""
) -> str:
    parts = [f"{kind}: claim_id={cid} evidence_ref={ref}"]
    if result is not None and kind == "oracle_stamp":
        parts.append(f"result={result}")
    if extra:
        parts.append(extra)
    return " ".join(parts) + "\n"


def run_command(
    gk: Gatekeeper, command: str = ORACLE, exit_code: int | None = 0, output: str = "ok"
) -> Evidence:
    """Record a shell run (execution evidence)."""
    return record_paired(
        gk,
        ToolCall(tool="bash", input={"command": command}),
        ToolOutcome(output=output, exit_code=exit_code),
    )


def read_file(gk: Gatekeeper, path: str = "a.py", output: str = "x = 1") -> Evidence:
    """Record a file read (observation evidence)."""
    return record_paired(
        gk, ToolCall(tool="Read", input={"file_path": path}), ToolOutcome(output=output)
    )


def claim_status(gk: Gatekeeper, cid: str = "C1") -> str | None:
    return gk.ledger().status(cid)


def run_cli(
    *args: str,
    stdin: bytes = b"",
    cwd: Path | None = None,
    timeout: float = 120,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``infomark`` executable; bytes in, bytes out, never raises on exit."""
    return subprocess.run(
        [EXE, *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env=child_env(**(env or {})),
        timeout=timeout,
        check=False,
    )
