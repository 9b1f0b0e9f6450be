"""Read the assistant text Claude Code wrote to its transcript since the last position.

The transcript is JSONL; each content block of an assistant message is its own
line (``type: "assistant"``, ``message.content[]``). Claude Code writes it in the
background, so at PreToolUse the line holding the current ``tool_use`` can lag by
tens of milliseconds: :func:`read_new_text` waits for it, with a bound.

The same pass collects the journal heads the host witnessed: the hook's PostToolUse
evidence tag carries ``head=SEQ:HASH8``, and Claude Code writes it back into the
transcript as a ``hook_additional_context`` attachment (only the host writes those).
"""

from __future__ import annotations

import os
import time

from infomark.kernel import jsonc
from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.records import dataclass
from infomark.kernel.regular import regular_fd

__all__ = [
    "HEAD_TAG",
    "WAIT_SECONDS",
    "TranscriptChunk",
    "find_tool_use",
    "read_new_text",
]

HEAD_TAG = lazy_compile(  # only a transcript with hook context uses it
    r"\[infomark evidence_ref=ev_[0-9a-f]+ [^\]]*\bhead=(\d{1,12}):([0-9a-f]{8})\]"
)

_MAX_READ = 8 << 20  # never read more than 8 MiB per call
_PLAIN_ID = lazy_compile(r"[A-Za-z0-9_-]{1,200}")  # Claude Code's: toolu_ and base62
WAIT_SECONDS = 0.5
"""How long a PreToolUse waits for the line of its ``tool_use`` (then it reads what is there)."""
_POLL_SECONDS = 0.005


@dataclass(frozen=True, slots=True)
class TranscriptChunk:
    texts: list[str]  # assistant text blocks, in order
    offset: int  # byte offset after the last complete line read
    found_tool_use: bool
    heads: tuple[tuple[int, str], ...] = ()  # (seq, 8 hex) witnessed by the host, in order


def _read_at(path: str, offset: int) -> tuple[bytes, int] | None:
    """Up to ``_MAX_READ`` bytes of the regular file ``path`` from ``offset`` (from 0 if the
    file is shorter: replaced or truncated), and that offset; None if it cannot be read or
    is not a regular file. A FIFO or a device put in the transcript's place is never opened
    for a blocking read: the HTTP service reads transcripts on its event loop."""
    try:
        fd, info = regular_fd(path)
    except OSError:
        return None
    try:
        if offset > info.st_size:
            offset = 0
        return os.pread(fd, _MAX_READ, offset), offset
    except OSError:
        return None
    finally:
        os.close(fd)


def _scan(path: str, offset: int, tool_use_id: str | None) -> TranscriptChunk:
    read = _read_at(path, offset)
    if read is None:
        return TranscriptChunk([], offset, False)
    data, offset = read
    return _parse(data, offset, tool_use_id)


def _witnessed(entry: dict[str, object], heads: list[tuple[int, str]]) -> None:
    attachment = entry.get("attachment")
    if not isinstance(attachment, dict) or attachment.get("type") != "hook_additional_context":
        return
    content = attachment.get("content")
    for text in content if isinstance(content, list) else ():
        if isinstance(text, str):
            heads.extend((int(m.group(1)), m.group(2)) for m in HEAD_TAG.finditer(text))


def _parse(data: bytes, offset: int, tool_use_id: str | None) -> TranscriptChunk:
    end = data.rfind(b"\n")
    if end < 0:
        if len(data) >= _MAX_READ:  # one line longer than we read at once: step over it
            return TranscriptChunk([], offset + len(data), False)
        return TranscriptChunk([], offset, False)
    texts: list[str] = []
    heads: list[tuple[int, str]] = []
    found = False
    for raw in data[: end + 1].splitlines():
        try:
            entry = jsonc.loads(raw)
        except (ValueError, RecursionError):
            continue  # readers skip malformed lines
        if isinstance(entry, dict) and entry.get("type") == "attachment":
            _witnessed(entry, heads)
            continue
        if not isinstance(entry, dict) or entry.get("type") != "assistant":
            continue
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif block.get("type") == "tool_use" and tool_use_id and block.get("id") == tool_use_id:
                found = True
    return TranscriptChunk(texts, offset + end + 1, found, tuple(heads))


