"""The CLI's ``--json`` output, written as it is encoded: the bytes of
``canonical.dumps(data, indent=2, default=str)``, never the whole text in memory.

``json.dumps(indent=2)`` runs Python's pure-Python encoder (its C encoder has no indent) and
joins every token into one string: for ``audit --json`` of a 100,000-event session that is
~1.2 M tokens and ~10 MB of text, a quarter of the command's time and most of its memory.
Here the structure is walked the way ``json.encoder`` walks it, and a *flat* dict or list
(every key a ``str``, every value a ``str``, ``int``, ``float``, ``bool`` or ``None``: a
timeline entry, a claim) is encoded in one call of the C encoder, with the separators that
indentation would put between its items. Output goes out in batches of ~64 KiB.
``tests/test_jsonout.py`` holds the output equal to ``dumps`` (Hypothesis).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring

try:
    from _json import make_encoder
except ImportError:  # pragma: no cover - CPython has it
    make_encoder = None  # type: ignore[assignment, misc]
from typing import Any

from infomark.ledger.canonical import scrub_surrogates

__all__ = ["write_json"]

_INDENT = "  "
_FLAT = frozenset({str, int, float, bool, type(None)})
_STR = frozenset({str})
_PIECES = 512  # pieces per write: ~64 KiB of a report's timeline
_encoders: dict[int, Callable[[object, int], Any]] = {}


def _no_default(o: object) -> object:
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _flat_encoder(level: int) -> Callable[[object, int], Any]:
    """The C encoder whose item separator is the newline and indent of ``level``."""
    found = _encoders.get(level)
    if found is not None:
        return found
    sep = ",\n" + _INDENT * level
    enc: Callable[[object, int], Any]
    if make_encoder is not None:
        enc = make_encoder(None, _no_default, encode_basestring, None, ": ", sep,
                           False, False, True)  # fmt: skip
    else:  # an interpreter without _json: json's own (Python) encoder, same output
        encoder = json.JSONEncoder(ensure_ascii=False, separators=(sep, ": "))

        def enc(o: object, _level: int) -> Any:
            return encoder.iterencode(o)

    _encoders[level] = enc
    return enc


def _float(o: float) -> str:
    if o != o:
        return "NaN"
    if o == float("inf"):
        return "Infinity"
    if o == -float("inf"):
        return "-Infinity"
    return float.__repr__(o)


def _key(k: object) -> str:
    """A dict key as ``json`` writes it (``default`` does not apply to keys)."""
    if isinstance(k, str):
        return k
    if isinstance(k, float):
        return _float(k)
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, int):
        return int.__repr__(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


def _flat(o: object) -> bool:
    """A non-empty dict or list of scalars only (str keys): one call of the C encoder."""
    t = type(o)
    if t is dict:
        d: dict[Any, Any] = o  # type: ignore[assignment]
        return bool(d) and _STR.issuperset(map(type, d)) and _FLAT.issuperset(map(type, d.values()))
    if t is list or t is tuple:
        seq: list[Any] = o  # type: ignore[assignment]
        return bool(seq) and _FLAT.issuperset(map(type, seq))
    return False


def write_json(data: Any, write: Callable[[str], object]) -> None:
    """Write ``data`` as ``dumps(data, indent=2, default=str)`` would, plus a newline."""
    out: list[str] = []
    emit = out.append
    enc_str = encode_basestring
    markers: set[int] = set()

    def flush() -> None:
        write(scrub_surrogates("".join(out)))
        out.clear()

    def flat(o: Any, level: int) -> str:
        opening, closing = ("{", "}") if type(o) is dict else ("[", "]")
        text = "".join(_flat_encoder(level + 1)(o, 0))
        return (
            opening + "\n" + _INDENT * (level + 1) + text[1:-1] + "\n" + _INDENT * level + closing
        )

    def value(o: Any, level: int) -> None:
        if isinstance(o, str):
            emit(enc_str(o))
        elif o is None:
            emit("null")
        elif o is True:
            emit("true")
        elif o is False:
            emit("false")
        elif isinstance(o, int):
            emit(int.__repr__(o))
        elif isinstance(o, float):
            emit(_float(o))
        elif isinstance(o, list | tuple | dict):
            if not o:
                emit("{}" if isinstance(o, dict) else "[]")
                return
            if _flat(o):
                emit(flat(o, level))
                return
            if id(o) in markers:
                raise ValueError("Circular reference detected")
            markers.add(id(o))
            inner = "\n" + _INDENT * (level + 1)
            if isinstance(o, dict):
                first = True
                for k, v in o.items():
                    emit(("{" if first else ",") + inner + enc_str(_key(k)) + ": ")
                    first = False
                    value(v, level + 1)
                emit("\n" + _INDENT * level + "}")
            else:
                opening = "[" + inner
                between = "," + inner
                for v in o:
                    emit(opening)
                    opening = between
                    if _flat(v):
                        emit(flat(v, level + 1))
                    else:
                        value(v, level + 1)
                    if len(out) >= _PIECES:
                        flush()
                emit("\n" + _INDENT * level + "]")
            markers.discard(id(o))
        else:
            if id(o) in markers:
                raise ValueError("Circular reference detected")
            markers.add(id(o))
            value(str(o), level)
            markers.discard(id(o))

    value(data, 0)
    emit("\n")
    flush()
