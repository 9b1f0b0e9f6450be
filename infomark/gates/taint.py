"""Runs and reverts of the agent's own files: taint, background runs, and putting the tree back.

*Taint*: running a file the agent wrote or edited in this session (``python fix.py``,
``./run.sh``, ``python -m fix``) runs the agent's own code, which may do anything: the call is
a mutation (``modify``), watched by the fingerprint (:mod:`infomark.gates.watch`).

*Revert*: ``git checkout -- FILES`` / ``git restore [--worktree] -- FILES`` naming only files an
unannounced mutation changed is how the agent puts the tree back; it is allowed while the
violation stands. Shell command lines only, read with :mod:`shlex`; loaded for shell tools. The
precise rules are in docs/gates.md; the agent's own files are :mod:`infomark.gates.scratch`'s.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable

from infomark.gates.scratch import norm_key
from infomark.kernel.lazyre import lazy_compile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _typeshed import StrPath

__all__ = ["is_revert", "runs_in_background", "tainted_by"]

_INTERPRETERS = frozenset(
    {
        "python",
        "python3",
        "py",
        "pypy",
        "pypy3",
        "node",
        "deno",
        "bun",
        "ts-node",
        "tsx",
        "ruby",
        "perl",
        "php",
        "bash",
        "sh",
        "zsh",
        "dash",
        "ksh",
        "fish",
        "pwsh",
        "powershell",
        "Rscript",
        "lua",
        "julia",
        "java",
        "go",
        "uv",
        "poetry",
        "pipenv",
        "pytest",
        "source",
        ".",
    }
)
_SHELL_META = lazy_compile(r"[;&|<>`$(){}\n]")
_ASSIGN = lazy_compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")
_DURATION = lazy_compile(r"[0-9.]+[smhd]?")
_PYTHON = lazy_compile(r"python\d(\.\d+)?")
_BACKGROUND_AMP = lazy_compile(r"(?<![&>|])&(?![&>])")


def _words(command: str) -> list[list[str]]:
    """Simple commands of ``command`` as word lists (best effort, for taint only)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    out: list[list[str]] = [[]]
    for tok in tokens:
        if tok and all(ch in ";&|()<>" for ch in tok):
            out.append([])
        else:
            out[-1].append(tok)
    return [w for w in out if w]


_WRAPPERS = frozenset(
    {
        "nohup",
        "setsid",
        "env",
        "timeout",
        "nice",
        "ionice",
        "time",
        "sudo",
        "doas",
        "exec",
        "command",
        "stdbuf",
        "chrt",
        "taskset",
        "unbuffer",
        "caffeinate",
        "xvfb-run",
    }
)


def _unwrap(words: list[str]) -> list[str]:
    """Drop ``VAR=value`` prefixes and wrappers (``nohup``, ``timeout 5``, ``env -i`` …)."""
    while words:
        head = words[0]
        if _ASSIGN.fullmatch(head):
            words = words[1:]
        elif os.path.basename(head) in _WRAPPERS:
            words = words[1:]
            while words and (
                words[0].startswith("-")
                or _DURATION.fullmatch(words[0])
                or _ASSIGN.fullmatch(words[0])
            ):
                words = words[1:]
        else:
            break
    return words


def tainted_by(command: str, written: Iterable[str], root: StrPath) -> str | None:
    """The file of the agent's own that ``command`` runs, or None.

    A simple command runs a file when the file is its command word (``./fix.sh``), or an
    argument of an interpreter or test runner (``python fix.py``, ``uv run fix.py``,
    ``pytest test_fix.py``), or a module ``-m NAME`` resolving to ``NAME.py``.
    """
    own = set(written)
    if not own:
        return None
    for words in _words(command):
        words = _unwrap(words)
        if not words:
            continue
        head = words[0]
        candidates = [head]
        if os.path.basename(head) in _INTERPRETERS or _PYTHON.fullmatch(os.path.basename(head)):
            candidates += words[1:]
            for i, w in enumerate(words[:-1]):
                if w == "-m":
                    candidates.append(words[i + 1].replace(".", "/") + ".py")
        for i, c in enumerate(candidates):
            if c == "-c" and i + 1 < len(candidates):
                inner = tainted_by(candidates[i + 1], own, root)
                if inner is not None:
                    return inner
            if c.startswith("-") or not c:
                continue
            key = norm_key(c, root)
            if key in own:
                return key
    return None


_BACKGROUND = frozenset(
    {"nohup", "setsid", "disown", "screen", "tmux", "at", "batch", "systemd-run", "daemonize"}
)


def runs_in_background(command: str) -> bool:
    """Whether part of ``command`` may outlive the call (``&``, ``nohup``, ``setsid`` …)."""
    if _BACKGROUND_AMP.search(command):
        return True
    return any(w and os.path.basename(w[0]) in _BACKGROUND for w in _words(command))


def is_revert(command: str, files: Iterable[str], root: StrPath) -> bool:
    """``git checkout -- F…`` / ``git restore [--worktree] [--] F…`` naming only ``files``."""
    if _SHELL_META.search(command):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) < 3 or words[0] != "git":
        return False
    rest = words[2:]
    if words[1] == "checkout":
        if not rest or rest[0] != "--":
            return False
        rest = rest[1:]
    elif words[1] == "restore":
        while rest and rest[0] in ("--worktree", "-W"):
            rest = rest[1:]
        if rest and rest[0] == "--":
            rest = rest[1:]
    else:
        return False
    wanted = set(files)
    return bool(rest) and all(not w.startswith("-") and norm_key(w, root) in wanted for w in rest)
