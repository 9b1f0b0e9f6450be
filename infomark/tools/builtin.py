"""Built-in tools: real executors for shell commands and files, ready to wrap.

``bash`` runs a command through ``bash -c`` with every ``INFOMARK_*`` variable removed
from its environment (:func:`agent_env`); ``read``, ``write`` and ``edit`` work
on files under a root directory. Each takes a :class:`ToolCall` and returns a
:class:`ToolOutcome`, so ``gk.wrap(make_builtins(root)["bash"])`` gates it.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from infomark.kernel.environ import agent_env
from infomark.ledger.calls import ToolCall, ToolOutcome

__all__ = ["agent_env", "make_builtins"]

_MAX_OUTPUT = 1 << 20


def _resolve(root: Path, path: object) -> Path:
    if not isinstance(path, str) or not path:
        raise ValueError("file_path must be a non-empty string")
    p = Path(path)
    return p if p.is_absolute() else root / p


def make_builtins(
    root: Path | str, *, timeout: float = 600.0
) -> dict[str, Callable[[ToolCall], ToolOutcome]]:
    """Executors bound to a working directory ``root``."""
    root = Path(root)
    shell = shutil.which("bash") or "/bin/sh"

    def bash(call: ToolCall) -> ToolOutcome:
        command = call.command
        if command is None:
            return ToolOutcome(error="bash needs input.command (a string)", is_error=True)
        started = time.perf_counter()
        try:
            proc = subprocess.run(
                [shell, "-c", command],
                cwd=root,
                capture_output=True,
                timeout=timeout,
                check=False,
                env=agent_env(),
            )
        except subprocess.TimeoutExpired:
            return ToolOutcome(
                error=f"timed out after {timeout:g}s",
                is_error=True,
                duration_ms=(time.perf_counter() - started) * 1000,
            )
        output = (proc.stdout + proc.stderr)[:_MAX_OUTPUT].decode("utf-8", "replace")
        return ToolOutcome(
            output=output,
            exit_code=proc.returncode,
            duration_ms=(time.perf_counter() - started) * 1000,
        )

    def read(call: ToolCall) -> ToolOutcome:
        try:
            text = _resolve(root, call.input.get("file_path")).read_text("utf-8", "replace")
        except (OSError, ValueError) as exc:
            return ToolOutcome(error=str(exc), is_error=True)
        return ToolOutcome(output=text[:_MAX_OUTPUT])

    def write(call: ToolCall) -> ToolOutcome:
        content = call.input.get("content")
        if not isinstance(content, str):
            return ToolOutcome(error="write needs input.content (a string)", is_error=True)
        try:
            path = _resolve(root, call.input.get("file_path"))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, "utf-8")
        except (OSError, ValueError) as exc:
            return ToolOutcome(error=str(exc), is_error=True)
        return ToolOutcome(output=f"wrote {len(content)} characters to {path}")

    def edit(call: ToolCall) -> ToolOutcome:
        old, new = call.input.get("old_string"), call.input.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str):
            return ToolOutcome(error="edit needs old_string and new_string", is_error=True)
        try:
            path = _resolve(root, call.input.get("file_path"))
            text = path.read_text("utf-8")
        except (OSError, ValueError) as exc:
            return ToolOutcome(error=str(exc), is_error=True)
        if old not in text:
            return ToolOutcome(error=f"old_string not found in {path}", is_error=True)
        path.write_text(text.replace(old, new, 1), "utf-8")
        return ToolOutcome(output=f"edited {path}")

    return {"bash": bash, "read": read, "write": write, "edit": edit}
