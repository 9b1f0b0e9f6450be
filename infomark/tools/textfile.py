"""Small text files infomark owns beside a host's settings: written whole or not at all.

Standard library only, and importing nothing of ours, so the installers and the hosts'
sandbox modules share it without an import cycle.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_record", "write_text_atomic"]


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temp file and a rename (never half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, path)


def write_record(path: Path, text: str) -> bool:
    """Write the record ``text`` at ``path`` unless it already says that; whether it wrote."""
    try:
        if path.read_text("utf-8") == text:
            return False
    except OSError:
        pass
    write_text_atomic(path, text)
    return True
