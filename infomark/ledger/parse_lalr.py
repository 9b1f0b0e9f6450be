"""The LALR(1) driver: the scanner's tokens → tree nodes, over the tables of ``blocks.lark``.

lark builds the tables at development time (``scripts/gen_parse_table.py`` writes
:mod:`infomark.ledger.parse_table`); this module runs them with the standard library, so a
process that parses a block never imports lark (its import and grammar build cost more than
the parse itself, every hook process). It does what lark's LALR parser does with
``propagate_positions=True`` and a transformer: the same shift / reduce loop, the same
filtering of ``_``-terminals, inlining of ``_``-rules and ``?``-rules, aliases, the same
node positions (a node spans its first to its last child, filtered tokens included) and the
same syntax error (the token and the terminals the state expected).
``tests/ledger/test_parse_lalr.py`` drives lark itself and this module side by side.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the hook path never imports typing
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    # one reduce rule: (origin, alias or "", expand1, symbol kinds "kdci", symbol names)
    _Rule = tuple[str, str, bool, str, tuple[str, ...]]
    _Item = tuple[int, Any, Any]  # (kind, value, meta): kind 0 token, 1 node, 2 helper
    _Tables = tuple[tuple[_Rule, ...], tuple[dict[str, int], ...], int, int]

__all__ = ["Meta", "Token", "UnexpectedToken", "parse"]


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


class Meta:
    """A node's span, and the span of the children it was inlined from (lark's containers)."""

    __slots__ = (
        "column",
        "container_column",
        "container_end_column",
        "container_end_line",
        "container_line",
        "empty",
        "end_column",
        "end_line",
        "line",
    )

    def __init__(self) -> None:
        self.empty = True
        self.line: int | None = None
        self.column = 0
        self.end_line: int | None = None
        self.end_column = 0
        self.container_line: int | None = None
        self.container_column = 0
        self.container_end_line: int | None = None
        self.container_end_column = 0

    def pos(self) -> tuple[int, int, int, int]:
        """(line, column, end_line, end_column); 1:1 for a node that spans nothing."""
        if self.empty or self.line is None or self.end_line is None:
            return (1, 1, 1, 1)
        return (self.line, self.column, self.end_line, self.end_column)


class UnexpectedToken(Exception):
    """The grammar admits no ``token`` here; ``expected`` are the terminals it would take."""

    def __init__(self, token: Token, expected: set[str]) -> None:
        super().__init__(f"unexpected {token.type} at {token.line}:{token.column}")
        self.token = token
        self.expected = expected
        self.line = token.line
        self.column = token.column


_TOKEN, _NODE, _HELPER = 0, 1, 2

_TABLES: _Tables | None = None


def _tables() -> _Tables:
    """The generated tables, decoded once per process (~0.1 ms)."""
    global _TABLES
    if _TABLES is None:
        from infomark.ledger import parse_table as t

        rules = []
        for text in t.RULES:
            origin, alias, expand, *symbols = text.split(" ")
            kinds = "".join(s[0] for s in symbols)
            names = tuple(s[2:] for s in symbols)
            rules.append((origin, alias, expand == "1", kinds, names))
        states = []
        for text in t.STATES:
            actions: dict[str, int] = {}
            for part in text.split():
                symbol, _, target = part.rpartition(":")
                actions[symbol] = ~int(target[1:]) if target[0] == "~" else int(target)
            states.append(actions)
        _TABLES = (tuple(rules), tuple(states), t.START_STATE, t.END_STATE)
    return _TABLES


def _first(items: Sequence[_Item], backwards: bool) -> Any:
    """The meta (or token) a node's start (end) comes from: lark's ``_pp_get_meta``."""
    for kind, _value, meta in reversed(items) if backwards else items:
        if kind == _TOKEN or not meta.empty:
            return meta
    return None


def _positions(meta: Meta, raw: Sequence[_Item]) -> None:
    """lark's ``PropagatePositions``: a node spans the containers of its first and last child."""
    first = _first(raw, False)
    if first is not None:
        if isinstance(first, Meta):
            line, column = first.container_line, first.container_column
        else:
            line, column = first.line, first.column
        if meta.line is None:
            meta.line, meta.column, meta.empty = line, column, False
        meta.container_line, meta.container_column = line, column
    last = _first(raw, True)
    if last is not None:
        if isinstance(last, Meta):
            end_line, end_column = last.container_end_line, last.container_end_column
        else:
            end_line, end_column = last.end_line, last.end_column
        if meta.end_line is None:
            meta.end_line, meta.end_column, meta.empty = end_line, end_column, False
        meta.container_end_line, meta.container_end_column = end_line, end_column


def _reduce(rule: _Rule, raw: list[_Item], build: Callable[[str, list[Any], Meta], Any]) -> _Item:
    origin, alias, expand1, kinds, _names = rule
    kept: list[_Item] = []
    for kind, item in zip(kinds, raw, strict=True):
        if kind == "d":
            continue
        if kind == "i":
            kept.extend(item[1])
        else:
            kept.append(item)
    if expand1 and not alias and len(kept) == 1:
        result = kept[0]
        if result[0] == _NODE:  # an inlined ?rule: the child, its container widened
            _positions(result[2], raw)
        return result
    meta = Meta()
    _positions(meta, raw)
    if origin.startswith("_"):  # a helper rule (x+, x*): its children join the parent's
        return (_HELPER, kept, meta)
    return (_NODE, build(alias or origin, [value for _kind, value, _meta in kept], meta), meta)


def parse(tokens: Sequence[Token], build: Callable[[str, list[Any], Meta], Any]) -> Any:
    """Run the tables over ``tokens``; ``build(rule, children, meta)`` makes each node.

    Raises :class:`UnexpectedToken` at the first token the grammar does not admit (the
    end of input is a ``$END`` token at the last token's position).
    """
    rules, states, start, end = _tables()
    stack = [start]
    values: list[_Item] = []
    last: Token | None = None
    for token in (*tokens, None):
        if token is None:
            if last is None:
                token = Token("$END", "", None, 1, 1, 1, 1)
            else:
                token = Token(
                    "$END", "", None, last.line, last.column, last.end_line, last.end_column
                )
        else:
            last = token
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
                values.append((_TOKEN, token, token))
                break
            rule = rules[~action]
            size = len(rule[3])
            raw = values[-size:] if size else []
            if size:
                del stack[-size:]
                del values[-size:]
            item = _reduce(rule, raw, build)
            stack.append(states[stack[-1]][rule[0]])
            values.append(item)
            if kind == "$END" and stack[-1] == end:
                return values[-1][1]
