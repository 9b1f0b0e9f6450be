"""Create a ledger home: key, service token, journal."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from infomark.ledger.home import ensure_private_dir
from infomark.ledger.journal import Journal
from infomark.ledger.keys import check_private, load_key, write_private

__all__ = ["ensure_token", "init_home"]


def ensure_token(home: Path) -> str:
    """The HTTP service's bearer token (``<home>/token``, 0600), created on first use."""
    path = home / "token"
    if not path.exists():
        ensure_private_dir(home)
        write_private(path, secrets.token_urlsafe(32).encode())
    check_private(path)
    return path.read_text().strip()


def init_home(home: Path) -> dict[str, Any]:
    ensure_private_dir(home)
    os.chmod(home, 0o700)  # init also tightens a home that already existed
    key = load_key(home)
    ensure_token(home)
    Journal(home / "ledger.db", key).close()
    return {"home": str(home), "key_id": key.key_id, "db": str(home / "ledger.db")}
