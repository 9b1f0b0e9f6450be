"""The command hook's stdin, read as a stream when it is large (issue 28).

A payload of up to ``dispatch.STREAM_AT`` bytes (1 MiB) is read whole and parsed by
``jsonc.loads``, as always. A larger one (a PostToolUse with a 100 MB Bash result) is read
in blocks of that size (:func:`read_large`), decoded as the whole would have been (UTF-8,
errors replaced), and *skimmed*: every string in the ``tool_response`` whose literal is longer than
:data:`SPOOL_AT` characters is decoded chunk by chunk into a
:class:`~infomark.kernel.spooled.Spooled` (an unlinked temp file, hashed on the way) and
replaced in the document by a unique stand-in string; everything else is kept verbatim.
``jsonc.loads`` parses that small document, and :meth:`Skimmed.restore` puts the spooled
strings where their stand-ins are. So the fields are ``json.loads``' fields by
construction: the only code of our own is lexical (where a string starts and ends, whether
it is a key, which top-level key it is under), and the string content itself is decoded by
the C scanner ``json`` uses (``_json.scanstring``), cut only between whole escapes and never
inside a surrogate pair. ``tests/tools/test_stdin_json.py`` drives it against ``json.loads``
over generated documents, chunk sizes and thresholds (Hypothesis), errors included.

Errors keep ``json``'s message and position: an error the C scanner finds inside a long
string is checked against the document before it (an earlier error wins, as in ``json``),
and an error ``jsonc.loads`` finds in the small document is mapped back to the position in
the original (:meth:`Skimmed.error_of`).

Why not a library: ijson (3.6, yajl2_c backend, installable here) yields each string whole,
so a 100 MB stdout is one 100 MB ``str`` (measured: a 30 MB string took RSS from 69 to
98 MiB); json-stream does not stream string values either (its issue #45). What this module saves,
measured (``python -m bench.large_result 100 --base DIR``: a 100.9 MB Bash result through the
installed launcher, the hook's own peak RSS, main and this code alternated, load 1.0): peak
RSS 23.2 MiB against 301.0 MiB, wall 0.65 s against 1.05 s (docs/performance.md). What it
costs: outside strings it steps in Python (a run of scalars and short strings at once, one
step per bracket), so a result of many small values skims slower than ``json.loads`` parses
it (10.8 MB of 200,000 paths: 0.12 s against 0.03 s).
"""

from __future__ import annotations

import os

from infomark.kernel.spooled import Spooled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any, BinaryIO

__all__ = [
    "SPOOL_AT",
    "JSONDecodeError",
    "Skimmed",
    "read_large",
    "skim",
]

SPOOL_AT = 1 << 18  # a tool_response string literal longer than this is spooled
SPOOL_KEY = "tool_response"
_WINDOW = 12  # the length of a surrogate pair's two escapes (backslash-u and 4 digits, twice)
_KEY_LITERAL = 6 * len(SPOOL_KEY) + 2  # the longest literal that spells SPOOL_KEY: escapes
_HIGH_HEX = frozenset("89abAB")
_HEX = frozenset("0123456789abcdefABCDEF")
_EMPTY = " \t\n\r\x0b\x0c"  # what bytes.strip() strips


class JSONDecodeError(ValueError):
    """``json.JSONDecodeError``'s message for a position in the original document."""

    def __init__(self, msg: str, lineno: int, colno: int, pos: int) -> None:
        super().__init__(f"{msg}: line {lineno} column {colno} (char {pos})")
        self.msg, self.lineno, self.colno, self.pos = msg, lineno, colno, pos


