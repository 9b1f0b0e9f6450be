"""InfoMark: the rank ladder, the grounding set G and forgiving-but-not-gullible parsing."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infomark.kernel.infomark import GROUNDING_SET, InfoMark

LADDER = [
    InfoMark.EXACT,
    InfoMark.INFERRED,
    InfoMark.HYPOTHETICAL,
    InfoMark.GUESS,
    InfoMark.UNKNOWN,
]
NAMES = {m.name.lower() for m in InfoMark}


def test_ladder_is_strictly_ordered() -> None:
    assert sorted(InfoMark, reverse=True) == LADDER
    for stronger, weaker in itertools.pairwise(LADDER):
        assert stronger > weaker
        assert stronger.at_least(weaker)
        assert not weaker.at_least(stronger)


def test_grounding_set_is_exact_and_inferred() -> None:
    assert frozenset({InfoMark.EXACT, InfoMark.INFERRED}) == GROUNDING_SET
    for mark in InfoMark:
        assert mark.grounded == (mark in GROUNDING_SET)


def test_labels_and_str() -> None:
    assert [m.label for m in LADDER] == ["Exact", "Inferred", "Hypothetical", "Guess", "Unknown"]
    assert str(InfoMark.INFERRED) == "Inferred"


def test_strongest_and_weakest() -> None:
    assert InfoMark.strongest(InfoMark.GUESS, InfoMark.EXACT, InfoMark.UNKNOWN) is InfoMark.EXACT
    assert InfoMark.weakest(InfoMark.GUESS, InfoMark.EXACT) is InfoMark.GUESS
    assert InfoMark.strongest() is InfoMark.UNKNOWN
    assert InfoMark.weakest() is InfoMark.UNKNOWN


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("Exact", InfoMark.EXACT),
        ("exact", InfoMark.EXACT),
        ("EXACT", InfoMark.EXACT),
        ("eXaCt", InfoMark.EXACT),
        ("  Inferred ", InfoMark.INFERRED),
        ('"Hypothetical"', InfoMark.HYPOTHETICAL),
        ("[guess]", InfoMark.GUESS),
        ("'unknown'", InfoMark.UNKNOWN),
    ],
)
def test_parse_is_case_insensitive(word: str, expected: InfoMark) -> None:
    assert InfoMark.parse(word) is expected


@pytest.mark.parametrize(
    "word",
    ["", None, "Exactly", "verified", "Exact!", "E x a c t", "certain", "Inferred-ish", "G"],
)
def test_unrecognised_word_is_unknown(word: str | None) -> None:
    assert InfoMark.parse(word) is InfoMark.UNKNOWN


@given(mark=st.sampled_from(list(InfoMark)), data=st.data())
def test_parse_any_casing_round_trips(mark: InfoMark, data: st.DataObject) -> None:
    flips = data.draw(st.lists(st.booleans(), min_size=len(mark.label), max_size=len(mark.label)))
    word = "".join(c.upper() if up else c.lower() for c, up in zip(mark.label, flips, strict=True))
    assert InfoMark.parse(word) is mark


@given(st.text())
def test_parse_never_climbs_on_creative_spelling(word: str) -> None:
    mark = InfoMark.parse(word)
    assert isinstance(mark, InfoMark)
    if mark is not InfoMark.UNKNOWN:
        # Only the rank's own name, up to case, quotes, brackets and spaces, reaches it.
        assert word.strip().strip("\"'[]").strip().lower() == mark.name.lower()
