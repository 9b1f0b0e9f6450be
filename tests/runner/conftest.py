"""The runner's fixtures: a scripted model server on 127.0.0.1 and journal helpers.

Waiting on another process is done on the journal: :func:`wait_event` polls the session's
events (a bounded poll on committed rows, never a fixed sleep) until one matches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from infomark.ledger.keys import load_key
from infomark.ledger.store.journal import Journal
from infomark.tools.runner.agentfile import AgentSpec, ModelSpec
from infomark.tools.runner.scripted import ScriptedModelServer

Row = tuple[int, str, dict[str, Any]]


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as srv:
        yield srv


def scripted_spec(server: ScriptedModelServer, **kw: Any) -> AgentSpec:
    """An agent spec named ``t`` that talks to ``server`` with no retries."""
    return AgentSpec(name="t", model=ModelSpec(url=server.url, name="scripted", retries=0), **kw)


def events(home: Path, session: str) -> list[Row]:
    journal = Journal(home / "ledger.db", load_key(home, create=False))
    try:
        return [(r.seq, r.type, r.payload) for r in journal.events(session)]
    finally:
        journal.close()


def types(home: Path, session: str) -> list[str]:
    return [t for _, t, _ in events(home, session)]


def wait_event(
    home: Path,
    session: str,
    match: Callable[[Row], bool],
    *,
    after: int = 0,
    timeout: float = 60.0,
    alive: Callable[[], str | None] | None = None,
) -> Row:
    """The first event after seq ``after`` that ``match``es; fails with the journal tail."""
    deadline = time.monotonic() + timeout
    seen: list[Row] = []
    while time.monotonic() < deadline:
        if (home / "ledger.db").exists() and (home / "key").exists():
            seen = events(home, session)
            for row in seen:
                if row[0] > after and match(row):
                    return row
        if alive is not None and (why := alive()) is not None:
            pytest.fail(f"the process ended while waiting: {why}; tail: {seen[-8:]}")
        time.sleep(0.05)  # a poll interval on the journal, not a synchronisation by time
    pytest.fail(f"no matching event within {timeout}s; tail: {[(s, t) for s, t, _ in seen[-12:]]}")
