"""Debian's headless chromium for the tests that load a generated page in a real browser."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium(what: str) -> str:
    """The browser binary; under CI=true a missing one fails the test ``what`` names."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true requires Debian's chromium for {what}", pytrace=False)
    pytest.skip("no chromium on PATH (apt-get install chromium)")


def browser(*args: str, profile: Path, what: str) -> subprocess.CompletedProcess[str]:
    """Run headless chromium with its own profile directory (no network beyond the page)."""
    return subprocess.run(
        [chromium(what), *_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
