"""Assistant text from the transcripts of hosts other than Claude Code (Gemini CLI, Codex).

Each reader has the shape of :func:`infomark.tools.hooks.transcript.read_new_text`: the
assistant text after a byte offset, and the offset after the last complete line read. The
hook ingests that text before it authorizes a tool call, so a ``claim_ledger`` written in
the same model turn as the edit counts for it. Standard library only (hot path).

Observed on the pinned binaries (tests/e2e/hosts_harness.py names the versions):

* Gemini CLI: ``transcript_path`` is JSONL under ``~/.gemini/tmp/<project>/chats/``. A model
  message is a line ``{"type": "gemini", "content": "<text>", ...}``, written before its
  ``BeforeTool`` hooks run, and written again (same ``id``) with its ``toolCalls`` once they
  ran; the second copy is skipped here by id within a read and by digest at ingest.
* Codex: ``transcript_path`` is the rollout JSONL under ``~/.codex/sessions/``; an assistant
  message is ``{"type": "response_item", "payload": {"type": "message", "role":
  "assistant", "content": [{"type": "output_text", "text": "<text>"}]}}``.

Neither host writes a line only it can write that carries the hook's answers, so the
journal-head witness of the Claude Code transcript has no counterpart here (``heads`` is
always empty).
"""

from __future__ import annotations

from infomark.kernel import jsonc
from infomark.kernel.regular import open_regular
from infomark.tools.hooks.transcript import TranscriptChunk

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

__all__ = ["READERS", "last_gemini_text", "read_codex", "read_gemini", "tail_entries"]

_MAX_READ = 8 << 20  # never read more than 8 MiB per call


def _lines(path: str | None, offset: int) -> tuple[list[Any], int]:
    """The JSON objects of the complete lines after ``offset``, and the offset after them."""
    if not path:
        return [], offset
    try:
        with open_regular(path) as f:
            size = f.seek(0, 2)
            if offset > size:  # replaced or truncated: start over
                offset = 0
            f.seek(offset)
            data = f.read(_MAX_READ)
    except OSError:
        return [], offset
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset + (len(data) if len(data) >= _MAX_READ else 0)
    entries: list[Any] = []
    for raw in data[: end + 1].splitlines():
        try:
            entries.append(jsonc.loads(raw))
        except (ValueError, RecursionError):
            continue  # readers skip malformed lines
    return entries, offset + end + 1


def tail_entries(path: str | None, size: int = 4 << 20) -> list[Any]:
    """The JSON objects of the complete lines in the last ``size`` bytes of ``path`` (the
    first, cut line skipped): what a hook needs of a long transcript is at its end."""
    if not path:
        return []
    try:
        with open_regular(path) as f:
            end = f.seek(0, 2)
            start = max(0, end - size)
            f.seek(start)
            data = f.read(size)
    except OSError:
        return []
    if start:
        data = data[data.find(b"\n") + 1 :] if b"\n" in data else b""
    entries: list[Any] = []
    for raw in data.splitlines():
        try:
            entries.append(jsonc.loads(raw))
        except (ValueError, RecursionError):
            continue
    return entries


def last_gemini_text(path: str | None) -> str | None:
    """The text of the last model message in a Gemini CLI chat recording, if any."""
    texts = list(_gemini_texts(tail_entries(path)))
    return texts[-1] if texts else None


def _gemini_texts(entries: list[Any]) -> Iterator[str]:
    seen: set[str] = set()
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("type") != "gemini":
            continue
        ident = entry.get("id")
        if isinstance(ident, str):
            if ident in seen:
                continue
            seen.add(ident)
        content = entry.get("content")
        if isinstance(content, str) and content:
            yield content
        elif isinstance(content, list):  # parts: [{"text": …}]
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    yield part["text"]


def _codex_texts(entries: list[Any]) -> Iterator[str]:
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("type") != "response_item":
            continue
        item = entry.get("payload")
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        if item.get("role") != "assistant" or not isinstance(item.get("content"), list):
            continue
        for part in item["content"]:
            if isinstance(part, dict) and part.get("type") == "output_text":
                text = part.get("text")
                if isinstance(text, str) and text:
                    yield text


def _reader(
    texts: Callable[[list[Any]], Iterator[str]],
) -> Callable[..., TranscriptChunk]:
    def read(
        path: str | None, offset: int, *, tool_use_id: str | None = None, wait: float = 0.0
    ) -> TranscriptChunk:
        entries, after = _lines(path, offset)
        return TranscriptChunk(list(texts(entries)), after, False)

    return read


read_gemini = _reader(_gemini_texts)
read_codex = _reader(_codex_texts)

#: ``transcript_format`` (set by the host adapter, never by the host) → reader
READERS: dict[str, Callable[..., TranscriptChunk]] = {"gemini": read_gemini, "codex": read_codex}
