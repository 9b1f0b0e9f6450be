"""``ParsedMessage.raise_for_errors`` (issue 9): the exported ``BlockSyntaxError`` is raised, at
the first error's line and column, with every error diagnostic attached; clean text passes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark import BlockSyntaxError
from infomark.ledger.parse.parser import parse_message

BROKEN = (
    "Plan below.\n"
    "claim_ledger:\n"
    "  claims:\n"
    "    - id: C1\n"
    '      text: "never closed\n'
    "      status: Guess\n"
)


def test_a_syntax_error_raises_at_its_line_with_every_diagnostic() -> None:
    parsed = parse_message(BROKEN)
    assert parsed.errors, "the fixture must be broken"
    with pytest.raises(BlockSyntaxError) as info:
        parsed.raise_for_errors()
    exc = info.value
    first = parsed.errors[0]
    assert (exc.line, exc.column) == (first.line, first.column)
    assert exc.line is not None and exc.line >= 2
    assert exc.diagnostics == parsed.errors
    assert str(exc).startswith(f"line {first.line}")
    assert exc.code == "ledger_parse_error" and exc.exit_code == 2


def test_clean_text_returns_the_message_itself() -> None:
    text = (
        "claim_ledger:\n  claims:\n    - {id: C1, text: x, status: Guess, falsifier: y}\n"
        "  premises_for_plan: [C1]\n"
    )
    parsed = parse_message(text)
    assert parsed.raise_for_errors() is parsed
    assert parsed.blocks


KEYWORDS = st.sampled_from(
    ["claim_ledger:\n", "oracle_stamp:", "gate: ", "  claims:\n", "- {", '"', "\n"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(KEYWORDS, st.text(max_size=12)), max_size=12))
def test_raises_exactly_when_there_are_errors(parts: list[str]) -> None:
    parsed = parse_message("".join(parts))
    if parsed.errors:
        with pytest.raises(BlockSyntaxError) as info:
            parsed.raise_for_errors()
        assert info.value.line == parsed.errors[0].line
    else:
        assert parsed.raise_for_errors() is parsed
