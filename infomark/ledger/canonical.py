"""Canonical encodings and digests shared by the journal and the evidence registry.

Standard library only: this is on the hook's start-up-sensitive path.
"""

from __future__ import annotations

from infomark.kernel import jsonc
from infomark.kernel.digest import sha256, sha256_hex  # sha256_hex: re-exported
from infomark.kernel.lazyre import lazy_compile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "canonical_json",
    "digest",
    "dumps",
    "normalize_command",
    "printable",
    "scrub_surrogates",
    "sha256_hex",
]


_SURROGATE = lazy_compile("[\ud800-\udfff]")


def scrub_surrogates(text: str) -> str:
    """Replace lone surrogates (the only surrogates a Python str can hold) by ``\\uXXXX``.

    Valid text is returned unchanged; the result always encodes as UTF-8.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")  # fails exactly when a lone surrogate is there
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def dumps(obj: Any, **kw: Any) -> str:
    """``json.dumps`` with UTF-8 text kept readable and lone surrogates escaped (printable)."""
    import json  # indent, default: the CLI's output, not the hook's

    return scrub_surrogates(json.dumps(obj, ensure_ascii=False, **kw))


def canonical_json(obj: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: one byte string per value.

    Lone surrogates (which JSON can carry as ``\\ud800`` escapes) are written as
    escapes, so any Python str is storable and encodes the same for every reader;
    all other text is byte-for-byte the plain UTF-8 form.
    """
    text = jsonc.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return scrub_surrogates(text).encode("utf-8")


def digest(data: bytes) -> str:
    """A self-describing content digest: ``sha256:<hex>``."""
    return "sha256:" + sha256(data).hexdigest()


def normalize_command(command: str) -> str:
    """Whitespace-normalised command line: how a run is matched to a declared oracle."""
    return " ".join(command.split())


def printable(obj: Any) -> Any:
    """A copy of JSON-like data whose strings hold no lone surrogate (shown as ``\\uXXXX``)."""
    if isinstance(obj, str):
        return scrub_surrogates(obj)
    if isinstance(obj, dict):
        return {printable(k): printable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [printable(v) for v in obj]
    return obj
