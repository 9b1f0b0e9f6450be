"""Static expansion of one shell word into the fields bash would pass, as far as it is knowable.

Bash's order is followed: brace expansion, tilde expansion, command substitution (only the
statically evaluable ``$(echo …)``, ``$(printf %s …)``, ``$(pwd)`` and their backtick forms),
word splitting of substitution results, pathname expansion against the real filesystem (bash
defaults: no dotglob, globskipdots, no nullglob, ASCII ranges) and quote removal. Anything else
that bash would expand at run time (``$VAR``, ``${…}``, ``$((…))``, other substitutions) makes
the word unresolvable: :func:`expand_word` returns None, and the caller fails closed.

Standard library only; never runs anything.
"""

from __future__ import annotations

from infomark.gates import shell_fs as fs
from infomark.gates.shell.globbing import RAW, SUB, Atom, glob_atoms
from infomark.gates.shell.words import _ansi_c
from infomark.kernel.lazyre import lazy_compile

__all__ = ["expand_word", "split_words"]

_MAX_FIELDS = 1_000
_SPECIAL = lazy_compile(r"[\\'\"$`*?\[{~]")
_MAX_SUB_DEPTH = 3
_SEQ = lazy_compile(r"^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$")

_Q, _RAW, _SUB = 0, RAW, SUB  # see globbing.Atom


class _Opaque(Exception):
    """The word depends on something only known at run time."""


def expand_word(
    raw: str, cwd: str, depth: int = 0, budget: list[int] | None = None
) -> list[str] | None:
    """The fields ``raw`` (a word as written on the command line) expands to, or None.

    ``budget`` bounds the directory entries globbing may read (see :mod:`.globbing`)."""
    if not _SPECIAL.search(raw):
        return [raw]
    try:
        atoms = _atoms(raw, cwd, depth)
        fields: list[str] = []
        for word in _braces(atoms):
            word = _tilde(word)
            for field in _split(word):
                fields.extend(glob_atoms(field, cwd, budget))
                if len(fields) > _MAX_FIELDS:
                    return None
        return fields
    except (_Opaque, RecursionError, ValueError, OSError):
        return None


# --- lexing ----------------------------------------------------------------------------------


def _atoms(raw: str, cwd: str, depth: int) -> list[Atom]:
    out: list[Atom] = []
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "'":
            j = raw.find("'", i + 1)
            if j < 0:
                raise _Opaque
            out.extend((c, _Q) for c in raw[i + 1 : j] or [""])  # "" keeps an empty field
            i = j + 1
        elif ch == "\\":
            if i + 1 < n and raw[i + 1] != "\n":
                out.append((raw[i + 1], _Q))
            i += 2
        elif ch == "$" and raw.startswith("$'", i):
            j = _ansi_end(raw, i + 2)
            out.extend((c, _Q) for c in _ansi_c(raw[i + 2 : j]))
            i = j + 1
        elif ch == '"' or (ch == "$" and raw.startswith('$"', i)):
            i = _double(raw, i + (2 if ch == "$" else 1), out, cwd, depth)
        else:
            i = _expansion(raw, i, out, _RAW, cwd, depth)
    return out


def _expansion(raw: str, i: int, out: list[Atom], kind: int, cwd: str, depth: int) -> int:
    """One character, or a ``$(…)`` / backtick substitution at ``i``; its output is quoted text
    inside double quotes (``kind`` _Q) and split-and-globbed text outside (_RAW → _SUB)."""
    ch = raw[i]
    got = kind if kind == _Q else _SUB
    if ch == "$" and raw.startswith("$(", i) and not raw.startswith("$((", i):
        j = _close_paren(raw, i + 2)
        out.extend((c, got) for c in _substitute(raw[i + 2 : j], cwd, depth))
        return j + 1
    if ch == "`":
        j, code = _backtick(raw, i + 1)
        out.extend((c, got) for c in _substitute(code, cwd, depth))
        return j + 1
    if ch == "$" and i + 1 < len(raw) and (raw[i + 1].isalnum() or raw[i + 1] in "_{(@*#?!$-"):
        raise _Opaque  # a parameter, arithmetic or special expansion: known only at run time
    out.append((ch, kind))
    return i + 1


