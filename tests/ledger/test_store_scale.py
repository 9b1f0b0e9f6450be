"""O(1) resumable state at scale (issue 13): a 10k-event session is resumed from its tail,
opened by the facade without a full replay, and verified in memory flat in its length.

The sessions are grown once per backend (a module fixture: on PostgreSQL every append is a
round trip, and growing them per test was most of this suite's store time); the tests only
read them, and the one that appends works on a copy (``cp -r`` of the home, and on
PostgreSQL a clone of the schema).
"""

from __future__ import annotations

import shutil
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import record_paired
from store_backends import Backend, clone_schema

from infomark.ledger import engine as engine_mod
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import Ledger
from infomark.ledger.keys import Key
from infomark.ledger.store.pg_schema import fingerprint
from infomark.ledger.store.select import remember_store
from infomark.ledger.verify import verify_session

KEY = Key.from_bytes(b"t" * 32)
EVERY = engine_mod._SNAPSHOT_EVERY
BIG = 10_000  # events of the session "big"
SMALL = 1_000  # events of the session "small": a tenth


@dataclass(frozen=True)
class Grown:
    home: Path
    store: str | None  # the PostgreSQL URL, None for the home's SQLite file

    def ledger(self, session: str) -> Ledger:
        return Ledger(self.home, session, key=KEY, root=self.home, store=self.store)


def _fill(grown: Grown, session: str, events: int) -> None:
    """``events`` events: one in 200 a recorded command run (evidence and its blob), the rest
    messages, many appends per transaction (snapshots as usual)."""
    led = grown.ledger(session)
    for i in range(events // 200):
        record_paired(led, ToolCall("bash", {"command": f"t {i}"}), ToolOutcome(f"o{i % 7}", 0))
    done = led.state.seq
    while done < events:
        with led.transaction():
            for _ in range(min(5000, events - done)):
                done += 1
                led.emit("message_ingested", {"digest": f"d{done}", "size": 1, "source": "x"})
    assert led.state.seq == events
    led.close()


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory, module_backend: Backend) -> Grown:
    home = tmp_path_factory.mktemp("scale") / ".infomark"
    home.mkdir(mode=0o700)
    (home / "key").write_bytes(KEY.secret)
    (home / "key").chmod(0o600)
    made = Grown(home, module_backend.url)
    _fill(made, "small", SMALL)
    _fill(made, "big", BIG)
    return made


def _copy(grown: Grown, dest: Path) -> Grown:
    """``cp -r`` of the home, and on PostgreSQL of its store (a clone of the schema, dropped
    with the module's schema)."""
    home = dest / ".infomark"
    shutil.copytree(grown.home, home)
    if grown.store is None:
        return Grown(home, None)
    url = clone_schema(grown.store)
    (home / f"store-{fingerprint(grown.store)}.created").rename(
        home / f"store-{fingerprint(url)}.created"
    )
    remember_store(home, url)
    return Grown(home, url)


def test_a_fresh_process_at_10k_events_reads_only_the_tail(grown: Grown) -> None:
    led = grown.ledger("big")
    assert led.state.seq == BIG
    assert led.journal.rows_read < EVERY  # a snapshot near the head, not a full replay
    assert led.state.to_dict() == led.replay().to_dict()
    led.close()


def test_verification_memory_is_flat_in_the_number_of_events(grown: Grown) -> None:
    def peak(session: str) -> int:
        led = grown.ledger(session)
        tracemalloc.start()
        problems = verify_session(led)
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert problems == []
        led.close()
        return top

    small, large = peak("small"), peak("big")
    assert large < 2 * small + 200_000, (small, large)  # not 10x: rows are streamed


def test_verification_reports_progress_up_to_the_total(grown: Grown) -> None:
    led = grown.ledger("big")
    seen: list[tuple[int, int]] = []
    assert verify_session(led, progress=lambda d, t: seen.append((d, t))) == []
    assert seen[-1] == (BIG, BIG) and len(seen) >= 3
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    led.close()


def test_the_facade_opens_a_10k_session_without_a_full_replay(grown: Grown, tmp_path: Path) -> None:
    """What the hook process does on every call: open the session, decide, append."""
    from infomark.gatekeeper import Gatekeeper

    mine = _copy(grown, tmp_path)  # it appends: the other tests read the original
    for _ in range(3):  # three hook-like processes in a row
        gk = Gatekeeper.open(mine.home, "big", root=tmp_path, store=mine.store)
        gk.authorize(ToolCall("Read", {"file_path": "x"}))
        assert gk.store.journal.rows_read < EVERY
        gk.close()
