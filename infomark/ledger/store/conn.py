"""The connection shape the journal's callers use, on every backend (standard library only).

``sqlite3.Connection`` fits it as it is; the PostgreSQL backend adapts psycopg to it
(:mod:`infomark.ledger.store.pg`), so the SQL of the layers above is written once, with ``?``
placeholders, in the dialect both engines accept.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

__all__ = ["Conn", "Cursor"]


class Cursor(Protocol):
    """What a statement returns (``sqlite3.Cursor`` and psycopg's cursor both fit)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchmany(self, size: int = ..., /) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Conn(Protocol):
    """A connection as the layers above the journal use it (``?`` placeholders)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor: ...