class Skimmed:
    """What the skimmer kept: the small document, the spooled strings, and how positions
    in the small document map back to the original."""

    def __init__(self) -> None:
        import io

        self._small = io.StringIO()  # appended to only: one buffer, not a str per token
        self.length = 0  # characters written
        self.spooled: dict[str, Spooled] = {}  # stand-in -> string
        self.shifts: list[tuple[int, int]] = []  # (end of a stand-in in small, total shift)
        self.error: ValueError | RecursionError | None = None  # found while skimming

    @property
    def text(self) -> str:
        """The small document."""
        return self._small.getvalue()

    def write(self, text: str) -> None:
        self._small.write(text)
        self.length += len(text)

    def orig(self, q: int) -> int:
        """The position in the original document of position ``q`` of the small one."""
        shift = 0
        for end, total in self.shifts:
            if end > q:
                break
            shift = total
        return q + shift

    def decode_error(self, msg: str, q: int, small: str) -> JSONDecodeError:
        """``json``'s error at position ``q`` of ``small`` (a prefix of the small document),
        positioned in the original (a spooled string holds no raw line break)."""
        p = self.orig(q)
        lineno = small.count("\n", 0, q) + 1
        colno = p + 1 if lineno == 1 else p - self.orig(small.rindex("\n", 0, q))
        return JSONDecodeError(msg, lineno, colno, p)

    def error_of(self, exc: BaseException) -> BaseException:
        """``exc`` from ``jsonc.loads(self.text)``, positioned in the original document."""
        msg, pos = getattr(exc, "msg", None), getattr(exc, "pos", None)
        if not self.shifts or not isinstance(msg, str) or not isinstance(pos, int):
            return exc
        return self.decode_error(msg, pos, self.text)

    def restore(self, payload: Any) -> Any:
        """``payload`` (parsed from :attr:`text`) with each stand-in replaced by its string."""
        if not self.spooled or not isinstance(payload, dict):
            return payload
        response = payload.get(SPOOL_KEY)
        if isinstance(response, str):
            found = self.spooled.get(response)
            if found is not None:
                payload[SPOOL_KEY] = found
            return payload
        stack: list[Any] = [response]
        while stack:
            node = stack.pop()
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for k, v in items:
                if isinstance(v, str):
                    found = self.spooled.get(v)
                    if found is not None:
                        node[k] = found
                elif isinstance(v, dict | list):
                    stack.append(v)
        return payload