def read_new_text(
    path: str | None,
    offset: int,
    *,
    tool_use_id: str | None = None,
    wait: float = WAIT_SECONDS,
) -> TranscriptChunk:
    """Assistant text after ``offset``; waits (bounded) for the line of ``tool_use_id``."""
    if not path:
        return TranscriptChunk([], offset, False)
    p = path
    deadline = time.monotonic() + wait
    texts: list[str] = []
    heads: list[tuple[int, str]] = []
    found = False
    while True:
        chunk = _scan(p, offset, tool_use_id)
        texts.extend(chunk.texts)
        heads.extend(chunk.heads)
        progressed = chunk.offset != offset
        offset = chunk.offset
        found = found or chunk.found_tool_use
        if progressed and not found:
            continue  # more is there right now (a long file, or a step over a huge line)
        if found or tool_use_id is None or time.monotonic() >= deadline:
            return TranscriptChunk(texts, offset, found, tuple(heads))
        time.sleep(_POLL_SECONDS)  # waiting on another process's file write, bounded
        while not _grown(p, offset) and time.monotonic() < deadline:
            time.sleep(_POLL_SECONDS)  # nothing new: a scan would read nothing either


def find_tool_use(
    path: str, offset: int, tool_use_id: str, *, limit: int | None = None
) -> tuple[bool, int]:
    """Whether :func:`read_new_text` from ``offset`` would find the line of ``tool_use_id``
    now, without waiting, for less: a byte search for the id, and only the complete lines
    that hold it parsed; and, when it would not, the offset after the complete lines looked
    at (none of them is that line: a later look may start there, so a wait reads each byte
    once however long the transcript grows). The HTTP service asks it while it waits for
    the line on its event loop, before the call takes its turn
    (``tools/service_transcript.py``). ``limit``: stop after about that many bytes (whole
    reads of up to 8 MiB), not found yet; a later look goes on from the offset returned.

    Never true where the read would find nothing. An id the transcript spells with JSON
    escapes (``\\u0074oolu_…``; Claude Code writes its ids as they are) is not found by the
    search: the service then waits its bound, and the call's own read finds the line.
    """
    plain = _PLAIN_ID.fullmatch(tool_use_id) is not None  # written as is in any JSON
    needle = b'"' + tool_use_id.encode("ascii") + b'"' if plain else b""  # a whole JSON string
    start = offset
    while limit is None or offset - start < limit:
        read = _read_at(path, offset)
        if read is None:
            return False, offset
        data, offset = read
        end = data.rfind(b"\n")
        if end < 0:  # no complete line: nothing to find, unless one line outgrew a read
            if len(data) < _MAX_READ:
                return False, offset
            offset += len(data)
            continue
        if (
            _holds(data, end, needle, tool_use_id)
            if plain
            else _parse(data, 0, tool_use_id).found_tool_use
        ):
            return True, offset
        offset += end + 1
    return False, offset


def _holds(data: bytes, end: int, needle: bytes, tool_use_id: str) -> bool:
    """Whether a complete line of ``data`` (those before ``end``) is an assistant message
    with a ``tool_use`` block of ``tool_use_id``: only lines holding its bytes are parsed."""
    at = data.find(needle, 0, end)
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        stop = data.find(b"\n", at)
        if _parse(data[start : stop + 1], 0, tool_use_id).found_tool_use:
            return True
        at = data.find(needle, stop, end)
    return False


def _grown(path: str, offset: int) -> bool:
    """Whether ``path`` no longer ends at ``offset`` (grown, or truncated: a scan starts over).

    A ``stat`` costs a fifth of a :func:`_scan` that opens, seeks and reads nothing, and a
    PreToolUse whose line is late polls up to a hundred times. A file that cannot be stat'ed
    is not grown: the scan after the wait reports it as it would have.
    """
    try:
        return os.stat(path).st_size != offset
    except OSError:
        return False
