"""The standard-library LALR driver is lark's parser: same tables, same trees, same errors.

The parser runs the tables ``scripts/gen_parse_table.py`` generates from ``blocks.lark``
(``infomark/ledger/parse/table.py``) with its own driver, so no process that parses a
block imports lark. Here lark itself is the reference: it builds the grammar from
``blocks.lark`` (with a lexer that replays the scanner's tokens, as the parser did before
the tables) and the same node builders; on every generated input both must build equal
nodes, or fail at the same token with the same expected terminals.
"""

from __future__ import annotations

import functools
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lark import Lark, Transformer
from lark import Token as LarkToken
from lark.exceptions import UnexpectedInput
from lark.lexer import Lexer, LexerState

from infomark.ledger.parse.diagnose import Problem
from infomark.ledger.parse.lalr import Token, UnexpectedToken, parse
from infomark.ledger.parse.locate import Candidate, locate
from infomark.ledger.parse.parser import parse_message
from infomark.ledger.parse.scan import Tokenizer
from infomark.ledger.parse.tree import RULES
from infomark.ledger.render import render_block
from tests.ledger.test_parser_properties import BLOCKS, NOISE, WRAPPERS

ROOT = Path(__file__).resolve().parents[2]
TERMINALS = [
    *("LEDGER", "STAMP", "DIVERGENCE", "GATE", "QUESTION", "KEY", "IKEY", "PLAIN", "DQ", "SQ"),
    *("BLOCK", "_OBJECT", "_COLON", "_REASON", "_NL", "_INDENT", "_DEDENT", "_DASH", "_LSQB"),
    *("_RSQB", "_LBRACE", "_RBRACE", "_COMMA"),
]


@functools.cache
def reference() -> tuple[Lark, Transformer[Any, Any]]:
    class Replay(Lexer):
        __future_interface__ = 2

        def __init__(self, lexer_conf: object) -> None:
            pass

        def lex(self, lexer_state: LexerState, parser_state: object) -> Iterator[Any]:
            return iter(lexer_state.text)  # type: ignore[arg-type]

    class ToNodes(Transformer[Any, Any]):
        def __default__(self, data: Any, children: list[Any], meta: Any) -> Any:
            if getattr(meta, "empty", True):
                pos = (1, 1, 1, 1)
            else:
                pos = (meta.line, meta.column, meta.end_line, meta.end_column)
            return RULES[str(data)](children, pos)

    grammar = (ROOT / "infomark" / "ledger" / "parse" / "blocks.lark").read_text(encoding="utf-8")
    lark = Lark(grammar, parser="lalr", lexer=Replay, propagate_positions=True, strict=True)
    return lark, ToNodes()


def by_lark(tokens: list[Any]) -> tuple[str, Any]:
    lark, to_nodes = reference()
    try:
        return "tree", to_nodes.transform(lark.parse(tokens))  # type: ignore[arg-type]
    except UnexpectedInput as exc:
        token = exc.token  # type: ignore[attr-defined]
        where = (token.type, token.value, token.line, token.column)
        return "error", (where, sorted(exc.expected))  # type: ignore[attr-defined]


def by_driver(tokens: list[Token]) -> tuple[str, Any]:
    try:
        return "tree", parse(tokens, RULES)
    except UnexpectedToken as exc:
        token = exc.token
        where = (token.type, token.value, token.line, token.column)
        return "error", (where, sorted(exc.expected))


def as_lark(tokens: list[Token]) -> list[LarkToken]:
    return [
        LarkToken(t.type, t.value, None, t.line, t.column, t.end_line, t.end_column) for t in tokens
    ]


def candidate_tokens(candidate: Candidate) -> list[Token] | None:
    try:
        return Tokenizer(candidate, Token).run()
    except Problem:
        return None


