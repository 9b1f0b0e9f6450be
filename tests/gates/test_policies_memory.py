"""Working memory, the state document and the context view: snapshots of a scripted session."""

from __future__ import annotations

import re
from typing import Any

from helpers import ledger_text, stamp
from policies_support import Session

from infomark.gatekeeper import Gatekeeper
from infomark.gates.policies.memory import MEMORY_FIELDS

ORACLE = "pytest tests/test_pager.py -q"
FAIL_OUT = "FAILED test_pager.py::test_last_page - assert 3 == 4\n1 failed"
FAIL_LINE = "FAILED test_pager.py::test_last_page - assert 3 == 4"
_REF = re.compile(r"ev_[0-9a-f]{24}")
_VOLATILE = {"seq", "entered_seq"}


def _scrub(value: Any) -> Any:
    """Refs are HMACs under a fresh key and seqs depend on every event: replace or drop them."""
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, str):
        return _REF.sub("ev_*", value)
    return value


def _script(s: Session) -> None:
    s.prompt("Fix the off-by-one in pager.py")
    s.say(
        ledger_text(
            ("C1", "Hypothetical", ORACLE),
            ("C2", "Guess", None),
            premises=("C1",),
            open_questions=("C2",),
        )
    )
    s.read("pager.py")
    for _ in range(3):
        s.bash(ORACLE, exit_code=1, output=FAIL_OUT)


EXPECTED_MEMORY = {
    "goal": "Fix the off-by-one in pager.py",
    "active_subgoal": "ground premise C1: claim C1 holds",
    "evidence": [
        {"ref": "ev_*", "tool": "Read", "outcome": "OBSERVED", "what": "pager.py"},
        {"ref": "ev_*", "tool": "Bash", "outcome": "FAIL", "what": ORACLE},
        {"ref": "ev_*", "tool": "Bash", "outcome": "FAIL", "what": ORACLE},
        {"ref": "ev_*", "tool": "Bash", "outcome": "FAIL", "what": ORACLE},
    ],
    "open_questions": ["C2: claim C2 holds"],
    "recent_failures": [{"command": ORACLE, "first_line": FAIL_LINE}],
    "pending_verification": [
        {"id": "C1", "status": "Hypothetical", "oracle": ORACLE, "why": "premise"}
    ],
    "next_best_actions": [
        f"read the failure of `{ORACLE}` ({FAIL_LINE}) before retrying",
        f"run `{ORACLE}` and stamp C1",
    ],
    # v1 prompt, v2 ledger, v3 read, v4-v6 each failing run (a new ref in evidence)
    "version": 6,
    "updated_turn": 1,
}


def test_working_memory_snapshot(gk: Gatekeeper) -> None:
    s = Session(gk)
    _script(s)
    assert _scrub(gk.state.policy["memory"]) == EXPECTED_MEMORY
    assert s.events("working_memory_updated") == []  # the patch is the only copy (issue 13)
    updates = s.memory_updates()
    assert [u["version"] for u in updates] == [1, 2, 3, 4, 5, 6]
    assert updates[1]["changed"] == [
        "active_subgoal",
        "open_questions",
        "pending_verification",
        "next_best_actions",
    ]
    for u in updates:  # only the diff is journaled: the fields touched are the fields changed
        assert u["changed"] == [k for k in MEMORY_FIELDS if u["before"].get(k) != u["after"].get(k)]


def test_working_memory_is_journaled_only_when_it_changed(gk: Gatekeeper) -> None:
    s = Session(gk)
    _script(s)
    before = len(s.memory_updates())
    s.say("Thinking about the pager; no ledger blocks in this message.")
    s.host(tokens_used=10, context_window=1000)
    assert len(s.memory_updates()) == before


def test_working_memory_after_grounding_and_a_stale_edit(gk: Gatekeeper) -> None:
    s = Session(gk)
    _script(s)
    s.bash(ORACLE)
    assert s.last_evidence is not None
    s.say(stamp("C1", s.last_evidence.ref))
    memory = _scrub(gk.state.policy["memory"])
    assert memory["active_subgoal"] is None
    assert memory["pending_verification"] == []
    assert memory["next_best_actions"] == []
    s.edit("pager.py")
    memory = _scrub(gk.state.policy["memory"])
    assert memory["active_subgoal"] == "re-verify C1: claim C1 holds"
    assert memory["pending_verification"] == [
        {"id": "C1", "status": "Exact", "oracle": ORACLE, "why": "stale"}
    ]
    assert memory["next_best_actions"] == [f"re-run `{ORACLE}` and stamp C1"]


