"""Pathname expansion of one word, as bash does it by default: no dotglob, globskipdots, no
nullglob (a pattern that matches nothing stays itself), ASCII ranges, ``[[:class:]]``.

A word is a list of atoms: one character each, with how it was written (:data:`QUOTED` literal,
:data:`RAW` unquoted text of the word, :data:`SUB` the output of a substitution). Only unquoted
``*``, ``?`` and ``[…]`` are special. Standard library only; reads directories, runs nothing.
"""

from __future__ import annotations

import os

from infomark.gates import shell_fs as fs

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

__all__ = [
    "GLOB_BUDGET",
    "MAX_COMPONENT",
    "QUOTED",
    "RAW",
    "SUB",
    "Atom",
    "GlobTooCostly",
    "glob_atoms",
]

QUOTED, RAW, SUB = 0, 1, 2
Atom = tuple[str, int]
_Q = QUOTED


MAX_COMPONENT = 1_024
"""A pattern component longer than this (a name is at most 255 bytes) is not globbed: opaque."""

GLOB_BUDGET = 20_000
"""Directory entries one classification may examine while globbing (a directory listing costs
:data:`_LISTING_COST` on top of its entries, at most ~400 listings); beyond: opaque."""
_LISTING_COST = 50


class GlobTooCostly(ValueError):
    """The pattern is too long or would read too many directory entries: fail closed."""


def glob_atoms(atoms: list[Atom], cwd: str, budget: list[int] | None = None) -> list[str]:
    """The paths ``atoms`` match under ``cwd`` (sorted), or the word itself when none.

    ``budget`` (one mutable count, shared by a whole command line) bounds the directory
    entries read; :class:`GlobTooCostly` is raised when it runs out."""
    text = "".join(ch for ch, _ in atoms)
    if not any(kind != _Q and ch in "*?[" for ch, kind in atoms):
        return [text]
    parts = _components(atoms)
    if not any(_has_magic(part) for part in parts):
        return [text]
    budget = budget if budget is not None else [GLOB_BUDGET]
    absolute = text.startswith("/")
    bases = ["/"] if absolute else [""]
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if not part:
            if last:  # a trailing slash: only directories
                bases = [b + "/" for b in bases if fs.isdir(os.path.join(cwd, b))]
            elif any(parts[index + 1 :]):  # `a//*`, `//*`: bash keeps the slashes as
                bases = [b + "/" if b.endswith("/") else b + "//" for b in bases]  # written
            continue  # (trailing `//` is one `/`, as in bash)
        nxt: list[str] = []
        if not _has_magic(part):
            lit = "".join(ch for ch, _ in part)
            for base in bases:
                cand = base + lit if base.endswith("/") or not base else base + "/" + lit
                if fs.lexists(os.path.join(cwd, cand)):
                    nxt.append(cand)
        else:
            regex = _regex(part)
            for base in bases:
                where = os.path.join(cwd, base) if base else cwd
                try:
                    names = sorted(fs.listdir(where))
                except OSError:
                    continue
                budget[0] -= len(names) + _LISTING_COST
                if budget[0] < 0:
                    raise GlobTooCostly(text)
                for name in names:
                    if name.startswith(".") and (name in (".", "..") or _first(part) != "."):
                        continue  # bash: no dotglob, globskipdots
                    if regex.fullmatch(name):
                        cand = base + name if base.endswith("/") or not base else base + "/" + name
                        if last or fs.isdir(os.path.join(cwd, cand)):
                            nxt.append(cand)
        bases = nxt
        if not bases:
            return [text]
    return sorted(bases) if bases else [text]


def _first(part: list[Atom]) -> str:
    return next((ch for ch, _ in part if ch), "")


