"""Does a recursive walk reach a protected directory? Decided against the real file system.

The shell classifier records each recursive operation as a :class:`~infomark.kernel.tools.Walk`
(``grep -r key .``, ``tar czf x.tgz .``, ``chmod -R …``) with what its command line says it
skips. A walk reaches the ledger home when its root contains the home and none of the skips
provably covers it, or when it follows symlinks and a link under its root resolves into the
home. What cannot be checked within the bounds here (a tree too large to search for links, a
home with too many files to match ``--include`` against) counts as reached: fail closed.
Standard library only.

The bounded walk (:func:`scan`) and the directories no walk of the project enters
(``ENV_DIRS``) live here because this module is on every hook call already; the working-tree
fingerprint's fallback walk and the grading surface use them too.
"""

from __future__ import annotations

import os

from infomark.kernel.tools import Walk

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["ENV_DIRS", "LINK_SCAN_LIMIT", "reaches", "scan"]

#: version control, virtual environments and tool caches: no walk of the project enters them
ENV_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)


def scan(
    top: str, limit: int, enter: Callable[[os.DirEntry[str]], bool]
) -> Iterator[os.DirEntry[str] | None]:
    """Every entry below ``top``, depth first, links not followed; a directory for which
    ``enter`` is false is neither yielded nor entered. Unreadable directories and entries are
    passed over. After ``limit`` entries (pruned ones count) it yields ``None`` and stops."""
    seen = 0
    stack = [top]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue
        with it:
            for entry in it:
                seen += 1
                if seen > limit:
                    yield None
                    return
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if not enter(entry):
                            continue
                        stack.append(entry.path)
                except OSError:
                    continue
                yield entry


LINK_SCAN_LIMIT = 20_000
"""Entries looked at when searching a walk's tree for symlinks into the home."""

_HOME_FILES_LIMIT = 5_000


def _within(path: str, base: str) -> bool:
    k, b = os.path.normcase(path).casefold(), os.path.normcase(base).casefold()
    return k == b or k.startswith(b.rstrip(os.sep) + os.sep)


def _spelled(prefix: str, rel: str) -> str:
    return f"{prefix.rstrip('/')}/{rel}" if prefix else rel


def _home_files(home: str) -> list[str] | None:
    """Every file under the home, relative to it (None when there are too many)."""
    out: list[str] = []
    for top, dirs, files in os.walk(home):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            out.append(os.path.relpath(os.path.join(top, name), home))
            if len(out) > _HOME_FILES_LIMIT:
                return None
    return out


def _self_ignored(home: str, name: str) -> bool:
    """The home's own ignore file ``name`` ignores everything in it (``*``, no ``!``)."""
    try:
        with open(os.path.join(home, name), encoding="utf-8") as fh:
            lines = [ln.strip() for ln in fh.read(65_536).splitlines()]
    except (OSError, UnicodeDecodeError):
        return False
    rules = [ln for ln in lines if ln and not ln.startswith("#")]
    return "*" in rules and not any(r.startswith("!") for r in rules)


def _skipped(walk: Walk, root: str, home: str) -> bool:
    """Does what the walk skips provably cover ``home`` (which is under ``root``)?"""
    from fnmatch import fnmatchcase  # it imports re: only a walk near the home loads it

    parts = os.path.relpath(home, root).split(os.sep)
    if walk.skip_hidden and any(p.startswith(".") for p in parts):
        return True
    if any(fnmatchcase(p, g) for p in parts for g in walk.exclude):
        return True
    for k in range(1, len(parts) + 1):
        spelled = _spelled(walk.prefix, "/".join(parts[:k]))
        if any(fnmatchcase(spelled, g) for g in walk.exclude_paths):
            return True
    if any(_self_ignored(home, name) for name in walk.honours_ignore):
        return True
    if walk.only or walk.exclude_files:
        files = _home_files(home)
        if files is None:
            return False
        rel_home = "/".join(parts)
        if walk.only and not any(
            fnmatchcase(os.path.basename(f), g) for f in files for g in walk.only
        ):
            return True
        if walk.exclude_files and all(
            any(
                fnmatchcase(_spelled(walk.prefix, f"{rel_home}/{f}"), g) for g in walk.exclude_files
            )
            for f in files
        ):
            return True
    return False


def _link_into(root: str, home: str) -> str | None:
    """A symlink under ``root`` that resolves into ``home``; ``"…"`` when the tree is too big
    to tell; None when there is none."""
    for entry in scan(root, LINK_SCAN_LIMIT, lambda d: not _within(d.path, home)):
        if entry is None:
            return "…"
        try:
            if entry.is_symlink() and _within(os.path.realpath(entry.path), home):
                return entry.path
        except OSError:
            continue
    return None


def reaches(walk: Walk, home: str) -> str | None:
    """Why ``walk`` reaches ``home`` (a resolved path), or None when it provably does not."""
    try:
        root = os.path.realpath(walk.root)
    except (OSError, ValueError):
        root = os.path.normpath(walk.root)
    if _within(home, root) and not _skipped(walk, root, home):
        return f"`{walk.command}` {walk.what} everything under {root}, which holds the ledger home"
    if walk.follow and os.path.isdir(root) and not _within(root, home):
        link = _link_into(root, home)
        if link == "…":
            return (
                f"`{walk.command}` follows symlinks under {root}, a tree too large "
                f"(over {LINK_SCAN_LIMIT} entries) to check for links into the ledger home"
            )
        if link is not None:
            return (
                f"`{walk.command}` follows symlinks under {root}, and {link} leads into the "
                "ledger home"
            )
    return None
