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

Gemini CLI's own tool sandbox (``security.toolSandboxing``, bubblewrap on Linux) is not
used: it hides only what ``.geminiignore`` names, leaves the project's ``.gemini/settings.json``
and ``.geminiignore`` writable in ``--yolo``, and lets a user's approved "sandbox expansion"
bind any path back in.
"""

from __future__ import annotations

import os
import shlex
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["EXEC", "exec_prefix", "sandbox_exec", "unwrap", "wrap"]

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