def test_working_memory_is_bounded(gk: Gatekeeper) -> None:
    s = Session(gk)
    s.prompt("x" * 5000)
    for i in range(30):
        s.bash(f"cmd{i}", exit_code=1, output=f"error number {i} " + "y" * 300)
        s.read(f"file{i}.py")
    memory = gk.state.policy["memory"]
    assert len(memory["goal"]) <= 240
    assert len(memory["evidence"]) == 8
    assert len(memory["recent_failures"]) == 5
    assert all(len(f["first_line"]) <= 120 for f in memory["recent_failures"])
    assert len(memory["next_best_actions"]) <= 3
    ws = gk.state.policy["working_set"]
    assert len(ws["files_read"]) == 20 and len(ws["commands"]) == 5


EXPECTED_DOCUMENT = {
    "v": 1,
    "session": "s1",
    "turn": 1,
    "active_instruction_packs": [
        {
            "name": "repeated_failures",
            "text": (
                f"Stop guessing: 3 tool calls failed in a row. The last, `{ORACLE}`, said: "
                f'"{FAIL_LINE}". Choose the next step from that output, or say what you need '
                "to know."
            ),
            "severity": 7,
            "reason": "3 consecutive failed tool calls (threshold 3)",
            "evidence": {"consecutive_failures": 3, "ref": "ev_*", "command": ORACLE},
            "added_turn": 1,
            "renewed_turn": 1,
            "expires_after": 2,
            "expires_at_turn": 3,
            "renewals": 0,
        }
    ],
    "last_hook_results": {
        "before_model_call": {
            "turn": 1,
            "notes": [],
            "instructions": [],
            "events": [
                "working memory updated: goal, evidence, open_questions, recent_failures, "
                "pending_verification, next_best_actions"
            ],
            "continue": True,
        },
        "after_model_response": {
            "turn": 1,
            "notes": [],
            "instructions": [],
            "events": [
                "working memory updated: active_subgoal, open_questions, pending_verification, "
                "next_best_actions"
            ],
            "continue": True,
        },
        "after_tool_batch": {
            "turn": 1,
            "notes": ["repeated_failures: consecutive_failures=3"],
            "instructions": ["repeated_failures"],
            "events": [
                "pack repeated_failures added: 3 consecutive failed tool calls (threshold 3)",
                "working memory updated: evidence",
            ],
            "continue": True,
        },
    },
    "working_memory": EXPECTED_MEMORY,
    "turn_metrics": {
        "prompts": 1,
        "tool_calls": 4,
        "lookups": 1,
        "failures": 3,
        "consecutive_failures": 3,
        "reads_without_write": 0,
        "calls_since_artifact": 4,
        "turns_since_artifact": 0,
        "calls_since_progress": 4,
        "turns_since_progress": 0,
        "subagent_calls": 0,
        "subagent_calls_total": 0,
        "compactions": 0,
        "context_pct": None,
        "last_failure": {
            "tool": "Bash",
            "command": ORACLE,
            "first_line": FAIL_LINE,
            "ref": "ev_*",
        },
    },
    "working_set": {
        "files_read": ["pager.py"],
        "files_edited": [],
        "files_written": [],
        "commands": [{"command": ORACLE, "outcome": "FAIL", "ref": "ev_*"}] * 3,
        "evidence": EXPECTED_MEMORY["evidence"],
        "failures": [{"tool": "Bash", "command": ORACLE, "first_line": FAIL_LINE, "ref": "ev_*"}],
    },
    "triggers": {
        "triggers": {},
        "fired_this_prompt": [],
        "pending": [],
        "evaluations": 0,
        "configured": [],
    },
    # seed 000's TurnContext: the recent messages and the pending turn
    "recent_messages": [
        {"role": "user", "text": "Fix the off-by-one in pager.py", "turn": 1},
        {"role": "agent", "text": "RECENT_LEDGER", "turn": 1},
    ],
    "pending_turn": {
        "prompt": "Fix the off-by-one in pager.py",
        "turn": 1,
        "calls": 4,
        "responses": 1,
        "finish_attempts": 0,
        "language": "en",
    },
    "ledger": {
        "has_ledger": True,
        "claims": [
            {
                "id": "C1",
                "status": "Hypothetical",
                "written": "Hypothetical",
                "oracle": ORACLE,
                "stamp": None,
            },
            {"id": "C2", "status": "Guess", "written": "Guess", "oracle": None, "stamp": None},
        ],
        "premises": ["C1"],
        "open_questions": ["C2"],
        "grounded": [],
        "ungrounded": [{"id": "C1", "status": "Hypothetical"}],
        "stale": [],
    },
    "gate": {"position": "G3", "budget_used": {}},
    "policies": [
        "repeated_failures",
        "read_heavy_drift",
        "plan_drift",
        "context_pressure",
        "repeated_compaction",
        "evidence_before_done",
        "excessive_subagents",
        "ungrounded_premises",
        "stamp_rejected",
        "stale_evidence",
        "language_drift",
        "reuse_before",
    ],
    "limits": {"max_active_packs": 3, "pack_budget_chars": 600},
}


