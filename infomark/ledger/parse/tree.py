"""Tree building: the nodes a block's parse becomes, one builder per rule of ``blocks.lark``.

:func:`infomark.ledger.parse.lalr.parse` runs the grammar's LALR tables over the
scanner's tokens and calls the builder in :data:`RULES` of every rule it reduces. They turn
the tree into plain nodes (:class:`Scalar`, :class:`Seq`, :class:`Map`, …) that carry
their positions in the message.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the hook path never imports typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, ClassVar

__all__ = ["RULES", "Legacy", "Map", "Node", "Pos", "Scalar", "Seq", "Top"]

Pos = tuple[int, int, int, int]  # line, column, end_line, end_column


class _Node:
    """Equality and repr by fields, as the dataclasses these were (plain classes: a hook
    process that parses a block defines them, and a record class costs ~10× more)."""

    __slots__ = ()
    _FIELDS: ClassVar[tuple[str, ...]] = ()  # in declaration order

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, _Node)
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS)
        return f"{type(self).__name__}({inner})"


class Scalar(_Node):
    __slots__ = ("pos", "value")
    _FIELDS = ("value", "pos")

    def __init__(self, value: str, pos: Pos) -> None:
        self.value = value
        self.pos = pos


class Seq(_Node):
    __slots__ = ("items", "pos")
    _FIELDS = ("items", "pos")

    def __init__(self, items: list[Node], pos: Pos) -> None:
        self.items = items
        self.pos = pos


class Map(_Node):
    __slots__ = ("pairs", "pos")
    _FIELDS = ("pairs", "pos")

    def __init__(self, pairs: list[tuple[Scalar, Node]], pos: Pos) -> None:
        self.pairs = pairs
        self.pos = pos


class Legacy(_Node):
    __slots__ = ("pos", "words")
    _FIELDS = ("words", "pos")

    def __init__(self, words: list[Scalar], pos: Pos) -> None:
        self.words = words
        self.pos = pos


class Top(_Node):
    __slots__ = ("body", "keyword", "pos", "reason")
    _FIELDS = ("keyword", "pos", "body", "reason")

    def __init__(
        self, keyword: str, pos: Pos, body: Node | Legacy, reason: Scalar | None = None
    ) -> None:
        self.keyword = keyword
        self.pos = pos
        self.body = body
        self.reason = reason  # gate: BLOCKED reason="…"


Node = Scalar | Seq | Map | None


def _token_pos(token: Any) -> Pos:
    return (token.line, token.column, token.end_line, token.end_column)


def _rule_top(children: list[Any], pos: Pos) -> Top:
    return Top(str(children[0]), pos, children[1])


def _rule_gate(children: list[Any], pos: Pos) -> Top:
    reason = children[2] if len(children) > 2 else None
    return Top(str(children[0]), pos, children[1], reason)


def _rule_pair(children: list[Any], pos: Pos) -> tuple[Scalar, Node]:
    key = children[0]
    return Scalar(str(key), _token_pos(key)), (children[1] if len(children) > 1 else None)


RULES: dict[str, Callable[[list[Any], Pos], Any]] = {
    "start": lambda children, pos: children[0],
    "ledger": _rule_top,
    "stamp": _rule_top,
    "divergence": _rule_top,
    "gate": _rule_gate,
    "question": _rule_top,
    "object": lambda children, pos: Top("object", pos, children[0]),
    "mapping": lambda children, pos: Map(children, pos),
    "inline": lambda children, pos: Map(children, pos),
    "flow_map": lambda children, pos: Map(children, pos),
    "pair": _rule_pair,
    "inline_pair": _rule_pair,
    "flow_pair": _rule_pair,
    "legacy": lambda children, pos: Legacy(children, pos),
    "sequence": lambda children, pos: Seq(children, pos),
    "flow_seq": lambda children, pos: Seq(children, pos),
    "item": lambda children, pos: children[0],
    "null": lambda children, pos: None,
    "scalar": lambda children, pos: Scalar(str(children[0]), _token_pos(children[0])),
}
"""One builder per grammar rule (and alias) of blocks.lark: ``(children, span) → node``;
the driver's ``builders``."""
