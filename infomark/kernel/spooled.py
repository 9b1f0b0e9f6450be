"""Strings too large to hold in memory: a tool result spooled to an anonymous temp file.

The command hook reads a large payload from stdin as a stream
(:mod:`infomark.tools.hooks.stdin_json`): each string of the ``tool_response`` longer than
the spool threshold is decoded chunk by chunk into a :class:`Spooled`, its UTF-8 bytes
(lone surrogates passed through, as every output is encoded) written to an unlinked temp
file and hashed on the way. A tool output made of such strings is a :class:`LargeText`:
its parts in order, whose bytes are exactly the UTF-8 encoding of the ``str`` the output
would have been (``stdout + stderr``, or the sorted JSON dump of a dict response), so the
digest and the blob the journal records are the same as for that ``str``.

Nothing here holds more than one chunk of a spooled string at a time, except
:meth:`LargeText.text` (and ``str()``), the exact fallback for the rare consumer that needs
the whole text (a list response's ``str()``, a 1 MiB line that decides a failure's first
line); ``tests/kernel/test_spooled.py`` holds every method equal to the ``str`` it stands for.
"""

from __future__ import annotations

import os

from infomark.kernel.digest import sha256

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, BinaryIO

    from infomark.kernel.digest import Hash

__all__ = ["CHUNK", "LargeText", "Spooled", "dumps_sorted", "has_spooled", "materialized"]

CHUNK = 1 << 16  # bytes read back from a spool at a time


class Spooled:
    """One string, as its UTF-8 bytes (surrogatepass) in an anonymous temp file."""

    __slots__ = ("_file", "_hash", "length", "size")

    def __init__(self, directory: str | None = None) -> None:
        import tempfile

        # unlinked at once: gone when closed or when the process ends, however it ends
        self._file: BinaryIO = tempfile.TemporaryFile(dir=directory)  # noqa: SIM115
        self._hash: Hash = sha256(large=True)
        self.size = 0  # bytes
        self.length = 0  # code points

    def write(self, text: str) -> None:
        """Append ``text`` (the next decoded piece of the string)."""
        data = text.encode("utf-8", "surrogatepass")
        self._hash.update(data)
        self._file.write(data)
        self.size += len(data)
        self.length += len(text)

    def done(self) -> None:
        """The string is complete: its bytes reach the file (read back by ``os.pread``)."""
        self._file.flush()

    def hash(self) -> Hash:
        """A copy of the running SHA-256 of the bytes written."""
        return self._hash.copy()

    def chunks(self) -> Iterator[bytes]:
        """The string's bytes, :data:`CHUNK` at a time."""
        fd, offset = self._file.fileno(), 0
        while offset < self.size:
            data = os.pread(fd, min(CHUNK, self.size - offset), offset)
            if not data:
                raise OSError(f"spool file ended at {offset} of {self.size} bytes")
            offset += len(data)
            yield data

    def texts(self) -> Iterator[str]:
        """The string, one decoded chunk at a time (never splitting a character)."""
        import codecs

        decode = codecs.getincrementaldecoder("utf-8")("surrogatepass").decode
        for data in self.chunks():
            text = decode(data)
            if text:
                yield text
        tail = decode(b"", True)
        if tail:
            yield tail

    def text(self) -> str:
        """The whole string (the exact fallback: it holds the string in memory)."""
        return b"".join(self.chunks()).decode("utf-8", "surrogatepass")

    def close(self) -> None:
        self._file.close()

    def __bool__(self) -> bool:
        return self.length > 0

    def __len__(self) -> int:
        return self.length

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"<Spooled {self.length} characters, {self.size} bytes>"


class _Escaped:
    """A spooled string as ``json.dumps(..., ensure_ascii=False)`` writes its content
    (without the quotes)."""

    __slots__ = ("spooled",)

    def __init__(self, spooled: Spooled) -> None:
        self.spooled = spooled

    def texts(self) -> Iterator[str]:
        import _json

        for text in self.spooled.texts():  # escaping is per character: any split is safe
            yield _json.encode_basestring(text)[1:-1]


_TEXT_CHUNK = 1 << 14  # characters of an in-memory part encoded at a time


