"""Which commits wait for the disk (issue 13: the fsync dominated the http hook).

A decision whose loss fails closed commits without an fsync: a deny (nothing ran) or an
allow of a call that changes nothing (a result recorded for a lost decision is refused,
never evidence). Every other commit is durable. Real SQLite files throughout; what a
commit did is read from the journal (``last_commit_synced``) and from a second process's
view of the file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers import EDIT, grounded, record_paired

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import RecordRefused
from infomark.ledger.calls import ToolCall, ToolOutcome

pytestmark = pytest.mark.sqlite_only
READ = ToolCall("Read", {"file_path": "a.py"})


def _decisions_on_disk(home: Path) -> int:
    db = sqlite3.connect(home / "ledger.db")  # another connection, as another process sees it
    try:
        return int(db.execute("SELECT count(*) FROM events WHERE type = 'decision'").fetchone()[0])
    finally:
        db.close()


def test_a_read_only_allow_commits_without_an_fsync_and_is_visible(
    gk: Gatekeeper, home: Path
) -> None:
    before = _decisions_on_disk(home)
    decision = gk.authorize(READ)
    assert decision.allowed
    assert gk.store.journal.last_commit_synced is False
    assert _decisions_on_disk(home) == before + 1
    ev = gk.record(READ, ToolOutcome("text"), call_id=decision.call_id)  # a durable commit
    assert gk.store.journal.last_commit_synced is True
    assert gk.evidence(ev.ref) is not None


def test_a_deny_of_a_read_commits_without_an_fsync(gk: Gatekeeper, home: Path) -> None:
    decision = gk.authorize(ToolCall("Read", {"file_path": str(home / "key")}))
    assert decision.code == "protected_home"
    assert gk.store.journal.last_commit_synced is False
    decision = gk.authorize(EDIT)  # no ledger: denied, but a mutation's decision is durable
    assert not decision.allowed
    assert gk.store.journal.last_commit_synced is True


def test_an_allowed_mutation_waits_for_the_disk(gk: Gatekeeper) -> None:
    grounded(gk)
    decision = gk.authorize(EDIT)
    assert decision.allowed
    assert gk.store.journal.last_commit_synced is True


def test_an_allowed_run_waits_for_the_disk(gk: Gatekeeper) -> None:
    """A command may write (``python fix.py``): its decision is durable like a mutation's."""
    decision = gk.authorize(ToolCall("Bash", {"command": "pytest -q"}))
    assert decision.allowed and gk.store.journal.last_commit_synced is True


def test_a_bypass_waits_for_the_disk(gk: Gatekeeper) -> None:
    decision = gk.authorize(EDIT, bypass=True)
    assert decision.bypass and gk.store.journal.last_commit_synced is True


def test_every_other_commit_waits_for_the_disk(gk: Gatekeeper) -> None:
    gk.ingest("claim_ledger:\n  claims:\n    - {id: C1, text: t, status: Guess}\n")
    assert gk.store.journal.last_commit_synced is True
    gk.new_turn("go")
    assert gk.store.journal.last_commit_synced is True
    record_paired(gk, ToolCall("bash", {"command": "make"}), ToolOutcome("ok", 0))
    assert gk.store.journal.last_commit_synced is True


def test_a_relaxed_commit_that_needs_the_disk_syncs_the_wal(gk: Gatekeeper) -> None:
    led = gk.store
    with led.transaction(durable=False):
        led.emit("turn_started", {"prompt_digest": None})
        led.require_sync()
    assert led.journal.last_commit_synced is True
    with led.transaction(durable=False):
        led.emit("turn_started", {"prompt_digest": None})
    assert led.journal.last_commit_synced is False
    with led.transaction():  # the relaxation is for one transaction only
        led.emit("turn_started", {"prompt_digest": None})
    assert led.journal.last_commit_synced is True
    assert led.replay().to_dict() == led.state.to_dict()


def test_a_result_for_a_decision_lost_before_the_disk_is_refused(gk: Gatekeeper) -> None:
    """What a power loss would leave: the result of a call whose decision is gone."""
    decision = gk.authorize(READ)
    with pytest.raises(RecordRefused):
        gk.record(READ, ToolOutcome("text"), call_id=decision.call_id + "-lost")


def test_a_result_and_the_policy_layers_bookkeeping_commit_once_and_together(
    gk: Gatekeeper, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One durable commit per recorded result: the evidence and what the policy layer makes
    of it are one transaction, so both are on the disk or neither is; a policy layer that
    fails leaves no evidence behind the error, and the call can still be recorded."""
    from helpers import pair

    from infomark.gates.policies.runtime import PolicyRuntime

    led = gk.store
    commits: list[int] = []
    real_write = type(led.journal).write

    def write(journal: object, session: str | None = None) -> object:
        commits.append(1)
        return real_write(journal, session)  # type: ignore[arg-type]

    call = ToolCall("bash", {"command": "make"}, tool_call_id="t1")
    cid = pair(gk, call)
    monkeypatch.setattr(type(led.journal), "write", write)
    evidence = gk.record(call, ToolOutcome("ok", 0), call_id=cid)
    assert len(commits) == 1 and led.journal.last_commit_synced is True
    types = [r.type for r in gk.events()]
    assert types[-1] == "policy_updated" and "evidence_recorded" in types
    assert any(r.payload.get("ref") == evidence.ref for r in gk.events())

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the policy layer failed")

    second = ToolCall("bash", {"command": "make test"}, tool_call_id="t2")
    cid2 = pair(gk, second)
    seen = len(list(gk.events()))
    monkeypatch.setattr(PolicyRuntime, "after_tool", broken)
    with pytest.raises(RuntimeError, match="policy layer failed"):
        gk.record(second, ToolOutcome("ok", 0), call_id=cid2)
    assert len(list(gk.events())) == seen  # rolled back whole: no evidence, no bookkeeping
    assert cid2 in gk.state.pending_calls
    monkeypatch.undo()
    again = gk.record(second, ToolOutcome("ok", 0), call_id=cid2)
    assert again.ref.startswith("ev_")
