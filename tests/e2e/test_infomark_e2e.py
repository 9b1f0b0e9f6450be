"""Whole scripted sessions through the real Claude Code CLI with infomark's hooks installed.

The hooks come from the real installer (``infomark install claude-code``); the model is an
:class:`AnthropicStub` script whose callable steps read what Claude Code sends back (hook
denials, evidence refs, Stop feedback) and answer with them, as a model would.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.protocol import EXAMPLE_LEDGER, render_protocol
from infomark.ledger.evidence import Outcome

from .anthropic_stub import AnthropicStub, MessagesRequest, Reply, Step, ToolCall
from .claude_harness import result_json, run_claude
from .scripts_infomark import (
    BUGGY_BODY,
    FIXED_BODY,
    ORACLE,
    HookRun,
    allow_oracle_args,
    evidence_refs,
    hook_runs,
    install_hooks,
    journal_sessions,
    oracle_env,
    write_project,
)

_LEDGER = f"""I will fix the whitespace handling in parse().

claim_ledger:
  claims:
    - id: C1
      text: "test_parser.py passes on parser.py; the fix must keep it passing"
      status: Exact
      falsifier: "test_parser.py fails"
      oracle: "{ORACLE}"
  premises_for_plan: [C1]
"""
_COMPLETION = "Done, all tests pass."
_STOP_FEEDBACK = "Stop hook feedback:\n"


def _stamp(ref: str) -> str:
    return f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS"


def _one_ref(request: MessagesRequest) -> str:
    refs = evidence_refs(request)
    if len(refs) != 1:
        raise AssertionError(f"expected one Bash evidence ref, got {refs}: {request.texts()}")
    return refs[0]


@dataclass
class _FixSession:
    """The scripted model of the fix session; callable steps record what they were shown."""

    parser: Path
    refs: list[str] = field(default_factory=list)
    parser_after_deny: str = ""
    parser_after_edit: str = ""
    arrivals: list[float] = field(default_factory=list)

    def _edit(self, tool_id: str) -> ToolCall:
        edit = {"file_path": str(self.parser), "old_string": BUGGY_BODY, "new_string": FIXED_BODY}
        return ToolCall("Edit", edit, id=tool_id)

    def _oracle(self, tool_id: str) -> ToolCall:
        return ToolCall("Bash", {"command": ORACLE, "description": "run the tests"}, id=tool_id)

    def _timed(self, step: Step) -> Step:
        def run(request: MessagesRequest) -> Reply:
            self.arrivals.append(time.monotonic())
            return step if isinstance(step, Reply) else step(request)

        return run

    def script(self) -> list[Step]:
        steps: list[Step] = [
            # Claude Code refuses an Edit of an unread file before any hook runs.
            Reply(
                text="Reading the parser first.",
                tool_calls=(ToolCall("Read", {"file_path": str(self.parser)}, id="toolu_read"),),
            ),
            Reply(text=_LEDGER, tool_calls=(self._edit("toolu_edit_early"),)),
            self._after_deny,
            self._after_oracle,
            self._after_edit,
            self._after_stop,
            self._finish,
        ]
        return [self._timed(step) for step in steps]

    def _after_deny(self, request: MessagesRequest) -> Reply:
        self.parser_after_deny = self.parser.read_text(encoding="utf-8")
        return Reply(text="Grounding C1 first.", tool_calls=(self._oracle("toolu_oracle_1"),))

    def _after_oracle(self, request: MessagesRequest) -> Reply:
        self.refs.append(_one_ref(request))
        return Reply(text=_stamp(self.refs[-1]), tool_calls=(self._edit("toolu_edit_fix"),))

    def _after_edit(self, request: MessagesRequest) -> Reply:
        self.parser_after_edit = self.parser.read_text(encoding="utf-8")
        return Reply(text=_COMPLETION)

    def _after_stop(self, request: MessagesRequest) -> Reply:
        return Reply(text="Re-running the oracle.", tool_calls=(self._oracle("toolu_oracle_2"),))

    def _finish(self, request: MessagesRequest) -> Reply:
        self.refs.append(_one_ref(request))
        return Reply(text="Done.\n\n" + _stamp(self.refs[-1]))


def _latency_summary(runs: list[HookRun]) -> str:
    by_label: dict[str, list[int]] = {}
    for run in runs:
        by_label.setdefault(run.label, []).append(run.duration_ms)
    return ", ".join(f"{label}={ms}" for label, ms in by_label.items())


@pytest.mark.e2e
def test_scripted_fix_session_is_denied_grounded_refused_then_finishes(
    claude_bin: Path, tmp_path: Path
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    home.mkdir()
    parser = write_project(project)
    original = parser.read_text(encoding="utf-8")
    settings = install_hooks(project)
    model = _FixSession(parser)

    with AnthropicStub(model.script()) as stub:
        started = time.monotonic()
        proc = run_claude(
            project,
            "Fix parse() so fields lose surrounding blanks.",
            stub,
            claude_bin=claude_bin,
            home=home,
            extra_env=oracle_env(),
            extra_args=allow_oracle_args(),
        )
        wall = time.monotonic() - started

    stub.check(complete=True)
    result = result_json(proc)
    assert proc.returncode == 0 and result["is_error"] is False, proc.stderr
    final = "Done.\n\n" + _stamp(model.refs[1])
    assert result["result"] == final
    installed = json.loads(settings.read_text(encoding="utf-8"))["hooks"]
    assert {"SessionStart", "PreToolUse", "PostToolUse", "Stop"} <= set(installed)
    assert all(
        h["type"] == "command" and h["command"].endswith(" hook claude-code")
        for groups in installed.values()
        for group in groups
        for h in group["hooks"]
    )

    asked = [r.new_blocks() for r in stub.scripted_requests]
    assert len(asked) == 7, f"expected 7 scripted model requests, got {len(asked)}: {asked}"
    (
        first,
        after_read,
        after_deny,
        after_oracle,
        after_edit,
        after_stop,
        after_rerun,
    ) = stub.scripted_requests  # a blocked final Stop would have asked for an eighth

    assert "Fix parse()" in "".join(first.texts()) and "infomark protocol" in first.all_text()
    (read,) = after_read.tool_results()
    assert read.tool_use_id == "toolu_read" and BUGGY_BODY in read.content

    # 1. The ledger text and the Edit came in one message: the hook read the text, then denied.
    (denied,) = after_deny.tool_results()
    assert denied.tool_use_id == "toolu_edit_early" and denied.is_error
    assert denied.content.startswith("PreToolUse:Edit hook error: ")
    assert "C1 (Hypothetical" in denied.content and f"`{ORACLE}`" in denied.content
    assert model.parser_after_deny == original
    assert [d["tool_use_id"] for d in result["permission_denials"]] == ["toolu_edit_early"]

    # 2. The oracle ran and the PostToolUse hook handed the model an evidence ref.
    (ran,) = after_oracle.tool_results()
    assert ran.tool_use_id == "toolu_oracle_1" and not ran.is_error and "OK" in ran.content
    assert model.refs[0] in after_oracle.all_text()

    # 3. Stamped with that ref, the same Edit ran: the file really changed.
    (edited,) = after_edit.tool_results()
    assert edited.tool_use_id == "toolu_edit_fix" and not edited.is_error
    assert model.parser_after_edit == original.replace(BUGGY_BODY, FIXED_BODY) != original

    # 4. "Done" with no evidence newer than the edit: the Stop hook blocked and said why (C1,
    # grounded before the first edit, is the starting state; a fresh run must follow the edit).
    (feedback,) = [t for t in after_stop.texts() if t.startswith(_STOP_FEEDBACK)]
    assert "no claim is exact on evidence produced after the last edit" in feedback.lower()
    assert f"`{ORACLE}` (C1)" in feedback

    # 5. A fresh run, a fresh stamp in the final text: finish allowed, nothing asked after it.
    (rerun,) = after_rerun.tool_results()
    assert rerun.tool_use_id == "toolu_oracle_2" and not rerun.is_error
    assert model.refs[1] != model.refs[0]
    assert parser.read_text(encoding="utf-8") == model.parser_after_edit

    session = str(result["session_id"])
    assert journal_sessions(project / ".infomark") == [session]
    with Gatekeeper.open(project / ".infomark", session, root=project) as gk:
        view = gk.ledger()
        audit = gk.audit(verify=True)
        events = list(gk.events())
        first_ev, second_ev = gk.evidence(model.refs[0]), gk.evidence(model.refs[1])
    assert view.status("C1") == "Exact" and view.grounded and view.gate == "G9"
    assert audit.verified is True and audit.problems == []
    (claim,) = audit.claims
    assert claim["written"] == "Exact" and claim["history"][0]["status"] == "Hypothetical"
    assert claim["evidence_ref"] == model.refs[1]
    for evidence in (first_ev, second_ev):
        assert evidence is not None and evidence.outcome is Outcome.PASS
        assert evidence.command == ORACLE
    by_type: dict[str, list[dict[str, object]]] = {}
    for event in events:
        by_type.setdefault(event.type, []).append(event.payload)
    assert "hook_error" not in by_type
    assert [(d["tool"], d["decision"], d["tool_call_id"]) for d in by_type["decision"]] == [
        ("Read", "allow", "toolu_read"),
        ("Edit", "deny", "toolu_edit_early"),
        ("Bash", "allow", "toolu_oracle_1"),
        ("Edit", "allow", "toolu_edit_fix"),
        ("Bash", "allow", "toolu_oracle_2"),
    ]
    assert [(s["claim_id"], s["evidence_ref"], s["status"]) for s in by_type["stamp_applied"]] == [
        ("C1", model.refs[0], "Exact"),
        ("C1", model.refs[1], "Exact"),
    ]
    assert [(f["allow"], f["code"]) for f in by_type["finish_decision"]] == [
        (False, "completion_without_evidence"),
        (True, "allowed"),
    ]

    runs = hook_runs(home, session)
    assert [r.label for r in runs] == [
        "SessionStart:startup",
        "UserPromptSubmit",
        "PreToolUse:Read",
        "PostToolUse:Read",
        "PreToolUse:Edit",
        "PreToolUse:Bash",
        "PostToolUse:Bash",
        "PreToolUse:Edit",
        "PostToolUse:Edit",
        "Stop",
        "PreToolUse:Bash",
        "PostToolUse:Bash",
        "Stop",
    ]
    assert {r.status for r in runs} == {0}
    gaps = [round(b - a, 3) for a, b in zip(model.arrivals, model.arrivals[1:], strict=False)]
    print(
        f"\n[e2e fix session] wall {wall:.2f} s; model request gaps {gaps} s; "
        f"hook ms: {_latency_summary(runs)}"
    )


@pytest.mark.e2e
def test_session_start_protocol_reaches_the_first_model_request(
    claude_bin: Path, tmp_path: Path
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    install_hooks(project)

    with AnthropicStub([Reply(text="Hello.")]) as stub:
        started = time.monotonic()
        proc = run_claude(project, "say hello", stub, claude_bin=claude_bin, home=home)
        wall = time.monotonic() - started

    stub.check(complete=True)
    result = result_json(proc)
    assert proc.returncode == 0 and result["result"] == "Hello.", proc.stderr
    (first,) = stub.scripted_requests
    prefix = "SessionStart hook additional context: "
    contexts = [t.removeprefix(prefix) for t in first.texts() if t.startswith(prefix)]
    assert len(contexts) == 1, first.texts()
    # Claude Code appends its own reminders (skills, date) to the same text block.
    assert contexts[0].startswith(render_protocol().strip())
    assert "claim_ledger" in contexts[0] and EXAMPLE_LEDGER.strip() in contexts[0]
    carriers = [t for t in first.texts(new_only=False) if "claim_ledger" in t]
    assert carriers == [prefix + contexts[0]] and "claim_ledger" not in first.system_text()
    print(f"\n[e2e session start] wall {wall:.2f} s")
