"""``infomark doctor``: the hook launcher each Claude Code settings file runs.

There, executable, written by infomark, its interpreter, recorded paths and package present,
not writable by others, what this infomark would write now; and an entry still of the older
form (the console script, which starts Python with ``site``). Read-only.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from infomark.kernel.errors import UserError
from infomark.tools.doctor import Finding
from infomark.tools.install import hook_argv, hook_form
from infomark.tools.launcher import Launcher, read_launcher, render

__all__ = ["CC", "REINSTALL", "launcher_findings"]

CC = "claude-code"
REINSTALL = "run `infomark install claude-code` (it restores every entry, keeping other hooks)"


def _finding(status: str, message: str, fix: str = "") -> Finding:
    """A ``hook_launcher`` finding of Claude Code (every finding this module makes)."""
    return Finding(CC, "hook_launcher", status, message, fix)


def _launcher_of(command: str, settings: Path) -> Path | None:
    argv = hook_argv(command, settings)
    if hook_form(command) != "launcher" or not argv:
        return None
    return Path(argv[3] if argv[1:3] == ["-I", "-S"] else argv[0])


def launcher_findings(handlers: list[tuple[Path, dict[str, Any]]]) -> list[Finding]:
    """The hook launcher each settings file runs (each launcher judged once, by
    :func:`_judge`); an entry still of the older form (the console script, with ``site``),
    once per settings file."""
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
                out.append(_older_form(path, command))
        elif launcher not in seen:
            seen.add(launcher)
            out += _judge(path, command, launcher)
    return out


def _older_form(path: Path, command: str) -> Finding:
    """An entry that runs the console script starts Python with ``site``: a warning."""
    return _finding(
        "warning",
        f"{path}: the hooks run {shlex.split(command)[0] if command else '?'} "
        "with Python's site (every .pth file in site-packages and the user "
        "site runs inside the gatekeeper before it decides, and each call "
        "starts slower)",
        "run `infomark install claude-code`: it writes the isolated launcher "
        "(python -I -S) beside the settings and points every entry at it",
    )


def _judge(path: Path, command: str, launcher: Path) -> list[Finding]:
    """One launcher: it exists and reads as one infomark wrote, then :data:`LAUNCHER_CHECKS`
    in order."""
    if not launcher.exists():
        # PYTHON -I -S LAUNCHER: not checked yet; otherwise a hook_command problem already
        if hook_argv(command, path)[0] == str(launcher):
            return []
        return [
            _finding(
                "problem",
                f"{path}: the hooks run the launcher {launcher}, which does not exist",
                REINSTALL,
            )
        ]
    beside = path.parent / launcher.name  # shown as the settings file is (relative)
    try:
        found = read_launcher(beside if beside.resolve() == launcher.resolve() else launcher)
    except UserError as exc:
        return [_finding("problem", str(exc), REINSTALL)]
    out: list[Finding] = []
    for check, final in LAUNCHER_CHECKS:
        findings = check(found)
        out += findings
        if findings and final:
            break
    return out


def _not_writable_by_others(found: Launcher) -> list[Finding]:
    """Neither the launcher nor its directory is writable by group or others (who could swap
    it for one that lets every call through)."""
    return [
        _finding(
            "problem",
            f"{where} is writable by group or others: they could swap the hook "
            "launcher for one that lets every call through",
            f"chmod go-w {shlex.quote(str(where))}",
        )
        for where in found.exposed()
    ]


def _can_run_the_hook(found: Launcher) -> list[Finding]:
    """Its interpreter, recorded paths and infomark package are there (else it denies every
    PreToolUse and refuses Stop)."""
    problems = found.problems()
    if not problems:
        return []
    return [
        _finding(
            "problem",
            f"the hook launcher {found.path} cannot run the hook: "
            + "; ".join(problems)
            + " (it denies every PreToolUse and refuses Stop until it is rewritten)",
            REINSTALL + " from the environment infomark is installed in",
        )
    ]


def _starts_isolated(found: Launcher) -> list[Finding]:
    """A launcher that can run starts the hook isolated (``python -I -S``): ok."""
    return [
        _finding(
            "ok",
            f"the hooks start isolated: {found.path} runs {found.python} -I -S",
        )
    ]


def _as_this_infomark_writes_it(found: Launcher) -> list[Finding]:
    """A launcher of this interpreter is what this infomark would write now."""
    if found.python != sys.executable or found.path.read_text("utf-8") == render():
        return []
    return [
        _finding(
            "warning",
            f"the hook launcher {found.path} is not what this infomark would write "
            "(another version, or infomark or tree-sitter moved)",
            REINSTALL,
        )
    ]


#: ``(check, final)``: the checks of a launcher infomark wrote, in order; a ``final`` check
#: that finds something ends the launcher's checks
LAUNCHER_CHECKS: tuple[tuple[Callable[[Launcher], list[Finding]], bool], ...] = (
    (_not_writable_by_others, False),
    (_can_run_the_hook, True),
    (_starts_isolated, False),
    (_as_this_infomark_writes_it, False),
)
