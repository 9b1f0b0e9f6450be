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

Keys and keywords may be written bold, in backticks or (keywords) in any case;
:mod:`infomark.ledger.parse.locate_keys` says exactly which forms count. A JSON (or
YAML flow) object whose first key is a block keyword, ``{"claim_ledger": {…}}``,
is a block too, bare or inside a ```` ```json ```` or block fence; it runs until
its braces close. What only *looks like* a ledger (a keyword without its colon,
ledger keys without ``claim_ledger:`` above them) is reported as a
:class:`Suspect`, so a ledger the agent meant to write is never ignored in silence.

There is no size cut-off: a block after megabytes of prose is still found.
Every loop here advances through the text; no regular expression can backtrack
more than the length of one line.
"""

from __future__ import annotations

from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.records import dataclass, field
from infomark.ledger.parse.locate_keys import (
    BLOCK_KEYWORDS,
    KeyAt,
    key_at,
    key_colon,
    keyword_at,
    may_contain_blocks,
)
from infomark.ledger.parse.locate_suspects import Suspect, Suspects

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

__all__ = [
    "BLOCK_KEYWORDS",
    "TAB_STOP",
    "BlockScalarHeader",
    "Candidate",
    "KeyAt",
    "Located",
    "SourceLine",
    "Suspect",
    "block_scalar_header",
    "column_width",
    "indent_width",
    "key_at",
    "key_colon",
    "keyword_at",
    "locate",
    "locate_blocks",
    "may_contain_blocks",
    "quote_stop",
]

TAB_STOP = 4
"""Indentation width of a tab (the Markdown tab stop)."""

_BLOCK_FENCE_INFO = frozenset({"", "yaml", "yml"})
_JSON_FENCE_INFO = frozenset({"json", "jsonc", "json5"})
_OBJECT_LOOKAHEAD = 3  # lines searched after a lone "{" for its first key
_BLOCK_SCALAR_RE = lazy_compile(r"([|>])([+-]?)([1-9]?)([+-]?)(?:[ \t]+#.*)?[ \t]*")


@dataclass(frozen=True, slots=True)
class SourceLine:
    """One physical line of the message: 1-based number, text without its line break."""

    number: int
    text: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """A block found in the message, not yet parsed."""

    keyword: str  # one of BLOCK_KEYWORDS (for an object: its first key)
    line: int  # 1-based line of the keyword (of the "{" for an object)
    column: int  # 1-based column of the keyword (of the "{")
    lines: tuple[SourceLine, ...]  # the keyword line first; no trailing blank lines
    fenced: bool  # found inside a ``` / ```yaml / ```yml / ```json fence
    form: Literal["block", "object"] = "block"  # object: {"claim_ledger": …}


@dataclass(frozen=True, slots=True)
class Located:
    """What :func:`locate` found: candidate blocks and suspects, each in textual order."""

    candidates: list[Candidate] = field(default_factory=list)
    suspects: list[Suspect] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class BlockScalarHeader:
    """The ``|`` / ``>`` header of a YAML-style block scalar."""

    style: str  # "|" literal, ">" folded
    chomp: str  # "" clip, "-" strip, "+" keep
    indent: int | None  # explicit indentation indicator, when given


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


def block_scalar_header(value: str) -> BlockScalarHeader | None:
    """Parse a ``|`` / ``>`` block-scalar header (``|``, ``>-``, ``|2+`` …), else None."""
    if value[:1] not in ("|", ">"):  # most values: no pattern compiled for them
        return None
    match = _BLOCK_SCALAR_RE.fullmatch(value)
    if match is None:
        return None
    style, chomp_a, digit, chomp_b = match.groups()
    if chomp_a and chomp_b:
        return None
    return BlockScalarHeader(style, chomp_a or chomp_b, int(digit) if digit else None)


def locate_blocks(text: str) -> list[Candidate]:
    """Every candidate block of ``text``, in textual order. Never raises on a str."""
    return locate(text).candidates


def locate(text: str) -> Located:
    """Every candidate block and every suspect of ``text``, in textual order."""
    if not may_contain_blocks(text):
        return Located()
    raw = text.split("\n")
    found = Located()
    suspects = Suspects(raw)
    fence: _Fence | None = None
    index = 0
    while index < len(raw):
        line = _line(raw, index)
        body = line.lstrip(" \t")
        column = len(line) - len(body)
        if fence is not None:
            if fence.closes(body):
                fence = None
                suspects.region_ends()
                index += 1
                continue
            if fence.kind == "code":
                index += 1
                continue
        else:
            opened = _open_fence(body)
            if opened is not None:
                fence = opened
                suspects.region_ends()
                index += 1
                continue
        candidate: Candidate | None = None
        last = index
        keyword = None
        if fence is None or fence.kind == "block":
            keyword = keyword_at(line, column, quoted=True)
        if keyword is not None:
            last = _block_end(raw, index, keyword[0], keyword[1], fence)
            candidate = Candidate(keyword[0], index + 1, column + 1, (), fence is not None)
        elif body[:1] == "{":
            first = _object_keyword(raw, index, column)
            if first is not None:
                last = _object_end(raw, index, column, fence)
                candidate = Candidate(first, index + 1, column + 1, (), fence is not None, "object")
        if candidate is None:
            if fence is None or fence.kind == "block":  # a json fence may hold examples
                suspects.check(index, line, column)
            index += 1
            continue
        lines = tuple(SourceLine(i + 1, _line(raw, i)) for i in range(index, last + 1))
        found.candidates.append(
            Candidate(
                candidate.keyword,
                candidate.line,
                candidate.column,
                lines,
                candidate.fenced,
                candidate.form,
            )
        )
        suspects.block_found()
        index = last + 1
    suspects.flush()
    found.suspects.extend(sorted(suspects.found, key=lambda s: (s.line, s.column)))
    return found


# --------------------------------------------------------------------------- internals


@dataclass(frozen=True, slots=True)
class _Fence:
    char: str
    length: int
    kind: Literal["block", "json", "code"]  # block: any block; json: objects only; code: none

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
    if word in _BLOCK_FENCE_INFO:
        return _Fence(char, run, "block")
    return _Fence(char, run, "json" if word in _JSON_FENCE_INFO else "code")


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
    key = key_at(line, pos)
    if key is not None:
        owner = pos
        pos = key.after
        while pos < len(line) and line[pos] in " \t":
            pos += 1
    return line[pos:].rstrip(" \t"), owner


def quote_stop(text: str, i: int, quote: str, escape: int = -1) -> tuple[int, int]:
    """The next ``quote`` (or, in a double-quoted value, ``\\``) from ``i``: (index or -1, memo).

    ``escape`` is the memo a previous call on the same ``text`` returned (-1 at first):
    where the next backslash is, so that a line of many escapes is searched once, not
    once per escape, and the search for the quote stops at that backslash. Callers pass
    increasing ``i``; the total work over a line is linear in its length.
    """
    if quote != '"':
        return text.find(quote, i), escape
    if escape < i:
        escape = text.find("\\", i)
        if escape == -1:
            escape = len(text)  # none: never searched for again on this line
    stop = text.find('"', i, escape)
    if stop != -1:
        return stop, escape
    return (escape if escape < len(text) else -1), escape


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
        escape = -1
        while i < n:
            if self.quote:
                i, escape = quote_stop(text, i, self.quote, escape)
                if i == -1:
                    return  # the quote stays open past the end of the line
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
            elif ch == "," or (ch == ":" and (i + 1 == n or text[i + 1] in " \t,[]{}\"'")):
                self.node_start = True
            else:
                self.node_start = False
            i += 1


def _block_end(raw: list[str], first: int, keyword: str, key: KeyAt, fence: _Fence | None) -> int:
    """Index of the last non-blank line of the block whose keyword is on ``first``."""
    if keyword == "gate":
        return first
    head = _line(raw, first)
    base = indent_width(head)[0]
    balance = _Balance()
    value = head[key.after :].strip(" \t")
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
        or keyword_at(body, 0) is not None
        or _open_fence(body) is not None
    )


def _object_keyword(raw: list[str], index: int, column: int) -> str | None:
    """The block keyword that is the first key of the ``{`` object at ``raw[index][column]``."""
    line = _line(raw, index)
    start_index = index
    p = column + 1
    for _ in range(_OBJECT_LOOKAHEAD + 1):
        while p < len(line) and line[p] in " \t":
            p += 1
        if p < len(line):
            break
        index += 1
        if index >= len(raw):
            return None
        line = _line(raw, index)
        p = 0
    else:
        return None
    found = keyword_at(line, p, quoted=True)
    if found is None:
        return None
    later, bare = index > start_index, line[p] not in "\"'"
    if later and bare and p <= column and not line[found[1].after :].strip():
        # a bare ``claim_ledger:`` alone on a later line, not indented under the "{", heads a
        # block of its own: the "{" above it was prose, not the object's opening
        return None
    return found[0]


def _object_end(raw: list[str], first: int, column: int, fence: _Fence | None) -> int:
    """Index of the last line of the ``{…}`` object that opens at ``raw[first][column]``."""
    head = _line(raw, first)
    base = indent_width(head)[0]
    balance = _Balance()
    balance.start(head[column:])
    last = first
    index = first + 1
    while index < len(raw) and balance.open:
        line = _line(raw, index)
        body = line.lstrip(" \t")
        if fence is not None and fence.closes(body):
            break
        if body.strip(" \t"):
            if indent_width(line)[0] <= base and _ends_continuation(body):
                break
            balance.feed(line)
            last = index
        index += 1
    return last