def same_parse(tokens: list[Token]) -> None:
    ours, theirs = by_driver(tokens), by_lark(as_lark(tokens))
    if ours[0] == theirs[0] == "error" and ours[1][0][0] == "$END":
        # The one deliberate difference: lark places the end of input at the last token
        # only when that token's text is not empty (``if token`` on a str), else at 1:1 of
        # the message; the driver always places it just after the last token.
        assert ours[1][1] == theirs[1][1] and theirs[1][0][0] == "$END", tokens
        last = tokens[-1] if tokens else Token("$END", "")
        assert ours[1][0][2:] == (last.line, last.column), tokens
        return
    assert ours == theirs, tokens


def same_on_text(text: str) -> int:
    """Both parsers on every block of ``text``; the number of token streams compared."""
    compared = 0
    for candidate in locate(text).candidates:
        tokens = candidate_tokens(candidate)
        if tokens is not None:
            same_parse(tokens)
            compared += 1
    return compared


def test_tables_are_generated_from_the_grammar_as_it_is() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_parse_table.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_parser_never_imports_lark() -> None:
    code = (
        "import sys\n"
        "from infomark.ledger.parse.parser import parse_message\n"
        "p = parse_message('claim_ledger:\\n  claims:\\n    - id: C1\\n'\n"
        "                  'oracle_stamp: C1 PASS\\ngate: G9 {\\nclaim_ledger: [\\n')\n"
        "assert len(p.blocks) == 2 and p.errors, p\n"
        "assert 'lark' not in sys.modules, 'the parser loaded lark'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(BLOCKS, min_size=1, max_size=3), WRAPPERS)
def test_same_nodes_on_rendered_blocks(blocks: list[Any], wrapper: tuple[str, str]) -> None:
    text = wrapper[0] + "\n".join(render_block(block) for block in blocks) + wrapper[1]
    assert same_on_text(text) >= 1


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(NOISE)
def test_same_result_on_block_like_noise(text: str) -> None:
    same_on_text(text)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(BLOCKS, min_size=1, max_size=2), st.randoms(use_true_random=False))
def test_same_error_on_broken_token_streams(blocks: list[Any], rnd: random.Random) -> None:
    """Real token streams with tokens dropped, repeated, swapped or inserted: every state's
    error path (the token it stops at and the terminals it expected) is lark's."""
    text = "\n".join(render_block(block) for block in blocks)
    for candidate in locate(text).candidates:
        tokens = candidate_tokens(candidate)
        assert tokens is not None
        for _ in range(rnd.randint(1, 3)):
            i = rnd.randrange(len(tokens))
            edit = rnd.randrange(4)
            if edit == 0 and len(tokens) > 1:
                del tokens[i]
            elif edit == 1:
                tokens.insert(i, tokens[i])
            elif edit == 2:
                j = rnd.randrange(len(tokens))
                tokens[i], tokens[j] = tokens[j], tokens[i]
            else:
                kind = rnd.choice(TERMINALS)
                t = tokens[i]
                tokens.insert(i, Token(kind, "x", None, t.line, t.column, t.end_line, t.column))
        same_parse(tokens)


@settings(max_examples=300)
@given(st.lists(st.sampled_from(TERMINALS), max_size=30))
def test_same_result_on_any_terminal_sequence(kinds: list[str]) -> None:
    tokens = [Token(kind, f"v{i}", None, 1, i + 1, 1, i + 2) for i, kind in enumerate(kinds)]
    same_parse(tokens)


def test_same_positions_through_inlined_rules() -> None:
    """Spans of nodes reached through ``?`` rules (a stamp's block mapping, a nested
    sequence) come from the filtered tokens around them, as in lark."""
    text = (
        "oracle_stamp:\n  claim_id: C1\n  evidence_ref: ev_1\n"
        "claim_ledger:\n  claims:\n  - id: C1\n    notes: [a, {b: c}]\n  premises: [C1]\n"
        '{"claim_ledger": {"claims": []}, "gate": "G4"}\n'
    )
    assert same_on_text(text) == 3
    parsed = parse_message(text)
    assert parsed.errors == [] and len(parsed.blocks) == 4
