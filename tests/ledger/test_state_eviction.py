"""The capped tables of the session state (pending calls, background shells, latest runs)
drop their oldest entry by seq in one step: they are kept in seq order, through
replacements and through a snapshot's reload, and the result is the table that dropping
the entry with the smallest (seq, key) each time gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.kernel.records import asdict
from infomark.ledger import state as state_mod
from infomark.ledger.state import SessionState, apply, state_from_dict

CAP = 4
KEYS = st.sampled_from([f"k{i}" for i in range(9)])
STEPS = st.lists(
    st.tuples(st.sampled_from(["decision", "background", "run", "reload"]), KEYS), max_size=60
)


def _reference(table: dict[str, int], key: str, seq: int) -> None:
    """The old rule: set the entry, then drop the smallest (seq, key) past the cap."""
    table[key] = seq
    while len(table) > CAP:
        del table[min(table, key=lambda k: (table[k], k))]


def _payload(kind: str, key: str) -> tuple[str, dict[str, Any]]:
    if kind == "decision":
        return "decision", {"call_id": key, "decision": "allow", "tool": "Bash"}
    record: dict[str, Any] = {"evidence_class": "execution", "outcome": "PASS"}
    if kind == "background":
        record["background_id"] = key
    else:
        record["command"] = key
    return "evidence_recorded", {"record": record, "ref": f"ev_{key}"}


@settings(max_examples=200)
@given(steps=STEPS)
def test_capped_tables_drop_their_oldest_entry_as_a_scan_would(
    steps: list[tuple[str, str]],
) -> None:
    expected: dict[str, dict[str, int]] = {"pending_calls": {}, "background": {}, "runs": {}}
    table_of = {"decision": "pending_calls", "background": "background", "run": "runs"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(state_mod, "_PENDING_CAP", CAP)
        state = SessionState(session="s")
        for seq, (kind, key) in enumerate(steps, start=1):
            if kind == "reload":  # a snapshot (its JSON sorts keys by name), then reloaded
                raw = asdict(state)
                for name in expected:
                    raw[name] = dict(sorted(raw[name].items()))
                state = state_from_dict(raw)
                continue
            type_, payload = _payload(kind, key)
            apply(state, seq, type_, payload)
            _reference(expected[table_of[kind]], key, seq)
    for name, want in expected.items():
        got = getattr(state, name)
        assert {k: v["seq"] for k, v in got.items()} == want, name
        assert [v["seq"] for v in got.values()] == sorted(want.values()), name  # seq order
