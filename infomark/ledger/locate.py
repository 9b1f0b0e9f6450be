"""Find candidate ledger blocks in assistant text, in one linear pass.

Standard library only: :func:`may_contain_blocks` runs on hot paths, before
lark or pydantic are imported at all.

A block starts at a line whose first non-blank text is a block keyword followed
by a colon (``claim_ledger:``, ``oracle_stamp:``, ``inference_stamp:``,
``source_stamp:``, ``divergence_event:``, ``gate:`` or ``question:``), either
bare in the prose or inside a ```` ``` ````, ```` ```yaml ```` or ```` ```yml ````
fence (other fences are code examples and are skipped). A ``gate:`` block is
that one line. Any other block runs until the first of:

* the end of its fence;
* a non-blank line indented at or less than the keyword line, unless it
  continues a quoted value or a ``[…]`` / ``{…}`` collection left open above it;
* a line at that indentation which is a Markdown heading or comment (``#``),
  a ``---`` rule, a new block keyword or a fence, even inside such a
  continuation.

There is no size cut-off: a block after megabytes of prose is still found.
Every loop here advances through the text; no regular expression can backtrack
more than the length of one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "BLOCK_KEYWORDS",
    "TAB_STOP",
    "BlockScalarHeader",
    "Candidate",
    "SourceLine",
    "block_scalar_header",
    "column_width",
    "indent_width",
    "key_colon",
    "locate_blocks",
    "may_contain_blocks",
]

BLOCK_KEYWORDS: tuple[str, ...] = (
    "claim_ledger",
    "oracle_stamp",
    "inference_stamp",
    "source_stamp",
    "divergence_event",
    "gate",
    "question",
)
"""The words that open a block when they start a line and are followed by ``:``."""

TAB_STOP = 4
"""Indentation width of a tab (the Markdown tab stop)."""

_PROBES: tuple[str, ...] = tuple(word + ":" for word in BLOCK_KEYWORDS)
_KEYWORD_FIRST_CHARS = frozenset(word[0] for word in BLOCK_KEYWORDS)
_BLOCK_FENCE_INFO = frozenset({"", "yaml", "yml"})
_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_DQ_STOP = re.compile(r'["\\]')
_SQ_STOP = re.compile(r"'")
_BLOCK_SCALAR_RE = re.compile(r"([|>])([+-]?)([1-9]?)([+-]?)(?:[ \t]+#.*)?[ \t]*")


@dataclass(frozen=True, slots=True)
class SourceLine:
    """One physical line of the message: 1-based number, text without its line break."""

    number: int
    text: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """A block found in the message, not yet parsed."""

    keyword: str  # one of BLOCK_KEYWORDS
    line: int  # 1-based line of the keyword
    column: int  # 1-based column of the keyword
    lines: tuple[SourceLine, ...]  # the keyword line first; no trailing blank lines
    fenced: bool  # found inside a ``` / ```yaml / ```yml fence


@dataclass(frozen=True, slots=True)
class BlockScalarHeader:
    """The ``|`` / ``>`` header of a YAML-style block scalar."""

    style: str  # "|" literal, ">" folded
    chomp: str  # "" clip, "-" strip, "+" keep
    indent: int | None  # explicit indentation indicator, when given


def may_contain_blocks(text: str) -> bool:
    """Cheap check: False when no block keyword starts a line of ``text``.

    True does not promise a valid block; it only means :func:`locate_blocks` is
    worth running. Linear in ``len(text)``; imports nothing beyond the stdlib.
    """
    if not isinstance(text, str):
        return False
    for probe in _PROBES:
        at = text.find(probe)
        while at != -1:
            start = at
            while start > 0 and text[start - 1] in " \t":
                start -= 1
            if start == 0 or text[start - 1] == "\n":
                return True
            at = text.find(probe, at + 1)
    return False


def indent_width(line: str) -> tuple[int, int]:
    """``(width, chars)`` of the leading spaces and tabs of ``line``.

    ``chars`` is how many characters the indentation takes; ``width`` is its
    visual width with tabs expanded to the next multiple of :data:`TAB_STOP`.
    """
    width = 0
    chars = 0
    for ch in line:
        if ch == " ":
            width += 1
        elif ch == "\t":
            width = (width // TAB_STOP + 1) * TAB_STOP
        else:
            break
        chars += 1
    return width, chars


def column_width(line: str, index: int) -> int:
    """Visual width of ``line[:index]`` (tabs expanded as in :func:`indent_width`)."""
    width = 0
    for ch in line[:index]:
        width = (width // TAB_STOP + 1) * TAB_STOP if ch == "\t" else width + 1
    return width


def key_colon(line: str, start: int) -> int | None:
    """Index of the colon when ``line[start:]`` begins with a mapping key (``name:``).

    A key is ``[A-Za-z_][A-Za-z0-9_.-]*`` followed by ``:`` and then a space, a
    tab or the end of the line (YAML's rule, so ``sha256:abc`` is not a key).
    """
    match = _KEY_RE.match(line, start)
    if match is None:
        return None
    colon = match.end()
    if colon >= len(line) or line[colon] != ":":
        return None
    if colon + 1 < len(line) and line[colon + 1] not in " \t":
        return None
    return colon


def block_scalar_header(value: str) -> BlockScalarHeader | None:
    """Parse a ``|`` / ``>`` block-scalar header (``|``, ``>-``, ``|2+`` …), else None."""
    match = _BLOCK_SCALAR_RE.fullmatch(value)
    if match is None:
        return None
    style, chomp_a, digit, chomp_b = match.groups()
    if chomp_a and chomp_b:
        return None
    return BlockScalarHeader(style, chomp_a or chomp_b, int(digit) if digit else None)


def locate_blocks(text: str) -> list[Candidate]:
    """Every candidate block of ``text``, in textual order. Never raises on a str."""
    if not may_contain_blocks(text):
        return []
    raw = text.split("\n")
    found: list[Candidate] = []
    fence: _Fence | None = None
    index = 0
    while index < len(raw):
        line = _line(raw, index)
        body = line.lstrip(" \t")
        if fence is not None:
            if fence.closes(body):
                fence = None
                index += 1
                continue
            if not fence.has_blocks:
                index += 1
                continue
        else:
            opened = _open_fence(body)
            if opened is not None:
                fence = opened
                index += 1
                continue
        keyword = _keyword_at(body)
        if keyword is None:
            index += 1
            continue
        last = _block_end(raw, index, keyword, fence)
        column = len(line) - len(body) + 1
        lines = tuple(SourceLine(i + 1, _line(raw, i)) for i in range(index, last + 1))
        found.append(Candidate(keyword, index + 1, column, lines, fence is not None))
        index = last + 1
    return found


# --------------------------------------------------------------------------- internals


@dataclass(frozen=True, slots=True)
class _Fence:
    char: str
    length: int
    has_blocks: bool

    def closes(self, body: str) -> bool:
        stripped = body.rstrip(" \t")
        return len(stripped) >= self.length and stripped == self.char * len(stripped)


def _line(raw: list[str], index: int) -> str:
    line = raw[index]
    return line[:-1] if line.endswith("\r") else line


def _open_fence(body: str) -> _Fence | None:
    char = body[:1]
    if char not in ("`", "~"):
        return None
    run = len(body) - len(body.lstrip(char))
    if run < 3:
        return None
    info = body[run:].strip()
    if char == "`" and "`" in info:
        return None  # inline code such as ```x```, not a fence
    word = info.split(maxsplit=1)[0].lower() if info else ""
    return _Fence(char, run, word in _BLOCK_FENCE_INFO)


def _keyword_at(body: str) -> str | None:
    if body[:1] not in _KEYWORD_FIRST_CHARS:
        return None
    for word in BLOCK_KEYWORDS:
        if body.startswith(word) and body[len(word) : len(word) + 1] == ":":
            return word
    return None


def _is_rule(body: str) -> bool:
    stripped = body.rstrip(" \t")
    return len(stripped) >= 3 and stripped == "-" * len(stripped)


def _entry_value(line: str, start: int) -> tuple[str, int]:
    """The value text of an entry line and the index of the column that owns it.

    The owner is the key (``key: value``) or the last ``-`` of a list item; a
    continuation of the value must be indented deeper than that column.
    """
    owner = start
    pos = start
    while pos < len(line) and line[pos] == "-" and (pos + 1 == len(line) or line[pos + 1] in " \t"):
        owner = pos
        pos += 1
        while pos < len(line) and line[pos] in " \t":
            pos += 1
    colon = key_colon(line, pos)
    if colon is not None:
        owner = pos
        pos = colon + 1
        while pos < len(line) and line[pos] in " \t":
            pos += 1
    return line[pos:].rstrip(" \t"), owner


class _Balance:
    """Tracks a quoted value or flow collection left open at the end of a line."""

    __slots__ = ("depth", "node_start", "quote")

    def __init__(self) -> None:
        self.depth = 0
        self.quote = ""
        self.node_start = True

    @property
    def open(self) -> bool:
        return self.depth > 0 or bool(self.quote)

    def start(self, value: str) -> None:
        self.depth = 0
        self.quote = ""
        self.node_start = True
        if value[:1] in ('"', "'", "[", "{"):
            self.feed(value)

    def feed(self, text: str) -> None:
        i = 0
        n = len(text)
        while i < n:
            if self.quote:
                stop = (_DQ_STOP if self.quote == '"' else _SQ_STOP).search(text, i)
                if stop is None:
                    return  # the quote stays open past the end of the line
                i = stop.start()
                if text[i] == "\\":
                    i += 2
                    continue
                if self.quote == "'" and text[i + 1 : i + 2] == "'":
                    i += 2
                    continue
                self.quote = ""
                if self.depth == 0:
                    return
                i += 1
                continue
            ch = text[i]
            if ch in " \t":
                pass
            elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
                return  # a comment runs to the end of the line
            elif ch in ('"', "'") and self.node_start:
                self.quote = ch
                self.node_start = False
            elif ch in "[{":
                self.depth += 1
                self.node_start = True
            elif ch in "]}":
                self.depth -= 1
                if self.depth <= 0:
                    self.depth = 0
                    return
            elif ch == "," or (ch == ":" and (i + 1 == n or text[i + 1] in " \t,[]{}")):
                self.node_start = True
            else:
                self.node_start = False
            i += 1


def _block_end(raw: list[str], first: int, keyword: str, fence: _Fence | None) -> int:
    """Index of the last non-blank line of the block whose keyword is on ``first``."""
    if keyword == "gate":
        return first
    head = _line(raw, first)
    base, chars = indent_width(head)
    balance = _Balance()
    value = head[chars + len(keyword) + 1 :].strip(" \t")
    scalar_owner: int | None = base if block_scalar_header(value) is not None else None
    if scalar_owner is None:
        balance.start(value)
    last = first
    index = first + 1
    while index < len(raw):
        line = _line(raw, index)
        body = line.lstrip(" \t")
        if fence is not None and fence.closes(body):
            break
        if not body.strip(" \t"):
            index += 1
            continue
        width, chars = indent_width(line)
        if width <= base:
            if not balance.open or _ends_continuation(body):
                break
            balance.feed(line)
        elif scalar_owner is not None and width > scalar_owner:
            pass  # block-scalar body: taken verbatim
        else:
            scalar_owner = None
            if balance.open:
                balance.feed(line)
            elif body[0] != "#":
                value, owner = _entry_value(line, chars)
                if value[:1] in "|>" and block_scalar_header(value) is not None:
                    scalar_owner = column_width(line, owner)
                else:
                    balance.start(value)
        last = index
        index += 1
    return last


def _ends_continuation(body: str) -> bool:
    """Lines that end a block even while a quoted value or collection is open."""
    return (
        body[0] == "#"
        or _is_rule(body)
        or _keyword_at(body) is not None
        or _open_fence(body) is not None
    )
