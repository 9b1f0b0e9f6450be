"""Path questions answered on ``str`` with :mod:`os.path`, as :mod:`pathlib` answers them.

The hook process never imports :mod:`pathlib` (with ``urllib.parse`` and ``ipaddress``
it costs ~15 M instructions, a tenth of a hook call); code on its path works on strings.
Where ``os.path`` and ``pathlib`` disagree, these keep pathlib's answer, which the code
was written against (``tests/kernel/test_paths.py`` compares them on arbitrary strings).
"""

from __future__ import annotations

__all__ = ["pure_name", "pure_parent_name", "pure_parts", "relative_under"]


def pure_name(path: str) -> str:
    """``PurePosixPath(path).name``: the last component, ``.`` parts and trailing ``/``
    ignored (``os.path.basename("a/b/")`` is ``""``; pathlib says ``"b"``)."""
    for part in reversed(path.split("/")):
        if part and part != ".":
            return part
    return ""


def pure_parts(path: str) -> list[str]:
    """The components ``PurePosixPath(path)`` keeps after its root: no empty or ``.`` parts."""
    return [part for part in path.split("/") if part and part != "."]


def pure_parent_name(path: str) -> str:
    """``PurePosixPath(path).parent.name``."""
    parts = pure_parts(path)
    return parts[-2] if len(parts) >= 2 else ""


def relative_under(path: str, base: str) -> str | None:
    """``PurePosixPath(path).relative_to(base).as_posix()`` for normalised absolute paths
    (``os.path.realpath`` results): ``"."`` for ``base`` itself, None outside it."""
    if path == base:
        return "."
    inside = base if base.endswith("/") else base + "/"
    return path[len(inside) :] if path.startswith(inside) else None
