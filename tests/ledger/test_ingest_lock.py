"""Ingest parses outside the store's write lock, and never parses a known duplicate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infomark.ledger.engine import Ledger
from infomark.ledger.parse import parser

TEXT = "claim_ledger:\n  claims:\n    - id: C1\n      status: Guess\n  premises_for_plan: [C1]\n"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each call of the real parser, with whether the journal's write lock was held."""
    seen: list[bool] = []
    real = parser.parse_message
    ledgers: list[Ledger] = []

    def spy(text: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(any(led.journal._in_tx for led in ledgers))
        return real(text, *args, **kwargs)

    monkeypatch.setattr(parser, "parse_message", spy)
    seen_ledgers = ledgers
    monkeypatch.setattr(Ledger, "_spy_ledgers", seen_ledgers, raising=False)
    return seen


def _ledger(tmp_path: Path, parses: list[bool]) -> Ledger:
    led = Ledger(tmp_path / "home", "s", root=tmp_path)
    Ledger._spy_ledgers.append(led)  # type: ignore[attr-defined]
    return led


def test_blocks_are_parsed_before_the_write_lock(tmp_path: Path, parses: list[bool]) -> None:
    led = _ledger(tmp_path, parses)
    report = led.ingest(TEXT)
    assert report.ledger_updated and "C1" in led.state.claims
    assert parses == [False]  # parsed once, with no write transaction open
    led.close()


def test_a_known_duplicate_is_not_parsed(tmp_path: Path, parses: list[bool]) -> None:
    led = _ledger(tmp_path, parses)
    led.ingest(TEXT, dedupe=True)
    again = led.ingest(TEXT, dedupe=True)
    assert again.skipped
    assert parses == [False]  # the second ingest did not parse
    led.close()


def test_a_duplicate_seen_only_by_another_process_is_still_skipped(
    tmp_path: Path, parses: list[bool]
) -> None:
    first, second = _ledger(tmp_path, parses), _ledger(tmp_path, parses)
    first.ingest(TEXT, dedupe=True)
    report = second.ingest(TEXT, dedupe=True)  # its state was loaded before the first ingest
    assert report.skipped and list(second.state.claims) == ["C1"]
    assert parses[0] is False
    first.close()
    second.close()


def test_the_facade_parses_before_it_takes_the_write_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gatekeeper.ingest wraps the engine's ingest in its own transaction (one commit with
    the policy layer's events): the parse must still run before that lock (issue 9)."""
    from infomark.gatekeeper import Gatekeeper

    gk = Gatekeeper.open(tmp_path / "home", "s", root=tmp_path)
    real = parser.parse_message
    locked: list[bool] = []

    def spy(text: str, *args: Any, **kwargs: Any) -> Any:
        locked.append(gk._ledger.journal._in_tx)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(parser, "parse_message", spy)
    report = gk.ingest(TEXT)
    assert report.ledger_updated and gk.ledger().status("C1") == "Guess"
    assert locked == [False]
    gk.close()
