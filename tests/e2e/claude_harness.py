"""Run the real Claude Code CLI offline against :class:`AnthropicStub` on 127.0.0.1.

Observed with Claude Code 2.1.328 on Linux x64 (Node 20 is enough although the package asks for
Node >= 22; the CLI is a native binary and ``claude --version`` takes ~15 ms without a network):

* Install: ``npm install --prefix <cache> @anthropic-ai/claude-code@2.1.328`` (see
  ``scripts/install-claude-code.sh``) gives ``node_modules/.bin/claude``, a symlink to
  ``@anthropic-ai/claude-code/bin/claude.exe``, which postinstall hard-links from the platform
  package ``@anthropic-ai/claude-code-linux-x64/claude`` (~370 MB). When npm install scripts are
  skipped, ``claude.exe`` stays a placeholder and the platform package's binary is the one to run.
* Environment: ``ANTHROPIC_BASE_URL``, a dummy ``ANTHROPIC_API_KEY``, ``DISABLE_TELEMETRY``,
  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC``, ``DISABLE_AUTOUPDATER``,
  ``DISABLE_ERROR_REPORTING``, ``LANG=C.UTF-8`` and ``HOME`` in a temporary directory; only
  ``PATH`` and ``TMPDIR`` come from the parent. Run
  ``claude -p PROMPT --permission-mode acceptEdits --output-format json`` with the project
  directory as cwd and stdin closed.
* Requests: always ``POST /v1/messages?beta=true`` with ``stream: true``; no side calls were seen
  (the stub still answers requests without ``tools`` without consuming its script).
* Transcript (``$HOME/.claude/projects/<mangled cwd>/<session>.jsonl``): absent at SessionStart and
  the first UserPromptSubmit; at PreToolUse the current assistant message is often not written yet
  (it appears 15-65 ms later). Every content block is its own JSONL line (``type: "assistant"``,
  ``message.content[]``); a tool_use shares ``message.id`` with the text blocks before it.
* What the model sees of hook answers: a PostToolUse ``additionalContext`` arrives as text
  ``"PostToolUse:Bash hook additional context: X"`` somewhere after the last assistant message
  (search all new blocks, not only the last user message); a PreToolUse deny arrives as a
  ``tool_result`` with ``is_error: true`` and content ``"PreToolUse:Bash hook error: R"`` and no
  Post hook fires for that call; a Stop block arrives as a user text ``"Stop hook feedback:\\nR"``
  (plus a system text ``"Stop hook blocking error from command: ...: R"``), then the model is
  called again.
* Bash ``false`` fires PostToolUseFailure with ``error`` starting ``"Exit code 1"``. In
  ``-p``/acceptEdits Claude Code itself refuses some commands (``echo x; exit 3``, ``ls`` outside
  the project): keep scripted commands simple.
* Claude Code runs the tool calls it receives even when the stop reason says ``end_turn``.
* Timing: one scripted reply ~0.4-0.5 s; a five-request session 1.0-1.4 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from infomark.kernel.errors import ConfigError, UserError

from .anthropic_stub import AnthropicStub

__all__ = [
    "CLAUDE_CODE_VERSION",
    "HOOK_EVENTS",
    "TOOL_EVENTS",
    "cache_dir",
    "claude_env",
    "find_claude",
    "hook_command",
    "platform_package",
    "result_json",
    "run_claude",
    "write_hook_settings",
]

CLAUDE_CODE_VERSION = "2.1.328"
HOOK_EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
)
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})

_BIN_ENV = "INFOMARK_CLAUDE_BIN"
_CACHE_ENV = "INFOMARK_E2E_CACHE"
_PASSED_THROUGH = ("PATH", "TMPDIR")
_ARCHES = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def cache_dir() -> Path:
    """Where the install script puts Claude Code: ``$INFOMARK_E2E_CACHE`` or ``~/.cache/...``."""
    configured = os.environ.get(_CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "infomark-e2e"


def platform_package() -> str | None:
    """The npm package holding the native binary for this machine, or None if unsupported."""
    arch = _ARCHES.get(platform.machine().lower())
    if arch is None:
        return None
    if sys.platform == "darwin":
        return f"@anthropic-ai/claude-code-darwin-{arch}"
    if sys.platform.startswith("linux"):
        musl = platform.libc_ver()[0] != "glibc"
        return f"@anthropic-ai/claude-code-linux-{arch}" + ("-musl" if musl else "")
    return None


def find_claude() -> Path | None:
    """The Claude Code binary: ``$INFOMARK_CLAUDE_BIN``, else the one in :func:`cache_dir`.

    Raises ConfigError when ``$INFOMARK_CLAUDE_BIN`` is set but names no executable file.
    """
    configured = os.environ.get(_BIN_ENV)
    if configured:
        path = Path(configured).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ConfigError(
                f"{_BIN_ENV}={configured!r} is not an executable file; "
                f"unset it or point it at the claude binary"
            )
        return path.absolute()
    modules = cache_dir() / "node_modules"
    candidates: list[Path] = []
    package = platform_package()
    if package is not None:
        candidates.append(modules / package / "claude")
    candidates.append(modules / ".bin" / "claude")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate.absolute()
    return None


def claude_env(
    stub: AnthropicStub | str, home: Path, extra_env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A clean environment that points Claude Code at the stub and keeps it offline."""
    env = {name: os.environ[name] for name in _PASSED_THROUGH if name in os.environ}
    env.update(
        {
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": stub if isinstance(stub, str) else stub.url,
            "ANTHROPIC_API_KEY": "sk-ant-stub-not-a-real-key",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "LANG": "C.UTF-8",
        }
    )
    if extra_env:
        env.update(extra_env)
    return env


