"""Words: quote removal, escapes, ``$'…'``, and GNU-style option scanning over argument lists.

An :class:`Arg` is one shell word after quote removal (``value``; None when it depends on an
expansion) with an approximation for scanning (``approx``: expansions replaced by a
placeholder). Nothing here runs or expands anything; see :mod:`.expand` for paths.
"""

from __future__ import annotations

from collections.abc import Sequence

from infomark.gates.shell.core import Arg, ws
from infomark.kernel.lazyre import lazy_compile

TYPE_CHECKING = False  # typing costs a hook's start-up
if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = [
    "ASSIGNMENT",
    "BLOCK_DEVICE",
    "NULL_SINKS",
    "PLACEHOLDER",
    "Arg",
    "Options",
    "_command_name",
    "_first_positional",
    "_is_sink",
    "_names",
    "_option_value",
    "_scan",
    "_shell_quote",
    "_skip_options",
    "_static",
    "_text",
    "_word",
    "_words",
]

PLACEHOLDER = "VAR"  # stands in for an expansion when a computed string is still scanned
NULL_SINKS = frozenset(
    {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2"}
)
BLOCK_DEVICE = lazy_compile(
    r"^/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d|md\d|dm-\d|mapper/|loop\d)"
)
ASSIGNMENT = lazy_compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")


def _text(node: Node, src: bytes) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


_DYNAMIC = ws(
    "simple_expansion expansion command_substitution arithmetic_expansion process_substitution "
    "brace_expression"
)


def _unescape(text: str, escapable: str | None = None) -> str:
    """Backslash removal: unquoted (every character) or, with ``escapable``, inside double
    quotes (only those characters); a backslash-newline is a line continuation."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n and (escapable is None or text[i + 1] in escapable):
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _unescape_dq(text: str) -> str:
    return _unescape(text, '$`"\\\n')


_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_HEX = lazy_compile(r"[0-9a-fA-F]+")
_OCT = lazy_compile(r"[0-7]{1,3}")


def _ansi_c(body: str) -> str:
    """Decode the body of ``$'…'``."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[nxt])
            i += 2
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            m = _HEX.match(body, i + 2, min(n, i + 2 + width))
            if m:
                code = int(m.group(), 16)
                out.append(chr(code) if code <= 0x10FFFF else "")
                i = m.end()
            else:
                out.append("\\" + nxt)
                i += 2
        elif nxt in "01234567":
            m = _OCT.match(body, i + 1)
            assert m is not None
            out.append(chr(int(m.group(), 8) & 0xFF))
            i = m.end()
        elif nxt == "c" and i + 2 < n:
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


def _string_arg(node: Node, src: bytes) -> Arg:
    """A double-quoted string: literal text between its expansions (tree-sitter drops newlines
    from ``string_content`` children, so the text is taken from the byte ranges)."""
    start, end = node.start_byte + 1, node.end_byte - 1
    parts: list[str] = []
    approx: list[str] = []
    static = True
    pos = start
    for child in node.children:
        if not child.is_named or child.type == "string_content":
            continue
        lit = _unescape_dq(src[pos : child.start_byte].decode("utf-8", "replace"))
        parts.append(lit)
        approx.append(lit)
        static = False
        approx.append(PLACEHOLDER)
        pos = max(pos, child.end_byte)
    if end > pos:
        lit = _unescape_dq(src[pos:end].decode("utf-8", "replace"))
        parts.append(lit)
        approx.append(lit)
    joined = "".join(approx)
    return Arg("".join(parts) if static else None, joined)


def _word(node: Node, src: bytes) -> Arg:
    kind = node.type
    if kind == "word":
        value = _unescape(_text(node, src))
        return Arg(value, value)
    if kind == "number":
        text = _text(node, src)
        return Arg(text, text)
    if kind == "raw_string":
        text = _text(node, src)[1:-1]
        return Arg(text, text)
    if kind == "string":
        return _string_arg(node, src)
    if kind == "ansi_c_string":
        text = _ansi_c(_text(node, src)[2:-1])
        return Arg(text, text)
    if kind == "command_name" and node.child_count == 1:
        return _word(node.children[0], src)
    if kind in ("translated_string", "concatenation", "command_name"):
        return _join([_word(c, src) for c in node.children if c.type != "$"])
    if kind in _DYNAMIC:
        return Arg(None, PLACEHOLDER)
    if kind == "$":
        return Arg("$", "$")
    return Arg(None, _text(node, src))


def _join(parts: Sequence[Arg]) -> Arg:
    approx = "".join(p.approx for p in parts)
    if any(p.value is None for p in parts):
        return Arg(None, approx)
    return Arg("".join(p.value or "" for p in parts), approx)


def _words(nodes: Sequence[Node], src: bytes) -> list[Arg]:
    """Arguments, merging pieces that touch (tree-sitter splits ``$"…"`` into two)."""
    out: list[Arg] = []
    prev: Node | None = None
    prev_dollar = False
    for node in nodes:
        arg = Arg("", "") if node.type == "$" else _word(node, src)
        if prev is not None and node.start_byte == prev.end_byte and out:
            if prev_dollar and node.type == "string":
                out[-1] = arg
            else:
                out[-1] = _join([out[-1], arg])
        else:
            out.append(Arg("$", "$") if node.type == "$" else arg)
        prev_dollar = node.type == "$"
        prev = node
    return out


_PATTERN_CHARS = lazy_compile(r"[*?\[{]")


def _command_name(value: str) -> str | None:
    """``/usr/bin/RM.exe`` → ``rm``; None when the name is a glob or brace pattern."""
    if _PATTERN_CHARS.search(value):
        return None
    base = value.rstrip("/").rsplit("/", 1)[-1].rsplit("\\", 1)[-1].lower()
    if base.endswith(".exe"):
        base = base[:-4]
    return base


def _scan(
    args: Sequence[Arg], short_val: str = "", long_val: frozenset[str] = frozenset()
) -> tuple[list[tuple[str, Arg | None]], list[Arg]]:
    """GNU-style options (anywhere) and positionals. Options come back as ``("-x", value)`` or
    ``("--long", value)``; value is None for flags."""
    opts: list[tuple[str, Arg | None]] = []
    pos: list[Arg] = []
    i, n = 0, len(args)
    only_pos = False
    while i < n:
        arg = args[i]
        v = arg.value
        if only_pos or v is None or v == "-" or not v.startswith("-"):
            pos.append(arg)
            i += 1
            continue
        if v == "--":
            only_pos = True
            i += 1
            continue
        if v.startswith("--"):
            name, eq, val = v.partition("=")
            if eq:
                opts.append((name, Arg(val, val)))
            elif name in long_val and i + 1 < n:
                opts.append((name, args[i + 1]))
                i += 1
            else:
                opts.append((name, None))
            i += 1
            continue
        letters = v[1:]
        for k, ch in enumerate(letters):
            if ch in short_val:
                rest = letters[k + 1 :]
                if rest:
                    opts.append(("-" + ch, Arg(rest, rest)))
                elif i + 1 < n:
                    opts.append(("-" + ch, args[i + 1]))
                    i += 1
                else:
                    opts.append(("-" + ch, None))
                break
            opts.append(("-" + ch, None))
        i += 1
    return opts, pos


class Options:
    """A command's option grammar: the short letters and the long names that take a value (the
    rest are flags), the long names written as one space-separated string.

    ``Options("o", "--output --format").scan(args)`` is :func:`_scan` by that grammar; a
    module names the grammars too long for one line, next to each other at its top.
    """

    __slots__ = ("long", "short")

    def __init__(self, short: str = "", long: str = "") -> None:
        self.short = short
        self.long = ws(long)

    def scan(self, args: Sequence[Arg]) -> tuple[list[tuple[str, Arg | None]], list[Arg]]:
        """The options (``("-x", value)`` / ``("--long", value)``) and the positionals."""
        return _scan(args, self.short, self.long)


def _skip_options(
    args: Sequence[Arg],
    short_val: str = "",
    long_val: frozenset[str] = frozenset(),
    *,
    assignments: bool = False,
) -> int:
    """Index of the first positional (the wrapped command) after a wrapper's options."""
    i, n = 0, len(args)
    while i < n:
        v = args[i].value
        if v is None:
            return i
        if v == "--":
            return i + 1
        if assignments and ASSIGNMENT.match(v):
            i += 1
            continue
        if v.startswith("--"):
            i += 1 if ("=" in v or v not in long_val) else 2
            continue
        if v.startswith("-") and len(v) > 1:
            step = 1
            for k, ch in enumerate(v[1:]):
                if ch in short_val:
                    if k == len(v) - 2:
                        step = 2
                    break
            i += step
            continue
        return i
    return i


def _names(opts: Sequence[tuple[str, Arg | None]]) -> set[str]:
    return {name for name, _ in opts}


def _static(args: Sequence[Arg]) -> list[str]:
    return [a.value for a in args if a.value is not None]


def _is_sink(value: str | None) -> bool:
    return value is not None and (value in NULL_SINKS or value == "-")


def _first_positional(
    args: Sequence[Arg], short_val: str = "", long_val: frozenset[str] = frozenset()
) -> tuple[str | None, list[Arg]]:
    """The subcommand (first positional, ``+toolchain`` skipped) and everything after it."""
    i, n = 0, len(args)
    while i < n:
        v = args[i].value
        if v is None:
            return None, list(args[i + 1 :])
        if v.startswith("+") and len(v) > 1:
            i += 1
            continue
        if v.startswith("-") and v != "-":
            j = _skip_options(args[i:], short_val, long_val)
            i += max(j, 1)
            continue
        return v.lower(), list(args[i + 1 :])
    return "", []


_SAFE_WORD = lazy_compile(r"[A-Za-z0-9_@%+=:,./-]+")


def _shell_quote(text: str) -> str:
    if text and _SAFE_WORD.fullmatch(text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _option_value(args: Sequence[Arg], names: frozenset[str]) -> Arg | None:
    """The value of the first option in ``names`` (``--output FILE`` or ``--output=FILE``)."""
    for k, arg in enumerate(args):
        v = arg.value or ""
        if v in names and k + 1 < len(args):
            return args[k + 1]
        key, eq, value = v.partition("=")
        if eq and key in names and key.startswith("--"):
            return Arg(value, value)
    return None
