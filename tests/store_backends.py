"""The two store backends under test: SQLite (the home's file) and PostgreSQL (a fresh schema).

The ``backend`` fixture (tests/conftest.py) runs a test once per backend. For PostgreSQL
it creates a schema of its own in ``$INFOMARK_TEST_PG`` (default: the ``test`` database
on 127.0.0.1:5432), applies the migrations, points ``INFOMARK_STORE`` at it (children
inherit it) and drops the schema afterwards, so parallel runs and leftovers never
collide. Where PostgreSQL cannot be reached the PostgreSQL half is skipped, loudly: the
reason on every skip, and a banner with the count at the end of the run.

``Backend.connect(home)`` is the attacker's access to the store (plain SQL, no key):
``sqlite3`` on ``ledger.db``, or psycopg on the schema, both with ``?`` placeholders.
"""

from __future__ import annotations

import functools
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "PG_BASE",
    "Backend",
    "RawDb",
    "clone_schema",
    "drop_schema",
    "new_schema",
    "pg_unreachable",
    "schema_of",
]

PG_BASE = os.environ.get("INFOMARK_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


@functools.cache
def pg_unreachable() -> str | None:
    """None when PostgreSQL answers at PG_BASE; else why not (once per run)."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install -e '.[dev]')"
    try:
        psycopg.connect(PG_BASE, connect_timeout=3).close()
    except psycopg.Error as exc:
        return f"cannot connect to {PG_BASE}: {str(exc).strip().splitlines()[0]}"
    return None


def schema_url(schema: str) -> str:
    sep = "&" if "?" in PG_BASE else "?"
    return f"{PG_BASE}{sep}options=-csearch_path%3D{schema}"


def new_schema() -> tuple[str, str]:
    """A fresh schema with infomark's tables: ``(schema, store url)``."""
    import psycopg

    from infomark.ledger.store.pg import init_store

    schema = "t_" + uuid.uuid4().hex[:16]
    with psycopg.connect(PG_BASE, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}".encode())
    url = schema_url(schema)
    init_store(url)
    return schema, url


def drop_schema(schema: str) -> None:
    """Drop ``schema`` and every clone of it (:func:`clone_schema`)."""
    import psycopg

    from infomark.ledger.store.pg import close_pools

    close_pools()
    with psycopg.connect(PG_BASE, autocommit=True) as conn:
        conn.execute("SET lock_timeout = 20000")
        clones = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", (schema + "\\_c%",)
        ).fetchall()
        for (name,) in [*clones, (schema,)]:
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE".encode())


def schema_of(url: str) -> str:
    return url.rsplit("search_path%3D", 1)[1]


def clone_schema(url: str) -> str:
    """A copy of the store at ``url`` (every table and row) in a new schema: its url.

    PostgreSQL's ``cp -r`` of a home: the tamper suite edits the copy, never the original.
    """
    import psycopg

    from infomark.ledger.store.pg_schema import TABLES

    src = schema_of(url)
    dst = f"{src}_c{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_BASE) as conn:
        conn.execute(f"CREATE SCHEMA {dst}".encode())
        for table in ("infomark_schema", *TABLES):
            conn.execute(f"CREATE TABLE {dst}.{table} (LIKE {src}.{table} INCLUDING ALL)".encode())
            conn.execute(f"INSERT INTO {dst}.{table} SELECT * FROM {src}.{table}".encode())
    return schema_url(dst)


class RawDb:
    """Plain SQL on a store, as an attacker with the database's credentials has it."""

    def __init__(self, kind: str, target: Any) -> None:
        self.kind = kind
        if kind == "sqlite":
            import sqlite3

            self._db: Any = sqlite3.connect(target)
        else:
            import psycopg

            self._db = psycopg.connect(target)

    def execute(self, sql: str, args: tuple[Any, ...] | list[Any] = ()) -> Any:
        if self.kind == "sqlite":
            return self._db.execute(sql, args)
        from infomark.ledger.store.pg import _translate

        return self._db.execute(_translate(sql).encode(), args)

    def commit(self) -> None:
        self._db.commit()

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RawDb:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class Backend:
    kind: str  # "sqlite" or "postgresql"
    url: str | None = None
    schema: str | None = None

    @property
    def pg(self) -> bool:
        return self.kind == "postgresql"

    def connect(self, home: Path) -> RawDb:
        return RawDb("sqlite", home / "ledger.db") if not self.pg else RawDb("pg", self.url)

    def marker(self, home: Path) -> Path:
        """The created-marker beside the key that names this home's store."""
        if not self.pg:
            return home / "ledger.created"
        found = sorted(home.glob("store-*.created"))
        assert len(found) == 1, found
        return found[0]

    def sql(self, home: Path, *statements: tuple[str, tuple[Any, ...]]) -> None:
        with self.connect(home) as db:
            for sql, args in statements:
                db.execute(sql, args)
            db.commit()

    def rows(self, home: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self.connect(home) as db:
            return [tuple(r) for r in db.execute(sql, args).fetchall()]
