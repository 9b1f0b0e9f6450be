"""Property tests of fork and merge (issue 17), over sessions built through the real facade."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.engine import Ledger
from infomark.ledger.fork import comparable_state
from tests.helpers import stamp
from tests.ledger.fork_helpers import (
    FIXER,
    ORACLE,
    call,
    ground,
    ledger,
    open_gk,
    prefix_state,
)

_SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_OPS = st.sampled_from(["declare", "redeclare", "edit", "run", "fail", "fix", "stamp", "diverge"])


def _step(gk: Gatekeeper, op: str, refs: list[str]) -> None:
    if op == "declare":
        gk.ingest(ledger(("C1", "tests pass", ORACLE), ("C2", "fix applies", FIXER)))
    elif op == "redeclare":
        gk.ingest(ledger(("C1", "tests pass fast", ORACLE), ("C2", "fix applies", FIXER)))
    elif op == "edit":
        call(gk, "Edit", file_path="a.py", old_string="1", new_string="2")
    elif op in ("run", "fail", "fix"):
        cmd = {"run": ORACLE, "fail": ORACLE + " fail", "fix": FIXER}[op]
        ref = call(gk, "bash", command=cmd)
        if ref:
            refs.append(ref)
    elif op == "stamp" and refs:
        ref = refs[-1]
        cid = "C2" if gk.evidence(ref) and FIXER in gk.evidence(ref).command else "C1"  # type: ignore[union-attr]
        gk.ingest(stamp(cid, ref))
    elif op == "diverge" and refs:
        gk.ingest(f"divergence_event: claim_id=C1 evidence_ref={refs[-1]}\n")


def _build(gk: Gatekeeper, ops: list[str]) -> list[str]:
    refs: list[str] = []
    gk.ingest(ledger(("C1", "tests pass", ORACLE), ("C2", "fix applies", FIXER)))
    ground(gk)
    for op in ops:
        _step(gk, op, refs)
    return refs


@_SETTINGS
@given(ops=st.lists(_OPS, min_size=1, max_size=10), cut=st.floats(0, 1))
def test_forked_state_equals_the_replay_of_the_prefix(ops: list[str], cut: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        gk = open_gk(Path(tmp) / ".infomark", "S")
        _build(gk, [*ops, "fix", "stamp"])  # always includes a stamped mutation near the end
        head = gk.state.seq
        upto = max(1, round(cut * head))
        g2 = gk.fork("S2", upto=upto)
        assert comparable_state(g2.store.replay()) == prefix_state(gk, upto)
        assert comparable_state(g2.state) == prefix_state(gk, upto)
        fresh = Ledger(g2.home, "S2", root=g2.store.root)
        assert fresh.state.stale_claims() == g2.state.stale_claims()
        fresh.close()
        assert g2.audit().verified is True


_ACTIONS = st.lists(
    st.tuples(st.sampled_from(["op", "fork", "merge"]), _OPS, st.integers(0, 9), st.floats(0, 1)),
    min_size=1,
    max_size=10,
)


@_SETTINGS
@given(actions=_ACTIONS)
def test_any_sequence_of_forks_and_merges(
    actions: list[tuple[str, str, int, float]],
) -> None:
    """Replay is deterministic, every session verifies, and a repeated merge is a no-op."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / ".infomark"
        sessions = {"S": open_gk(home, "S")}
        parents: dict[str, str] = {}
        refs: dict[str, list[str]] = {"S": _build(sessions["S"], ["run", "stamp"])}
        for n, (kind, op, pick, cut) in enumerate(actions):
            names = sorted(sessions)
            name = names[pick % len(names)]
            gk = sessions[name]
            if kind == "op":
                _step(gk, op, refs[name])
            elif kind == "fork":
                low = 2 if name in parents else 1
                head = gk.state.seq
                upto = max(low, round(cut * head))
                new = f"F{n}"
                sessions[new] = gk.fork(new, upto=upto)
                parents[new] = name
                refs[new] = list(refs[name])
                assert comparable_state(sessions[new].state) == prefix_state(gk, upto)
            elif name in parents:
                target = sessions[parents[name]]
                target.merge_from(name)
                head, state = target.store.journal.last_seq(target.session), target.state.to_dict()
                again = target.merge_from(name)
                assert again["merged"] is False
                assert target.store.journal.last_seq(target.session) == head
                assert target.state.to_dict() == state
            for s, g in sessions.items():
                assert g.audit().verified is True, (s, g.audit().problems)
        for s, g in sessions.items():
            reopened = Ledger(home, s, root=g.store.root)
            assert reopened.replay().to_dict() == g.state.to_dict()
            assert reopened.replay().to_dict() == reopened.replay().to_dict()
            reopened.close()


@_SETTINGS
@given(ops=st.lists(_OPS, min_size=1, max_size=6), pick=st.floats(0, 1))
def test_a_fork_tampered_anywhere_cannot_be_merged(ops: list[str], pick: float) -> None:
    import sqlite3

    import pytest

    from infomark.kernel.errors import VerificationError

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / ".infomark"
        gk = open_gk(home, "S")
        _build(gk, ["run"])
        g2 = gk.fork("S2")
        _build(g2, [*ops, "run", "stamp"])
        head = g2.store.journal.last_seq("S2")
        seq = 1 + round(pick * (head - 1))
        db = sqlite3.connect(home / "ledger.db")
        db.execute(
            "UPDATE events SET payload = '{\"tampered\":1}' WHERE session = 'S2' AND seq = ?",
            (seq,),
        )
        db.commit()
        db.close()
        before = gk.state.to_dict()
        with pytest.raises(VerificationError):
            gk.merge_from("S2")
        assert gk.store.journal.last_seq("S") == before["seq"]
        assert gk.state.to_dict() == before
