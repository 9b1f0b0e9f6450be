"""The one sandbox policy for the agent's own commands, derived from the home and the project.

infomark and the agent run as the same OS user, so the boundary around the agent's commands
is the operating system's (:mod:`infomark.tools.sandbox`). This module says what that boundary
holds, for every integration that starts the agent's programs (``infomark run``'s shell, the
MCP proxy's downstream server) and for the policy written into Claude Code's settings:

* **hidden** (unreadable): the ledger home (key, database, tokens, blobs), every other home
  named by ``$INFOMARK_HOME``, the operator's directory ``~/.config/infomark`` (where the
  operator token lives), the host's transcripts (``~/.claude/projects``), and any file the
  caller adds (an ``--operator-token-file``);
* **read-only**: the hook launchers and hook settings (``.claude/infomark-hook``,
  ``.claude/settings.json``, ``.claude/settings.local.json``, the user's; the project's whole
  ``.gemini/`` directory, where Gemini CLI reads its hooks and its ``.env``), infomark's own
  configuration files in the project, and the hook's whole Python environment: the
  interpreter's prefix (the virtual environment), every directory the hook imports from
  (infomark's package and every third-party package it loads, such as ``tree_sitter``);
* **writable**: the project, the temporary directories and the user's caches (so ``pip``,
  ``npm`` and ``pytest`` behave as outside), minus everything above.

Everything else of ``/`` is read-only. :func:`check_path` applies the same policy to the file
tools that run inside infomark's own process (read, write, edit, grep, glob), after resolving
symlinks and ``/proc`` links, so a path through ``/proc/self/root`` or a link planted in the
project reaches no further than a shell command would.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from infomark.tools.launcher import NAME as LAUNCHER_NAME
from infomark.tools.launcher import search_paths
from infomark.tools.sandbox import SandboxPolicy

__all__ = [
    "AgentPaths",
    "agent_paths",
    "agent_policy",
    "check_path",
    "hook_environment",
    "private_paths",
]

_CONFIG_FILES = ("infomark.toml", "infomark.yaml", "infomark.yml")
_HOOK_FILES = (LAUNCHER_NAME, "settings.json", "settings.local.json")
_HOOK_DIRS = (".claude", ".gemini")  # Claude Code's and Gemini CLI's hook settings
_SCRATCH = ("/tmp", "/var/tmp")  # noqa: S108 (shared scratch space, bound as it is)


@dataclass(frozen=True, slots=True)
class AgentPaths:
    """The three lists of the policy, as absolute real paths."""

    hidden: tuple[str, ...]
    read_only: tuple[str, ...]
    writable: tuple[str, ...]


def _real(path: str | Path) -> str:
    return os.path.realpath(os.path.expanduser(str(path)))


def _user_home(environ: Mapping[str, str]) -> str:
    return environ.get("HOME") or os.path.expanduser("~")


def private_paths(
    home: str | Path,
    *,
    extra: Iterable[str | Path] = (),
    environ: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """What the agent's commands may not read: the ledger home and every other place a secret
    or a witness of infomark lives."""
    env = os.environ if environ is None else environ
    user = _user_home(env)
    found = [
        home,
        os.path.join(user, ".config", "infomark"),
        os.path.join(user, ".claude", "projects"),
    ]
    if env.get("INFOMARK_HOME"):
        found.append(env["INFOMARK_HOME"])
    if env.get("CLAUDE_CONFIG_DIR"):
        found.append(os.path.join(env["CLAUDE_CONFIG_DIR"], "projects"))
    found += list(extra)
    return tuple(dict.fromkeys(_real(p) for p in found))


def hook_environment() -> tuple[str, ...]:
    """The hook's whole Python environment: this interpreter's prefixes (the virtual
    environment and the base installation) and every directory the hook imports from."""
    found = [sys.prefix, sys.exec_prefix, sys.base_prefix, *search_paths()]
    return tuple(dict.fromkeys(_real(p) for p in found if p))


def agent_paths(
    home: str | Path,
    project: str | Path,
    *,
    private: Iterable[str | Path] = (),
    environ: Mapping[str, str] | None = None,
    environment: Iterable[str] | None = None,
) -> AgentPaths:
    """The policy's lists for ``project`` and the ledger ``home`` (see the module's text).

    ``environment`` is the hook's Python environment (default :func:`hook_environment`)."""
    env = os.environ if environ is None else environ
    root = _real(project)
    user = _user_home(env)
    hooks = [os.path.join(d, h, f) for d in (root, user) for h in _HOOK_DIRS for f in _HOOK_FILES]
    hooks.append(os.path.join(root, ".gemini"))  # Gemini's hooks, .env, extensions, policies
    configs = [os.path.join(root, f) for f in _CONFIG_FILES]
    if env.get("INFOMARK_CONFIG"):
        configs.append(env["INFOMARK_CONFIG"])
    python = hook_environment() if environment is None else environment
    read_only = [_real(p) for p in (*hooks, *configs, *python)]
    writable = [root, *_SCRATCH, _real(os.path.join(user, ".cache"))]
    return AgentPaths(
        hidden=private_paths(home, extra=private, environ=env),
        read_only=tuple(dict.fromkeys(read_only)),
        writable=tuple(dict.fromkeys(writable)),
    )


