"""``infomark doctor``: the hook launcher each Claude Code settings file runs.

There, executable, written by infomark, its interpreter, recorded paths and package present,
not writable by others, what this infomark would write now; and an entry still of the older
form (the console script, which starts Python with ``site``). Read-only.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from infomark.kernel.errors import UserError
from infomark.tools.doctor import Finding
from infomark.tools.install import hook_argv, hook_form
from infomark.tools.launcher import read_launcher, render

__all__ = ["CC", "REINSTALL", "launcher_findings"]

CC = "claude-code"
REINSTALL = "run `infomark install claude-code` (it restores every entry, keeping other hooks)"


def _launcher_of(command: str, settings: Path) -> Path | None:
    argv = hook_argv(command, settings)
    if hook_form(command) != "launcher" or not argv:
        return None
    return Path(argv[3] if argv[1:3] == ["-I", "-S"] else argv[0])


def launcher_findings(handlers: list[tuple[Path, dict[str, Any]]]) -> list[Finding]:
    """The hook launcher each settings file runs: there, executable, its interpreter and
    package present; an entry still of the older form (the console script, with ``site``)."""
    out: list[Finding] = []
    seen: set[Path] = set()
    older: set[Path] = set()
    for path, handler in handlers:
        command = handler.get("command")
        if handler.get("type") == "http" or not isinstance(command, str):
            continue
        launcher = _launcher_of(command, path)
        if launcher is None:
            if path not in older:
                older.add(path)
                out.append(
                    Finding(
                        CC,
                        "hook_launcher",
                        "warning",
                        f"{path}: the hooks run {shlex.split(command)[0] if command else '?'} "
                        "with Python's site (every .pth file in site-packages and the user "
                        "site runs inside the gatekeeper before it decides, and each call "
                        "starts slower)",
                        "run `infomark install claude-code`: it writes the isolated launcher "
                        "(python -I -S) beside the settings and points every entry at it",
                    )
                )
            continue
        if launcher in seen:
            continue
        seen.add(launcher)
        if not launcher.exists():
            # PYTHON -I -S LAUNCHER: not checked yet
            if hook_argv(command, path)[0] != str(launcher):
                out.append(
                    Finding(
                        CC,
                        "hook_launcher",
                        "problem",
                        f"{path}: the hooks run the launcher {launcher}, which does not exist",
                        REINSTALL,
                    )
                )
            continue  # otherwise a hook_command problem already
        beside = path.parent / launcher.name  # shown as the settings file is (relative)
        if beside.resolve() == launcher.resolve():
            launcher = beside
        try:
            found = read_launcher(launcher)
        except UserError as exc:
            out.append(Finding(CC, "hook_launcher", "problem", str(exc), REINSTALL))
            continue
        for where in found.exposed():
            out.append(
                Finding(
                    CC,
                    "hook_launcher",
                    "problem",
                    f"{where} is writable by group or others: they could swap the hook "
                    "launcher for one that lets every call through",
                    f"chmod go-w {shlex.quote(str(where))}",
                )
            )
        problems = found.problems()
        if problems:
            out.append(
                Finding(
                    CC,
                    "hook_launcher",
                    "problem",
                    f"the hook launcher {launcher} cannot run the hook: "
                    + "; ".join(problems)
                    + " (it denies every PreToolUse and refuses Stop until it is rewritten)",
                    REINSTALL + " from the environment infomark is installed in",
                )
            )
            continue
        out.append(
            Finding(
                CC,
                "hook_launcher",
                "ok",
                f"the hooks start isolated: {launcher} runs {found.python} -I -S",
            )
        )
        if found.python == sys.executable and launcher.read_text("utf-8") != render():
            out.append(
                Finding(
                    CC,
                    "hook_launcher",
                    "warning",
                    f"the hook launcher {launcher} is not what this infomark would write "
                    "(another version, or infomark or tree-sitter moved)",
                    REINSTALL,
                )
            )
    return out
