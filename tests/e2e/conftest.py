"""Fixtures for the end-to-end tests that run the real Claude Code CLI.

``claude_bin`` finds the binary (``$INFOMARK_CLAUDE_BIN`` or the e2e cache), installs it with
``scripts/install-claude-code.sh`` when npm is available, and otherwise skips the test. Under
``CI=true`` a missing or broken binary fails the test instead: CI must not go green by skipping.
Under pytest-xdist each worker has its own session: they install one at a time (a file lock in
the cache), so two npm runs never write the same prefix.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import NoReturn

import pytest

from .claude_harness import CLAUDE_CODE_VERSION, cache_dir, find_claude

__all__ = ["claude_bin"]

_REPO = Path(__file__).resolve().parents[2]
_INSTALLER = _REPO / "scripts" / "install-claude-code.sh"
_INSTALL_TIMEOUT = 1200
_VERSION_TIMEOUT = 60


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true requires Claude Code for the e2e tests: {reason}", pytrace=False)
    pytest.skip(reason)


def _install() -> Path:
    if shutil.which("npm") is None or shutil.which("bash") is None:
        _unavailable(
            f"Claude Code is not installed in {cache_dir()} and npm is not on PATH; "
            f"run {_INSTALLER} or set INFOMARK_CLAUDE_BIN"
        )
    env = dict(os.environ, INFOMARK_CLAUDE_VERSION=CLAUDE_CODE_VERSION)
    try:
        done = subprocess.run(
            ["bash", str(_INSTALLER)],
            env=env,
            capture_output=True,
            text=True,
            timeout=_INSTALL_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        _unavailable(f"{_INSTALLER} did not finish within {_INSTALL_TIMEOUT} s")
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        _unavailable(f"{_INSTALLER} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return Path(lines[-1])


def _find_or_install() -> Path:
    """The binary; the first process to get here installs it, the others wait and find it
    (never a binary that another worker's npm is still writing)."""
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".install.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes (or the process dies)
        found = find_claude()
        return found if found is not None else _install()


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The Claude Code binary, installed on first use; skip (fail under CI=true) without one."""
    binary = _find_or_install()
    try:
        with tempfile.TemporaryDirectory(prefix="claude-home-") as home:
            version = subprocess.run(
                [str(binary), "--version"],
                env=dict(os.environ, HOME=home),
                capture_output=True,
                text=True,
                timeout=_VERSION_TIMEOUT,
                check=False,
                stdin=subprocess.DEVNULL,
            )
    except (OSError, subprocess.TimeoutExpired) as exc:
        _unavailable(f"{binary} --version did not run: {exc}")
    if version.returncode != 0:
        _unavailable(f"{binary} --version exited {version.returncode}: {version.stderr.strip()}")
    return binary
