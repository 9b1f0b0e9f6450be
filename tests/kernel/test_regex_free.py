"""Rules the hook checks on every call without a regex compile equal the regexes they replace.

A compile costs a cold hook process 30-120 us each; these run once per call. The regex stays
the definition (it is what the docs state): each test drives the string code and the pattern
side by side on arbitrary and on near-miss inputs.
"""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from infomark.kernel.session_id import SESSION_PATTERN, is_session_id
from infomark.ledger.canonical import scrub_surrogates
from infomark.tools.hooks.failsafe import sniff_event

_SESSION = re.compile(SESSION_PATTERN)
_NEAR = st.sampled_from([*"aZ09._:@-", " ", "/", "\n", "é", "\x00", "Ａ", "١", "ß"])


@given(st.one_of(st.text(max_size=140), st.lists(_NEAR, max_size=135).map("".join)))
@example("a" * 128)
@example("a" * 129)
@example("a\n")  # `$` would match before a final newline; fullmatch does not
@example("")
@example("-a")
def test_session_id_rule(value: str) -> None:
    assert is_session_id(value) == (_SESSION.fullmatch(value) is not None)


def test_session_id_rejects_non_strings() -> None:
    assert not is_session_id(None) and not is_session_id(b"abc") and not is_session_id(1)


_EVENT = re.compile(rb'"hook_event_name"\s*:\s*"([A-Za-z]{1,40})"')
_PIECES = st.sampled_from(
    [b'"hook_event_name"', b":", b'"', b" ", b"\t", b"\n", b"\x0b", b"\x0c", b"\r", b"Pre",
     b"ToolUse", b"x" * 39, b"Y", b"@", b"[", b"`", b"{", b"_", b"\xc1", b",", b"\\"]
)  # fmt: skip


@given(st.one_of(st.binary(max_size=80), st.lists(_PIECES, max_size=30).map(b"".join)))
@example(b'{"hook_event_name": "PreToolUse"}')
@example(b'"hook_event_name":"' + b"a" * 40 + b'"')
@example(b'"hook_event_name":"' + b"a" * 41 + b'"')
@example(b'"hook_event_name" : 1, "hook_event_name" : "Stop"')  # first that matches wins
@example(b'"hook_event_name":""')
def test_sniff_event_is_the_pattern(raw: bytes) -> None:
    m = _EVENT.search(raw)
    assert sniff_event(raw) == (m.group(1).decode() if m else None)


def test_sniff_event_reads_only_the_first_mebibyte() -> None:
    late = b" " * (1 << 20) + b'"hook_event_name":"Stop"'
    assert sniff_event(late) is None
    assert sniff_event(late[-30:]) == "Stop"


_SURROGATE = re.compile("[\ud800-\udfff]")


@given(st.text(alphabet=st.characters(codec=None), max_size=40))
@example("plain")
@example("é\ud800x")
@example("\udfff")
def test_scrub_surrogates_is_the_substitution(text: str) -> None:
    want = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    got = scrub_surrogates(text)
    assert got == want
    got.encode("utf-8")  # always encodable
