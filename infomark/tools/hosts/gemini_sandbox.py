"""Gemini CLI's shell commands, run in infomark's own OS sandbox (the one ``infomark run`` uses).

Gemini CLI 0.61 lets a ``BeforeTool`` hook rewrite a tool's arguments
(``hookSpecificOutput.tool_input``: Gemini rebuilds the call from them, runs it, and passes
the rewritten arguments to ``AfterTool``; seen on the binary). infomark's hook answers every
allowed ``run_shell_command`` with its ``command`` wrapped::

    '<launcher>' hook sandbox-exec --home '<home>' --root '<project>' -- '<command>'

so Gemini's shell starts infomark's launcher, which runs ``bash -c '<command>'`` under
:func:`infomark.tools.agent_sandbox.agent_policy` (bubblewrap: the ledger home and the
operator's directory hidden, the hook launcher, Gemini's settings and infomark's environment
read-only, writes only in the project, ``/tmp`` and ``~/.cache``). Nothing unsandboxed runs
in its place: where no sandbox starts, the command fails with the reason (exit 126).

``AfterTool`` checks that the command that ran is exactly the wrapped form infomark wrote
(:func:`unwrap`); a command that is not (the hook timed out, which lets Gemini run the call
as the model wrote it, or another hook rewrote it) journals the session as unsandboxed from
there on, so its runs ground nothing (``unsandboxed_run``).

Gemini CLI loads a project's ``.env`` into its own environment at start (0.61.0:
``loadEnvironment``; seen on the binary: ``BASH_ENV`` from it is sourced by the shell Gemini
starts, outside any sandbox, before the wrapped command runs). A command could write one for
the next session, so ``infomark install gemini`` sets ``advanced.ignoreLocalEnv`` (Gemini then
reads ``.gemini/.env`` files only, and the project's ``.gemini`` directory is read-only to the
agent's commands and protected from its file tools); :func:`env_switch_on` is part of the
sandbox check. The value it replaced is recorded beside the settings
(``.gemini/infomark-env.json``) and put back by ``--uninstall``.

``ignoreLocalEnv`` covers ``.env`` files only: Gemini still reads the first ``.gemini/.env``
it finds walking up from its working directory (0.61.0: ``findEnvFile``), and the folders
above a project under ``/tmp`` or ``~/.cache`` are writable by the agent's commands. So
``install`` also makes sure the project has a ``.gemini/.env`` (:data:`ENV_STOP`, a comment
when it creates one), where the walk stops, inside the directory the agent cannot write;
:func:`env_stop_present` is part of the sandbox check, and ``--uninstall`` removes the file
only while it is still the comment ``install`` wrote.

Gemini CLI's own tool sandbox (``security.toolSandboxing``, bubblewrap on Linux) is not
used: it hides only what ``.geminiignore`` names, leaves the project's ``.gemini/settings.json``
and ``.geminiignore`` writable in ``--yolo``, and lets a user's approved "sandbox expansion"
bind any path back in.
"""

from __future__ import annotations

import os
import shlex
import sys

from infomark.kernel.jsonc import load_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any

__all__ = [
    "ENV_RECORD",
    "ENV_STOP",
    "EXEC",
    "add_env_switch",
    "env_stop_present",
    "env_switch_on",
    "exec_prefix",
    "remove_env_switch",
    "sandbox_exec",
    "unwrap",
    "wrap",
]

#: the ``infomark hook`` sub-command that runs one command in the sandbox
EXEC = "sandbox-exec"


def _launcher() -> list[str]:
    """How this hook process was started: infomark's launcher (``.gemini/infomark-hook``)
    when it was, else this interpreter running the package."""
    from pathlib import Path

    from infomark.tools.launcher import is_launcher

    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 and os.path.isfile(argv0) and is_launcher(Path(argv0)):
        return [os.path.realpath(argv0)]
    return [sys.executable, "-m", "infomark"]


def exec_prefix(home: str, root: str, launcher: Sequence[str] | None = None) -> str:
    """The text before the quoted command: the launcher, then ``hook sandbox-exec`` with the
    real home and project, then ``--``."""
    argv = [*(launcher if launcher is not None else _launcher()), "hook", EXEC]
    argv += ["--home", os.path.realpath(home), "--root", os.path.realpath(root), "--"]
    return shlex.join(argv) + " "


def wrap(command: str, prefix: str) -> str:
    """``command`` run in infomark's sandbox by the launcher named in ``prefix``."""
    return prefix + shlex.quote(command)


def unwrap(text: object, prefix: str) -> str | None:
    """The command :func:`wrap` wrapped, when ``text`` is exactly its output; else None."""
    if not isinstance(text, str) or not text.startswith(prefix):
        return None
    rest = text[len(prefix) :]
    try:
        parts = shlex.split(rest)
    except ValueError:
        return None
    if len(parts) != 1 or shlex.quote(parts[0]) != rest:
        return None  # more than the one quoted word (`'x'; cat key`): not infomark's form
    return parts[0]


def _parse(args: list[str]) -> tuple[str, str, str] | str:
    home = root = None
    rest = list(args)
    while rest and rest[0] != "--":
        flag = rest.pop(0)
        if flag in ("--home", "--root") and rest:
            value = rest.pop(0)
            home, root = (value, root) if flag == "--home" else (home, value)
        else:
            return f"unknown option {flag!r}"
    if home is None or root is None or len(rest) != 2:
        return "expected --home DIR --root DIR -- COMMAND"
    return home, root, rest[1]


