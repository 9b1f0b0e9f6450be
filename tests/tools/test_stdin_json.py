"""The hook's streamed stdin parses to ``json.loads``' fields, and fails with its errors.

``skim`` is driven against ``json.loads`` of the whole payload (decoded as the hook decodes
it) over generated documents, block sizes and spool thresholds: every ``tool_response``
string that was spooled reads back as the string ``json.loads`` gives, and everything else
is ``json.loads``' value; a broken document gives ``json``'s message at ``json``'s position.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from infomark.kernel.spooled import Spooled
from infomark.tools.hooks.stdin_json import read_large, skim

_settings = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# text with what makes string decoding hard: escapes, non-ASCII, surrogates (pairs and lone)
_chars = st.one_of(
    st.characters(),
    st.sampled_from(['"', "\\", "\n", "\r", "\t", "\x00", "\x1f", "é", "😀", "\ud83d", "\ude00"]),
)
_text = st.text(_chars, max_size=40)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    _text,
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)),
    max_leaves=12,
)
_keys = st.sampled_from(["tool_response", "tool_input", "session_id", "x", "tool_respons"])
_payloads = st.lists(st.tuples(_keys, _values), max_size=5).map(
    lambda items: {**dict(items), "tool_response": dict(items).get("tool_response", "")}
)


def _encode(doc: str) -> bytes:
    return doc.encode("utf-8", "surrogatepass")  # lone surrogates: bytes a decoder replaces


def _reference(raw: bytes) -> tuple[str, Any]:
    text = raw.decode("utf-8", "replace")
    try:
        return "ok", json.loads(text)
    except ValueError as exc:
        return "error", f"{type(exc).__name__}: {exc}"


def _streamed(raw: bytes, block: int, spool_at: int) -> tuple[str, Any]:
    blocks = [raw[i : i + block] for i in range(0, len(raw), block)]
    out = skim(blocks, spool_at=spool_at)
    if out.error is not None:
        return "error", f"{type(out.error).__name__}: {out.error}"
    try:
        payload = json.loads(out.text)
    except ValueError as exc:
        why = out.error_of(exc)
        return "error", f"{type(why).__name__}: {why}"
    return "ok", _read_back(out.restore(payload))


def _read_back(value: Any) -> Any:
    if isinstance(value, Spooled):
        return value.text()
    if isinstance(value, dict):
        return {k: _read_back(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_read_back(v) for v in value]
    return value


def _same(a: tuple[str, Any], b: tuple[str, Any]) -> None:
    assert a[0] == b[0], (a, b)
    assert repr(a[1]) == repr(b[1])  # repr: NaN equals NaN, and key order counts


@_settings
@given(
    _payloads,
    st.booleans(),
    st.sampled_from([None, 2]),
    st.integers(1, 64),
    st.integers(0, 24),
)
def test_any_payload_parses_to_the_fields_json_loads_gives(
    payload: dict[str, Any], ascii_only: bool, indent: int | None, block: int, spool_at: int
) -> None:
    raw = _encode(json.dumps(payload, ensure_ascii=ascii_only, indent=indent))
    _same(_streamed(raw, block, spool_at), _reference(raw))


_breakers = st.sampled_from(
    ['"', "\\", "{", "}", "[", "]", ":", ",", " ", "\n", "\x01", "u", "d8", "\\u", "x", "1"]
)


@_settings
@given(
    _payloads,
    st.booleans(),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 3), _breakers), max_size=3),
    st.integers(1, 64),
    st.integers(0, 24),
)
@example({"tool_response": "abcdefghijklmnop"}, True, [(30, 0, "\\")], 7, 5)
def test_a_broken_payload_fails_with_json_s_message_and_position(
    payload: dict[str, Any],
    ascii_only: bool,
    edits: list[tuple[int, int, str]],
    block: int,
    spool_at: int,
) -> None:
    doc = json.dumps(payload, ensure_ascii=ascii_only)
    for at, cut, put in edits:  # delete `cut` characters at `at`, insert `put`
        at %= len(doc) + 1
        doc = doc[:at] + put + doc[at + cut :]
    raw = _encode(doc)
    _same(_streamed(raw, block, spool_at), _reference(raw))


_long_text = st.text(_chars, min_size=8, max_size=60)
_responses = st.one_of(
    _long_text,
    st.dictionaries(st.sampled_from(["stdout", "stderr", "content"]), _long_text, min_size=1),
    st.lists(_long_text, min_size=1, max_size=3),
).map(lambda r: {"session_id": "s", "tool_response": r, "after": [1, "x"]})


@_settings
@given(
    _responses,
    st.booleans(),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 3), _breakers), max_size=2),
    st.integers(1, 64),
    st.integers(0, 8),
)
def test_a_break_in_or_after_a_spooled_string_fails_as_json_fails(
    payload: dict[str, Any],
    ascii_only: bool,
    edits: list[tuple[int, int, str]],
    block: int,
    spool_at: int,
) -> None:
    doc = json.dumps(payload, ensure_ascii=ascii_only)
    for at, cut, put in edits:
        at %= len(doc) + 1
        doc = doc[:at] + put + doc[at + cut :]
    raw = _encode(doc)
    _same(_streamed(raw, block, spool_at), _reference(raw))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.integers(1, 16), st.integers(0, 8))
def test_any_bytes_give_what_json_loads_gives(raw: bytes, block: int, spool_at: int) -> None:
    _same(_streamed(raw, block, spool_at), _reference(raw))


@pytest.mark.parametrize(
    "text",
    [
        "\\" * 5_000,  # a run of escaped backslashes longer than any look-back
        "\\" * 4_999 + '"' + "\ud83d\ude00" * 300 + "\ud83d",  # pairs and a lone one
        ("a" * 11 + "\ud83d\ude00") * 500,  # a pair's two escapes across every cut
    ],
)
@pytest.mark.parametrize("ascii_only", [True, False])
def test_long_runs_of_escapes_decode_across_blocks(text: str, ascii_only: bool) -> None:
    raw = _encode(json.dumps({"tool_response": {"stdout": text}}, ensure_ascii=ascii_only))
    for block in (7, 64, 1000):
        _same(_streamed(raw, block, 16), _reference(raw))


def test_a_long_tool_response_string_is_spooled_and_nothing_else() -> None:
    stdout = 'line é 😀 \\ " \n' * 50_000  # ~850 KB of text, escapes every few characters
    payload = {
        "session_id": "s",
        "tool_input": {"command": "x" * 400_000},  # long, but not the response: kept
        "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False},
    }
    raw = json.dumps(payload).encode()
    size, text, out = read_large(io.BytesIO(raw[1 << 16 :]), raw[: 1 << 16])
    assert size == len(raw) and out.error is None
    assert len(out.spooled) == 1 and len(text) < 500_000
    got = out.restore(json.loads(text))
    spool = got["tool_response"]["stdout"]
    assert isinstance(spool, Spooled) and spool.text() == stdout
    assert got["tool_input"] == payload["tool_input"]
    assert spool.size == len(stdout.encode())


def test_a_blank_payload_reads_as_empty() -> None:
    raw = b" \n\t" * 100_000
    size, text, out = read_large(io.BytesIO(raw[1000:]), raw[:1000])
    assert (size, text, out.error) == (len(raw), "", None)
