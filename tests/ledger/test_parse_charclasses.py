"""The parser's str-method checks are the regular expressions they stand for.

A hook process parses one message, so the parser compiles no pattern on its way
(:mod:`infomark.ledger.parse.locate_keys`, :mod:`infomark.ledger.blocks`, the scanner): each
check here is compared with the pattern it replaces, on text drawn from the characters
that matter and from all of Unicode.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from infomark.ledger.blocks import CLAIM_ID_PATTERN, KEY_PATTERN, is_claim_id, is_key
from infomark.ledger.parse.locate import quote_stop
from infomark.ledger.parse.locate_keys import _is_name, _key, key_at, keyword_at
from infomark.ledger.parse.scan import _key_end

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*(?: [A-Za-z][A-Za-z0-9_-]*)?")
TRICKY = st.text(alphabet="aZ_9.-: *`=\"'\\\t\u00e9\u0130\u212a\n", max_size=14)
TEXT = st.one_of(TRICKY, st.text(max_size=14))


@given(TEXT)
def test_key_and_claim_id_checks_are_the_patterns(text: str) -> None:
    assert is_key(text) == (KEY_PATTERN.fullmatch(text) is not None)
    assert is_claim_id(text) == (CLAIM_ID_PATTERN.fullmatch(text) is not None)
    assert _is_name(text) == (NAME.fullmatch(text) is not None)


def _key_at_by_regex(line: str, start: int, pattern: re.Pattern[str], space: bool) -> object:
    """The former ``_key``: the longest match of the pattern after the decoration."""
    deco = next((d for d in ("**", "`") if line.startswith(d, start)), "")
    p = start + len(deco)
    match = pattern.match(line, p)
    if match is None:
        return None
    q = match.end()
    closed = bool(deco) and line.startswith(deco, q)
    q += len(deco) if closed else 0
    if q >= len(line) or line[q] != ":":
        return None
    after = q + 1
    if deco and not closed:
        if not line.startswith(deco, after):
            return None
        after += len(deco)
    if space and after < len(line) and line[after] not in " \t":
        return None
    return (match.group(), p, q, after)


@given(TEXT, st.integers(0, 4))
def test_key_at_is_the_longest_match_followed_by_a_colon(line: str, start: int) -> None:
    start = min(start, len(line))
    found = key_at(line, start)
    mine = None if found is None else (found.name, found.start, found.colon, found.after)
    assert mine == _key_at_by_regex(line, start, KEY_PATTERN, True)


@given(st.one_of(TRICKY, st.sampled_from(["gate:", "**Claim ledger**:", "`gate:`", "gate x:"])))
def test_names_before_a_colon_are_matched_as_the_pattern_would(line: str) -> None:
    found = _key(line, 0, _is_name, need_space=False)
    mine = None if found is None else (found.name, found.start, found.colon, found.after)
    assert mine == _key_at_by_regex(line, 0, NAME, False)
    assert (keyword_at(line, 0) is None) or mine is not None


@given(TEXT, st.integers(0, 4), st.sampled_from(['"', "'"]))
def test_quote_stop_is_the_search_for_the_quote(text: str, i: int, quote: str) -> None:
    i = min(i, len(text))
    pattern = re.compile(r'["\\]' if quote == '"' else "'")
    found = pattern.search(text, i)
    assert quote_stop(text, i, quote)[0] == (-1 if found is None else found.start())


@given(TEXT, st.sampled_from(['"', "'"]))
def test_quote_stops_along_a_line_with_the_memo_are_the_searches(text: str, quote: str) -> None:
    """Walking a line from stop to stop with the memo finds what each search finds."""
    pattern = re.compile(r'["\\]' if quote == '"' else "'")
    i, escape = 0, -1
    while i <= len(text):
        stop, escape = quote_stop(text, i, quote, escape)
        found = pattern.search(text, i)
        assert stop == (-1 if found is None else found.start())
        if stop == -1:
            break
        i = stop + 1


@given(TEXT, st.integers(0, 4), st.integers(0, 14))
def test_key_end_is_where_the_longest_key_meets_its_separator(text: str, i: int, n: int) -> None:
    i = min(i, len(text))
    end = min(len(text), i + n)
    match = KEY_PATTERN.match(text, i, end)
    sep = match.end() if match is not None else end
    expected = sep if sep < end and text[sep] in "=:" else end
    got = _key_end(text, i, end)
    assert (got if got < end and text[got] in "=:" else end) == expected