def sandbox_exec(args: list[str]) -> int:
    """``infomark hook sandbox-exec --home H --root R -- COMMAND``: replace this process with
    ``bash -c COMMAND`` in the agent's sandbox; 126 (and why, on stderr) when it cannot."""
    import shutil

    from infomark.kernel.environ import agent_env
    from infomark.tools import sandbox
    from infomark.tools.agent_sandbox import agent_policy

    parsed = _parse(args)
    if isinstance(parsed, str):
        sys.stderr.write(f"infomark hook {EXEC}: {parsed}\n")
        return 2
    home, root, command = parsed
    status = sandbox.probe()
    if not status.available:
        sys.stderr.write(
            f"infomark: this command was not run: no OS sandbox can run here ({status.detail}); "
            f"ask the user to fix it: {status.fix}\n"
        )
        return 126
    private = [os.environ["INFOMARK_HOME"]] if os.environ.get("INFOMARK_HOME") else []
    env = agent_env()
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = root
    policy = agent_policy(home, root, env=env, private=private, cwd=cwd)
    shell = shutil.which("bash") or "/bin/sh"
    argv = sandbox.command([shell, "-c", command], policy)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvpe(argv[0], argv, dict(policy.env))  # noqa: S606 (argv is a list: no shell)
    return 126  # pragma: no cover (execvpe does not return)


#: what ``infomark install gemini`` replaced in ``advanced``, beside the settings file
ENV_RECORD = "infomark-env.json"
_ABSENT = "<absent>"
_SYSTEM = "/etc/gemini-cli/settings.json"
_SYSTEM_DEFAULTS = "/etc/gemini-cli/system-defaults.json"


def _ignore_local_env(data: Any) -> object:
    advanced = data.get("advanced") if isinstance(data, dict) else None
    return advanced.get("ignoreLocalEnv", _ABSENT) if isinstance(advanced, dict) else _ABSENT


def env_switch_on(root: str, environ: Mapping[str, str]) -> bool:
    """Whether Gemini CLI ignores the project's ``.env`` files: ``advanced.ignoreLocalEnv``
    as its settings files decide it (system defaults, user, project, then system, each
    overriding the one before; the ``GEMINI_CLI_SYSTEM_*_PATH`` variables move the two
    system files)."""
    user = environ.get("HOME") or os.path.expanduser("~")
    files = [
        environ.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or _SYSTEM_DEFAULTS,
        os.path.join(user, ".gemini", "settings.json"),
        os.path.join(root, ".gemini", "settings.json"),
        environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or _SYSTEM,
    ]
    value: object = False
    for path in files:
        found = _ignore_local_env(load_path(path))
        if found is not _ABSENT:
            value = found
    return value is True


#: the project's ``.gemini/.env``, where Gemini CLI's search for an environment file stops
ENV_STOP = ".env"
_STOP_TEXT = (
    "# Written by `infomark install gemini`: Gemini CLI stops its search for a .env here, so it\n"
    "# never loads one the agent's commands could write in a folder above the project. Your own\n"
    "# variables may go in this file; `infomark install gemini --uninstall` then keeps it.\n"
)


def env_stop_present(root: str) -> bool:
    """Whether the project has the ``.gemini/.env`` where Gemini CLI's search stops."""
    return os.path.isfile(os.path.join(root, ".gemini", ENV_STOP))


def _add_env_stop(gemini_dir: Path) -> bool:
    """Create ``.gemini/.env`` (0600) when it is missing; whether it was created."""
    stop = gemini_dir / ENV_STOP
    if stop.exists() or stop.is_symlink():
        return False
    gemini_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(stop, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(_STOP_TEXT)
    return True


def _remove_env_stop(gemini_dir: Path) -> None:
    """Delete ``.gemini/.env`` while it is exactly the comment ``install`` wrote."""
    stop = gemini_dir / ENV_STOP
    try:
        if not stop.is_symlink() and stop.read_text("utf-8") == _STOP_TEXT:
            stop.unlink()
    except OSError:
        pass


def add_env_switch(data: dict[str, Any], settings: Path) -> bool:
    """Set ``advanced.ignoreLocalEnv`` in ``data`` (the settings at ``settings``) and record
    the value it had; whether the record was written."""
    import json

    from infomark.kernel.errors import UserError
    from infomark.tools.textfile import write_record

    advanced = data.setdefault("advanced", {})
    if not isinstance(advanced, dict):
        raise UserError(f"{settings}: 'advanced' must be an object; nothing was changed")
    record = settings.parent / ENV_RECORD
    kept = load_path(str(record))
    before = kept.get("ignoreLocalEnv") if isinstance(kept, dict) else None
    if before is None:
        before = advanced.get("ignoreLocalEnv", _ABSENT)
    advanced["ignoreLocalEnv"] = True
    text = json.dumps({"format": 1, "ignoreLocalEnv": before}, sort_keys=True) + "\n"
    created = _add_env_stop(settings.parent)
    return write_record(record, text) or created


def remove_env_switch(data: dict[str, Any], settings: Path) -> bool:
    """Put ``advanced.ignoreLocalEnv`` back as the record says (unless the user changed it
    since); whether there was a record (it is deleted)."""
    record = settings.parent / ENV_RECORD
    kept = load_path(str(record))
    if not isinstance(kept, dict):
        return False
    advanced = data.get("advanced")
    if isinstance(advanced, dict) and advanced.get("ignoreLocalEnv") is True:
        before = kept.get("ignoreLocalEnv", _ABSENT)
        if before == _ABSENT:
            advanced.pop("ignoreLocalEnv", None)
        else:
            advanced["ignoreLocalEnv"] = before
        if not advanced:
            del data["advanced"]
    record.unlink(missing_ok=True)
    _remove_env_stop(settings.parent)
    return True
