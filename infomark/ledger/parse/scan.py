"""Scanner, part 2: one candidate block's lines → the token stream ``blocks.lark`` parses.

An indenter emits ``_INDENT`` / ``_DEDENT`` / ``_NL``; keyword lines, block
mappings and sequences, inline stamp pairs, gate reasons and flow collections
are tokenised here, scalars by :class:`~infomark.ledger.parse.scalars.ScalarReader`.
The structure itself (which keyword takes which body) is decided by the grammar.
"""

from __future__ import annotations

from infomark.ledger.blocks import is_key
from infomark.ledger.parse.diagnose import Problem
from infomark.ledger.parse.locate import (
    block_scalar_header,
    column_width,
    indent_width,
    key_at,
    keyword_at,
)
from infomark.ledger.parse.scalars import ScalarReader, is_dash, skip_ws

TYPE_CHECKING = False  # not typing's: the hook path never imports typing
if TYPE_CHECKING:
    from infomark.ledger.parse.lalr import Token

__all__ = ["MAX_DEPTH", "Tokenizer"]

MAX_DEPTH = 32
"""Deepest nesting of indentation levels or flow collections a block may use."""

_KEYWORD_TOKENS = {
    "claim_ledger": "LEDGER",
    "oracle_stamp": "STAMP",
    "inference_stamp": "STAMP",
    "source_stamp": "STAMP",
    "divergence_event": "DIVERGENCE",
    "gate": "GATE",
    "question": "QUESTION",
}
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


def _key_end(text: str, i: int, end: int) -> int:
    """Where a key ending in ``=`` or ``:`` stops in ``text[i:end]``; ``end`` if none does.

    The longest key at ``i`` is followed by ``=`` or ``:`` exactly when all of the text
    before the first of them is a key (neither is a key character).
    """
    equals = text.find("=", i, end)
    colon = text.find(":", i, end)
    sep = colon if equals == -1 or (colon != -1 and colon < equals) else equals
    if sep == -1 or not is_key(text[i:sep]):
        return end
    return sep