def agent_policy(
    home: str | Path,
    project: str | Path,
    *,
    env: Mapping[str, str],
    private: Iterable[str | Path] = (),
    network: bool = True,
    cwd: str | Path | None = None,
    environment: Iterable[str] | None = None,
) -> SandboxPolicy:
    """The :class:`SandboxPolicy` of the agent's commands in ``project`` (ledger in ``home``).

    ``env`` is the exact environment inside (the caller's ``agent_env()``, without the
    model's key); ``/tmp`` is the host's (a file written in one command is there in the
    next, as outside), and the network stays as it is unless ``network`` is False.
    """
    paths = agent_paths(home, project, private=private, environ=env, environment=environment)
    writable = sorted((p for p in paths.writable if os.path.isdir(p)), key=len)
    return SandboxPolicy(
        cwd=_real(cwd if cwd is not None else project),
        writable=tuple(writable),  # a parent before what it holds
        # outside the writable trees everything is read-only already
        read_only=tuple(p for p in paths.read_only if _under(p, writable) is not None),
        hidden=paths.hidden,
        network=network,
        env=tuple(sorted(env.items())),
        private_tmp=False,
    )


def _under(path: str, roots: Iterable[str]) -> str | None:
    for r in roots:
        if path == r or path.startswith(r.rstrip("/") + "/"):
            return r
    return None


def check_path(policy: SandboxPolicy, path: str | Path, *, write: bool) -> str | None:
    """Why a file tool may not open ``path`` under ``policy`` (None: it may).

    The path is resolved as the kernel would open it: symlinks, ``..`` and ``/proc`` links
    (``/proc/self/root``, ``/proc/<pid>/fd/N``, ``/proc/<pid>/cwd``) are followed first.
    """
    try:
        real = os.path.realpath(path)
    except OSError as exc:  # a /proc link of a process it may not inspect, a loop
        return f"{path} cannot be resolved ({exc.strerror}); the agent's tools may not open it"
    if real == "/proc" or real.startswith("/proc/"):
        return f"{path} is a process's file under /proc, which the agent's tools may not open"
    hidden = _under(real, policy.hidden)
    if hidden is not None:
        return f"{path} resolves into {hidden}, which the sandbox hides from the agent's tools"
    if not write:
        return None
    kept = _under(real, policy.read_only)
    if kept is not None:
        return f"{path} resolves into {kept}, which is read-only to the agent's tools"
    if _under(real, policy.writable) is None:
        return f"{path} resolves to {real}, outside the trees the agent's tools may write"
    return None
