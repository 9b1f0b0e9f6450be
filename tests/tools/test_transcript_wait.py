"""The PreToolUse wait for the tool_use line (tools/hooks/transcript.py): a poll that finds the
file unchanged skips the scan, and nothing the scan would have seen is missed."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from infomark.tools.hooks import transcript


def _line(*blocks: dict[str, object]) -> str:
    return json.dumps({"type": "assistant", "message": {"content": list(blocks)}}) + "\n"


def _on_sleep(monkeypatch: pytest.MonkeyPatch, at: int, act: object) -> list[float]:
    """Replace the module's sleep: the ``at``-th call runs ``act`` (another process writing)."""
    calls: list[float] = []

    def sleep(seconds: float) -> None:
        calls.append(seconds)
        if len(calls) == at:
            act()  # type: ignore[operator]

    monkeypatch.setattr(transcript.time, "sleep", sleep)
    return calls


def test_a_line_written_while_waiting_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_line({"type": "text", "text": "before"}))
    late = _line({"type": "text", "text": "said"}, {"type": "tool_use", "id": "u1"})

    def write() -> None:
        with path.open("a") as f:
            f.write(late)

    _on_sleep(monkeypatch, 3, write)
    chunk = transcript.read_new_text(str(path), 0, tool_use_id="u1", wait=60)
    assert chunk.found_tool_use
    assert chunk.texts == ["before", "said"]
    assert chunk.offset == path.stat().st_size


def test_a_truncated_file_is_read_again_from_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_line({"type": "text", "text": "x" * 200}))
    short = _line({"type": "tool_use", "id": "u1"})

    _on_sleep(monkeypatch, 2, lambda: path.write_text(short))
    chunk = transcript.read_new_text(str(path), 0, tool_use_id="u1", wait=60)
    assert chunk.found_tool_use
    assert chunk.offset == len(short)


def test_an_unchanged_file_is_not_scanned_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_line({"type": "text", "text": "only"}))
    scans: list[int] = []
    real = transcript._scan

    def counting(p: str, offset: int, tool_use_id: str | None) -> transcript.TranscriptChunk:
        scans.append(offset)
        return real(p, offset, tool_use_id)

    monkeypatch.setattr(transcript, "_scan", counting)
    calls = _on_sleep(monkeypatch, 0, None)
    chunk = transcript.read_new_text(str(path), 0, tool_use_id="u1", wait=0.02)
    assert not chunk.found_tool_use
    assert chunk.texts == ["only"]
    assert calls, "it waited"
    # the first scan reads the line, the next finds nothing; the polls in between only stat,
    # and one scan follows the deadline, as before
    assert len(scans) <= 3


# -- find_tool_use: the service's look, the same answer as the read --------------------
_IDS = ["toolu_01A", "toolu_01AB", "x-y_9", 'we"ird', "ünï", "a/b", "a\\b"]


def _entry(kind: str, use: str) -> bytes:
    if kind == "tool_use":
        return _line({"type": "text", "text": "go"}, {"type": "tool_use", "id": use}).encode()
    if kind == "text":
        return _line({"type": "text", "text": f"about {use}"}).encode()  # its id, as prose
    if kind == "long":  # longer than a read of 200 bytes: stepped over
        return _line({"type": "text", "text": "x" * 300}, {"type": "tool_use", "id": use}).encode()
    if kind == "result":  # the user's tool_result names the id too
        block = {"type": "tool_result", "tool_use_id": use, "content": "ok"}
        return (json.dumps({"type": "user", "message": {"content": [block]}}) + "\n").encode()
    if kind == "progress":
        return (json.dumps({"type": "progress", "toolUseID": use}) + "\n").encode()
    if kind == "escaped":  # the same JSON with every character escaped, as a writer may
        text = "".join(f"\\u{ord(c):04x}" for c in use)
        raw = '{"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "%s"}]}}'
        return (raw % text + "\n").encode()
    if kind == "cr":  # a carriage return inside a line: the read splits there too
        return (
            b'{"type": "assistant",\r "message": {}}'
            + _line({"type": "tool_use", "id": use}).encode()
        )
    return (
        b'{"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "'
        + use.encode()
        + b'"\n'
    )


