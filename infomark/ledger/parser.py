"""Parse the blocks of an assistant message into :mod:`infomark.ledger.blocks` models.

Three stages, one job each:

1. :mod:`infomark.ledger.locate` finds candidate blocks (stdlib, linear time).
2. ``_Tokenizer`` turns one block's lines into tokens: an indenter emits
   ``_INDENT`` / ``_DEDENT`` / ``_NL``; scalars are unquoted, unescaped and
   folded here, each token keeping its line and column in the original message.
3. The LALR grammar ``blocks.lark`` (loaded once, lazily, with a lexer that
   replays those tokens) decides the structure; ``_Builder`` maps the tree onto
   the models and judges keys, ids and values.

Nothing here raises on any ``str`` input: every failure becomes a
:class:`~infomark.ledger.blocks.Diagnostic`. A block with an error diagnostic
is left out of :attr:`ParsedMessage.blocks`; the rest of the message is still
parsed. Prose without any block keyword never loads lark.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from infomark.kernel.infomark import InfoMark
from infomark.ledger.blocks import (
    AUTHORITIES,
    CLAIM_ID_PATTERN,
    CLAIM_KEYS,
    DIVERGENCE_KEYS,
    EXPECTATIONS,
    GATE_NAMES,
    KEY_PATTERN,
    LEDGER_ALIASES,
    LEDGER_KEYS,
    RESULTS,
    STAMP_KEYS,
    Block,
    ClaimBlock,
    Diagnostic,
    DivergenceBlock,
    GateBlock,
    LedgerBlock,
    ParsedMessage,
    QuestionBlock,
    Span,
    StampBlock,
    StampKind,
)
from infomark.ledger.locate import (
    BlockScalarHeader,
    Candidate,
    block_scalar_header,
    column_width,
    indent_width,
    key_colon,
    locate_blocks,
    may_contain_blocks,
)
from infomark.ledger.render import scalar_text

if TYPE_CHECKING:
    from lark import Lark, Token, Transformer

__all__ = [
    "MAX_BLOCKS",
    "MAX_BLOCK_DIAGNOSTICS",
    "MAX_BLOCK_TOKENS",
    "MAX_DEPTH",
    "MAX_DIAGNOSTICS",
    "parse_message",
]

MAX_DEPTH = 32
"""Deepest nesting of indentation levels or flow collections a block may use."""

_SNIPPET = 60
_KEYWORD_TOKENS = {
    "claim_ledger": "LEDGER",
    "oracle_stamp": "STAMP",
    "inference_stamp": "STAMP",
    "source_stamp": "STAMP",
    "divergence_event": "DIVERGENCE",
    "gate": "GATE",
    "question": "QUESTION",
}
_TOKEN_NAMES = {
    "LEDGER": "claim_ledger:",
    "STAMP": "a stamp keyword",
    "DIVERGENCE": "divergence_event:",
    "GATE": "gate:",
    "QUESTION": "question:",
    "KEY": "a key (name:)",
    "IKEY": "a key=value pair",
    "PLAIN": "a value",
    "DQ": "a double-quoted value",
    "SQ": "a single-quoted value",
    "BLOCK": "a | or > block value",
    "_COLON": "':'",
    "_REASON": 'a reason (reason="…", — … or : …)',
    "_NL": "the end of the line",
    "_INDENT": "an indented line",
    "_DEDENT": "a less indented line",
    "_DASH": "a '- ' list item",
    "_LSQB": "'['",
    "_RSQB": "']'",
    "_LBRACE": "'{'",
    "_RBRACE": "'}'",
    "_COMMA": "','",
    "$END": "the end of the block",
}
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
_DQ_RUN = re.compile(r'[^"\\]+')
_SQ_RUN = re.compile(r"[^']+")


MAX_BLOCKS = 1_000  # per message; more is an error diagnostic, never a silent drop
MAX_DIAGNOSTICS = 200  # per message (then one summary line)
MAX_BLOCK_DIAGNOSTICS = 20  # per block (then one summary line)
MAX_BLOCK_TOKENS = 20_000  # per block: ~2,000 claims; a larger block is an error, not a crash


def parse_message(text: str) -> ParsedMessage:
    """Every block of ``text`` in textual order, with diagnostics. Never raises."""
    if not isinstance(text, str):
        return ParsedMessage(
            diagnostics=[
                Diagnostic(
                    line=1,
                    column=1,
                    message=f"expected the message as str, got {type(text).__name__}",
                )
            ]
        )
    try:
        if not may_contain_blocks(text):
            return ParsedMessage()
        candidates = locate_blocks(text)
    except Exception as exc:  # last resort: the contract is "never raise"
        return ParsedMessage(diagnostics=[_internal(1, 1, exc, None)])
    blocks: list[Block] = []
    diagnostics: list[Diagnostic] = []
    dropped = 0
    for index, candidate in enumerate(candidates):
        if index >= MAX_BLOCKS:
            diagnostics.append(
                Diagnostic(
                    line=candidate.line,
                    column=candidate.column,
                    message=(
                        f"this message holds more than {MAX_BLOCKS} blocks; this one and the "
                        f"{len(candidates) - index - 1} after it were not applied — split it"
                    ),
                    block=candidate.keyword,
                )
            )
            break
        try:
            block, found = _parse_candidate(candidate)
        except Exception as exc:  # last resort: one broken block never hides the others
            block, found = (
                None,
                [_internal(candidate.line, candidate.column, exc, candidate.keyword)],
            )
        room = MAX_DIAGNOSTICS - len(diagnostics)
        found = sorted(found, key=lambda d: (d.line, d.column))
        diagnostics.extend(found[: max(room, 0)])
        if len(found) > room:
            dropped += len(found) - max(room, 0)
        if block is not None:
            blocks.append(block)
    if dropped:
        diagnostics.append(
            Diagnostic(
                line=diagnostics[-1].line if diagnostics else 1,
                column=1,
                message=f"{dropped} more diagnostics in this message were not listed",
                severity="warning",
            )
        )
    return ParsedMessage(blocks=blocks, diagnostics=diagnostics)


# --------------------------------------------------------------------------- one block


def _parse_candidate(candidate: Candidate) -> tuple[Block | None, list[Diagnostic]]:
    machinery = _machinery()
    try:
        tokens = _Tokenizer(candidate, machinery.token).run()
    except _Problem as problem:
        return None, [problem.diagnostic(candidate.keyword)]
    try:
        tree = machinery.parser.parse(tokens)
    except machinery.unexpected_input as exc:
        return None, [_syntax_diagnostic(exc, candidate)]
    try:
        top = cast(_Top, machinery.transformer.transform(tree))
    except machinery.visit_error as exc:
        original = exc.orig_exc
        if isinstance(original, _Problem):
            return None, [original.diagnostic(candidate.keyword)]
        raise original from None
    builder = _Builder(candidate)
    block = builder.build(top)
    return block, builder.diagnostics


def _syntax_diagnostic(exc: Exception, candidate: Candidate) -> Diagnostic:
    token = getattr(exc, "token", None)
    line = getattr(token, "line", None) or getattr(exc, "line", None)
    column = getattr(token, "column", None) or getattr(exc, "column", None)
    if not isinstance(line, int) or not isinstance(column, int) or line < 1 or column < 1:
        line, column = candidate.line, candidate.column
    expected = sorted({_TOKEN_NAMES.get(name, name) for name in getattr(exc, "expected", ())})
    what = _describe(token) if token is not None else "input"
    message = f"unexpected {what} in {candidate.keyword} block"
    if expected:
        message += "; expected " + ", ".join(expected)
    return Diagnostic(
        line=line,
        column=column,
        message=message,
        expected=expected,
        text=_snippet(candidate, line, column),
        block=candidate.keyword,
    )


def _describe(token: object) -> str:
    kind = str(getattr(token, "type", ""))
    value = str(token)
    if kind in ("PLAIN", "DQ", "SQ", "BLOCK"):
        return f"value {_short(value)!r}"
    if kind in ("KEY", "IKEY"):
        return f"key {_short(value)!r}"
    name = _TOKEN_NAMES.get(kind, kind or "input")
    for article in ("the ", "an ", "a "):
        if name.startswith(article):
            return name[len(article) :]
    return name


def _snippet(candidate: Candidate, line: int, column: int) -> str:
    index = line - candidate.line
    if not 0 <= index < len(candidate.lines):
        return ""
    text = candidate.lines[index].text
    piece = text[column - 1 : column - 1 + _SNIPPET].rstrip()
    return piece or text.strip()[:_SNIPPET]


def _short(value: str) -> str:
    return value if len(value) <= _SNIPPET else value[: _SNIPPET - 1] + "…"


def _internal(line: int, column: int, exc: BaseException, keyword: str | None) -> Diagnostic:
    return Diagnostic(
        line=line,
        column=column,
        message=(
            f"internal parser error ({type(exc).__name__}: {_short(str(exc))}); "
            "the block was not applied — please report this input"
        ),
        block=keyword,
    )


# --------------------------------------------------------------------------- tokens


class _Problem(Exception):
    """A located parse problem; becomes an error Diagnostic."""

    def __init__(self, line: int, column: int, message: str, expected: list[str], text: str):
        super().__init__(message)
        self.line = line
        self.column = column
        self.message = message
        self.expected = expected
        self.text = text

    def diagnostic(self, keyword: str) -> Diagnostic:
        return Diagnostic(
            line=max(self.line, 1),
            column=max(self.column, 1),
            message=self.message,
            expected=self.expected,
            text=self.text,
            block=keyword,
        )


_GATE_WORD_STOPS = frozenset(" \t:\u2014\u2013")
_REASON_WORDS = ("reason=", "reason:")


def _reason_separator(text: str, r: int) -> int | None:
    """Index just past the separator that opens a gate's reason at ``r``, if one does."""
    if r >= len(text):
        return None
    ch = text[r]
    if ch in ":\u2014\u2013":  # ':' or an em / en dash
        return r + 1
    if text.startswith("--", r):
        return r + 2
    if ch == "-" and (r + 1 == len(text) or text[r + 1] in " \t"):
        return r + 1
    for word in _REASON_WORDS:
        if text.startswith(word, r):
            return r + len(word)
    return None


