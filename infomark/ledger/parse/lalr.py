"""The LALR(1) driver: the scanner's tokens → tree nodes, over the tables of ``blocks.lark``.

lark builds the tables at development time (``scripts/gen_parse_table.py`` writes
:mod:`infomark.ledger.parse.table`, as literals); this module runs them with the standard
library, so a process that parses a block never imports lark (its import and grammar build
cost more than the parse itself, every hook process). It does what lark's LALR parser does
with ``propagate_positions=True`` and a transformer: the same shift / reduce loop, the same
filtering of ``_``-terminals, inlining of ``_``-rules and ``?``-rules, aliases, the same
node positions (a node spans its first to its last child, filtered tokens included; a node
reached through ``?``-rules is built with its own span, and the rules above it see the span
widened to theirs) and the same syntax error (the token and the terminals the state
expected). ``tests/ledger/test_parse_lalr.py`` drives lark itself and this module side by
side.
"""

from __future__ import annotations

from infomark.ledger.parse.table import END_STATE, RULES, START_STATE, STATES

TYPE_CHECKING = False  # not typing's: the hook path never imports typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    Span = tuple[int, int, int, int]  # line, column, end_line, end_column

__all__ = ["Token", "UnexpectedToken", "parse"]


class Token:
    """A terminal: its type, its (already unescaped) value, its place in the message."""

    __slots__ = ("column", "end_column", "end_line", "line", "type", "value")

    def __init__(
        self,
        type_: str,
        value: str,
        start_pos: int | None = None,
        line: int = 1,
        column: int = 1,
        end_line: int = 1,
        end_column: int = 1,
    ) -> None:
        self.type = type_
        self.value = value
        self.line = line
        self.column = column
        self.end_line = end_line
        self.end_column = end_column

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {self.value!r}, {self.line}:{self.column})"


class UnexpectedToken(Exception):
    """The grammar admits no ``token`` here; ``expected`` are the terminals it would take."""

    def __init__(self, token: Token, expected: set[str]) -> None:
        super().__init__(f"unexpected {token.type} at {token.line}:{token.column}")
        self.token = token
        self.expected = expected
        self.line = token.line
        self.column = token.column


_INLINED, _HELPER = 1, 2  # the modes of RULES (0: build a node)
_NO_SPAN = (1, 1, 1, 1)  # what lark gives a node that spans nothing


def _outer(spans: Sequence[Span | None]) -> Span | None:
    """From the first to the last span that is not empty (None: all are)."""
    present = [span for span in spans if span is not None]
    if not present:
        return None
    return (present[0][0], present[0][1], present[-1][2], present[-1][3])


def parse(tokens: Sequence[Token], builders: Mapping[str, Callable[[list[Any], Span], Any]]) -> Any:
    """Run the tables over ``tokens``; ``builders[rule](children, span)`` makes each node.

    Raises :class:`UnexpectedToken` at the first token the grammar does not admit (the
    end of input is a ``$END`` token at the last token's position).
    """
    if tokens:
        last = tokens[-1]
        end = Token("$END", "", None, last.line, last.column, last.end_line, last.end_column)
    else:
        end = Token("$END", "", None, 1, 1, 1, 1)
    states = STATES
    rules = RULES
    stack = [START_STATE]
    values: list[Any] = []  # a token, a node, or a helper rule's list of children
    spans: list[Span | None] = []  # what each value spans (None: nothing)
    for token in (*tokens, end):
        kind = token.type
        while True:
            actions = states[stack[-1]]
            action = actions.get(kind)
            if action is None:
                raise UnexpectedToken(token, {s for s in actions if s.isupper()})
            if action >= 0:
                if kind == "$END":  # cannot happen: the end is only ever reduced on
                    raise UnexpectedToken(token, set())
                stack.append(action)
                values.append(token)
                spans.append((token.line, token.column, token.end_line, token.end_column))
                break
            name, origin, mode, size, plan = rules[~action]
            if size == 1:  # most reductions: the one item's span is the span
                del stack[-1]
                if mode == _INLINED:  # a ?rule over one child: only the state changes
                    stack.append(states[stack[-1]][origin])
                    if kind == "$END" and stack[-1] == END_STATE:
                        return values[-1]
                    continue
                raw = [values.pop()]
                span = spans.pop()
            else:
                raw = values[-size:]
                raw_spans = spans[-size:]
                del stack[-size:]
                del values[-size:]
                del spans[-size:]
                first, last_span = raw_spans[0], raw_spans[-1]
                if first is None or last_span is None:
                    span = _outer(raw_spans)
                else:
                    span = (first[0], first[1], last_span[2], last_span[3])
            if plan is None:
                kept = raw
            else:
                kept = []
                for what, value in zip(plan, raw, strict=True):
                    if what == "i":
                        kept.extend(value)
                    elif what != "d":
                        kept.append(value)
            if mode == _INLINED:  # a ?rule: its one child, seen from here with this span
                value = kept[0]
            elif mode == _HELPER:  # x+ / x*: its children join the parent's
                value = kept
            else:
                value = builders[name](kept, _NO_SPAN if span is None else span)
            stack.append(states[stack[-1]][origin])
            values.append(value)
            spans.append(span)
            if kind == "$END" and stack[-1] == END_STATE:
                return value
