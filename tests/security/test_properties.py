"""Properties over agent-controlled action sequences (text, tool inputs, tool choice).

Whatever the agent does, through the facade exactly as an integration drives it:

1. no sequence mints evidence: every `evidence_recorded` event pairs with an earlier
   authorization of the same call (tool and input digest), once; forged records
   (guessed call ids, replays, other inputs) only ever leave `record_refused`;
2. no claim is grounded by a run that is not its oracle: an oracle stamp's evidence ran
   exactly the claim's oracle (as the shell reads it), a PASS only on a PASS run;
3. no finish after a mutation without fresh oracle evidence, except a journaled forced
   finish (`finished_unverified`), a journaled honest stop (`finished_blocked`) or a
   journaled bypass.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from infomark.kernel.errors import RecordRefused
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import call_digest
from infomark.ledger.semantics import shell_text

IDS = ["C1", "C2"]
ORACLES = ["pytest -q", "make check", "true", "pytest -q || true"]
COMMANDS = [*ORACLES, "pytest  -q", "pytest -q\nls", "ls", "pytest -q -k easy"]
CALLS = [
    ToolCall("Edit", {"file_path": "a.py", "old_string": "1", "new_string": "2"}),
    ToolCall("Read", {"file_path": "a.py"}),
    ToolCall("WebFetch", {"url": "https://example.com"}),
    *(ToolCall("Bash", {"command": c}) for c in COMMANDS),
]
TEXTS = [
    "Done.",
    "All set",
    "LGTM",
    "gate: BLOCKED",
    'question: "ok?"',
    "gate: G9",
    "gate: SUCCESS",
    "",
]

ledger_op = st.tuples(
    st.just("ledger"),
    st.lists(
        st.tuples(
            st.sampled_from(IDS),
            st.sampled_from(["Exact", "Guess"]),
            st.sampled_from([*ORACLES, None]),
            st.booleans(),
        ),
        min_size=1,
        max_size=2,
        unique_by=lambda c: c[0],
    ),
    st.booleans(),
)
call_op = st.tuples(st.just("call"), st.integers(0, len(CALLS) - 1), st.sampled_from([0, 0, 1, 5]))
forge_op = st.tuples(
    st.just("forge"),
    st.integers(0, len(CALLS) - 1),
    st.sampled_from(["guess", "replay", "other_input", "none"]),
)
stamp_op = st.tuples(
    st.just("stamp"),
    st.sampled_from(IDS),
    st.integers(0, 12),
    st.sampled_from(["oracle_stamp", "inference_stamp"]),
    st.sampled_from(["PASS", "FAIL", "EXPECTED_FAIL"]),
)
finish_op = st.tuples(st.just("finish"), st.sampled_from(TEXTS))
ops = st.lists(
    st.one_of(ledger_op, call_op, forge_op, stamp_op, finish_op), min_size=1, max_size=22
)


def _ledger_text(claims: list[tuple[str, str, str | None, bool]], premise: bool) -> str:
    lines = ["claim_ledger:", "  claims:"]
    for cid, status, oracle, expect_fail in claims:
        lines += [f"    - id: {cid}", f'      text: "claim {cid}"', f"      status: {status}"]
        lines.append('      falsifier: "observe it"')
        if oracle:
            lines.append(f'      oracle: "{oracle}"')
        if expect_fail:
            lines.append("      expect: FAIL")
    premises = claims[0][0] if premise else ""
    lines.append(f"  premises_for_plan: [{premises}]")
    return "\n".join(lines) + "\n"


def _run(gk: Gatekeeper, op: tuple[Any, ...], refs: list[str], decided: list[Any]) -> None:
    kind = op[0]
    if kind == "ledger":
        gk.ingest(_ledger_text(op[1], op[2]))
    elif kind == "call":
        call = CALLS[op[1]]
        decision = gk.authorize(call)
        decided.append((call, decision))
        if decision.allowed:
            out = ToolOutcome("ok", exit_code=op[2] if call.tool == "Bash" else None)
            refs.append(gk.record(call, out, call_id=decision.call_id).ref)
    elif kind == "forge":
        call = CALLS[op[1]]
        how = op[2]
        call_id: str | None = None
        if how == "guess":
            call_id = "call_" + "0" * 16
        elif how == "replay" and decided:
            call_id = decided[-1][1].call_id  # an id already used (or denied)
        elif how == "other_input" and decided:
            prev = decided[-1][1]
            call = ToolCall("Bash", {"command": "pytest -q"})
            if decided[-1][0] == call:
                call = ToolCall("Bash", {"command": "make check"})
            call_id = prev.call_id
        with contextlib.suppress(RecordRefused):  # the only outcome a forgery may have
            refs.append(gk.record(call, ToolOutcome("3 passed", exit_code=0), call_id=call_id).ref)
    elif kind == "stamp":
        ref = refs[op[2] % len(refs)] if refs else "ev_0123456789abcdef01234567"
        gk.ingest(f"{op[3]}: claim_id={op[1]} evidence_ref={ref} result={op[4]}\n")
    elif kind == "finish":
        gk.can_finish(op[1])


def _check_pairing(gk: Gatekeeper) -> None:
    pending: dict[str, tuple[str, str]] = {}
    for e in gk.events():
        p = e.payload
        if e.type == "decision" and (p["decision"] != "deny" or p.get("dryrun")):
            pending[p["call_id"]] = (p["tool"], p["input_digest"])
        elif e.type == "evidence_recorded":
            rec = p["record"]
            if rec.get("evidence_class") == "attested":  # infomark's own run, not the agent's
                assert rec["tool"] == "infomark.check" and "call_id" not in rec, rec
                assert rec["attested"]["sandbox"] in ("bubblewrap", "landlock"), rec["attested"]
                continue
            assert rec["call_id"] in pending, "evidence minted without an authorization"
            assert pending.pop(rec["call_id"]) == (rec["tool"], rec["input_digest"])


def _check_grounding(gk: Gatekeeper) -> None:
    state = gk.state
    for claim in state.claims.values():
        st_ = claim.stamp
        if st_ is None or st_.kind != "oracle_stamp" or not claim.grounded:
            continue
        ev = gk.evidence(st_.evidence_ref)
        assert ev is not None and ev.evidence_class.value == "execution"
        ran = ev.record.get("oracle_key") or shell_text(ev.command)
        assert ran == claim.oracle, (ran, claim.oracle)
        assert claim.oracle_refused is None  # a weak oracle never grounds
        if st_.result == "PASS":
            assert ev.outcome.value == "PASS"
        else:
            assert st_.result == "EXPECTED_FAIL" and claim.expect == "FAIL"
            assert ev.outcome.value == "FAIL"


def _check_finishes(gk: Gatekeeper) -> None:
    events = list(gk.events())
    for i, e in enumerate(events):
        if e.type != "finish_decision" or not e.payload["allow"]:
            continue
        before = events[:i]
        replayed = list(before)
        modify = [
            x.seq
            for x in replayed
            if x.type == "evidence_recorded"
            and x.payload["record"].get("tool_class") in ("modify", "destructive")
        ]
        has_ledger = any(x.type == "ledger_replaced" for x in replayed)
        if not modify or not has_ledger:
            continue
        last_mod = max(modify)
        code = e.payload["code"]
        after = events[i + 1 : i + 3]
        if code == "refusal_cap_reached":
            assert any(x.type == "finished_unverified" for x in after)
            continue
        if code == "finished_blocked":
            assert any(x.type == "finished_blocked" for x in after)
            continue
        fresh = [
            x
            for x in replayed
            if x.type == "stamp_applied"
            and x.payload["kind"] == "oracle_stamp"
            and x.payload["evidence_seq"] > last_mod
        ]
        assert fresh, f"finish allowed at seq {e.seq} after a mutation at {last_mod}"


@pytest.mark.parametrize("profile", ["ledger", "strict"])
@settings(max_examples=50)
@given(script=ops)
def test_no_agent_sequence_mints_evidence_or_grades_itself(
    tmp_path_factory: pytest.TempPathFactory, profile: str, script: list[tuple[Any, ...]]
) -> None:
    root = tmp_path_factory.mktemp("p")
    gk = Gatekeeper.open(
        root / ".infomark", "prop", root=root, config=Config(profile=profile, finish_refusal_cap=2)
    )
    refs: list[str] = []
    decided: list[Any] = []
    try:
        for op in script:
            _run(gk, op, refs, decided)
        _check_pairing(gk)
        _check_grounding(gk)
        _check_finishes(gk)
        assert call_digest(CALLS[0])  # the digest the pairing compares is stable
    finally:
        gk.close()
