"""A spooled text stands for the ``str`` it was: same bytes, digest, lines and JSON dump."""

from __future__ import annotations

import hashlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.gates.policies.context import ToolResult
from infomark.gates.policies.metrics import first_line
from infomark.kernel import jsonc
from infomark.kernel.spooled import LargeText, Spooled, dumps_sorted, materialized
from infomark.ledger.calls import ToolCall, ToolOutcome

_chars = st.one_of(
    st.characters(),
    st.sampled_from(["\n", "\r", " ", "\t", "\u2028", "\x1c", "\ud83d", "\ude00", "é"]),
)
_texts = st.text(_chars, max_size=80)


def _spool(text: str, pieces: int = 3) -> Spooled:
    s = Spooled()
    step = max(1, len(text) // pieces)
    for i in range(0, len(text), step):
        s.write(text[i : i + step])
    s.done()
    return s


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_texts, st.booleans()), max_size=4))
def test_a_large_text_has_the_bytes_and_digest_of_its_str(parts: list[tuple[str, bool]]) -> None:
    large = LargeText(tuple(_spool(t) if spooled else t for t, spooled in parts))
    whole = "".join(t for t, _ in parts)
    data = whole.encode("utf-8", "surrogatepass")
    assert b"".join(large.chunks()) == data
    assert large.digest() == ("sha256:" + hashlib.sha256(data).hexdigest(), len(data))
    assert large.text() == whole == str(large)
    assert bool(large) is bool(whole)


def _result(output: str | LargeText, error: str | None = None) -> ToolResult:
    outcome = ToolOutcome(output=output, error=error, is_error=True)
    return ToolResult(ToolCall("Bash", {"command": "x"}), outcome, None, "execute")


_lines = st.lists(
    st.one_of(
        st.text(st.sampled_from(" \t\x0b"), max_size=3),
        st.sampled_from(["Exit code 1", "  Exit code -2 ", "Exit code x"]),
        st.text(st.sampled_from("ab \t"), max_size=300),
        _texts,
    ),
    max_size=6,
).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(_lines, st.integers(1, 40), st.integers(1, 200))
def test_a_failure_s_first_line_reads_the_same_from_a_spooled_output(
    text: str, pieces: int, cap: int
) -> None:
    want = first_line(_result(text))
    assert first_line(_result(LargeText((_spool(text, pieces),)))) == want
    # the line reader itself, with a small cap: a long line its start does not decide is
    # judged from the whole text (the exact fallback)
    large = LargeText((_spool(text, pieces),))
    want_line = next(filter(None, map(_judge, text.splitlines())), None)
    assert large.first_line(_judge, lambda start: None, cap) == want_line


def _judge(line: str) -> str | None:
    return " ".join(line.split())[:50] or None


def test_a_long_first_line_is_decided_by_its_start() -> None:
    line = "error: " + "word " * 400_000  # 2 MB, one line
    large = LargeText((_spool(line + "\nnext"),))
    assert first_line(_result(large)) == first_line(_result(line + "\nnext"))


_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _texts),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_texts, inner, max_size=3)
    ),
    max_leaves=10,
)


def _spool_strings(value: Any, every: int) -> Any:
    if isinstance(value, str) and len(value) % every == 0:
        return _spool(value)
    if isinstance(value, dict):
        return {k: _spool_strings(v, every) for k, v in value.items()}
    if isinstance(value, list):
        return [_spool_strings(v, every) for v in value]
    return value


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_texts, _json_values, max_size=4), st.integers(1, 3))
def test_a_dict_response_dumps_as_json_dumps_sorted(value: dict[str, Any], every: int) -> None:
    want = jsonc.dumps(value, sort_keys=True, ensure_ascii=False)
    spooled = _spool_strings(value, every)
    got = dumps_sorted(spooled)
    assert str(got) == want
    if isinstance(got, LargeText):
        data = want.encode("utf-8", "surrogatepass")
        assert got.digest() == ("sha256:" + hashlib.sha256(data).hexdigest(), len(data))
    assert jsonc.dumps(materialized(spooled), sort_keys=True, ensure_ascii=False) == want
