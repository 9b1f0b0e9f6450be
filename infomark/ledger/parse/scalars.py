"""Scanner, part 1: the token buffer and the scalar readers of the pre-pass.

Quoted values are unescaped and folded, block scalars (``|`` / ``>``) dedented,
folded and chomped, bare values joined over their continuation lines, each
emitted as one token that keeps its position in the original message.
:mod:`infomark.ledger.parse.scan` builds the block structure around them.
"""

from __future__ import annotations

from infomark.ledger.parse.diagnose import SNIPPET, Problem
from infomark.ledger.parse.locate import BlockScalarHeader, Candidate, indent_width, quote_stop

TYPE_CHECKING = False  # not typing's: the hook path never imports typing
if TYPE_CHECKING:
    from infomark.ledger.parse.lalr import Token

__all__ = ["MAX_BLOCK_TOKENS", "ScalarReader", "is_dash", "skip_ws"]

MAX_BLOCK_TOKENS = 20_000  # per block: ~2,000 claims; a larger block is an error, not a crash

_SIMPLE_ESCAPES = {
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\v",
    "f": "\f",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
_HEX_SIZES = {"x": 2, "u": 4, "U": 8}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_ESCAPES_EXPECTED = ['an escape: \\\\ \\" \\n \\t \\r \\0 \\xHH \\uHHHH \\UHHHHHHHH']


def skip_ws(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t":
        index += 1
    return index


def is_dash(text: str, index: int) -> bool:
    return (
        index < len(text)
        and text[index] == "-"
        and (index + 1 == len(text) or text[index + 1] in " \t")
    )


class ScalarReader:
    """The token buffer of one candidate block and the readers of its scalars.

    Positions are ``(j, c)``: index of the line in the block and 0-based
    character index in that line; tokens carry 1-based message coordinates.
    """

    def __init__(self, candidate: Candidate, token: type[Token]) -> None:
        self.keyword = candidate.keyword
        self.lines = [src.text for src in candidate.lines]
        self.numbers = [src.number for src in candidate.lines]
        self.start = candidate.column - 1
        self.base = indent_width(self.lines[0])[0]
        self.form = candidate.form
        self.token = token
        self.tokens: list[Token] = []

    # -- output

    def emit(self, kind: str, value: str, j: int, c: int, j2: int, c2: int) -> None:
        """A token from ``(j, c)`` to just before ``(j2, c2)``, in 1-based message coordinates."""
        if len(self.tokens) >= MAX_BLOCK_TOKENS:  # bounded memory, whatever one block holds
            raise Problem(
                self.numbers[j],
                c + 1,
                f"this {self.keyword} block is too large (more than {MAX_BLOCK_TOKENS} tokens); "
                "split it into several blocks",
                [],
                self.lines[j][c : c + SNIPPET].rstrip(),
            )
        self.tokens.append(
            self.token(kind, value, None, self.numbers[j], c + 1, self.numbers[j2], c2 + 1)
        )

    def mark(self, kind: str) -> None:
        """A zero-width token (_NL, _DEDENT) just after the last token."""
        last = self.tokens[-1]
        line, column = last.end_line, last.end_column
        self.tokens.append(self.token(kind, "", None, line, column, line, column))

    def problem(self, j: int, c: int, message: str, expected: list[str]) -> Problem:
        text = self.lines[j][c : c + SNIPPET].rstrip()
        return Problem(self.numbers[j], c + 1, message, expected, text)

    # -- the block

    def plain(self, j: int, v: int, owner: int) -> int:
        """A bare value; deeper-indented following lines continue it (folded)."""
        first = self.lines[j][v:].rstrip(" \t")
        parts = [first]
        end_j, end_c = j, v + len(first)
        k = j + 1
        blanks = 0
        while k < len(self.lines):
            text = self.lines[k]
            width, chars = indent_width(text)
            body = text[chars:].rstrip(" \t")
            if not body:
                blanks += 1
                k += 1
                continue
            if width <= owner or body[0] == "#":
                break
            parts.append("\n" * blanks if blanks else " ")
            parts.append(body)
            blanks = 0
            end_j, end_c = k, chars + len(body)
            k += 1
        self.emit("PLAIN", "".join(parts), j, v, end_j, end_c)
        self.mark("_NL")
        return end_j + 1

    def quoted(
        self, j: int, c: int, owner: int | None = None, one_line: bool = False
    ) -> tuple[str, str, int, int]:
        """A quoted scalar from ``(j, c)``: (token type, value, end line, index past it).

        Line breaks inside fold as in YAML (one break → space, n blank lines → n
        newlines, trailing spaces dropped); ``\\`` at the end of a line joins. In
        block context (``owner`` given: the column of the key or dash that owns the
        value) a continuation line must be indented deeper than ``owner``; a line
        that is not ends the value, and the quote is reported unterminated at its
        own line, not where some later quote happened to close it.
        """
        quote = self.lines[j][c]
        double = quote == '"'
        buf: list[str] = []
        protected = 0  # buf[:protected] is never stripped (escapes, folds)
        k = j
        i = c + 1
        while True:
            text = self.lines[k]
            joined = False
            escape = -1
            while i < len(text):
                stop, escape = quote_stop(text, i, quote, escape)  # where plain characters end
                if stop == -1:
                    stop = len(text)
                if stop > i:
                    buf.append(text[i:stop])
                    i = stop
                    continue
                if text[i] == quote:
                    if not double and text[i + 1 : i + 2] == "'":
                        buf.append("'")
                        protected = len(buf)
                        i += 2
                        continue
                    return ("DQ" if double else "SQ"), "".join(buf), k, i + 1
                if i + 1 == len(text):  # a backslash ending the line
                    joined = True
                    break
                piece, i = self.escape(k, i)
                buf.append(piece)
                protected = len(buf)
            if not joined:
                while len(buf) > protected:
                    stripped = buf[-1].rstrip(" \t")
                    if stripped:
                        buf[-1] = stripped
                        break
                    buf.pop()
            k += 1
            blanks = 0
            while k < len(self.lines) and not self.lines[k].strip(" \t"):
                blanks += 1
                k += 1
            kind = "double" if double else "single"
            if k >= len(self.lines) or one_line:
                raise self.problem(
                    j, c, f"unterminated {kind}-quoted value", [f"a closing {quote}"]
                )
            if owner is not None and indent_width(self.lines[k])[0] <= owner:
                raise self.problem(
                    j,
                    c,
                    f"unterminated {kind}-quoted value: line {self.numbers[k]} is not indented "
                    "under its key, so the quote must close on this line or a deeper one",
                    [f"a closing {quote}", "continuation lines indented deeper than the key"],
                )
            if blanks:
                buf.append("\n" * blanks)
            elif not joined:
                buf.append(" ")
            protected = len(buf)
            i = skip_ws(self.lines[k], 0)

    def escape(self, k: int, i: int) -> tuple[str, int]:
        text = self.lines[k]
        code = text[i + 1]
        simple = _SIMPLE_ESCAPES.get(code)
        if simple is not None:
            return simple, i + 2
        size = _HEX_SIZES.get(code)
        if size is None:
            raise self.problem(k, i, f"invalid escape \\{code}", _ESCAPES_EXPECTED)
        digits = text[i + 2 : i + 2 + size]
        if len(digits) != size or not all(ch in _HEX_DIGITS for ch in digits):
            raise self.problem(k, i, f"invalid escape \\{code}{digits}", _ESCAPES_EXPECTED)
        point = int(digits, 16)
        if point > 0x10FFFF:
            raise self.problem(
                k, i, f"escape \\{code}{digits} is beyond U+10FFFF", _ESCAPES_EXPECTED
            )
        end = i + 2 + size
        if 0xD800 <= point <= 0xDBFF and text[end : end + 2] == "\\u":
            low = text[end + 2 : end + 6]
            if len(low) == 4 and all(ch in _HEX_DIGITS for ch in low):
                low_point = int(low, 16)
                if 0xDC00 <= low_point <= 0xDFFF:
                    combined = 0x10000 + ((point - 0xD800) << 10) + (low_point - 0xDC00)
                    return chr(combined), end + 6
        return chr(point), end

    def block_scalar(self, j: int, v: int, owner: int, header: BlockScalarHeader) -> int:
        """A ``|`` (literal) or ``>`` (folded) block scalar; its body is deeper than ``owner``."""
        body: list[str] = []
        end_j, end_c = j, len(self.lines[j].rstrip(" \t"))
        k = j + 1
        while k < len(self.lines):
            text = self.lines[k]
            width, chars = indent_width(text)
            if text[chars:].strip(" \t"):
                if width <= owner:
                    break
                end_j, end_c = k, len(text.rstrip(" \t"))
            body.append(text)
            k += 1
        nonblank = [text for text in body if text.strip(" \t")]
        if header.indent is not None:
            content_indent = owner + header.indent
        elif nonblank:
            content_indent = indent_width(nonblank[0])[0]
        else:
            content_indent = owner + 1
        content = [_dedent(text, content_indent) if text.strip(" \t") else "" for text in body]
        trailing = 0
        while trailing < len(content) and content[len(content) - 1 - trailing] == "":
            trailing += 1
        core = content[: len(content) - trailing]
        value = "\n".join(core) if header.style == "|" else _fold(core)
        if header.chomp == "+":
            value += "\n" * (trailing + 1) if core else "\n" * trailing
        elif header.chomp == "" and core:
            value += "\n"
        self.emit("BLOCK", value, j, v, end_j, end_c)
        self.mark("_NL")
        return k


def _dedent(text: str, width: int) -> str:
    seen = 0
    i = 0
    while i < len(text) and seen < width and text[i] in " \t":
        seen = (seen // 4 + 1) * 4 if text[i] == "\t" else seen + 1
        i += 1
    return text[i:]


def _fold(lines: list[str]) -> str:
    """YAML folding: adjacent plain lines join with a space, blank lines become newlines."""
    out: list[str] = []
    previous_plain = False
    blanks = 0
    started = False
    for line in lines:
        if not line:
            blanks += 1
            continue
        plain = line[0] not in " \t"
        if started:
            if previous_plain and plain:
                out.append("\n" * blanks if blanks else " ")
            else:
                out.append("\n" * (blanks + 1))
        else:
            out.append("\n" * blanks)
        out.append(line)
        previous_plain = plain
        blanks = 0
        started = True
    return "".join(out)
