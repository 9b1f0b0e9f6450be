"""``json.loads`` and ``json.dumps`` on the C accelerator, without importing :mod:`json`.

Importing ``json`` imports ``re`` and compiles five patterns (~5 M instructions, a
thirtieth of a hook process). The work itself is done by ``_json``, the C module ``json``
uses when it can: its scanner and its encoder. This module drives them the way ``json``
does (same options, same defaults, same output) and hands anything else to ``json``
itself:

- any error: ``json`` runs the same call again and raises its own exception, message and
  position included (a ``JSONDecodeError`` is a ``ValueError``, as always);
- bytes ``json.loads`` would decode as other than UTF-8 (a BOM, UTF-16/32), or a Python
  without ``_json``.

So a result is ``json``'s result and an error is ``json``'s error; the fast path only
skips the import. ``tests/kernel/test_jsonc.py`` drives both side by side (Hypothesis).
"""

from __future__ import annotations

from infomark.kernel.regular import read_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None  # type: ignore[assignment]

__all__ = [
    "dumps",
    "encode_basestring",
    "encoder",
    "load_path",
    "loads",
    "loads_compact",
    "scan_once",
]

_SPACE = " \t\n\r"  # json's WHITESPACE


class _Context:
    """What ``_json.make_scanner`` reads: ``json.JSONDecoder()``'s defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {
        "-Infinity": float("-inf"),
        "Infinity": float("inf"),
        "NaN": float("nan"),
    }.__getitem__
    memo: dict[str, str] = {}  # noqa: RUF012 - read once by make_scanner


_scan: Callable[[str, int], tuple[Any, int]] | None = (
    _json.make_scanner(_Context()) if _json is not None else None  # type: ignore[arg-type]
)


def _no_scan(s: str, i: int) -> tuple[Any, int]:
    raise ValueError("no C scanner")  # pragma: no cover - CPython has it


scan_once: Callable[[str, int], tuple[Any, int]] = _scan if _scan is not None else _no_scan
"""``_json``'s scanner: ``(value, end)`` of the JSON value that starts at index ``i`` of
``s`` (no whitespace skipped; anything else raises). One C call: what a hot loop that
checks the end itself uses in place of :func:`loads_compact`."""


def _slow_loads(s: str | bytes | bytearray) -> Any:
    import json

    return json.loads(s)


def loads(s: str | bytes | bytearray) -> Any:
    """``json.loads(s)``."""
    if type(s) is bytes and len(s) >= 4 and s[0] and s[1] and s[0] not in (0xEF, 0xFE, 0xFF):
        s = s.decode("utf-8", "surrogatepass")  # what json's detect_encoding picks here
    if _scan is None or type(s) is not str:
        return _slow_loads(s)
    n = len(s)
    i = 0
    while i < n and s[i] in _SPACE:
        i += 1
    try:
        value, end = _scan(s, i)
    except Exception:
        return _slow_loads(s)
    while end < n and s[end] in _SPACE:
        end += 1
    if end != n:
        return _slow_loads(s)  # "Extra data"
    return value


def load_path(path: str) -> Any:
    """The JSON document in the file at ``path``; None when it cannot be read or is not JSON
    (a host's optional settings file: absent and broken mean the same to its reader)."""
    try:  # a FIFO or device there must not block the reader
        return loads(read_regular(path).decode("utf-8"))
    except (OSError, ValueError):
        return None


def loads_compact(s: str) -> Any:
    """``json.loads(s)`` for a value with no whitespace around it (what the journal stores):
    one call of the C scanner. Anything else, or any error: :func:`loads` decides."""
    if _scan is not None and type(s) is str:
        try:
            value, end = _scan(s, 0)
        except Exception:
            return loads(s)
        if end == len(s):
            return value
    return loads(s)


def _not_serializable(o: object) -> Any:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def encoder(
    *,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    ensure_ascii: bool = True,
    allow_nan: bool = True,
) -> Callable[[Any], str]:
    """``json.JSONEncoder(...).encode`` for these options (built once, reusable)."""
    item, key = separators if separators is not None else (", ", ": ")

    def encode(obj: Any) -> str:
        return dumps(
            obj,
            sort_keys=sort_keys,
            separators=(item, key),
            ensure_ascii=ensure_ascii,
            allow_nan=allow_nan,
        )

    return encode


def dumps(
    obj: Any,
    *,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    ensure_ascii: bool = True,
    allow_nan: bool = True,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """``json.dumps(obj, ...)`` for these options (indent and the rest: ``json``)."""
    item, key = separators if separators is not None else (", ", ": ")
    if _json is not None:
        if type(obj) is str:
            return (_json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring)(obj)
        try:  # a fresh encoder per call, as json.dumps makes one (its cycle markers)
            run = _json.make_encoder(
                {},  # check_circular
                default or _not_serializable,  # JSONEncoder.default
                _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring,
                None,  # indent
                key,
                item,
                sort_keys,
                False,  # skipkeys
                allow_nan,
            )
            chunks = run(obj, 0)
        except Exception:
            chunks = None
        if chunks is not None:
            return "".join(chunks)
    import json

    return json.dumps(
        obj, sort_keys=sort_keys, separators=separators, ensure_ascii=ensure_ascii,
        allow_nan=allow_nan, default=default,
    )  # fmt: skip


def encode_basestring(s: str) -> str:
    """``json.encoder.encode_basestring``: a str as a JSON string literal, non-ASCII kept."""
    if _json is not None:
        return _json.encode_basestring(s)
    import json.encoder

    return json.encoder.encode_basestring(s)
