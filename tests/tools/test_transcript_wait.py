"""The PreToolUse wait for the tool_use line (tools/hooks/transcript.py): a poll that finds the
file unchanged skips the scan, and nothing the scan would have seen is missed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
