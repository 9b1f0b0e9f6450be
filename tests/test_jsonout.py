"""The CLI's streamed ``--json`` output is byte for byte ``dumps(data, indent=2, default=str)``."""

from __future__ import annotations

import enum
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.cli.jsonout import write_json
from infomark.ledger.canonical import dumps


class _Color(enum.Enum):
    RED = "red"


class _Level(enum.IntEnum):
    HIGH = 3


class _Name(enum.StrEnum):
    A = "a\u2028b"


_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.sampled_from(["\ud800", "tab\tnl\n", "\x1b[31m", "é", "\U0001f600"])
    | st.just(_Color.RED)  # default=str
    | st.just(_Level.HIGH)
    | st.just(_Name.A)
)
_keys = st.text() | st.integers() | st.floats() | st.booleans() | st.none() | st.just(_Name.A)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(_keys, inner, max_size=5)
    ),
    max_leaves=40,
)


def _streamed(data: Any) -> str:
    parts: list[str] = []
    write_json(data, parts.append)
    return "".join(parts)


@settings(max_examples=150, deadline=None)
@given(_values)
def test_streamed_output_is_dumps_indent_2(data: Any) -> None:
    assert _streamed(data) == dumps(data, indent=2, default=str) + "\n"


def test_a_large_report_goes_out_in_batches_equal_to_dumps() -> None:
    timeline = [
        {"seq": i, "timestamp": "2026-12-02T03:51:05.900+00:00", "kind": "run", "text": f"ran {i}"}
        for i in range(5000)
    ]
    data = {"session": "s", "events": 5000, "story": {"timeline": timeline, "flags": []}}
    parts: list[str] = []
    write_json(data, parts.append)
    assert len(parts) > 10 and max(map(len, parts)) < 2 * 65536
    assert "".join(parts) == dumps(data, indent=2, default=str) + "\n"
