"""Which store a home uses, and opening it (standard library only until PostgreSQL is chosen).

The store is chosen, first match wins, by:

1. an explicit value (``--store``, ``Gatekeeper.open(store=…)``);
2. ``$INFOMARK_STORE``;
3. ``store = "…"`` in the configuration (the facade passes it as the explicit value when
   the environment names none);
4. ``<home>/store``, written by ``infomark init --store URL`` (so every later command,
   hook and service of that home finds it);
5. else the home's own SQLite file, ``<home>/ledger.db``: the embedded default.

A value is ``sqlite`` (the default, said explicitly) or a ``postgresql://`` /
``postgres://`` URL. psycopg is imported only when a PostgreSQL store is opened
(``pip install 'infomark[postgres]'``).
"""

from __future__ import annotations

import os

from infomark.kernel.contexts import suppress
from infomark.kernel.errors import ConfigError
from infomark.ledger.keys import check_private, write_private
from infomark.ledger.store.blobs import BlobStore
from infomark.ledger.store.journal import Journal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _typeshed import StrPath

    from infomark.ledger.keys import Key
    from infomark.ledger.store.base import BaseJournal
    from infomark.ledger.store.blobs import Blobs

__all__ = [
    "STORE_ENV",
    "check_store",
    "is_postgres",
    "open_blobs",
    "open_journal",
    "pick_store",
    "redacted",
    "remember_store",
    "resolve_store",
]

STORE_ENV = "INFOMARK_STORE"
_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(store: str | None) -> bool:
    return bool(store) and str(store).startswith(_SCHEMES)


def check_store(value: str, where: str) -> str | None:
    """``value`` as a store: None for SQLite, the URL for PostgreSQL; else a ConfigError."""
    text = value.strip()
    if text in ("", "sqlite"):
        return None
    if is_postgres(text):
        return text
    raise ConfigError(
        f'{where}: store must be "sqlite" or a postgresql:// URL, not {redacted(text)!r}'
    )


def redacted(store: str | None) -> str:
    """The store for messages: never a password."""
    if not store:
        return "sqlite"
    if not is_postgres(store):
        return store[:80]
    from infomark.ledger.store.pg_schema import redact  # no psycopg: loaded for a URL only

    return redact(store)


def pick_store(explicit: str | None, configured: str | None = None) -> str | None:
    """The first of ``explicit``, ``$INFOMARK_STORE`` and the configuration's ``store``
    (whose default, ``sqlite``, defers to ``<home>/store``); None: ask the home."""
    if explicit:
        return explicit
    env = os.environ.get(STORE_ENV)
    if env:
        return env
    return None if configured in (None, "", "sqlite") else configured


def resolve_store(home: StrPath, explicit: str | None = None) -> str | None:
    """The store URL of ``home`` (None: its SQLite file), by the order in the docstring."""
    if explicit:
        return check_store(explicit, "--store")
    env = os.environ.get(STORE_ENV)
    if env:
        return check_store(env, STORE_ENV)
    path = os.path.join(home, "store")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    check_private(path)  # it may hold a password
    return check_store(text, str(path))


def remember_store(home: StrPath, url: str | None) -> None:
    """``<home>/store`` (0600) names the store for every later opener of this home."""
    path = os.path.join(home, "store")
    if url is None:
        with suppress(FileNotFoundError):
            os.unlink(path)
        return
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read().strip() == url:
                return
        os.unlink(path)
    write_private(path, (url + "\n").encode())


def open_journal(home: StrPath, key: Key, store: str | None = None) -> BaseJournal:
    """The journal of ``home`` on its store (``store`` as resolved by :func:`resolve_store`)."""
    url = resolve_store(home, store)
    if url is None:
        return Journal(os.path.join(home, "ledger.db"), key)
    try:
        from infomark.ledger.store.pg import PgJournal
    except ImportError as exc:
        raise ConfigError(
            "a postgresql:// store needs psycopg: pip install 'infomark[postgres]'"
        ) from exc
    from pathlib import Path

    return PgJournal(Path(home), key, url)


def open_blobs(home: StrPath, journal: BaseJournal) -> Blobs:
    """Where tool outputs go: ``<home>/blobs`` for SQLite, the store's table for PostgreSQL."""
    if journal.kind == "postgresql":
        from infomark.ledger.store.pg import PgJournal
        from infomark.ledger.store.pg_blobs import PgBlobStore

        assert isinstance(journal, PgJournal)
        return PgBlobStore(journal)
    rows = journal if isinstance(journal, Journal) else None  # small outputs as its rows
    return BlobStore(os.path.join(home, "blobs"), rows)