class _Skimmer:
    """The lexical pass: feed it text, it fills a :class:`Skimmed`."""

    def __init__(self, spool_at: int, directory: str | None) -> None:
        self.out = Skimmed()
        self.spool_at = spool_at
        self.directory = directory
        self.buf = ""  # text not yet consumed
        self.base = 0  # position in the original of buf[0]
        self.stack: list[str] = []  # open containers: "{" or "["
        self.last = ""  # the last structural character at this depth ("v": a value)
        self.key: str | None = None  # the top-level key whose value is being read
        self.pending: str | None = None  # the last top-level key string read
        self.token = "infomark-spool-" + os.urandom(16).hex() + "-"
        # a long string being read: where its quote was (original, small), its spool
        self.long_at: tuple[int, int] | None = None
        self.long_spool: Spooled | None = None

    def emit(self, text: str) -> None:
        self.out.write(text)

    def feed(self, text: str, eof: bool = False) -> bool:
        """Consume ``text``; False once an error is found (nothing more is needed)."""
        import _json
        import json.decoder  # noqa: F401 - the C scanner raises its errors only once loaded
        import re

        buf = self.buf + text
        i, n = 0, len(buf)
        special = re.compile(r'["{}\[\]:,]')
        # inside a container: scalars, commas, colons and whole strings, no brackets; at most
        # spool_at characters at once, so no string in it is long
        run = re.compile(r'(?:[^"\[\]{}]+|"[^"\\]*(?:\\.[^"\\]*)*")*', re.DOTALL)
        while self.out.error is None:
            if self.long_at is not None:
                i = self._long(buf, i, eof)
                if self.long_at is not None:
                    break  # needs more text
                continue
            if len(self.stack) >= 2:  # no top-level key to follow: copied as it is
                m = run.match(buf, i, min(n, i + self.spool_at))
                if m is not None and m.end() > i:
                    self._run(buf[i : m.end()])
                    i = m.end()
                    continue
            m = special.search(buf, i)
            if m is None:
                self.emit(buf[i:])
                i = n
                break
            j = m.start()
            if j > i:
                self.emit(buf[i:j])
            ch = buf[j]
            if ch != '"':
                self._structure(ch)
                self.emit(ch)
                i = j + 1
                continue
            try:
                value, end = _json.scanstring(buf, j + 1, True)
            except ValueError as exc:
                pos = getattr(exc, "pos", j)
                unterminated = str(getattr(exc, "msg", "")).startswith("Unterminated")
                if not eof and (unterminated or pos >= n - _WINDOW):
                    if n - j > self._long_from():  # long already: read it chunk by chunk
                        self._start_long(j)
                        i = j + 1
                        continue
                    i = j  # short so far: wait for more text
                    break
                self._fail(str(getattr(exc, "msg", exc)), self.base + pos)
                break
            self._string(buf, j, end, value)
            i = end
        self.base += i
        self.buf = buf[i:]
        return self.out.error is None

    def _run(self, span: str) -> None:
        """Scalars, separators and short strings, kept as they are (``json`` checks them)."""
        self.emit(span)
        tail = span.rstrip(" \t\n\r")
        if tail:
            self.last = tail[-1] if tail[-1] in ",:" else "v"

    def _structure(self, ch: str) -> None:
        if ch in "{[":
            self.stack.append(ch)
            self.last = ch
        elif ch in "}]":
            if self.stack:
                self.stack.pop()
            self.last = "v"
        elif ch == ":":
            self.last = ":"
            if len(self.stack) == 1:
                self.key = self.pending
        else:  # ","
            self.last = ","
            if len(self.stack) == 1:
                self.key = None

    def _long_from(self) -> int:
        """A string whose literal runs past this is read chunk by chunk. A top-level key
        is read whole up to a length that can still spell SPOOL_KEY (in escapes)."""
        top_key = len(self.stack) == 1 and self._is_key()
        return max(self.spool_at, _KEY_LITERAL) if top_key else self.spool_at

    def _is_key(self) -> bool:
        return bool(self.stack) and self.stack[-1] == "{" and self.last in ("{", ",")

    def _spoolable(self) -> bool:
        if self.key != SPOOL_KEY or self._is_key():
            return False
        return len(self.stack) >= 2 or self.last == ":"

    def _string(self, buf: str, j: int, end: int, value: str) -> None:
        """A whole string literal ``buf[j:end]`` (``value`` decoded)."""
        key = self._is_key()
        if key and len(self.stack) == 1:
            self.pending = value
        if end - j > self.spool_at and self._spoolable():
            spool = Spooled(self.directory)
            spool.write(value)
            spool.done()
            self._stand_in(spool, self.base + j, self.base + end)
        else:
            self.emit(buf[j:end])
        self.last = "v"

    def _stand_in(self, spool: Spooled, start: int, end: int) -> None:
        """``"<token>"`` in the small document for the literal at ``start:end`` (original)."""
        name = f"{self.token}{len(self.out.spooled)}"
        self.out.spooled[name] = spool
        literal = f'"{name}"'
        self.emit(literal)
        shift = self.out.shifts[-1][1] if self.out.shifts else 0
        self.out.shifts.append((self.out.length, shift + (end - start) - len(literal)))

    def _start_long(self, j: int) -> None:
        self.long_at = (self.base + j, self.out.length)
        if len(self.stack) == 1 and self._is_key():
            self.pending = None  # a key this long is not SPOOL_KEY (_long_from)
        if self._spoolable():
            self.long_spool = Spooled(self.directory)
        else:
            self.emit('"')  # kept verbatim, piece by piece

    def _long(self, buf: str, i: int, eof: bool) -> int:
        """Read on in the long string whose content starts at ``buf[i]``; the next ``i``."""
        import _json

        assert self.long_at is not None
        # at the end the rest is scanned as it is; before it, up to a whole escape, closed
        # by a quote of ours (the string ends early exactly when it closes before that)
        c = len(buf) if eof else i + _safe_cut(buf, i)
        try:
            value, end = _json.scanstring(buf[i:c] if eof else buf[i:c] + '"', 0, True)
        except ValueError as exc:
            msg = str(getattr(exc, "msg", exc))
            if msg.startswith("Unterminated"):
                self._fail(msg, self.long_at[0])
            else:
                self._fail(msg, self.base + i + getattr(exc, "pos", 0))
            return i
        closed = end <= c - i
        stop = i + end if closed else c
        spool = self.long_spool
        if spool is not None:
            spool.write(value)
        else:
            self.emit(buf[i:stop])
        if closed:
            if spool is not None:
                spool.done()
                self._stand_in(spool, self.long_at[0], self.base + stop)
            self.long_at, self.long_spool = None, None
            self.last = "v"
        return stop

    def _fail(self, msg: str, p: int) -> None:
        """An error the scanner found at ``p`` (original) inside the string being read; an
        error ``json`` finds earlier in the document wins, as in ``json``."""
        from infomark.kernel import jsonc

        at = self.long_at[1] if self.long_at is not None else self.out.length
        small = self.out.text[:at]
        try:
            jsonc.loads(small + '""')
        except RecursionError as exc:
            self.out.error = exc
            return
        except ValueError as exc:
            q = getattr(exc, "pos", None)
            if isinstance(q, int) and q <= len(small):
                self.out.error = self.out.decode_error(str(getattr(exc, "msg", exc)), q, small)
                return
        lineno = small.count("\n") + 1  # the string up to p holds no raw line break
        colno = p + 1 if lineno == 1 else p - self.out.orig(small.rindex("\n"))
        self.out.error = JSONDecodeError(msg, lineno, colno, p)


