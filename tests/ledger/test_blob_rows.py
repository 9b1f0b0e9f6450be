"""Small tool outputs are rows of the SQLite ledger, committed with the event that points to
them (one commit, one fsync); larger ones stay files under ``<home>/blobs``.

Real SQLite files throughout; a second connection (another ``Ledger`` on the same home)
stands for another process reading what was committed.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from helpers import record_paired
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infomark.ledger.audit import verify_session
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import Ledger
from infomark.ledger.keys import Key
from infomark.ledger.store.blobs import SMALL
from infomark.ledger.store.journal import SCHEMA_VERSION

KEY = Key.from_bytes(b"r" * 32)


def _rows(home: Path) -> dict[str, bytes]:
    with sqlite3.connect(home / "ledger.db") as db:
        return {d: bytes(b) for d, b in db.execute("SELECT digest, data FROM blobs")}


def _files(home: Path) -> list[Path]:
    return [p for p in (home / "blobs").rglob("*") if p.is_file()]


def test_a_small_output_is_a_row_committed_with_its_event(tmp_path: Path) -> None:
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
        ev = record_paired(led, ToolCall("bash", {"command": "make"}), ToolOutcome("3 passed"))
        digest = ev.output_digest
    assert digest == "sha256:" + hashlib.sha256(b"3 passed").hexdigest()
    assert _rows(tmp_path) == {digest.removeprefix("sha256:"): b"3 passed"}
    assert _files(tmp_path) == []  # no file created, fsync'd and renamed for it
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as other:  # another connection
        assert other.blobs.get(digest) == b"3 passed"
        assert other.blobs.exists(digest) and other.blobs.verify(digest) is True
        seen = other.evidence(ev.ref)
        assert seen is not None and other.output_of(seen) == b"3 passed"
        assert verify_session(other) == []


def test_an_output_over_the_threshold_is_a_blob_file(tmp_path: Path) -> None:
    out = "y" * (SMALL + 1)
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
        ev = record_paired(led, ToolCall("bash", {"command": "make"}), ToolOutcome(out))
        assert led.blobs.get(ev.output_digest) == out.encode()
    assert _rows(tmp_path) == {}
    assert len(_files(tmp_path)) == 1


def test_a_transaction_that_rolls_back_stores_no_output(tmp_path: Path) -> None:
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
        digest, _size = led.store_output(ToolOutcome("never recorded"))
        with pytest.raises(RuntimeError), led.transaction():
            raise RuntimeError("the write failed")
        assert led.blobs.get(digest) is None  # dropped with the events it was staged for
    assert _rows(tmp_path) == {}


def test_a_tampered_or_deleted_row_is_named_by_verification(tmp_path: Path) -> None:
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
        ev = record_paired(led, ToolCall("bash", {"command": "make"}), ToolOutcome("1 passed"))
    hexd = ev.output_digest.removeprefix("sha256:")
    for sql, args in (
        ("UPDATE blobs SET data = ? WHERE digest = ?", (b"0 failed", hexd)),
        ("DELETE FROM blobs WHERE digest = ?", (hexd,)),
    ):
        with sqlite3.connect(tmp_path / "ledger.db") as db:  # an agent with a shell
            db.execute(sql, args)
        with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
            assert "blob" in {p.code for p in verify_session(led)}


def test_a_row_planted_ahead_of_an_output_is_overwritten_by_the_output(tmp_path: Path) -> None:
    # an agent that can write ledger.db and guesses what a check will print plants a row
    # under that output's digest; the record stores the real bytes over it
    real = b"2 failed, 1 passed"
    hexd = hashlib.sha256(real).hexdigest()
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
        record_paired(led, ToolCall("bash", {"command": "warm"}), ToolOutcome("up"))
    with sqlite3.connect(tmp_path / "ledger.db") as db:
        db.execute("INSERT INTO blobs(digest, size, data) VALUES (?, ?, ?)",
                   (hexd, len(real), b"3 passed"))  # fmt: skip
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
        ev = record_paired(led, ToolCall("bash", {"command": "pytest"}), ToolOutcome(real, 1))
        assert led.blobs.get(ev.output_digest) == real
        assert verify_session(led) == []
    assert _rows(tmp_path)[hexd] == real


def test_a_home_of_the_previous_schema_gains_the_table_and_keeps_its_files(
    tmp_path: Path,
) -> None:
    big = "z" * (SMALL + 1)
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
        old = record_paired(led, ToolCall("bash", {"command": "a"}), ToolOutcome(big))
    with sqlite3.connect(tmp_path / "ledger.db") as db:  # as schema 3 left it
        db.execute("DROP TABLE blobs")
        db.execute("PRAGMA user_version = 3")
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
        new = record_paired(led, ToolCall("bash", {"command": "b"}), ToolOutcome("small"))
        assert led.blobs.get(old.output_digest) == big.encode()
        assert led.blobs.get(new.output_digest) == b"small"
        assert verify_session(led) == []
    with sqlite3.connect(tmp_path / "ledger.db") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    output=st.one_of(
        st.text(min_size=0, max_size=64),
        st.binary(min_size=0, max_size=64),
        st.integers(SMALL - 8, SMALL + 8).map(lambda n: "é" * (n // 2) + "a" * (n % 2)),
        st.integers(SMALL - 2, SMALL + 2).map(lambda n: b"b" * n),
    )
)
def test_every_output_reads_back_exactly_whichever_way_it_was_stored(
    tmp_path_factory: pytest.TempPathFactory, output: str | bytes
) -> None:
    home = tmp_path_factory.mktemp("rows")
    raw = output if isinstance(output, bytes) else output.encode("utf-8", "surrogatepass")
    with Ledger(home, "s", key=KEY, root=home) as led:
        ev = record_paired(led, ToolCall("bash", {"command": "x"}), ToolOutcome(output))
    assert ev.output_digest == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert ev.record["output_size"] == len(raw)
    stored_as_row = ev.output_digest.removeprefix("sha256:") in _rows(home)
    assert stored_as_row is (len(raw) <= SMALL)
    with Ledger(home, "s", key=KEY, root=home) as led:
        assert led.blobs.get(ev.output_digest) == raw
