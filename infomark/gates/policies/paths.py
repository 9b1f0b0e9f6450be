"""Paths of the working set, and the glob patterns triggers match them with.

Patterns are matched against the path relative to the project root, with
``/`` separators: ``*`` and ``?`` stay within one path segment, ``**`` crosses
segments (``docs/**/*.md``), ``[abc]``/``[!abc]`` are character classes. A
pattern without ``/`` also matches the file name alone (``voice.md`` matches
``notes/voice.md``), as in ``.gitignore``. Standard library only.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Iterable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import Any

__all__ = ["any_match", "call_paths", "glob_match", "rel_path"]

_PATH_KEYS = ("file_path", "path", "notebook_path", "filePath", "filename")


def rel_path(path: str, root: str) -> str:
    """``path`` relative to ``root`` when inside it, normalised to ``/`` separators."""
    p = path.strip().replace("\\", "/")
    r = root.replace("\\", "/").rstrip("/")
    if p.startswith("/") and r and (p == r or p.startswith(r + "/")):
        p = p[len(r) + 1 :] or "."
    return posixpath.normpath(p) if p else p


def call_paths(inputs: Mapping[str, Any], command: str | None = None) -> list[str]:
    """File paths a call names: its path inputs, else the path-like words of its command."""
    out = [v for k in _PATH_KEYS if isinstance(v := inputs.get(k), str) and v.strip()]
    if out or not command:
        return out
    words = command.replace(";", " ").replace("|", " ").split()
    return [
        w.strip("'\"")
        for w in words[1:]
        if not w.startswith("-") and ("/" in w or "." in w) and len(w) < 512
    ][:8]


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    import re  # only a policy path pattern in use compiles one (a hook's start-up)

    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (end := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1 : end]
            neg = body.startswith("!")
            body = re.sub(r"([\\\[\]^])", r"\\\1", body[1:] if neg else body)
            out.append("[" + ("^" if neg else "") + body + "]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def glob_match(pattern: str, path: str) -> bool:
    """Whether ``path`` (relative, ``/``-separated) matches the glob ``pattern``."""
    pat = pattern.strip().removeprefix("./")
    rx = _compile(pat)
    if rx.fullmatch(path):
        return True
    return "/" not in pat and rx.fullmatch(posixpath.basename(path)) is not None


def any_match(pattern: str, values: Iterable[str]) -> list[str]:
    """The values that match ``pattern``, in order."""
    return [v for v in values if glob_match(pattern, v)]
