"""Issue 9: the config's bounds are written once (``gates/bounds.py``); the file's pydantic model
and the stdlib check of a ``Config`` built in code accept and refuse exactly the same values."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from infomark.gates.config_model import ConfigModel
from infomark.gates.policies.settings import PolicySettings
from infomark.kernel.errors import ConfigError

NUMBER = st.one_of(st.integers(-5, 5000), st.booleans(), st.floats(-1, 2_000_000, allow_nan=False))


def _file_accepts(doc: dict[str, Any]) -> bool:
    try:
        ConfigModel.model_validate(doc)
    except ValidationError:
        return False
    return True


def _code_accepts(policies: dict[str, Any]) -> bool:
    try:
        PolicySettings.from_mapping(policies)
    except ConfigError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(["max_active_packs", "pack_budget_chars"]), value=st.integers(-5, 5000))
def test_top_level_bounds_agree(key: str, value: int) -> None:
    assert _file_accepts({key: value}) == _code_accepts({key: value})


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(["severity", "expires_after", "threshold"]), value=NUMBER)
def test_pack_override_bounds_agree(key: str, value: Any) -> None:
    if isinstance(value, bool) or (key != "threshold" and isinstance(value, float)):
        assume(False)  # pydantic coerces these; the stdlib check is stricter on purpose
    override = {"pack_overrides": {"repeated_failures": {key: value}}}
    assert _file_accepts(override) == _code_accepts(override)


def test_the_edges_themselves() -> None:
    assert _code_accepts({"max_active_packs": 3}) and not _code_accepts({"max_active_packs": 4})
    assert _file_accepts({"pack_budget_chars": 100})
    assert not _file_accepts({"pack_budget_chars": 99})
