"""Tree building: the nodes a block's parse becomes, one builder per rule of ``blocks.lark``.

:func:`infomark.ledger.parse_lalr.parse` runs the grammar's LALR tables over the
scanner's tokens and calls the builder in :data:`RULES` of every rule it reduces. They turn
the tree into plain nodes (:class:`Scalar`, :class:`Seq`, :class:`Map`, …) that carry
their positions in the message.
"""

from __future__ import annotations

from infomark.kernel.records import dataclass

TYPE_CHECKING = False  # not typing's: the hook path never imports typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["RULES", "Legacy", "Map", "Node", "Pos", "Scalar", "Seq", "Top"]

Pos = tuple[int, int, int, int]  # line, column, end_line, end_column


@dataclass(slots=True)
class Scalar:
    value: str
    pos: Pos


@dataclass(slots=True)
class Seq:
    items: list[Node]
    pos: Pos


@dataclass(slots=True)
class Map:
    pairs: list[tuple[Scalar, Node]]
    pos: Pos


@dataclass(slots=True)
class Legacy:
    words: list[Scalar]
    pos: Pos


@dataclass(slots=True)
class Top:
    keyword: str
    pos: Pos
    body: Node | Legacy
    reason: Scalar | None = None  # gate: BLOCKED reason="…"


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