def _ansi_end(raw: str, i: int) -> int:
    n = len(raw)
    while i < n:
        if raw[i] == "\\":
            i += 2
            continue
        if raw[i] == "'":
            return i
        i += 1
    raise _Opaque


def _double(raw: str, i: int, out: list[Atom], cwd: str, depth: int) -> int:
    n = len(raw)
    out.append(("", _Q))  # even "" is a field
    while i < n:
        ch = raw[i]
        if ch == '"':
            return i + 1
        if ch == "\\" and i + 1 < n and raw[i + 1] in '$`"\\\n':
            if raw[i + 1] != "\n":
                out.append((raw[i + 1], _Q))
            i += 2
        else:
            i = _expansion(raw, i, out, _Q, cwd, depth)
    raise _Opaque


def _close_paren(raw: str, i: int) -> int:
    depth, n = 1, len(raw)
    quote = ""
    while i < n:
        ch = raw[i]
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                i += 1
        elif ch in "'\"":
            quote = ch
        elif ch == "\\":
            i += 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise _Opaque


def _backtick(raw: str, i: int) -> tuple[int, str]:
    out: list[str] = []
    n = len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\\" and i + 1 < n and raw[i + 1] in "$`\\":
            out.append(raw[i + 1])
            i += 2
            continue
        if ch == "`":
            return i, "".join(out)
        out.append(ch)
        i += 1
    raise _Opaque


def split_words(text: str) -> list[str] | None:
    """Split simple shell code into its words as written (quotes kept); None when it holds
    anything but words (operators, redirections, comments)."""
    words: list[str] = []
    cur: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\n":
            if cur:
                words.append("".join(cur))
                cur = []
            i += 1
            continue
        if (ch == "#" and not cur) or ch in ";|&<>()":
            return None
        if ch == "'":
            j = text.find("'", i + 1)
            if j < 0:
                return None
            cur.append(text[i : j + 1])
            i = j + 1
        elif ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                return None
            cur.append(text[i : j + 1])
            i = j + 1
        elif ch == "\\":
            cur.append(text[i : i + 2])
            i += 2
        elif ch == "$" and text.startswith("$(", i):
            try:
                j = _close_paren(text, i + 2)
            except _Opaque:
                return None
            cur.append(text[i : j + 1])
            i = j + 1
        elif ch == "`":
            try:
                j, _ = _backtick(text, i + 1)
            except _Opaque:
                return None
            cur.append(text[i : j + 1])
            i = j + 1
        else:
            cur.append(ch)
            i += 1
    if cur:
        words.append("".join(cur))
    return words


def _substitute(code: str, cwd: str, depth: int) -> str:
    """The output of ``$(code)`` when it is a static echo/printf/pwd (trailing newlines cut)."""
    if depth >= _MAX_SUB_DEPTH:
        raise _Opaque
    words = split_words(code)
    if not words:
        raise _Opaque
    args: list[str] = []
    for word in words[1:]:
        fields = expand_word(word, cwd, depth + 1)
        if fields is None:
            raise _Opaque
        args.extend(fields)
    head = words[0]
    if head == "echo":
        if args and args[0].startswith("-") and set(args[0][1:]) <= set("neE") and args[0] != "-":
            if set(args[0][1:]) & {"e"} or any("\\" in a for a in args):
                raise _Opaque
            args = args[1:]
        out = " ".join(args)
    elif head == "printf" and len(args) == 1 and "%" not in args[0] and "\\" not in args[0]:
        out = args[0]
    elif head == "printf" and len(args) >= 2 and args[0] == "%s":
        out = "".join(args[1:])
    elif head == "pwd" and not args:
        out = cwd
    else:
        raise _Opaque
    return out.rstrip("\n")