def _skip_ws(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t":
        index += 1
    return index


def _is_dash(text: str, index: int) -> bool:
    return (
        index < len(text)
        and text[index] == "-"
        and (index + 1 == len(text) or text[index + 1] in " \t")
    )


class _Tokenizer:
    """Turns one candidate block into the lark tokens ``blocks.lark`` parses.

    Positions are ``(j, c)``: index of the line in the block and 0-based
    character index in that line; tokens carry 1-based message coordinates.
    """

    def __init__(self, candidate: Candidate, token: type[Token]) -> None:
        self.keyword = candidate.keyword
        self.lines = [src.text for src in candidate.lines]
        self.numbers = [src.number for src in candidate.lines]
        self.start = candidate.column - 1
        self.token = token
        self.tokens: list[Token] = []

    # -- output

    def emit(self, kind: str, value: str, j: int, c: int, j2: int, c2: int) -> None:
        """A token from ``(j, c)`` to just before ``(j2, c2)``, in 1-based message coordinates."""
        if len(self.tokens) >= MAX_BLOCK_TOKENS:  # bounded memory, whatever one block holds
            raise _Problem(
                self.numbers[j],
                c + 1,
                f"this {self.keyword} block is too large (more than {MAX_BLOCK_TOKENS} tokens); "
                "split it into several blocks",
                [],
                self.lines[j][c : c + _SNIPPET].rstrip(),
            )
        self.tokens.append(
            self.token(kind, value, None, self.numbers[j], c + 1, self.numbers[j2], c2 + 1)
        )

    def mark(self, kind: str) -> None:
        """A zero-width token (_NL, _DEDENT) just after the last token."""
        last = self.tokens[-1]
        line, column = last.end_line, last.end_column
        self.tokens.append(self.token(kind, "", None, line, column, line, column))

    def problem(self, j: int, c: int, message: str, expected: list[str]) -> _Problem:
        text = self.lines[j][c : c + _SNIPPET].rstrip()
        return _Problem(self.numbers[j], c + 1, message, expected, text)

    # -- the block

    def run(self) -> list[Token]:
        text = self.lines[0]
        keyword = self.keyword
        c = self.start
        self.emit(_KEYWORD_TOKENS[keyword], keyword, 0, c, 0, c + len(keyword))
        c += len(keyword)
        self.emit("_COLON", ":", 0, c, 0, c + 1)
        v = _skip_ws(text, c + 1)
        base = indent_width(text)[0]
        if keyword == "gate":
            j = self.gate_value(v)
        elif keyword == "question":
            j = self.value(0, v, base)
        elif keyword != "claim_ledger" and v < len(text) and text[v] not in "{#":
            j = self.inline(v)
        else:
            j = self.value(0, v, base)
        self.structure(j, base)
        return self.tokens

    def structure(self, j: int, base: int) -> None:
        """Block-mapping and block-sequence lines, with an indentation stack."""
        stack = [base]
        while j < len(self.lines):
            text = self.lines[j]
            width, chars = indent_width(text)
            if not text[chars:].strip(" \t") or text[chars] == "#":
                j += 1
                continue
            if width <= base:
                raise self.problem(
                    j,
                    chars,
                    f"this line is not indented under {self.keyword}:",
                    ["a line indented more than the block keyword"],
                )
            if width > stack[-1]:
                self.push(stack, width, j, chars)
            else:
                while width < stack[-1]:
                    stack.pop()
                    self.mark("_DEDENT")
                if width != stack[-1]:
                    raise self.problem(
                        j,
                        chars,
                        "inconsistent indentation: this line lines up with no enclosing level",
                        [f"indentation of {stack[-1]} columns, as the lines above"],
                    )
            c = chars
            owner = width
            while _is_dash(text, c):
                self.emit("_DASH", "-", j, c, j, c + 1)
                owner = column_width(text, c)
                after = _skip_ws(text, c + 1)
                if after >= len(text) or text[after] == "#":
                    c = len(text)
                    break
                if _is_dash(text, after) or key_colon(text, after) is not None:
                    self.push(stack, column_width(text, after), j, after)
                c = after
            if c >= len(text):
                self.mark("_NL")
                j += 1
                continue
            colon = key_colon(text, c)
            if colon is None:
                j = self.value(j, c, owner)
                continue
            self.emit("KEY", text[c:colon], j, c, j, colon)
            self.emit("_COLON", ":", j, colon, j, colon + 1)
            j = self.value(j, _skip_ws(text, colon + 1), column_width(text, c))
        while len(stack) > 1:
            stack.pop()
            self.mark("_DEDENT")

    def push(self, stack: list[int], width: int, j: int, c: int) -> None:
        if len(stack) > MAX_DEPTH:
            raise self.problem(
                j, c, f"nested deeper than {MAX_DEPTH} levels", [f"at most {MAX_DEPTH} levels"]
            )
        stack.append(width)
        self.emit("_INDENT", "", j, c, j, c)

    # -- values

    def value(self, j: int, v: int, owner: int) -> int:
        """The value of an entry, starting at ``(j, v)``; returns the next line index."""
        text = self.lines[j]
        if v >= len(text) or text[v] == "#" or not text[v:].strip(" \t"):
            self.mark("_NL")
            return j + 1
        first = text[v]
        if first in "[{":
            k, i = self.flow(j, v)
            return self.line_end(k, i)
        if first in "\"'":
            kind, value, k, i = self.quoted(j, v)
            self.emit(kind, value, j, v, k, i)
            return self.line_end(k, i)
        header = block_scalar_header(text[v:])
        if header is not None:
            return self.block_scalar(j, v, owner, header)
        return self.plain(j, v, owner)

    def line_end(self, j: int, i: int) -> int:
        """After a closed quote or collection: only a comment may follow on the line."""
        text = self.lines[j]
        i = _skip_ws(text, i)
        if i < len(text) and text[i] != "#":
            rest = text[i:].rstrip(" \t")
            self.emit("PLAIN", rest, j, i, j, i + len(rest))  # the grammar reports it
        self.mark("_NL")
        return j + 1

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

    def gate_value(self, v: int) -> int:
        """The gate name, then an optional reason: ``reason="…"``, ``— …`` or ``: …``."""
        text = self.lines[0]
        if v >= len(text) or text[v] == "#":
            self.mark("_NL")
            return 1
        if text[v] in "\"'":
            kind, value, k, end = self.quoted(0, v)
            self.emit(kind, value, 0, v, k, end)
        else:
            end = v
            while end < len(text) and text[end] not in _GATE_WORD_STOPS:
                end += 1
            self.emit("PLAIN", text[v:end], 0, v, 0, end)
        return self.gate_reason(end)

    def gate_reason(self, end: int) -> int:
        text = self.lines[0]
        r = _skip_ws(text, end)
        sep = _reason_separator(text, r)
        if sep is None:
            return self.line_end(0, end)  # a comment, or text the grammar reports
        self.emit("_REASON", text[r:sep], 0, r, 0, sep)
        s = _skip_ws(text, sep)
        if s >= len(text) or (text[s] == "#" and s > sep):
            raise self.problem(
                0,
                r,
                f"empty reason after {text[r:sep]!r} on the gate line",
                ['gate: BLOCKED reason="what stops you"'],
            )
        if text[s] in "\"'":
            kind, value, k, i = self.quoted(0, s)
            self.emit(kind, value, 0, s, k, i)
            return self.line_end(k, i)
        rest = text[s:].rstrip(" \t")
        self.emit("PLAIN", rest, 0, s, 0, s + len(rest))
        self.mark("_NL")
        return 1

    def inline(self, v: int) -> int:
        """``claim_id=C1 evidence_ref=ev_… result=PASS`` (``:`` also separates), or legacy words."""
        expect_value = False
        k = 0
        i = v
        while k < len(self.lines):
            text = self.lines[k]
            while i < len(text):
                ch = text[i]
                if ch in " \t":
                    i += 1
                    continue
                if ch == ",":
                    expect_value = False
                    i += 1
                    continue
                if ch == "#" and (i == 0 or text[i - 1] in " \t"):
                    break
                if ch in "\"'":
                    kind, value, k2, i2 = self.quoted(k, i)
                    self.emit(kind, value, k, i, k2, i2)
                    expect_value = False
                    k, i = k2, i2
                    text = self.lines[k]
                    continue
                end = i
                while end < len(text) and text[end] not in " \t":
                    end += 1
                match = KEY_PATTERN.match(text, i, end)
                sep = match.end() if match is not None else end
                if (
                    sep < end
                    and text[sep] in "=:"
                    and (text[sep] == "=" or not expect_value or sep + 1 == end)
                ):
                    self.emit("IKEY", text[i:sep], k, i, k, sep + 1)
                    expect_value = True
                    i = sep + 1
                    if i < end and text[i] not in "\"',":
                        self.inline_word(k, i, end)
                        expect_value = False
                        i = end
                    continue
                self.inline_word(k, i, end)
                expect_value = False
                i = end
            k += 1
            i = 0
        self.mark("_NL")
        return len(self.lines)

    def inline_word(self, k: int, i: int, end: int) -> None:
        word = self.lines[k][i:end]
        if len(word) > 1 and word.endswith(","):
            word = word[:-1]  # a comma separates pairs
        self.emit("PLAIN", word, k, i, k, i + len(word))

    def flow(self, j: int, c: int) -> tuple[int, int]:
        """A ``[…]`` / ``{…}`` collection, possibly over several lines; returns its end."""
        closers: list[str] = []
        k, i = j, c
        while True:
            text = self.lines[k]
            while i < len(text):
                ch = text[i]
                if ch in " \t":
                    i += 1
                elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
                    break
                elif ch in "[{":
                    if len(closers) >= MAX_DEPTH:
                        raise self.problem(
                            k,
                            i,
                            f"collections nested deeper than {MAX_DEPTH} levels",
                            [f"at most {MAX_DEPTH} levels"],
                        )
                    closers.append("]" if ch == "[" else "}")
                    self.emit("_LSQB" if ch == "[" else "_LBRACE", ch, k, i, k, i + 1)
                    i += 1
                elif ch in "]}":
                    self.emit("_RSQB" if ch == "]" else "_RBRACE", ch, k, i, k, i + 1)
                    i += 1
                    closers.pop()
                    if not closers:
                        return k, i
                elif ch == ",":
                    self.emit("_COMMA", ",", k, i, k, i + 1)
                    i += 1
                elif ch in "\"'":
                    kind, value, k2, i2 = self.quoted(k, i)
                    self.emit(kind, value, k, i, k2, i2)
                    k, i = k2, i2
                    text = self.lines[k]
                else:
                    i = self.flow_plain(k, i)
            k += 1
            i = 0
            if k >= len(self.lines):
                raise self.problem(j, c, "unclosed flow collection", [f"a closing '{closers[-1]}'"])

    def flow_plain(self, k: int, start: int) -> int:
        """A bare word inside a flow collection (a key when ``:`` follows)."""
        text = self.lines[k]
        i = start
        while i < len(text):
            ch = text[i]
            if ch in ",[]{}":
                break
            if ch == ":" and (i + 1 == len(text) or text[i + 1] in " \t,[]{}"):
                break
            if ch == "#" and i > start and text[i - 1] in " \t":
                break
            i += 1
        value = text[start:i].rstrip(" \t")
        end = start + len(value)
        if i < len(text) and text[i] == ":":
            if KEY_PATTERN.fullmatch(value) is None:
                raise self.problem(
                    k,
                    start,
                    f"{value!r} is not a valid key",
                    ["a key matching [A-Za-z_][A-Za-z0-9_.-]*"],
                )
            self.emit("KEY", value, k, start, k, end)
            self.emit("_COLON", ":", k, i, k, i + 1)
            return i + 1
        self.emit("PLAIN", value, k, start, k, end)
        return i

    def quoted(self, j: int, c: int) -> tuple[str, str, int, int]:
        """A quoted scalar from ``(j, c)``: (token type, value, end line, index past it).

        Line breaks inside fold as in YAML (one break → space, n blank lines → n
        newlines, trailing spaces dropped); ``\\`` at the end of a line joins.
        """
        quote = self.lines[j][c]
        double = quote == '"'
        run = _DQ_RUN if double else _SQ_RUN
        buf: list[str] = []
        protected = 0  # buf[:protected] is never stripped (escapes, folds)
        k = j
        i = c + 1
        while True:
            text = self.lines[k]
            joined = False
            while i < len(text):
                match = run.match(text, i)
                if match is not None:
                    buf.append(match.group())
                    i = match.end()
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
            if k >= len(self.lines):
                raise self.problem(
                    j,
                    c,
                    f"unterminated {'double' if double else 'single'}-quoted value",
                    [f"a closing {quote}"],
                )
            if blanks:
                buf.append("\n" * blanks)
            elif not joined:
                buf.append(" ")
            protected = len(buf)
            i = _skip_ws(self.lines[k], 0)

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


# --------------------------------------------------------------------------- the grammar

_Pos = tuple[int, int, int, int]  # line, column, end_line, end_column


@dataclass(slots=True)
class _Scalar:
    value: str
    pos: _Pos


@dataclass(slots=True)
class _Seq:
    items: list[_Node]
    pos: _Pos


@dataclass(slots=True)
class _Map:
    pairs: list[tuple[_Scalar, _Node]]
    pos: _Pos


@dataclass(slots=True)
class _Legacy:
    words: list[_Scalar]
    pos: _Pos


@dataclass(slots=True)
class _Top:
    keyword: str
    pos: _Pos
    body: _Node | _Legacy
    reason: _Scalar | None = None  # gate: BLOCKED reason="…"


_Node = _Scalar | _Seq | _Map | None


@dataclass(frozen=True, slots=True)
class _Machinery:
    parser: Lark
    transformer: Transformer[Token, Any]
    token: type[Token]
    unexpected_input: type[Exception]
    visit_error: type[Any]


@functools.cache
def _machinery() -> _Machinery:
    """Load lark and the grammar once, on the first block that needs them."""
    from lark import Lark, Token, Transformer
    from lark.exceptions import UnexpectedInput, VisitError
    from lark.lexer import Lexer, LexerState

    class _ReplayLexer(Lexer):
        """Replays the pre-pass tokens handed to ``Lark.parse`` as its input."""

        __future_interface__ = 2

        def __init__(self, lexer_conf: object) -> None:
            pass

        def lex(self, lexer_state: LexerState, parser_state: object) -> Iterator[Token]:
            return iter(cast("list[Token]", lexer_state.text))

    class _ToNodes(Transformer[Token, Any]):
        """Tree → nodes. Dispatches in ``__default__``, which receives each node's meta."""

        def __default__(self, data: Any, children: list[Any], meta: Any) -> Any:
            return _RULES[str(data)](children, meta)

    parser = Lark.open_from_package(
        "infomark.ledger",
        "blocks.lark",
        parser="lalr",
        lexer=_ReplayLexer,
        propagate_positions=True,
        strict=True,
    )
    return _Machinery(parser, _ToNodes(), Token, UnexpectedInput, VisitError)


def _token_pos(token: Any) -> _Pos:
    return (token.line, token.column, token.end_line, token.end_column)


def _meta_pos(meta: Any) -> _Pos:
    if getattr(meta, "empty", True):
        return (1, 1, 1, 1)
    return (meta.line, meta.column, meta.end_line, meta.end_column)


def _rule_top(children: list[Any], meta: Any) -> _Top:
    return _Top(str(children[0]), _meta_pos(meta), children[1])


def _rule_gate(children: list[Any], meta: Any) -> _Top:
    reason = children[2] if len(children) > 2 else None
    return _Top(str(children[0]), _meta_pos(meta), children[1], reason)


def _rule_pair(children: list[Any], meta: Any) -> tuple[_Scalar, _Node]:
    key = children[0]
    return _Scalar(str(key), _token_pos(key)), (children[1] if len(children) > 1 else None)


_RULES: dict[str, Callable[[list[Any], Any], Any]] = {
    "start": lambda children, meta: children[0],
    "ledger": _rule_top,
    "stamp": _rule_top,
    "divergence": _rule_top,
    "gate": _rule_gate,
    "question": _rule_top,
    "mapping": lambda children, meta: _Map(children, _meta_pos(meta)),
    "inline": lambda children, meta: _Map(children, _meta_pos(meta)),
    "flow_map": lambda children, meta: _Map(children, _meta_pos(meta)),
    "pair": _rule_pair,
    "inline_pair": _rule_pair,
    "flow_pair": _rule_pair,
    "legacy": lambda children, meta: _Legacy(children, _meta_pos(meta)),
    "sequence": lambda children, meta: _Seq(children, _meta_pos(meta)),
    "flow_seq": lambda children, meta: _Seq(children, _meta_pos(meta)),
    "item": lambda children, meta: children[0],
    "null": lambda children, meta: None,
    "scalar": lambda children, meta: _Scalar(str(children[0]), _token_pos(children[0])),
}
"""One builder per grammar rule (and alias) of blocks.lark."""


# --------------------------------------------------------------------------- semantics


def _span(pos: _Pos) -> Span:
    return Span(line=pos[0], column=pos[1], end_line=pos[2], end_column=pos[3])


def _node_pos(node: _Node | _Legacy, fallback: _Pos) -> _Pos:
    return fallback if node is None else node.pos


def _as_text(node: _Node) -> str:
    """An unknown key's value, kept as text (collections in canonical flow form)."""
    if node is None:
        return ""
    if isinstance(node, _Scalar):
        return node.value
    return _flow_text(node)


def _flow_text(node: _Node) -> str:
    if node is None:
        return '""'
    if isinstance(node, _Scalar):
        return scalar_text(node.value)
    if isinstance(node, _Seq):
        return "[" + ", ".join(_flow_text(item) for item in node.items) + "]"
    return "{" + ", ".join(f"{key.value}: {_flow_text(value)}" for key, value in node.pairs) + "}"


class _Builder:
    """Maps the parse tree of one block onto the models; collects diagnostics."""

    def __init__(self, candidate: Candidate) -> None:
        self.candidate = candidate
        self.keyword = candidate.keyword
        self.diagnostics: list[Diagnostic] = []
        self.error_seen = False
        self.unlisted = 0

    def note(
        self,
        pos: _Pos,
        message: str,
        *,
        severity: Literal["error", "warning"] = "error",
        expected: Iterable[str] = (),
        text: str = "",
    ) -> None:
        if severity == "error":
            self.error_seen = True
        if len(self.diagnostics) >= MAX_BLOCK_DIAGNOSTICS:
            self.unlisted += 1  # bounded memory: a block cannot produce unbounded problems
            return
        self.diagnostics.append(
            Diagnostic(
                line=pos[0],
                column=pos[1],
                message=message,
                severity=severity,
                expected=list(expected),
                text=_short(text) if text else _snippet(self.candidate, pos[0], pos[1]),
                block=self.keyword,
            )
        )

    def build(self, top: _Top) -> Block | None:
        span = _span(top.pos)
        block: Block | None
        if top.keyword == "claim_ledger":
            block = self.ledger(top.body, top.pos, span)
        elif top.keyword == "gate":
            block = self.gate(top.body, top.reason, top.pos, span)
        elif top.keyword == "question":
            block = self.question(top.body, top.pos, span)
        else:
            block = self.stamp(top.keyword, top.body, top.pos, span)
        if self.unlisted:
            self.diagnostics.append(
                Diagnostic(
                    line=top.pos[0],
                    column=top.pos[1],
                    message=f"{self.unlisted} more problems in this block were not listed",
                    severity="warning",
                    block=self.keyword,
                )
            )
        if self.error_seen:
            return None
        return block

    # -- claim_ledger

    def ledger(self, body: _Node | _Legacy, where: _Pos, span: Span) -> LedgerBlock | None:
        keyword = "claim_ledger"
        if not isinstance(body, _Map):
            self.note(where, "claim_ledger must be a mapping", expected=["claims:"])
            return None
        claims: list[ClaimBlock] = []
        lists: dict[str, list[str]] = {
            "premises_for_plan": [],
            "open_questions": [],
            "done_when": [],
        }
        extra: dict[str, str] = {}
        seen: set[str] = set()
        for key, node in body.pairs:
            name = LEDGER_ALIASES.get(key.value, key.value)
            self.check_duplicate(name, key, seen)
            if name == "claims":
                claims = self.claims(node, key.pos)
            elif name in lists:
                lists[name] = self.id_list(node, key)
            else:
                extra[key.value] = _as_text(node)
                self.unknown_key(key, LEDGER_KEYS, keyword)
        return LedgerBlock(
            claims=claims,
            premises_for_plan=lists["premises_for_plan"],
            open_questions=lists["open_questions"],
            done_when=lists["done_when"],
            extra=extra,
            span=span,
        )

    def claims(self, node: _Node, where: _Pos) -> list[ClaimBlock]:
        if node is None:
            return []
        if not isinstance(node, _Seq):
            self.note(
                node.pos,
                "claims must be a list of claims",
                expected=["a list of '- id: …' entries"],
                text=_as_text(node),
            )
            return []
        out: list[ClaimBlock] = []
        for item in node.items:
            if not isinstance(item, _Map):
                self.note(
                    _node_pos(item, where),
                    "each claim must be a mapping that starts with id:",
                    expected=["id: <claim id>"],
                    text=_as_text(item),
                )
                continue
            claim = self.claim(item)
            if claim is not None:
                out.append(claim)
        return out

    def claim(self, mapping: _Map) -> ClaimBlock | None:
        fields: dict[str, str | None] = {}
        extra: dict[str, str] = {}
        seen: set[str] = set()
        id_node: _Scalar | None = None
        places: dict[str, _Pos] = {}
        for key, node in mapping.pairs:
            name = key.value
            if name not in CLAIM_KEYS:
                extra[name] = _as_text(node)
                self.unknown_key(key, CLAIM_KEYS, "a claim")
                continue
            self.check_duplicate(name, key, seen)
            fields[name] = self.single(node, key)
            places[name] = _node_pos(node, key.pos)
            if name == "id" and isinstance(node, _Scalar):
                id_node = node
        claim_id = fields.get("id")
        if claim_id is None or id_node is None:
            self.note(mapping.pos, "claim without an id", expected=["id: <claim id>"])
            return None
        if not self.check_id(claim_id, id_node.pos):
            return None
        status = fields.get("status")
        if (
            status is not None
            and InfoMark.parse(status) is InfoMark.UNKNOWN
            and status.strip().lower() != "unknown"
        ):
            self.note(
                mapping.pos,
                f"unrecognised status {_short(status)!r} on claim {claim_id}; it counts as Unknown",
                severity="warning",
                expected=[m.label for m in sorted(InfoMark, reverse=True)],
                text=status,
            )
        expect = self.expectation(fields.get("expect"), places.get("expect", mapping.pos), claim_id)
        return ClaimBlock(
            id=claim_id,
            text=fields.get("text"),
            status=status,
            falsifier=fields.get("falsifier"),
            oracle=fields.get("oracle"),
            expect=expect,
            observe=fields.get("observe"),
            reason=fields.get("reason"),
            evidence=fields.get("evidence"),
            extra=extra,
            span=_span(mapping.pos),
        )

    def expectation(
        self, value: str | None, pos: _Pos, claim_id: str
    ) -> Literal["PASS", "FAIL"] | None:
        if value is None:
            return None
        word = value.strip().upper()
        for known in EXPECTATIONS:
            if word == known:
                return known
        self.note(
            pos,
            f"expect {_short(value)!r} on claim {claim_id} is not PASS or FAIL; "
            "write expect: FAIL for a claim that its oracle fails, or leave it out",
            expected=list(EXPECTATIONS),
            text=value,
        )
        return None

    def id_list(self, node: _Node, key: _Scalar) -> list[str]:
        if node is None:
            return []
        items: list[_Node] = node.items if isinstance(node, _Seq) else [node]
        out: list[str] = []
        for item in items:
            if not isinstance(item, _Scalar):
                self.note(
                    _node_pos(item, key.pos),
                    f"{key.value} must list claim ids",
                    expected=["[C1, C2]", "a '- C1' list"],
                    text=_as_text(item),
                )
                continue
            if self.check_id(item.value, item.pos, hint=f"; write a list as {key.value}: [C1, C2]"):
                out.append(item.value)
        return out

    # -- stamps

    def stamp(
        self, keyword: str, body: _Node | _Legacy, where: _Pos, span: Span
    ) -> StampBlock | DivergenceBlock | None:
        known = DIVERGENCE_KEYS if keyword == "divergence_event" else STAMP_KEYS[keyword]
        values: dict[str, str | None] = {}
        extra: dict[str, str] = {}
        legacy = isinstance(body, _Legacy)
        if isinstance(body, _Legacy):
            limit = {"oracle_stamp": 2, "inference_stamp": 1}.get(keyword, 0)
            if len(body.words) > limit:
                word = body.words[limit]
                self.note(
                    word.pos,
                    f"unexpected {_short(word.value)!r}: {keyword} takes key=value pairs",
                    expected=["claim_id=<id> evidence_ref=<ev_…>"],
                    text=word.value,
                )
                return None
            values["claim_id"] = body.words[0].value
            id_pos = body.words[0].pos
            if len(body.words) == 2:
                values["result"] = body.words[1].value
            result_pos = body.words[-1].pos
        elif isinstance(body, _Map):
            seen: set[str] = set()
            id_pos = result_pos = authority_pos = where
            for key, node in body.pairs:
                if key.value not in known:
                    extra[key.value] = _as_text(node)
                    self.unknown_key(key, known, keyword)
                    continue
                self.check_duplicate(key.value, key, seen)
                values[key.value] = self.single(node, key)
                if key.value == "claim_id":
                    id_pos = _node_pos(node, key.pos)
                elif key.value == "result":
                    result_pos = _node_pos(node, key.pos)
                elif key.value == "authority":
                    authority_pos = _node_pos(node, key.pos)
        else:
            self.note(where, f"{keyword} needs claim_id and evidence_ref", expected=["claim_id="])
            return None
        claim_id = values.get("claim_id")
        if claim_id is None:
            self.note(where, f"{keyword} without claim_id", expected=["claim_id=<claim id>"])
            return None
        if not self.check_id(claim_id, id_pos):
            return None
        if keyword == "divergence_event":
            return DivergenceBlock(
                claim_id=claim_id, evidence_ref=values.get("evidence_ref"), extra=extra, span=span
            )
        result = values.get("result")
        if result is not None:
            if result.upper() in RESULTS:
                result = result.upper()
            else:
                self.note(
                    result_pos,
                    f"result {_short(result)!r} is not PASS, FAIL or EXPECTED_FAIL",
                    severity="warning",
                    expected=sorted(RESULTS),
                    text=result,
                )
        authority = values.get("authority")
        if authority is not None:
            if authority.lower() in AUTHORITIES:
                authority = authority.lower()
            else:
                self.note(
                    authority_pos,
                    f"authority {_short(authority)!r} is not primary or secondary",
                    severity="warning",
                    expected=list(AUTHORITIES),
                    text=authority,
                )
        return StampBlock(
            kind=cast(StampKind, keyword),
            claim_id=claim_id,
            evidence_ref=values.get("evidence_ref"),
            result=result,
            layer=values.get("layer"),
            artifact=values.get("artifact"),
            content_hash=values.get("content_hash"),
            authority=authority,
            legacy=legacy,
            extra=extra,
            span=span,
        )

    # -- gate

    def gate(
        self, body: _Node | _Legacy, reason: _Scalar | None, where: _Pos, span: Span
    ) -> GateBlock | None:
        value = body.value.strip() if isinstance(body, _Scalar) else ""
        gate = value.upper()
        if gate not in GATE_NAMES:
            self.note(
                _node_pos(body, where),
                f"unknown gate {_short(value)!r}",
                expected=["G0..G9", "SUCCESS", "BLOCKED", "OUT_OF_SCOPE", "WAITING_APPROVAL"],
                text=value,
            )
            return None
        return GateBlock(gate=gate, reason=None if reason is None else reason.value, span=span)

    # -- question

    def question(self, body: _Node | _Legacy, where: _Pos, span: Span) -> QuestionBlock | None:
        if not isinstance(body, _Scalar):  # the grammar admits only a scalar
            self.note(where, "question takes one value", expected=['question: "…"'])
            return None
        return QuestionBlock(text=body.value, span=span)

    # -- shared checks

    def single(self, node: _Node, key: _Scalar) -> str | None:
        if node is None or isinstance(node, _Scalar):
            return None if node is None else node.value
        self.note(
            node.pos,
            f"{key.value} must be a single value, not a list or mapping",
            expected=["a value"],
            text=_as_text(node),
        )
        return None

    def check_id(self, claim_id: str, pos: _Pos, hint: str = "") -> bool:
        if CLAIM_ID_PATTERN.fullmatch(claim_id) is not None:
            return True
        self.note(
            pos,
            f"invalid claim id {_short(claim_id)!r}: ids use only letters, digits, "
            f"'_', '.' and '-'{hint}",
            expected=["a claim id matching [A-Za-z0-9_.-]+"],
            text=claim_id,
        )
        return False

    def check_duplicate(self, name: str, key: _Scalar, seen: set[str]) -> None:
        if name in seen:
            self.note(
                key.pos,
                f"duplicate key {key.value!r}; the last one counts",
                severity="warning",
                text=key.value,
            )
        seen.add(name)

    def unknown_key(self, key: _Scalar, known: Iterable[str], where: str) -> None:
        why = "unknown key"
        if key.value == "result" and where == "inference_stamp":
            why = "result is only meaningful on oracle_stamp; unknown key"
        self.note(
            key.pos,
            f"{why} {_short(key.value)!r} in {where} (kept in extra)",
            severity="warning",
            expected=list(known),
            text=key.value,
        )
