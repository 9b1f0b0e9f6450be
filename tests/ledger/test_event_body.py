"""The hashed body of an event: the direct writer equals the canonical encoder exactly."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from infomark.ledger.canonical import canonical_json
from infomark.ledger.store.journal import _ENCODE, event_body, event_hash

TEXT = st.text(st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ['"', "\\", "\n", "\x00", "\x7f", "é", "\u2028", "😀", '{"a":"b\\"c"}']
)
ANY = (
    TEXT
    | st.integers()
    | st.none()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
)


@given(s=TEXT, seq=st.integers(), t=TEXT, p=TEXT, ts=TEXT, kid=TEXT)
def test_event_body_equals_the_canonical_encoder(
    s: str, seq: int, t: str, p: str, ts: str, kid: str
) -> None:
    assert event_body(s, seq, t, p, ts, kid) == _ENCODE([s, seq, t, p, ts, kid])
    assert event_body(s, seq, t, p, ts, kid).encode() == canonical_json([s, seq, t, p, ts, kid])


@given(values=st.tuples(ANY, ANY, ANY, ANY, ANY, ANY))
def test_other_types_take_the_generic_encoder(values: tuple[object, ...]) -> None:
    assert event_body(*values) == _ENCODE(list(values))


def test_hash_is_unchanged_for_a_known_row() -> None:
    # pinned: a change of the body format would orphan every existing journal
    h = event_hash(
        "0" * 64, "s", 1, "decision", '{"a":"é\\n"}', "2026-01-01T00:00:00.000+00:00", "k"
    )
    assert h == "d99fee44794a256d93501e6c5d36cdc40cc92d8432932a9f2b8ca262f9d1ca88"