class Tokenizer(ScalarReader):
    """Turns one candidate block into the tokens ``blocks.lark`` parses."""

    def run(self) -> list[Token]:
        text = self.lines[0]
        keyword = self.keyword
        base = indent_width(text)[0]
        if self.form == "object":
            self.emit("_OBJECT", "", 0, self.start, 0, self.start)
            k, i = self.flow(0, self.start)
            self.structure(self.line_end(k, i), base)
            return self.tokens
        found = keyword_at(text, self.start, quoted=True)
        if found is None or found[0] != keyword:  # locate found it; this cannot happen
            raise self.problem(0, self.start, f"expected {keyword}:", [f"{keyword}:"])
        key = found[1]
        self.emit(_KEYWORD_TOKENS[keyword], keyword, 0, self.start, 0, key.colon)
        self.emit("_COLON", ":", 0, key.colon, 0, key.colon + 1)
        v = skip_ws(text, key.after)
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
            while is_dash(text, c):
                self.emit("_DASH", "-", j, c, j, c + 1)
                owner = column_width(text, c)
                after = skip_ws(text, c + 1)
                if after >= len(text) or text[after] == "#":
                    c = len(text)
                    break
                if is_dash(text, after) or self.key_here(j, after) is not None:
                    self.push(stack, column_width(text, after), j, after)
                c = after
            if c >= len(text):
                self.mark("_NL")
                j += 1
                continue
            key = self.key_here(j, c)
            if key is None:
                j = self.value(j, c, owner)
                continue
            name, start, end, colon, after = key
            self.emit("KEY", name, j, start, j, end)
            self.emit("_COLON", ":", j, colon, j, colon + 1)
            j = self.value(j, skip_ws(text, after), column_width(text, c))
        while len(stack) > 1:
            stack.pop()
            self.mark("_DEDENT")

    def key_here(self, j: int, c: int) -> tuple[str, int, int, int, int] | None:
        """A key at ``(j, c)``: bare, decorated (``**id**:``) or quoted (``"id":``).

        Returns (name, name start, name end, colon index, index past the colon).
        """
        text = self.lines[j]
        if c < len(text) and text[c] in "\"'":
            return self.quoted_key(j, c)
        key = key_at(text, c)
        if key is None:
            return None
        return key.name, key.start, key.start + len(key.name), key.colon, key.after

    def quoted_key(self, j: int, c: int) -> tuple[str, int, int, int, int] | None:
        """A quoted key (JSON / YAML object style) closed on its own line and followed by ``:``."""
        text = self.lines[j]
        try:
            _, name, k, i = self.quoted(j, c, one_line=True)
        except Problem:
            return None  # not a key; the value reader reports the quote
        colon = skip_ws(text, i) if k == j else len(text)
        if colon >= len(text) or text[colon] != ":":
            return None
        if colon + 1 < len(text) and text[colon + 1] not in " \t\"'[{":
            return None
        if not is_key(name):
            raise self.problem(
                j, c, f"{name!r} is not a valid key", ["a key matching [A-Za-z_][A-Za-z0-9_.-]*"]
            )
        return name, c, i, colon, colon + 1

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
            kind, value, k, i = self.quoted(j, v, owner)
            self.emit(kind, value, j, v, k, i)
            return self.line_end(k, i)
        header = block_scalar_header(text[v:])
        if header is not None:
            return self.block_scalar(j, v, owner, header)
        return self.plain(j, v, owner)

    def line_end(self, j: int, i: int) -> int:
        """After a closed quote or collection: only a comment may follow on the line."""
        text = self.lines[j]
        i = skip_ws(text, i)
        if i < len(text) and text[i] != "#":
            rest = text[i:].rstrip(" \t")
            self.emit("PLAIN", rest, j, i, j, i + len(rest))  # the grammar reports it
        self.mark("_NL")
        return j + 1

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
        r = skip_ws(text, end)
        sep = _reason_separator(text, r)
        if sep is None:
            return self.line_end(0, end)  # a comment, or text the grammar reports
        self.emit("_REASON", text[r:sep], 0, r, 0, sep)
        s = skip_ws(text, sep)
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
                    kind, value, k2, i2 = self.quoted(k, i, self.base)
                    self.emit(kind, value, k, i, k2, i2)
                    expect_value = False
                    k, i = k2, i2
                    text = self.lines[k]
                    continue
                end = i
                while end < len(text) and text[end] not in " \t":
                    end += 1
                sep = _key_end(text, i, end)
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
                    k, i = self.flow_quoted(k, i)
                    text = self.lines[k]
                else:
                    i = self.flow_plain(k, i)
            k += 1
            i = 0
            if k >= len(self.lines):
                raise self.problem(j, c, "unclosed flow collection", [f"a closing '{closers[-1]}'"])

    def flow_quoted(self, k: int, i: int) -> tuple[int, int]:
        """A quoted scalar in a flow collection; a key (JSON style) when ``:`` follows it."""
        kind, value, k2, i2 = self.quoted(k, i)
        text = self.lines[k2]
        after = skip_ws(text, i2)
        if after < len(text) and text[after] == ":":
            if not is_key(value):
                raise self.problem(
                    k,
                    i,
                    f"{value!r} is not a valid key",
                    ["a key matching [A-Za-z_][A-Za-z0-9_.-]*"],
                )
            self.emit("KEY", value, k, i, k2, i2)
            self.emit("_COLON", ":", k2, after, k2, after + 1)
            return k2, after + 1
        self.emit(kind, value, k, i, k2, i2)
        return k2, i2

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
            if not is_key(value):
                raise self.problem(
                    k,
                    start,
                    f"{value!r} is not a valid key",
                    ["a key matching [A-Za-z_][A-Za-z0-9_.-]*"],
                )
            self.emit("KEY", value, k, start, k, end)
            self.emit("_COLON", ":", k, i, k, i + 1)
            return i + 1
        if self.form == "object" and value == "null" and self.tokens[-1].type == "_COLON":
            return i  # JSON null: the pair has no value
        self.emit("PLAIN", value, k, start, k, end)
        return i
