"""Create a ledger home: key, service token, journal."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from infomark.kernel.errors import ConfigError
from infomark.ledger.home import ensure_private_dir
from infomark.ledger.keys import check_private, load_key, write_private
from infomark.ledger.store.journal import Journal
from infomark.ledger.store.select import open_journal, pick_store, remember_store, resolve_store

__all__ = ["ensure_token", "init_home"]


def ensure_token(home: Path) -> str:
    """The HTTP service's bearer token (``<home>/token``, 0600), created on first use."""
    path = home / "token"
    if not path.exists():
        ensure_private_dir(home)
        write_private(path, secrets.token_urlsafe(32).encode())
    check_private(path)
    return path.read_text().strip()


def init_home(home: Path, store: str | None = None) -> dict[str, Any]:
    """Create (or tighten) a home; with a PostgreSQL store, create or migrate its schema.

    ``store`` (or ``$INFOMARK_STORE``) a ``postgresql://`` URL: the schema is created or
    upgraded (:func:`infomark.ledger.store.pg.init_store`), and an explicit ``store`` is
    remembered in ``<home>/store`` for every later opener of this home.
    """
    ensure_private_dir(home)
    os.chmod(home, 0o700)  # init also tightens a home that already existed
    key = load_key(home)
    ensure_token(home)
    url = resolve_store(home, pick_store(store))
    if url is None:
        Journal(home / "ledger.db", key).close()
        return {"home": str(home), "key_id": key.key_id, "db": str(home / "ledger.db")}
    try:
        from infomark.ledger.store.pg import init_store
    except ImportError as exc:
        raise ConfigError(
            "a postgresql:// store needs psycopg: pip install 'infomark[postgres]'"
        ) from exc
    info = init_store(url)
    if store:
        remember_store(home, url)
    journal = open_journal(home, key, url)  # the first open MACs the new store's manifest
    try:
        journal.join()  # this host's key signs it; the marker beside the key names it
    finally:
        journal.close()
    return {"home": str(home), "key_id": key.key_id, "db": None, **info}