def _has_magic(atoms: list[Atom]) -> bool:
    """Whether one path component holds an unquoted ``*``, ``?`` or a complete ``[…]``."""
    if len(atoms) > MAX_COMPONENT and any(k != _Q and c in "*?[" for c, k in atoms):
        raise GlobTooCostly("".join(ch for ch, _ in atoms[:40]))
    closers = [k for k, (ch, kind) in enumerate(atoms) if ch == "]" and kind != _Q]
    last_close = closers[-1] if closers else -1
    for k, (ch, kind) in enumerate(atoms):
        if kind == _Q:
            continue
        if ch in "*?":
            return True
        if ch == "[" and k < last_close and _bracket_end(atoms, k) > 0:
            return True
    return False


def _components(atoms: list[Atom]) -> list[list[Atom]]:
    parts: list[list[Atom]] = [[]]
    for atom in atoms:
        if atom[0] == "/":
            parts.append([])
        else:
            parts[-1].append(atom)
    if parts and not parts[0] and len(parts) > 1:
        parts = parts[1:]  # an absolute pattern: the root is the base
    return parts


def _bracket_end(atoms: list[Atom], k: int) -> int:
    j = k + 1
    if j < len(atoms) and atoms[j][0] in "!^" and atoms[j][1] != _Q:
        j += 1
    if j < len(atoms) and atoms[j][0] == "]":
        j += 1
    while j < len(atoms):
        ch, kind = atoms[j]
        if ch == "/":
            return -1
        if ch == "[" and kind != _Q and j + 1 < len(atoms) and atoms[j + 1][0] in ":.=":
            close = "".join(c for c, _ in atoms[j:]).find(atoms[j + 1][0] + "]", 2)
            if close > 0:
                j += close + 2
                continue
        if ch == "]" and kind != _Q:
            return j
        j += 1
    return -1


# re.escape of the POSIX punctuation class, written out (this module loads without re)
_PUNCT = "!\"\\#\\$%\\&'\\(\\)\\*\\+,\\-\\./:;<=>\\?@\\[\\\\\\]\\^_`\\{\\|\\}\\~"
_CLASSES = {
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "alnum": "a-zA-Z0-9",
    "upper": "A-Z",
    "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v",
    "xdigit": "0-9A-Fa-f",
    "punct": _PUNCT,
    "word": "a-zA-Z0-9_",
}


def _regex(part: list[Atom]) -> re.Pattern[str]:
    import re  # a glob to match: loaded only then

    out: list[str] = []
    k, n = 0, len(part)
    last_close = max((j for j, (c, kind) in enumerate(part) if c == "]" and kind != _Q), default=-1)
    while k < n:
        ch, kind = part[k]
        if kind == _Q:
            out.append(re.escape(ch))
        elif ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and k < last_close and (end := _bracket_end(part, k)) > 0:
            out.append(_bracket(part[k + 1 : end]))
            k = end
        else:
            out.append(re.escape(ch))
        k += 1
    return re.compile("".join(out), re.DOTALL)


def _bracket(body: list[Atom]) -> str:
    from re import escape

    negate = bool(body) and body[0][0] in "!^" and body[0][1] != _Q
    if negate:
        body = body[1:]
    items: list[str] = []
    k, n = 0, len(body)
    while k < n:
        ch, kind = body[k]
        if ch == "[" and kind != _Q and k + 1 < n and body[k + 1][0] == ":":
            rest = "".join(c for c, _ in body[k + 2 :])
            close = rest.find(":]")
            if close >= 0:
                items.append(_CLASSES.get(rest[:close], ""))
                k += close + 4
                continue
        if k + 2 < n and body[k + 1] == ("-", RAW) and body[k + 1][1] != _Q:
            lo, hi = ch, body[k + 2][0]
            if lo <= hi:
                items.append(escape(lo) + "-" + escape(hi))
            k += 3
            continue
        items.append(escape(ch))
        k += 1
    inner = "".join(items)
    if not inner:
        return "(?!)" if not negate else "[^/]"
    return ("[^/" if negate else "[") + inner + "]"