_ENTRIES = st.lists(
    st.tuples(
        st.sampled_from(
            ["tool_use", "text", "long", "result", "progress", "escaped", "cr", "broken"]
        ),
        st.sampled_from(_IDS),
    ),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@example(  # a line longer than a read, then the call's line: both step over, then find it
    entries=[("long", "a/b"), ("tool_use", "toolu_01A")],
    use="toolu_01A",
    partial=0,
    at=0,
    max_read=200,
)
@given(
    entries=_ENTRIES,
    use=st.sampled_from(_IDS),
    partial=st.integers(min_value=0, max_value=80),
    at=st.integers(min_value=0, max_value=2000),
    max_read=st.sampled_from([8 << 20, 64, 200]),
)
def test_find_tool_use_answers_as_the_read_would(
    entries: list[tuple[str, str]], use: str, partial: int, at: int, max_read: int
) -> None:
    """Whatever the file holds (the id in other lines, a torn last line, a line longer than
    one read) and wherever the cursor is: the service's look says "written" exactly when the
    hook's own read, not waiting, finds the call's tool_use. Never "written" when the read
    would find nothing; an id spelled with JSON escapes (Claude Code never writes one) may
    be missed, which costs the wait's bound, and the read still finds it."""
    data = b"".join(_entry(kind, i) for kind, i in entries)
    data += _entry("tool_use", use)[:partial]  # a line being written
    with tempfile.TemporaryDirectory() as d, pytest.MonkeyPatch.context() as mp:
        mp.setattr(transcript, "_MAX_READ", max_read)
        path = Path(d) / "t.jsonl"
        path.write_bytes(data)
        read = transcript.read_new_text(str(path), at, tool_use_id=use, wait=0)
        written, _ = transcript.find_tool_use(str(path), at, use)
        if ("escaped", use) in entries and use.isascii():
            assert not written or read.found_tool_use
        else:
            assert written is read.found_tool_use


@settings(max_examples=200, deadline=None)
@given(
    entries=_ENTRIES,
    use=st.sampled_from(_IDS),
    cut=st.integers(min_value=0, max_value=3000),
    max_read=st.sampled_from([8 << 20, 200]),
)
def test_a_look_that_goes_on_from_where_the_last_stopped_answers_as_one_read(
    entries: list[tuple[str, str]], use: str, cut: int, max_read: int
) -> None:
    """The service looks again as the transcript grows, from the offset its last look
    returned (each byte read once): the same answer as one read of the whole file, wherever
    the first look found the file cut (mid-line included)."""
    assume(("escaped", use) not in entries)  # the one-sided case, above
    data = b"".join(_entry(kind, i) for kind, i in entries) + _entry("tool_use", use)
    with tempfile.TemporaryDirectory() as d, pytest.MonkeyPatch.context() as mp:
        mp.setattr(transcript, "_MAX_READ", max_read)
        path = Path(d) / "t.jsonl"
        path.write_bytes(data[:cut])
        found, after = transcript.find_tool_use(str(path), 0, use)
        assert 0 <= after <= min(cut, len(data))
        path.write_bytes(data)
        if not found:
            found, _ = transcript.find_tool_use(str(path), after, use)
        read = transcript.read_new_text(str(path), 0, tool_use_id=use, wait=0)
        assert found is read.found_tool_use


def test_find_tool_use_in_a_missing_file_finds_nothing(tmp_path: Path) -> None:
    assert transcript.find_tool_use(str(tmp_path / "none.jsonl"), 0, "u1") == (False, 0)


_FIFO_READ = """
import os, sys
from infomark.tools.hooks import transcript
path = sys.argv[1]
os.mkfifo(path)
chunk = transcript.read_new_text(path, 0, tool_use_id="u1", wait=0)
print(chunk.found_tool_use, chunk.texts, transcript.find_tool_use(path, 0, "u1")[0])
"""


def test_a_fifo_in_the_transcripts_place_is_never_opened_for_a_blocking_read(
    tmp_path: Path,
) -> None:
    """An agent that replaces the transcript by a FIFO with no writer: opening it to read
    would block (on the HTTP service's event loop, every session). It reads as nothing."""
    done = subprocess.run(
        [sys.executable, "-c", _FIFO_READ, str(tmp_path / "t.jsonl")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "[]", "False"]
