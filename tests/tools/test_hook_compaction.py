"""Memory ranks across a Claude Code compaction (issue 18), through the real hook command.

The payloads are the ones Claude Code sends around a compaction (``PreCompact`` with
``trigger``, then ``SessionStart`` with ``source: "compact"``): the hook carries the ledger
over (a claim keeps its rank only while its evidence is valid) and re-injects the claim ids,
ranks and live evidence refs verbatim, so the agent can keep stamping afterwards.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers import tamper_output
from hook_session import ORACLE, Session

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome

REF = re.compile(r"evidence_ref=(ev_[0-9a-f]{24})")
TWO = (
    'claim_ledger:\n  claims:\n    - id: C1\n      text: "the parser drops the last token"\n'
    '      status: Hypothetical\n      falsifier: "pytest passes on the unmodified parser"\n'
    f'      oracle: "{ORACLE}"\n    - id: C2\n      text: "p.py defines parse"\n'
    '      status: Hypothetical\n      falsifier: "p.py has no def parse"\n'
    "      observe: p.py\n"
    "  premises_for_plan: [C1]\n"
)


@pytest.fixture
def cc(project: Path) -> Session:
    from helpers import OWN_RUNS_TOML

    (project / "infomark.toml").write_text(OWN_RUNS_TOML)  # the compaction, not grounding
    (project / "p.py").write_text("def parse(s):\n    return s.split()[:-1]\n")
    return Session(project)


def _ctx(out: Any, event: str) -> str:
    assert out is not None and out["hookSpecificOutput"]["hookEventName"] == event
    return str(out["hookSpecificOutput"]["additionalContext"])


def _run(cc: Session, use_id: str, tool: str, tool_input: dict[str, Any], response: Any) -> str:
    code, out, err = cc.tool(tool, tool_input, use_id)
    assert code == 0 and out is None, (out, err)
    code, out, _ = cc.hook(
        "PostToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=use_id,
        tool_response=response,
    )  # fmt: skip
    found = REF.search(_ctx(out, "PostToolUse"))
    assert found is not None
    return found.group(1)


def _grounded_session(cc: Session) -> tuple[str, str]:
    """C1 stamped by a pytest run, then an edit (C1 stale), then C2 inferred from a Read.

    Built through the facade on the hook's own session (the compaction events below go
    through the real hook command).
    """
    with _gk(cc) as gk:
        gk.ingest(TWO)
        ran = _call(gk, "Bash", {"command": ORACLE}, "1 passed", 0)
        assert gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ran} result=PASS").stamps_applied
        edit = {"file_path": str(cc.project / "p.py"), "old_string": "[:-1]", "new_string": ""}
        _call(gk, "Edit", edit, "ok", None)
        seen = _call(gk, "Read", {"file_path": str(cc.project / "p.py")}, "def parse", None)
        assert gk.ingest(f"inference_stamp: claim_id=C2 evidence_ref={seen}").stamps_applied
    return ran, seen


_ids = iter(range(1, 1 << 30))


def _call(gk: Gatekeeper, tool: str, inp: dict[str, Any], out: str, code: int | None) -> str:
    call = ToolCall(tool, inp, tool_call_id=f"toolu_{next(_ids)}")
    assert gk.authorize(call).allowed
    return gk.record(call, ToolOutcome(output=out, exit_code=code)).ref


def _gk(cc: Session) -> Gatekeeper:
    return Gatekeeper.open(cc.project / ".infomark", cc.sid, root=cc.project)


def test_compaction_re_injects_ids_ranks_and_live_refs_verbatim(cc: Session) -> None:
    ran, seen = _grounded_session(cc)
    with _gk(cc) as gk:
        assert gk.ledger().status("C1") == "Exact" and "C1" in gk.state.stale_claims()
        assert gk.ledger().status("C2") == "Inferred"

    code, out, _ = cc.hook("PreCompact", trigger="auto", custom_instructions="")
    assert (code, out) == (0, None)  # PreCompact cannot reach the model: no output
    code, out, _ = cc.hook("SessionStart", source="compact")
    text = _ctx(out, "SessionStart")

    assert "[infomark:carried]" in text
    assert f"- C2 [Inferred {seen}] 'p.py defines parse'" in text  # id, rank, ref verbatim
    dropped = next(line for line in text.splitlines() if line.startswith("- C1 "))
    assert dropped.startswith(f"- C1 [Unknown, dropped at compaction: its evidence {ran}")
    assert "is stale" in dropped and f"re-run `{ORACLE}`" in dropped
    assert "premises_for_plan: [C1]" in text
    live = next(line for line in text.splitlines() if line.startswith("live evidence: "))
    assert f"[observation {seen}] Read" in live  # a handle: its class, not a rank
    assert "infomark protocol" in text  # the protocol comes back too

    with _gk(cc) as gk:
        assert gk.ledger().status("C1") == "Unknown"
        assert gk.ledger().status("C2") == "Inferred"
        events = list(gk.events())
        (div,) = [e.payload for e in events if e.type == "divergence"]
        assert div["cause"] == "compaction" and div["revoked_ref"] == ran
        carried = [e.payload for e in events if e.type == "compaction_carried"]
        assert len(carried) == 1  # PreCompact carried it; SessionStart only re-injects
        assert carried[-1]["claims"] == [
            {"id": "C1", "status": "Unknown", "evidence_ref": None},
            {"id": "C2", "status": "Inferred", "evidence_ref": seen},
        ]
        assert gk.state.policy["metrics"]["compactions"] == 1  # one compaction, counted once
        assert gk.audit().verified is True


def test_the_agent_keeps_stamping_after_the_compaction(cc: Session) -> None:
    ran, _ = _grounded_session(cc)
    cc.hook("PreCompact", trigger="manual", custom_instructions="keep the ledger")
    cc.hook("SessionStart", source="compact")
    cc.say(f"Again:\noracle_stamp: claim_id=C1 evidence_ref={ran} result=PASS", tool_use_id="tu_9")
    again = _run(
        cc, "tu_9", "Bash", {"command": ORACLE}, {"stdout": "1 passed", "stderr": ""}
    )  # the old ref was rejected (it predates the drop); a new run grounds C1 again
    cc.say(f"oracle_stamp: claim_id=C1 evidence_ref={again} result=PASS", tool_use_id="tu_10")
    cc.tool("Read", {"file_path": str(cc.project / "p.py")}, "tu_10")
    with _gk(cc) as gk:
        assert gk.ledger().status("C1") == "Exact"
        rejected = [e.payload for e in gk.events() if e.type == "stamp_rejected"]
        assert [r["reason"] for r in rejected] == ["evidence_predates_claim"]


def test_a_claim_whose_blob_is_gone_drops_to_unknown(cc: Session) -> None:
    _, seen = _grounded_session(cc)
    with _gk(cc) as gk:
        ev = gk.evidence(seen)
        assert ev is not None
        tamper_output(gk.store.home_dir, ev.output_digest, "delete")  # gone from the home
    cc.hook("SessionStart", source="compact")  # an older host: no PreCompact
    with _gk(cc) as gk:
        assert gk.ledger().status("C2") == "Unknown"
        div = [e.payload for e in gk.events() if e.type == "divergence"]
        assert any(d["claim_id"] == "C2" and "blob missing" in d["reason"] for d in div)
        assert gk.state.policy["metrics"]["compactions"] == 1


@pytest.mark.parametrize(
    "events",
    [
        ("PreCompact", "SessionStart", "PostCompact"),  # Claude Code 2.1.328, as observed
        ("PreCompact", "SessionStart"),
        ("SessionStart", "PostCompact"),
        ("SessionStart",),
        ("PostCompact",),
    ],
)
def test_each_compaction_is_counted_once(cc: Session, events: tuple[str, ...]) -> None:
    _grounded_session(cc)
    for _ in range(2):  # two compactions, each seen by the host's events in order
        for event in events:
            if event == "SessionStart":
                cc.hook("SessionStart", source="compact")
            else:
                assert cc.hook(event, trigger="auto")[1] is None
    with _gk(cc) as gk:
        assert gk.state.policy["metrics"]["compactions"] == 2
        carried = [e for e in gk.events() if e.type == "compaction_carried"]
        assert len(carried) == 2


def test_a_startup_session_start_carries_nothing(cc: Session) -> None:
    _grounded_session(cc)
    _, out, _ = cc.hook("SessionStart", source="resume")
    assert "[infomark:carried]" not in _ctx(out, "SessionStart")
    with _gk(cc) as gk:
        assert not [e for e in gk.events() if e.type == "compaction_carried"]
