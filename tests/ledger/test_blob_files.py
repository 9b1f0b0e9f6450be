"""What is already under an output's name in the blob store, and what the store makes of it.

An output over :data:`SMALL` is a file named by its digest; a smaller one a row of the ledger.
Something already there under that name is either kept (a regular file of the right size:
the output recorded before) or replaced (a link, which would let the agent change the blob
through a file elsewhere; a file of another size; a row with other bytes). A file planted with
other bytes of the right size is kept and reads as altered: the audit reports it, exactly as an
edit made after the record. Never silently taken for the output. Real files throughout,
recorded through a real ``Ledger`` or ``Gatekeeper``, on both stores where rows are concerned.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import pytest
from helpers import record_paired
from hypothesis import given, settings
from hypothesis import strategies as st
from store_backends import Backend

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.audit import verify_session
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import Ledger
from infomark.ledger.keys import Key
from infomark.ledger.store.blobs import SMALL, BlobStore

KEY = Key.from_bytes(b"f" * 32)
OUTPUT = ("line of a large build log\n" * ((SMALL // 26) + 40)).encode()


def _path(home: Path, data: bytes) -> Path:
    hexd = hashlib.sha256(data).hexdigest()
    return home / "blobs" / hexd[:2] / hexd[2:]


def _plant(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _record(led: Ledger, command: str, output: bytes) -> str:
    ev = record_paired(led, ToolCall("bash", {"command": command}), ToolOutcome(output.decode()))
    return ev.output_digest


def test_a_planted_file_of_the_right_size_reads_as_altered(tmp_path: Path) -> None:
    path = _path(tmp_path, OUTPUT)
    _plant(path, b"X" * len(OUTPUT))  # same size, other bytes
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
        digest = _record(led, "make", OUTPUT)
        assert led.blobs.verify(digest) is False
        problems = verify_session(led)
    assert [(p.code, "altered" in p.message) for p in problems] == [("blob", True)], problems


def test_a_file_of_another_size_is_replaced_by_the_output(tmp_path: Path) -> None:
    path = _path(tmp_path, OUTPUT)
    _plant(path, b"X" * (len(OUTPUT) - 1))
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
        digest = _record(led, "make", OUTPUT)
        assert led.blobs.verify(digest) is True
        assert verify_session(led) == []
    assert path.read_bytes() == OUTPUT


def test_a_link_planted_under_the_name_is_replaced_by_a_file(tmp_path: Path) -> None:
    """A symlink to a file with the right bytes: the agent could alter the blob later through
    its target, so the store writes its own regular file in the link's place."""
    target = tmp_path / "elsewhere"
    target.write_bytes(OUTPUT)
    path = _path(tmp_path, OUTPUT)
    path.parent.mkdir(parents=True)
    path.symlink_to(target)
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
        digest = _record(led, "make", OUTPUT)
    assert not path.is_symlink() and path.read_bytes() == OUTPUT
    target.write_bytes(b"Y" * len(OUTPUT))  # the agent rewrites the link's old target
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
        assert led.blobs.verify(digest) is True
        assert verify_session(led) == []


def test_a_genuine_blob_is_not_written_again(tmp_path: Path) -> None:
    path = _path(tmp_path, OUTPUT)
    with Ledger(tmp_path, "s", key=KEY, root=tmp_path) as led:
        _record(led, "make", OUTPUT)
        first = os.stat(path)
        _record(led, "make again", OUTPUT)
        assert verify_session(led) == []
    again = os.stat(path)
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)


@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(min_size=0, max_size=3000),
    planted=st.one_of(st.none(), st.binary(max_size=3000), st.just("same size"), st.just("link")),
)
def test_the_store_never_takes_something_else_for_the_output_in_silence(
    data: bytes, planted: bytes | str | None
) -> None:
    """Property, whatever was under the name before ``put`` (nothing, other bytes, other bytes
    of the same size, a link to the right bytes): the name then holds a regular file of the
    output's size, and ``verify`` is true exactly when its bytes are the output's."""
    with tempfile.TemporaryDirectory() as d:
        home = Path(d)
        path = _path(home, data)
        if planted == "same size":
            _plant(path, bytes(b ^ 0xFF for b in data))
        elif planted == "link":
            (home / "t").write_bytes(data)
            path.parent.mkdir(parents=True)
            path.symlink_to(home / "t")
        elif isinstance(planted, bytes):
            _plant(path, planted)
        store = BlobStore(home / "blobs")
        digest = store.put(data)
        assert digest == "sha256:" + hashlib.sha256(data).hexdigest()
        assert not path.is_symlink() and path.stat().st_size == len(data)
        assert store.verify(digest) is (path.read_bytes() == data)


def _planted_row(backend: Backend, root: Path, output: bytes) -> tuple[Gatekeeper, str]:
    home = root / ".infomark"
    gk = Gatekeeper.open(home, "s", root=root)
    hexd = hashlib.sha256(output).hexdigest()
    backend.sql(home, ("INSERT INTO blobs(digest, size, data) VALUES (?, ?, ?)",
                       (hexd, len(output), b"Q" * len(output))))  # fmt: skip
    return gk, _record(gk.store, "make", output)


def test_a_planted_row_is_replaced_on_either_store(backend: Backend, tmp_path: Path) -> None:
    """A row planted under a small output's digest with other bytes of the same size does not
    stand for the output: the record's own insert overwrites it, on SQLite and PostgreSQL."""
    output = b"3 passed, 0 failed\n"
    gk, digest = _planted_row(backend, tmp_path, output)
    with gk:
        led = gk.store
        assert led.blobs.get(digest) == output
        assert led.blobs.verify(digest) is True
        assert verify_session(led) == []


@pytest.mark.postgres_only
def test_a_planted_big_row_reads_as_altered(backend: Backend, tmp_path: Path) -> None:
    """PostgreSQL keeps a big output (over 64 KiB) already stored with the right size without
    sending it again, as the SQLite store keeps a file: other bytes in it read as altered."""
    output = ("z" * 69_999 + "\n").encode()
    gk, digest = _planted_row(backend, tmp_path, output)
    with gk:
        led = gk.store
        assert led.blobs.verify(digest) is False
        problems = verify_session(led)
    assert [(p.code, "altered" in p.message) for p in problems] == [("blob", True)], problems
