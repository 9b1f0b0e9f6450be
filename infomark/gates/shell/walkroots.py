"""What the walk handlers share: the roots a command walks, and recording a walk.

See :mod:`.walks`. A root word that depends on an expansion makes the line opaque and counts as
every directory the line may be in (the widest root it could be).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from infomark.gates import shell_fs as fs
from infomark.gates.shell.core import Env, short, ws
from infomark.gates.shell.words import Arg
from infomark.kernel.tools import Walk

__all__ = [
    "MAGIC",
    "NAMES_ONLY",
    "component_globs",
    "from_list",
    "literal_paths",
    "record",
    "walk_roots",
]

MAGIC = frozenset("*?[")
NAMES_ONLY = ws("ls stat basename dirname echo printf true false du realpath readlink test [")


def _state_cwds(env: Env) -> list[str]:
    return list(env.state.cwds)


def walk_roots(values: Iterable[Arg], env: Env, *, default: bool = True) -> list[str]:
    """Absolute roots for the words ``values`` (globs expanded against the real file system,
    from every directory the line may be in); the line's directories when there are none.
    A word that depends on an expansion makes the line opaque and counts as every directory
    the line may be in (the widest root it could be)."""
    out: list[str] = []
    given = False
    for arg in values:
        given = True
        value = arg.value
        if value is None or "{" in value:
            env.state.opaque = value is None or env.state.opaque
            out.extend(_state_cwds(env))
            continue
        if value.startswith("~"):
            value = fs.expanduser(value)
        for base in _state_cwds(env):
            if MAGIC & set(value):
                hits = fs.glob(value, None if os.path.isabs(value) else base)
                out.extend(os.path.normpath(os.path.join(base, h)) for h in hits or [value])
            else:
                out.append(os.path.normpath(os.path.join(base, value)))
    if not given and default:
        out.extend(_state_cwds(env))
    return list(dict.fromkeys(out))


def record(env: Env, roots: Iterable[str], what: str, **kw: object) -> None:
    for root in roots:
        walk = Walk(root=root, command=short(env.text), what=what, **kw)  # type: ignore[arg-type]
        if walk not in env.state.walks:
            env.state.walks.append(walk)


def component_globs(
    patterns: Iterable[str], *, dir_slash: bool = False, gitglob: bool = False
) -> tuple[str, ...]:
    """Patterns that name an entry anywhere below the root (``.infomark``, ``.info*``).

    Only what the tool is known to match earns credit: a trailing ``/`` only where it means
    "a directory" (``dir_slash``: rsync, gitignore-style globs), ``**/x`` and ``x/**`` only
    for gitignore-style globs (``gitglob``: ripgrep). GNU tar, for one, matches nothing with
    ``--exclude=.infomark/`` (found by the property in tests/security/test_walks.py).
    """
    out = []
    for p in patterns:
        if dir_slash and p.endswith("/") and not p.endswith("//"):
            p = p[:-1]
        if gitglob:
            if p.endswith("/**"):
                p = p[:-3]
            if p.startswith("**/"):
                p = p[3:]
        if p and "/" not in p:
            out.append(p)
    return tuple(out)


def literal_paths(patterns: Iterable[str], *, lenient: bool = False) -> tuple[str, ...]:
    """Patterns that name one path relative to the root, without wildcards (``x/.infomark``).

    ``lenient`` (gitignore-style globs): a leading ``./`` or ``/`` and a trailing ``/`` are
    dropped; otherwise such a pattern earns no credit (tar matches it literally)."""
    out = []
    for p in patterns:
        if lenient:
            p = p.rstrip("/")
            while p.startswith("./"):
                p = p[2:]
            p = p.lstrip("/")
        elif p.startswith(("./", "/")) or p.endswith("/"):
            continue
        if p and "/" in p and not (MAGIC & set(p)):
            out.append(p)
    return tuple(out)


def from_list(env: Env, sources: Iterable[Arg | None], what: str) -> None:
    """A command reads every file a list names: a `find` listing on stdin, or a file."""
    for src in sources:
        if src is not None and src.value not in (None, "-", "/dev/stdin"):
            env.state.opaque = True  # the list's contents are not known statically
            continue
        stdin = env.stdin()
        if stdin.kind == "pipe" and env.state.listings:
            for listing in env.state.listings:
                env.state.walks.append(
                    Walk(
                        root=listing.root,
                        command=short(env.text),
                        what=what,
                        follow=listing.follow,
                        exclude=listing.exclude,
                        exclude_paths=listing.exclude_paths,
                        exclude_files=listing.exclude_files,
                        prefix=listing.prefix,
                    )
                )
        elif stdin.kind == "text" or (stdin.kind == "pipe" and stdin.text is not None):
            for word in (stdin.text or "").split():
                env.state.path(word)
        else:
            env.state.opaque = True