# --- braces, tilde, splitting -----------------------------------------------------------------


def _braces(atoms: list[Atom]) -> list[list[Atom]]:
    i, n = 0, len(atoms)
    while i < n:
        if atoms[i] == ("{", _RAW):
            j, commas = _brace_close(atoms, i)
            if j >= 0:
                inner = atoms[i + 1 : j]
                alts: list[list[Atom]] | None
                if commas:
                    alts = []
                    start = i + 1
                    for k in [*commas, j]:
                        alts.extend(_braces(atoms[start:k]))
                        start = k + 1
                else:
                    alts = _sequence(inner)
                if alts is not None:
                    prefix = atoms[:i]
                    suffixes = _braces(atoms[j + 1 :])
                    out = [prefix + a + s for a in alts for s in suffixes]
                    if len(out) > _MAX_FIELDS:
                        raise _Opaque
                    return out
        i += 1
    return [atoms]


def _brace_close(atoms: list[Atom], i: int) -> tuple[int, list[int]]:
    depth = 0
    commas: list[int] = []
    for k in range(i, len(atoms)):
        ch, kind = atoms[k]
        if kind != _RAW:
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return k, commas
        elif ch == "," and depth == 1:
            commas.append(k)
    return -1, []


def _sequence(inner: list[Atom]) -> list[list[Atom]] | None:
    if any(kind != _RAW for _, kind in inner):
        return None
    m = _SEQ.match("".join(ch for ch, _ in inner))
    if not m:
        return None
    a, b, step_text = m.group(1), m.group(2), m.group(3)
    step = abs(int(step_text)) if step_text else 1
    step = step or 1
    if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
        x, y = int(a), int(b)
        width = max(len(a), len(b)) if _padded(a) or _padded(b) else 0
        values = range(x, y + 1, step) if x <= y else range(x, y - 1, -step)
        if len(values) > _MAX_FIELDS:
            raise _Opaque
        return [[(c, _Q) for c in _pad(v, width)] for v in values]
    if a.isalpha() and b.isalpha() and len(a) == len(b) == 1:
        x, y = ord(a), ord(b)
        codes = range(x, y + 1, step) if x <= y else range(x, y - 1, -step)
        return [[(chr(c), _Q)] for c in codes]
    return None


def _padded(text: str) -> bool:
    digits = text.lstrip("-")
    return len(digits) > 1 and digits.startswith("0")


def _pad(value: int, width: int) -> str:
    if not width:
        return str(value)
    sign = "-" if value < 0 else ""
    return sign + str(abs(value)).zfill(width - len(sign))


def _tilde(atoms: list[Atom]) -> list[Atom]:
    if not atoms or atoms[0] != ("~", _RAW):
        return atoms
    k = 1
    while k < len(atoms) and atoms[k][0] != "/":
        if atoms[k][1] != _RAW:
            return atoms
        k += 1
    prefix = "".join(ch for ch, _ in atoms[:k])
    home = fs.expanduser(prefix)
    if home == prefix:
        return atoms
    return [(c, _Q) for c in home] + atoms[k:]


def _split(atoms: list[Atom]) -> list[list[Atom]]:
    if not any(kind == _SUB and ch in " \t\n" for ch, kind in atoms):
        return [atoms] if atoms else []  # an unquoted empty expansion is no field at all
    fields: list[list[Atom]] = []
    cur: list[Atom] = []
    quoted = False
    for atom in atoms:
        if atom[1] == _SUB and atom[0] in " \t\n":
            if cur or quoted:
                fields.append(cur)
            cur, quoted = [], False
            continue
        cur.append(atom)
        quoted = quoted or atom[1] == _Q
    if cur or quoted:
        fields.append(cur)
    return fields
