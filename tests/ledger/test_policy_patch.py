"""Policy deltas (issue 13): the ``policy_updated`` patches a replay applies rebuild the new
state exactly. Pure functions of the state, no store: they run once, not per backend (the
store-level replay of both patch shapes is tests/ledger/test_store_state.py's property)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.ledger.policy_patch import policy_delta, policy_patch
from infomark.ledger.state import SessionState, apply

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=2), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    old=st.dictionaries(st.sampled_from("abcd"), _json),
    new=st.dictionaries(st.sampled_from("abcd"), _json),
)
def test_policy_patches_rebuild_the_new_state_exactly(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    state = SessionState(session="s", policy={"k": json.loads(json.dumps(old))})
    ops = json.loads(json.dumps(policy_patch(old, new, ["k"])))  # as a replay reads them
    apply(state, 1, "policy_updated", {"set": {}, "patch": ops})
    assert state.policy["k"] == new
    assert old == json.loads(json.dumps(old))  # the live value was not mutated in place


@settings(max_examples=300, deadline=None)
@given(
    old=st.dictionaries(st.sampled_from("abc"), st.dictionaries(st.sampled_from("xy"), _json)),
    new=st.dictionaries(st.sampled_from("abc"), st.dictionaries(st.sampled_from("xy"), _json)),
    shared=st.lists(st.text(min_size=40, max_size=50), min_size=1, max_size=3),
)
def test_policy_deltas_rebuild_the_new_state_exactly(
    old: dict[str, Any], new: dict[str, Any], shared: list[str]
) -> None:
    """Top-level sets, nested m/s/d/a ops, and "c" ops: the same tail appended to two logs."""
    for k in ("a", "b"):  # two logs that grow by the same entries
        if isinstance(old.get(k), dict):
            old[k]["log"] = ["the first entry"]
            new[k] = {**(new.get(k) or {}), "log": ["the first entry", *shared]}
    state = SessionState(session="s", policy=json.loads(json.dumps(old)))
    whole, patch = policy_delta(old, new)
    apply(state, 1, "policy_updated", json.loads(json.dumps({"set": whole, "patch": patch})))
    assert state.policy == {k: v for k, v in new.items() if v is not None}
    if isinstance(old.get("a"), dict) and isinstance(old.get("b"), dict):
        assert any(op[0] == "c" for op in patch)  # the shared tail travelled once


def test_a_patch_op_that_points_nowhere_is_a_garbled_row() -> None:
    state = SessionState(session="s", policy={"a": {"log": []}})
    for bad in (["c", ["a", "log"], 0, 5], ["c", ["a", "log"], 0, 0], ["s", ["a"]], ["x", ["a"]]):
        with pytest.raises(ValueError):
            apply(state, 1, "policy_updated", {"patch": [bad]})


def test_an_appended_capped_log_is_journaled_as_its_tail() -> None:
    old = {"log": [{"ref": f"ev_{i}"} for i in range(8)]}
    new = {"log": [*old["log"][1:], {"ref": "ev_8"}]}
    assert policy_patch(old, new, ["p"]) == [["a", ["p", "log"], 1, [{"ref": "ev_8"}]]]
