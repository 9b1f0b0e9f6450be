"""kernel/jsonc gives json's results and json's errors, without importing json on the hook path."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from infomark.kernel import jsonc

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec=None), max_size=12)
)
VALUES = st.recursive(
    _SCALARS,
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(st.text(max_size=6), kids, max_size=4)
        | st.tuples(kids, kids)
    ),
    max_leaves=20,
)
OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "sort_keys": st.booleans(),
        "separators": st.sampled_from([(",", ":"), (", ", ": "), (" , ", " : ")]),
        "ensure_ascii": st.booleans(),
        "allow_nan": st.booleans(),
    },
)


def _outcome(fn: Any, *args: Any, **kw: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args, **kw)
    except Exception as exc:
        return "error", (type(exc), str(exc))


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN and types compared too (1 is not 1.0, nor True)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


@given(VALUES, OPTIONS)
@example({"b": 1, "a": [1.5, float("nan")]}, {"allow_nan": False})  # json's ValueError
@example({1: "x", None: 2, 2.5: 3, False: 4}, {"sort_keys": False})  # non-str keys: json rules
@example({1: "x", "a": 2}, {"sort_keys": True})  # mixed keys cannot sort: TypeError
@example("é\ud800", {"ensure_ascii": False})  # a bare str takes the string fast path
def test_dumps_is_json_dumps(value: Any, options: dict[str, Any]) -> None:
    assert _outcome(jsonc.dumps, value, **options) == _outcome(json.dumps, value, **options)


def test_dumps_errors_are_jsons() -> None:
    loop: list[Any] = []
    loop.append(loop)
    assert _outcome(jsonc.dumps, loop) == _outcome(json.dumps, loop)
    assert _outcome(jsonc.dumps, {"x": object()})[1][0] is TypeError
    assert _outcome(jsonc.dumps, {"x": object()}) == _outcome(json.dumps, {"x": object()})


@given(VALUES)
def test_loads_of_json_text_is_json_loads(value: Any) -> None:
    text = json.dumps(value)
    assert _same(jsonc.loads(text), json.loads(text))
    raw = text.encode()
    assert _same(jsonc.loads(raw), json.loads(raw))


_PIECES = st.sampled_from(
    ['{', '}', '[', ']', ',', ':', '"', '"a"', '1', '-0', '1e5', '.5', 'NaN', 'Infinity',
     '-Infinity', 'true', 'null', ' ', '\n', '\t', '\x0c', '\\', '\\u00e9', '\ufeff', 'x']
)  # fmt: skip


@given(st.one_of(st.text(max_size=30), st.lists(_PIECES, max_size=14).map("".join)))
@example("  [1, 2]  \n")
@example("[1] x")  # extra data
@example("\ufeff[]")  # json refuses a BOM in a str
@example("")
def test_loads_text_matches_json_including_errors(text: str) -> None:
    theirs = _outcome(json.loads, text)
    for loads in (jsonc.loads, jsonc.loads_compact):
        ours = _outcome(loads, text)
        assert ours[0] == theirs[0]
        if ours[0] == "ok":
            assert _same(ours[1], theirs[1])
        else:
            assert ours[1] == theirs[1]  # same exception type and message (position included)


@given(VALUES)
def test_loads_compact_of_compact_json_is_json_loads(value: Any) -> None:
    text = json.dumps(value, separators=(",", ":"))
    assert _same(jsonc.loads_compact(text), json.loads(text))


@given(st.binary(max_size=24))
@example(b"\xef\xbb\xbf[1]")  # UTF-8 BOM
@example('{"a": 1}'.encode("utf-16"))
@example("[1]".encode("utf-32-le"))
@example(b'"\xed\xa0\x80"')  # a surrogate in UTF-8: json decodes it with surrogatepass
def test_loads_bytes_matches_json(raw: bytes) -> None:
    ours, theirs = _outcome(jsonc.loads, raw), _outcome(json.loads, raw)
    assert ours[0] == theirs[0]
    if ours[0] == "ok":
        assert _same(ours[1], theirs[1])
    else:
        assert ours[1][0] is theirs[1][0]


def test_encoder_and_basestring() -> None:
    enc = jsonc.encoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    value = {"b": ["é", 1], "a": None}
    assert enc(value) == json.JSONEncoder(
        sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode(value)
    assert jsonc.encode_basestring('é"\n') == json.encoder.encode_basestring('é"\n')


@pytest.mark.parametrize("call", ["jsonc.loads('[1, {\"a\": 2.5}]')", "jsonc.dumps({'a': [1]})"])
def test_no_json_import(call: str) -> None:
    code = f"import sys; from infomark.kernel import jsonc; {call}; print('json' in sys.modules)"
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
