"""Canonical encodings and digests shared by the journal and the evidence registry.

Standard library only: this is on the hook's start-up-sensitive path.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "digest", "normalize_command", "sha256_hex"]


def canonical_json(obj: Any) -> bytes:
    """Sorted keys, no whitespace, ASCII (``\\u`` escapes): one byte string per value.

    ASCII keeps any Python str storable, lone surrogates included, and gives every
    reader (SQLite, other languages) the same bytes to hash.
    """
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(data: bytes) -> str:
    """A self-describing content digest: ``sha256:<hex>``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def normalize_command(command: str) -> str:
    """Whitespace-normalised command line: how a run is matched to a declared oracle."""
    return " ".join(command.split())
