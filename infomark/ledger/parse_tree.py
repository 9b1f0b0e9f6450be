"""Tree building: the LALR grammar ``blocks.lark`` over the scanner's tokens, into nodes.

lark and the grammar load once, lazily, on the first block that needs them
(:func:`machinery`), with a lexer that replays the pre-pass tokens, as lark
recommends for an external tokenizer. One small builder per grammar rule turns
the tree into plain nodes (:class:`Scalar`, :class:`Seq`, :class:`Map`, …) that
carry their positions in the message.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

from infomark.kernel.records import dataclass

if TYPE_CHECKING:
    from lark import Lark, Token, Transformer

__all__ = ["Legacy", "Machinery", "Map", "Node", "Pos", "Scalar", "Seq", "Top", "machinery"]

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


@dataclass(frozen=True, slots=True)
class Machinery:
    parser: Lark
    transformer: Transformer[Token, Any]
    token: type[Token]
    unexpected_input: type[Exception]
    visit_error: type[Any]


@functools.cache
def machinery() -> Machinery:
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
    return Machinery(parser, _ToNodes(), Token, UnexpectedInput, VisitError)


def _token_pos(token: Any) -> Pos:
    return (token.line, token.column, token.end_line, token.end_column)


def _meta_pos(meta: Any) -> Pos:
    if getattr(meta, "empty", True):
        return (1, 1, 1, 1)
    return (meta.line, meta.column, meta.end_line, meta.end_column)


def _rule_top(children: list[Any], meta: Any) -> Top:
    return Top(str(children[0]), _meta_pos(meta), children[1])


def _rule_gate(children: list[Any], meta: Any) -> Top:
    reason = children[2] if len(children) > 2 else None
    return Top(str(children[0]), _meta_pos(meta), children[1], reason)


def _rule_pair(children: list[Any], meta: Any) -> tuple[Scalar, Node]:
    key = children[0]
    return Scalar(str(key), _token_pos(key)), (children[1] if len(children) > 1 else None)


_RULES: dict[str, Callable[[list[Any], Any], Any]] = {
    "start": lambda children, meta: children[0],
    "ledger": _rule_top,
    "stamp": _rule_top,
    "divergence": _rule_top,
    "gate": _rule_gate,
    "question": _rule_top,
    "object": lambda children, meta: Top("object", _meta_pos(meta), children[0]),
    "mapping": lambda children, meta: Map(children, _meta_pos(meta)),
    "inline": lambda children, meta: Map(children, _meta_pos(meta)),
    "flow_map": lambda children, meta: Map(children, _meta_pos(meta)),
    "pair": _rule_pair,
    "inline_pair": _rule_pair,
    "flow_pair": _rule_pair,
    "legacy": lambda children, meta: Legacy(children, _meta_pos(meta)),
    "sequence": lambda children, meta: Seq(children, _meta_pos(meta)),
    "flow_seq": lambda children, meta: Seq(children, _meta_pos(meta)),
    "item": lambda children, meta: children[0],
    "null": lambda children, meta: None,
    "scalar": lambda children, meta: Scalar(str(children[0]), _token_pos(children[0])),
}
"""One builder per grammar rule (and alias) of blocks.lark."""
