"""A syntax error is reported at its own line and column wherever the block sits (issue 14 §4):
after any prose, with LF or CRLF line ends, inside a Markdown fence, after a valid block."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from infomark.ledger.parse.parser import parse_message

BROKEN = 'claim_ledger:\n  claims:\n    - id: C1\n      text: "never closed\n'
# the unterminated quote: 4th line of the block, column 13 (1-based)
PROSE = st.lists(
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=40).filter(
        lambda s: ":" not in s and "`" not in s and not s.lstrip().startswith(("-", "#"))
    ),
    max_size=6,
)


def errors_at(text: str) -> list[tuple[int, int]]:
    return [(d.line, d.column) for d in parse_message(text).errors]


@given(PROSE, st.sampled_from(["\n", "\r\n"]), st.booleans())
@example(["{"], "\n", False)  # a lone "{" of prose is not the opening of a JSON ledger
@example(["  {", "["], "\r\n", False)
def test_the_error_is_at_its_line_after_any_prose(
    prose: list[str], newline: str, fenced: bool
) -> None:
    lines = [*prose, ""] if prose else []
    block = BROKEN.splitlines()
    if fenced:
        block = ["```yaml", *block, "```"]
    text = newline.join([*lines, *block]) + newline
    expected_line = len(lines) + (4 if not fenced else 5)
    assert errors_at(text) == [(expected_line, 13)]


def test_an_error_in_the_second_block_is_not_blamed_on_the_first() -> None:
    good = 'claim_ledger:\n  claims:\n    - id: C1\n      text: "fine"\n'
    text = "intro\n\n" + good + "\nmore prose\n\n" + BROKEN
    assert errors_at(text) == [(2 + 4 + 3 + 4, 13)]