def test_state_document_snapshot(gk: Gatekeeper) -> None:
    s = Session(gk)
    _script(s)
    doc = _scrub(s.document())
    said = doc["recent_messages"][1]["text"]
    assert said.startswith("claim_ledger: claims: - id: C1") and len(said) <= 200
    doc["recent_messages"][1]["text"] = "RECENT_LEDGER"
    assert doc == EXPECTED_DOCUMENT


def test_state_document_is_the_replayed_projection(gk: Gatekeeper) -> None:
    """The live state and a replay of the journal give the same document."""
    from infomark.gates.policies import state_document

    s = Session(gk, {"triggers": [{"name": "t", "when": {"tool_used": "Bash"}, "prompt": "p"}]})
    _script(s)
    s.finish("not yet")
    live = state_document(gk.store.state, s.rt.settings, s.rt.names)
    replayed = state_document(gk.store.replay(), s.rt.settings, s.rt.names)
    assert live == replayed
    assert live["triggers"]["triggers"] == {
        "t": {
            "fired": 1,
            "repeated": 0,
            "met": 0,
            "missed": 0,
            "would_have_skipped": 0,
            "already_done": 0,
            "unobservable": 1,  # no requires_read: the step cannot be observed
            "skip_rate": None,
        }
    }


def test_context_view_sections_are_tagged_and_within_budget(gk: Gatekeeper) -> None:
    s = Session(gk)
    _script(s)
    view = s.view()
    lines = view.splitlines()
    assert lines[0].startswith("[infomark:pack repeated_failures] Stop guessing")
    assert lines[1] == "[infomark:memory]"
    seq = gk.state.seq
    tag = f"[Inferred summary of seq 1–{seq}]"  # every memory line: its rank and source
    assert f"{tag} goal: Fix the off-by-one in pager.py" in lines
    assert f"{tag} next: read the failure of `{ORACLE}` ({FAIL_LINE}) before retrying; " in view
    assert all(
        line.startswith((tag, "evidence: [observation ev_", "evidence: [execution ev_"))
        for line in lines[2:-1]
    ), lines
    declared = gk.state.claims["C1"].declared_seq
    assert lines[-1] == (
        f"[infomark:ledger] [Inferred summary of seq {gk.state.ledger_seq}–{seq}] gate G3; "
        f"G: (none); ungrounded premises: C1 [Hypothetical as declared, seq {declared}]"
    )
    assert len(view) <= 1200
    for budget in (80, 200, 300, 500, 800):
        small = s.view(budget)
        assert len(small) <= budget
    assert s.view(300).startswith("[infomark:pack repeated_failures]")  # packs come first


def test_context_view_of_a_fresh_session(gk: Gatekeeper) -> None:
    s = Session(gk)
    assert s.view() == (
        "[infomark:ledger] [Inferred summary of no events yet] gate G0; no claim_ledger yet"
    )
