"""The runner's built-in tools: a description, a JSON schema and a class next to each.

``read``/``write``/``edit`` reuse :func:`infomark.tools.builtin.make_builtins`; ``bash``
runs with a timeout, an output cap and without the model's API key in its environment;
``grep`` and ``glob`` walk the project (never the ledger home);
``wait``, ``spawn_agent`` and ``send`` are bound to the running session by the runner.
Every tool runs through :func:`infomark.wrapping.wrap_executor` (authorize → run → record),
exactly like every other integration. ``tool_class`` None lets the classifier decide (a
shell command is classified by what it does).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from infomark.kernel.tools import ToolClass
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.tools import sandbox
from infomark.tools.agent_sandbox import agent_policy, check_path
from infomark.tools.builtin import agent_env, make_builtins

__all__ = ["DELEGATION_CLASS", "UNSANDBOXED", "RunnerTool", "file_tools", "schema_of"]

#: The reason code of a shell command refused (or run bare, in ``observe``) for want of a
#: sandbox.
UNSANDBOXED = "sandbox_unavailable"

Run = Callable[[ToolCall], ToolOutcome]

#: Sub-agent results: the kernel's delegation class when it has one; else ``execute`` (the
#: call runs a child that is gated itself). Its evidence is ineligible by name either way:
#: it may back a divergence (falsify), never a stamp.
DELEGATION_CLASS: str = str(getattr(ToolClass, "DELEGATION", ToolClass.EXECUTE))

_GREP_MAX_FILE = 2 << 20
_WALK_MAX = 20_000


@dataclass(frozen=True, slots=True)
class RunnerTool:
    name: str
    description: str
    parameters: Mapping[str, Any]
    run: Run
    tool_class: str | None = None  # None: classified by name and input

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


def schema_of(props: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": dict(props), "required": list(required)}


_S = {"type": "string"}


def _walk(root: Path, skip: tuple[Path, ...]) -> Iterator[Path]:
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in (".git", "__pycache__", ".venv", "node_modules")
            and not any((here / d).resolve() == s for s in skip)
        )
        for f in sorted(filenames):
            count += 1
            if count > _WALK_MAX:
                return
            yield here / f


def file_tools(
    root: Path,
    *,
    home: Path,
    bash_timeout: float,
    output_cap: int,
    hide_env: tuple[str, ...] = (),
    enforcing: bool = True,
) -> dict[str, RunnerTool]:
    """read, write, edit, bash, grep and glob over the project ``root``.

    ``hide_env`` names environment variables the shell must not see (the model's API key);
    like every process infomark starts for the agent, it never sees an ``INFOMARK_*`` one.
    Every shell command runs in the OS sandbox of :func:`agent_policy` (the home hidden,
    infomark's environment read-only); where no sandbox can run, ``enforcing`` (the ``ledger``
    and ``strict`` profiles) refuses to run it, with the fix, and ``observe`` runs it bare
    with a warning in its output. The file tools check every path against the same policy.
    """
    env = {k: v for k, v in agent_env().items() if k not in hide_env}
    policy = agent_policy(home, root, env=env)
    kit = _Kit(
        root=root,
        base=make_builtins(root, timeout=bash_timeout),
        skip=(home.resolve(),),
        shell=shutil.which("bash") or "/bin/sh",
        env=env,
        policy=replace(policy, limits=sandbox.Limits(wall_seconds=bash_timeout)),
        bash_timeout=bash_timeout,
        output_cap=output_cap,
        enforcing=enforcing,
    )
    return {tool.name: tool for tool in _tools(kit)}


@dataclass(frozen=True, slots=True)
class _Kit:
    """What the file tools share: the project, the built-in read/write/edit, the shell, its
    environment and sandbox policy, and the limits."""

    root: Path
    base: Mapping[str, Run]
    skip: tuple[Path, ...]
    shell: str
    env: dict[str, str]
    policy: sandbox.SandboxPolicy
    bash_timeout: float
    output_cap: int
    enforcing: bool

    def cap(self, text: str) -> str:
        """``text``, truncated to the output cap with a note saying so."""
        if len(text) <= self.output_cap:
            return text
        return text[: self.output_cap] + (
            f"\n[output truncated: {self.output_cap} of {len(text)} characters]"
        )

    def timed_out(self, ms: float) -> ToolOutcome:
        return ToolOutcome(
            error=f"bash: timed out after {self.bash_timeout:g}s (the command was killed)",
            is_error=True,
            duration_ms=ms,
        )

    def bash(self, call: ToolCall) -> ToolOutcome:
        """A shell command: in the OS sandbox; where none can run, refused when enforcing,
        else run bare with a warning."""
        command = call.command
        if command is None:
            return ToolOutcome(error="bash needs input.command (a string)", is_error=True)
        status = sandbox.probe()
        if status.available:
            return self.sandboxed(command)
        if self.enforcing:
            return ToolOutcome(
                error=f"{UNSANDBOXED}: no OS sandbox can run here ({status.detail}), and the "
                "agent's commands run only inside one in the ledger and strict profiles (a "
                "command outside it could read the key and mint evidence); ask the operator "
                f"to fix it: {status.fix}",
                is_error=True,
            )
        return self.bare(command, status.detail)

    def bare(self, command: str, detail: str) -> ToolOutcome:
        """``command`` run outside any sandbox (``observe``), its output warning so."""
        started = time.perf_counter()
        try:
            proc = subprocess.run(
                [self.shell, "-c", command],
                cwd=self.root,
                env=self.env,
                capture_output=True,
                timeout=self.bash_timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return self.timed_out((time.perf_counter() - started) * 1000)
        text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
        warning = f"[{UNSANDBOXED}: no OS sandbox ({detail}); ran bare (observe)]\n"
        return ToolOutcome(
            output=warning + self.cap(text),
            exit_code=proc.returncode,
            duration_ms=(time.perf_counter() - started) * 1000,
        )

    def sandboxed(self, command: str) -> ToolOutcome:
        """``command`` run in the OS sandbox of the agent's policy."""
        done = sandbox.run([self.shell, "-c", command], self.policy, max_output=self.output_cap * 4)
        ms = done.wall_seconds * 1000
        if "wall" in done.limits_hit:
            return self.timed_out(ms)
        text = (done.stdout + done.stderr).decode("utf-8", "replace")
        return ToolOutcome(output=self.cap(text), exit_code=done.exit_code, duration_ms=ms)

    def guarded(self, run: Run, *, write: bool) -> Run:
        """``run``, refusing a ``file_path`` the agent's policy does not let it read (write)."""

        def checked(call: ToolCall) -> ToolOutcome:
            where = call.input.get("file_path")
            if isinstance(where, str) and where:
                why = check_path(self.policy, self.root / where, write=write)
                if why is not None:
                    return ToolOutcome(error=f"{call.tool}: {why}", is_error=True)
            return run(call)

        return checked

    def read(self, call: ToolCall) -> ToolOutcome:
        """A guarded read, cut to ``offset``/``limit`` lines and capped."""
        out = self.guarded(self.base["read"], write=False)(call)
        if out.is_error:
            return out
        text = str(out.output)
        offset, limit = call.input.get("offset"), call.input.get("limit")
        if isinstance(offset, int) or isinstance(limit, int):
            lines = text.splitlines(keepends=True)
            start = max(0, (offset or 1) - 1) if isinstance(offset, int) else 0
            end = start + limit if isinstance(limit, int) else len(lines)
            text = "".join(lines[start:end])
        return out.with_output(self.cap(text))

    def grep(self, call: ToolCall) -> ToolOutcome:
        """``path:line: text`` of every line matching ``pattern`` under ``path`` (``glob``)."""
        pattern = call.input.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            return ToolOutcome(
                error="grep needs input.pattern (a regular expression)", is_error=True
            )
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            return ToolOutcome(error=f"grep: bad pattern {pattern!r}: {exc}", is_error=True)
        sub = call.input.get("path")
        start = self.root / sub if isinstance(sub, str) and sub else self.root
        why = check_path(self.policy, start, write=False)
        if why is not None:
            return ToolOutcome(error=f"grep: {why}", is_error=True)
        hits = list(self.matches(rx, start, call.input.get("glob")))
        return ToolOutcome(output=self.cap("\n".join(hits) if hits else "(no matches)"))

    def matches(self, rx: re.Pattern[str], start: Path, only: object) -> Iterator[str]:
        """The matching lines of the project's readable text files under ``start``."""
        files = [start] if start.is_file() else _walk(start, self.skip)
        for f in files:
            rel = os.path.relpath(f, self.root)
            if isinstance(only, str) and only and not fnmatch.fnmatch(rel, only):
                continue
            if check_path(self.policy, f, write=False) is not None:
                continue  # a link into the home, a transcript, /proc: not the project's text
            try:
                if f.stat().st_size > _GREP_MAX_FILE:
                    continue
                text = f.read_text("utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for n, line in enumerate(text.splitlines(), 1):
                if rx.search(line):
                    yield f"{rel}:{n}: {line}"

    def glob(self, call: ToolCall) -> ToolOutcome:
        """The project files whose path (or name) matches ``pattern``."""
        pattern = call.input.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            return ToolOutcome(error="glob needs input.pattern (e.g. **/*.py)", is_error=True)
        found = [
            os.path.relpath(f, self.root)
            for f in _walk(self.root, self.skip)
            if fnmatch.fnmatch(os.path.relpath(f, self.root), pattern)
            or fnmatch.fnmatch(f.name, pattern)
        ]
        return ToolOutcome(output=self.cap("\n".join(found) if found else "(no files)"))


_PATH = {"file_path": {**_S, "description": "path, relative to the project root"}}


def _tools(kit: _Kit) -> tuple[RunnerTool, ...]:
    """The six tools, in the order the model is shown them."""
    return (
        RunnerTool(
            "read",
            "Read a text file. Optional offset (first line, 1-based) and limit (line count).",
            schema_of(
                {**_PATH, "offset": {"type": "integer"}, "limit": {"type": "integer"}},
                ("file_path",),
            ),
            kit.read,
        ),
        RunnerTool(
            "write",
            "Create or overwrite a file with content. Denied while a premise is outside G.",
            schema_of({**_PATH, "content": _S}, ("file_path", "content")),
            kit.guarded(kit.base["write"], write=True),
        ),
        RunnerTool(
            "edit",
            "Replace the first occurrence of old_string by new_string in a file. Denied while "
            "a premise is outside G.",
            schema_of(
                {**_PATH, "old_string": _S, "new_string": _S},
                ("file_path", "old_string", "new_string"),
            ),
            kit.guarded(kit.base["edit"], write=True),
        ),
        RunnerTool(
            "bash",
            f"Run a shell command in the project (timeout {kit.bash_timeout:g}s, output capped "
            f"at {kit.output_cap} characters). Its result is signed evidence: the evidence_ref "
            "it prints can back an oracle_stamp when the command is the claim's oracle.",
            schema_of({"command": _S}, ("command",)),
            kit.bash,
        ),
        RunnerTool(
            "grep",
            "Search files for a regular expression; optional path (file or directory) and "
            "glob (e.g. *.py). Prints path:line: text.",
            schema_of({"pattern": _S, "path": _S, "glob": _S}, ("pattern",)),
            kit.grep,
        ),
        RunnerTool(
            "glob",
            "List project files matching a glob pattern (e.g. src/**/*.py).",
            schema_of({"pattern": _S}, ("pattern",)),
            kit.glob,
        ),
    )
