"""Concurrency: 8 processes appending to one ledger (one shared session, four own ones):
no lost or duplicated seq, and no "database is locked" escaping to a caller."""

from __future__ import annotations

from pathlib import Path

import pytest
from rel_crash import race


def test_eight_writers_on_one_home(tmp_path: Path) -> None:
    figures = race(tmp_path, writers=8, ops=30, shared=4)
    assert figures["problems"] == []
    assert figures["calls"] == 240


def test_eight_writers_on_one_session(tmp_path: Path) -> None:
    figures = race(tmp_path, writers=8, ops=15, shared=8, seed=5)
    assert figures["problems"] == []


@pytest.mark.slow
def test_concurrency_soak(tmp_path: Path) -> None:
    figures = race(tmp_path, writers=8, ops=400, shared=4, seed=99)
    assert figures["problems"] == [], figures["problems"][:5]