class LargeText:
    """A tool output too large to hold: ``str`` parts and spooled strings, in order.

    It stands for the ``str`` its parts join to: :meth:`chunks` are that text's UTF-8 bytes
    (surrogatepass), :meth:`digest` their ``(sha256:…, size)``, :meth:`texts` the text.
    """

    __slots__ = ("parts",)

    def __init__(self, parts: tuple[str | Spooled | _Escaped, ...]) -> None:
        self.parts = parts

    def texts(self) -> Iterator[str]:
        for part in self.parts:
            if isinstance(part, str):
                for i in range(0, len(part), _TEXT_CHUNK):
                    yield part[i : i + _TEXT_CHUNK]
            else:
                yield from part.texts()

    def chunks(self, start: int = 0) -> Iterator[bytes]:
        """The text's UTF-8 bytes (surrogatepass), from part ``start`` on."""
        for part in self.parts[start:]:
            if isinstance(part, Spooled):
                yield from part.chunks()
            else:
                texts = (part,) if isinstance(part, str) else part.texts()
                for text in texts:
                    for i in range(0, len(text), _TEXT_CHUNK):
                        yield text[i : i + _TEXT_CHUNK].encode("utf-8", "surrogatepass")

    def digest(self) -> tuple[str, int]:
        """``("sha256:<hex>", size in bytes)`` of the text's UTF-8 bytes. A spooled first
        part was hashed while it was read: its bytes are not read again."""
        first = self.parts[0] if self.parts else None
        if isinstance(first, Spooled):
            h, size, start = first.hash(), first.size, 1
        else:
            h, size, start = sha256(large=True), 0, 0
        for data in self.chunks(start):
            h.update(data)
            size += len(data)
        return "sha256:" + h.hexdigest(), size

    def text(self) -> str:
        """The whole text (the exact fallback: it holds the text in memory)."""
        return "".join(self.texts())

    def first_line(
        self,
        judge: Callable[[str], str | None],
        judge_long: Callable[[str], str | None],
        cap: int = 1 << 20,
    ) -> str | None:
        """``judge`` of the first line for which it is not None, as over
        ``text().splitlines()``, reading the text chunk by chunk (``judge("")`` must be
        None: a ``\\r\\n`` split across two chunks yields one extra empty line).

        A line still open after ``cap`` characters goes to ``judge_long(prefix)``, which
        answers for the whole line when its first ``cap`` characters decide it, else None:
        then the whole text is read into memory and judged line by line (the exact
        fallback; rare: a first informative line over a mebibyte that its start does not
        decide).
        """
        carry = ""
        for text in self.texts():
            lines = (carry + text).splitlines(keepends=True)
            carry = lines.pop() if lines and _open(lines[-1]) else ""
            for line in lines:
                found = judge(_bare(line))
                if found is not None:
                    return found
            if len(carry) > cap:
                found = judge_long(carry[:cap])
                return found if found is not None else _judge_all(self.text(), judge)
        return judge(_bare(carry)) if carry else None

    def __bool__(self) -> bool:
        return any(bool(p.spooled if isinstance(p, _Escaped) else p) for p in self.parts)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"<LargeText of {len(self.parts)} parts>"


def _open(line: str) -> bool:
    """Whether ``line`` may go on in the next chunk: no line break, or a ``\\r`` that a
    ``\\n`` may follow."""
    return line.endswith("\r") or _bare(line) == line


def _bare(line: str) -> str:
    """``line`` without its line break."""
    return line.splitlines()[0] if line else line


def _judge_all(text: str, judge: Callable[[str], str | None]) -> str | None:
    for line in text.splitlines():
        found = judge(line)
        if found is not None:
            return found
    return None


def has_spooled(value: Any) -> bool:
    """Whether ``value`` (a parsed JSON value) holds a :class:`Spooled` anywhere."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Spooled):
            return True
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def materialized(value: Any) -> Any:
    """``value`` with every :class:`Spooled` read back into a ``str`` (the exact fallback)."""
    if isinstance(value, Spooled):
        return value.text()
    if isinstance(value, dict):
        return {k: materialized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [materialized(v) for v in value]
    return value


def dumps_sorted(value: Any) -> str | LargeText:
    """``json.dumps(value, sort_keys=True, ensure_ascii=False)``; a :class:`LargeText` when
    ``value`` holds spooled strings (their escaped content read from the spool)."""
    from infomark.kernel import jsonc

    if not has_spooled(value):
        return jsonc.dumps(value, sort_keys=True, ensure_ascii=False)
    token = "infomark-spooled-" + os.urandom(16).hex() + "-"
    found: list[Spooled] = []

    def stand_in(o: object) -> str:
        if isinstance(o, Spooled):
            found.append(o)
            return f"{token}{len(found) - 1}"
        raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")

    text = jsonc.dumps(value, sort_keys=True, ensure_ascii=False, default=stand_in)
    parts: list[str | Spooled | _Escaped] = []
    for i, piece in enumerate(text.split(token)):
        if i:  # the piece starts with the index of the spooled string it stands for
            digits = len(piece) - len(piece.lstrip("0123456789"))
            parts.append(_Escaped(found[int(piece[:digits])]))
            piece = piece[digits:]
        if piece:
            parts.append(piece)
    return LargeText(tuple(parts))