def _safe_cut(buf: str, i: int) -> int:
    """How much of ``buf[i:]`` (string content) can be decoded now: up to a whole escape,
    and not between the two escapes of a surrogate pair."""
    n = len(buf) - i
    w = buf.find("\\", i + max(0, n - _WINDOW))
    if w < 0:
        return n
    start = w + 1 - _backslashes(buf, i, w)  # the run of backslashes w is in
    c = start + (w - start) // 2 * 2  # an escape starts here
    if c - i >= 6 and buf[c - 6 : c - 4] == "\\u" and _high(buf, c - 6, i):
        c -= 6  # a high surrogate's escape: its low one may follow
    return c - i


def _backslashes(buf: str, i: int, at: int) -> int:
    """How many backslashes end at ``buf[at]`` (not looking before ``i``)."""
    lo = max(i, at - 63)
    while True:
        part = buf[lo : at + 1]
        count = len(part) - len(part.rstrip("\\"))
        if count < len(part) or lo == i:
            return count
        lo = max(i, lo - 4 * len(part))  # a long run: look further back


def _high(buf: str, at: int, i: int) -> bool:
    """Whether ``buf[at:at+6]`` is a ``\\uD800``-``\\uDBFF`` escape (its backslash starting
    an escape, not ending one)."""
    digits = buf[at + 2 : at + 6]
    if digits[0] not in "dD" or digits[1] not in _HIGH_HEX or not set(digits) <= _HEX:
        return False
    return _backslashes(buf, i, at) % 2 == 1


def skim(
    blocks: Iterable[bytes], *, spool_at: int = SPOOL_AT, directory: str | None = None
) -> Skimmed:
    """Skim the UTF-8 ``blocks`` (bytes, in order) of one payload."""
    import codecs

    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
    sk = _Skimmer(spool_at, directory)
    for block in blocks:
        if not sk.feed(decode(block)):
            return sk.out
    sk.feed(decode(b"", True), eof=True)
    return sk.out


def read_large(stream: BinaryIO, first: bytes) -> tuple[int, str, Skimmed]:
    """Read on, in blocks of ``len(first)`` bytes, a payload that starts with ``first``:
    ``(size in bytes, the skimmed document, skimmed)``. The document is ``""`` when the
    payload is blank, or after an error (then in ``skimmed.error``). The stream is always
    read to its end (the host never writes into a closed pipe)."""
    size = [len(first)]

    def blocks() -> Iterator[bytes]:
        yield first
        while block := stream.read(len(first)):
            size[0] += len(block)
            yield block

    it = blocks()
    out = skim(it)
    for _ in it:  # after an error: read on
        pass
    text = "" if out.error is not None else out.text
    if not out.spooled and not text.strip(_EMPTY):
        text = ""
    return size[0], text, out