def run_claude(
    project_dir: Path,
    prompt: str,
    stub: AnthropicStub | str,
    *,
    claude_bin: Path | None = None,
    home: Path | None = None,
    extra_env: Mapping[str, str] | None = None,
    extra_args: Sequence[str] = (),
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """Run ``claude -p PROMPT`` in ``project_dir`` against the stub and wait for it.

    ``home`` defaults to a temporary directory removed afterwards (pass one to read the
    transcript later). On timeout the whole process group (Claude Code, its hooks and tools) is
    killed and ``subprocess.TimeoutExpired`` is raised with the output so far.
    """
    binary = claude_bin or find_claude()
    if binary is None:
        raise UserError(
            "Claude Code not found: run scripts/install-claude-code.sh or set " + _BIN_ENV
        )
    args = [
        str(binary),
        "-p",
        prompt,
        "--permission-mode",
        "acceptEdits",
        "--output-format",
        "json",
        *extra_args,
    ]
    # Claude Code's Bash sandbox makes the temp directory writable and plants mount points for
    # `.git/…` in it (an empty `/tmp/.git/` left behind makes every directory under /tmp look
    # like a git work tree): each run gets its own, short (its sockets live there too).
    with tempfile.TemporaryDirectory(prefix="cct-", dir="/tmp") as scratch:
        extra = {"TMPDIR": scratch, **(extra_env or {})}
        if home is not None:
            return _run(args, Path(project_dir), claude_env(stub, home, extra), timeout)
        with tempfile.TemporaryDirectory(prefix="claude-home-") as tmp:
            return _run(args, Path(project_dir), claude_env(stub, Path(tmp), extra), timeout)


def result_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The ``--output-format json`` result object; AssertionError with the output if absent."""
    for candidate in (proc.stdout, *reversed(proc.stdout.splitlines())):
        try:
            parsed = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            return parsed
    raise AssertionError(
        f"claude printed no JSON result (exit {proc.returncode})\n"
        f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
    )


def hook_command(script: Path | str, *args: str) -> str:
    """A hook command line running ``script`` with this interpreter (absolute path, quoted)."""
    return shlex.join([sys.executable, str(Path(script).absolute()), *args])


def write_hook_settings(
    project_dir: Path,
    command: str,
    *,
    events: Iterable[str] = HOOK_EVENTS,
    matcher: str = "*",
    timeout: int = 30,
) -> Path:
    """Add ``command`` as a hook for ``events`` to ``project_dir/.claude/settings.json``.

    Existing settings and hook entries are kept. Returns the settings file path.
    """
    path = Path(project_dir) / ".claude" / "settings.json"
    settings: dict[str, Any] = {}
    if path.exists():
        loaded = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path} does not hold a JSON object")
        settings = loaded
    hooks = settings.setdefault("hooks", {})
    for event in events:
        entry: dict[str, Any] = {
            "hooks": [{"type": "command", "command": command, "timeout": timeout}]
        }
        if event in TOOL_EVENTS:
            entry = {"matcher": matcher, **entry}
        hooks.setdefault(event, []).append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return path


def _run(
    args: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    with subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            stdout, stderr = proc.communicate()
            raise subprocess.TimeoutExpired(args, timeout, stdout, stderr) from None
        finally:
            if proc.poll() is None:
                _kill_group(proc.pid)
            _reap_orphans(str(cwd))
    return subprocess.CompletedProcess(args, proc.returncode, stdout, stderr)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _reap_orphans(marker: str) -> None:
    """Kill what a host left running in a session of its own, now a child of init, that
    names this run's directory: Codex's file-system helper (bubblewrap started with
    ``--new-session``, outside the host's process group) outlived every run and slept on
    until the machine stopped. A process the test itself started (a service) has the test
    as its parent and is left alone."""
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                parent = int(f.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().decode("utf-8", "replace")
        except (OSError, ValueError, IndexError):
            continue
        if parent == 1 and marker in cmdline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry), signal.SIGKILL)
