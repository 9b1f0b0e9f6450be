"""Hypothesis: no sequence of ingest / record / authorize lets a mutation through while a
premise is outside G (or no premise is declared) — except under the bypass, which the audit
then always lists, and scratch (a new file of the agent's own, or the temp dir), which never
touches a file that existed before the session."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from helpers import record_paired
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from infomark.kernel.tools import TOOL_TABLE
from infomark.ledger.calls import ToolCall, ToolOutcome

IDS = ["C1", "C2", "C3"]
ORACLES = ["pytest -q", "make check", "true"]
PATHS = [
    "a.py",
    "new.py",
    "sub/new.py",
    "existing.py",
    "../outside.py",
    "conftest.py",
    ".git/config",
    "link/x.py",
    "/etc/hosts",
    ".infomark/key",
]
MUTATIONS = [
    ToolCall("Edit", {"file_path": "a.py", "old_string": "1", "new_string": "2"}),
    ToolCall("Write", {"file_path": "b.py", "content": "x"}),
    ToolCall("Bash", {"command": "sed -i s/a/b/ a.py"}),
    ToolCall("Bash", {"command": "rm -rf build"}),
    ToolCall("mystery_tool", {}),
    ToolCall("mcp__fs__move_file", {"source": "existing.py", "destination": "new.py"}),
    ToolCall("infomark_ledger", {}),
    ToolCall("mcp__tools__infomark_stamp", {}),
    ToolCall("run_terminal_cmd", {"command": "rm -rf build"}),
    ToolCall("Bash", {"command": "python fix.py"}),
    ToolCall("Bash", {"command": "git stash"}),
    ToolCall("Bash", {"command": "npm install"}),
    ToolCall("Bash", {"command": "echo x > existing.py"}),
    ToolCall("Bash", {"command": "echo x > new.py"}),
    ToolCall("Bash", {"command": "cat > pkg/x.py <<'EOF'\nx\nEOF"}),
    ToolCall("Bash", {"command": "rm -rf pkg"}),
    ToolCall("Bash", {"command": "touch link/x.py"}),
]
# any tool name the project knows (and some it does not), with any path-like input
any_call = st.builds(
    lambda name, key, path: ToolCall(name, {key: path, "content": "x", "command": path}),
    st.one_of(st.sampled_from(sorted(TOOL_TABLE)), st.text(max_size=12)),
    st.sampled_from(["file_path", "path", "target_file", "destination"]),
    st.sampled_from(PATHS),
)

claim = st.tuples(
    st.sampled_from(IDS),
    st.sampled_from(["Exact", "Inferred", "Hypothetical", "Guess", "Unknown", "exact"]),
    st.sampled_from([*ORACLES, None]),
)
ledger_op = st.tuples(
    st.just("ledger"), st.lists(claim, min_size=1, max_size=3), st.sets(st.sampled_from(IDS))
)
record_op = st.tuples(
    st.just("record"),
    st.sampled_from([*ORACLES, "cat a.py"]),
    st.sampled_from([0, 0, 1]),
    st.sampled_from(["bash", "Read", "WebFetch"]),
)
stamp_op = st.tuples(
    st.just("stamp"),
    st.sampled_from(IDS),
    st.integers(-2, 8),
    st.sampled_from(["oracle_stamp", "inference_stamp", "divergence_event"]),
    st.sampled_from(["PASS", "FAIL", "EXPECTED_FAIL"]),
)
auth_op = st.tuples(
    st.just("authorize"),
    st.one_of(st.sampled_from(MUTATIONS), any_call),
    st.booleans(),
)
ops = st.lists(st.one_of(ledger_op, record_op, stamp_op, auth_op), min_size=1, max_size=18)


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if ".infomark" not in p.parts}


def _ledger_text(claims: list[tuple[str, str, str | None]], premises: set[str]) -> str:
    lines = ["claim_ledger:", "  claims:"]
    for cid, status, oracle in claims:
        lines += [
            f"    - id: {cid}",
            f'      text: "claim {cid}"',
            f"      status: {status}",
            '      falsifier: "observe it"',
        ]
        if oracle:
            lines.append(f'      oracle: "{oracle}"')
    lines.append(f"  premises_for_plan: [{', '.join(sorted(premises))}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("profile", ["ledger", "strict"])
@settings(max_examples=60)
@given(script=ops)
def test_no_mutation_through_ungrounded_premises(
    tmp_path_factory: pytest.TempPathFactory, profile: str, script: list[tuple[Any, ...]]
) -> None:
    root = tmp_path_factory.mktemp("g")
    (root / "existing.py").write_text("x = 1\n")  # a file from before the session
    (root / "link").symlink_to(root / "pkg", target_is_directory=True)
    (root / "pkg").mkdir()
    (root / "pkg" / "x.py").write_text("x = 1\n")
    before_session = _files(root)
    gk = Gatekeeper.open(root / ".infomark", "prop", root=root, config=Config(profile=profile))
    old_cwd = os.getcwd()
    os.chdir(root)  # as in the hook: shell paths resolve in the project
    refs: list[str] = ["ev_0123456789abcdef01234567"]  # a forged one, never issued
    bypassed: list[str] = []
    try:
        for op in script:
            kind = op[0]
            if kind == "ledger":
                gk.ingest(_ledger_text(op[1], op[2]))
            elif kind == "record":
                tool = op[3]
                inp = {"command": op[1]} if tool == "bash" else {"file_path": "a.py"}
                refs.append(
                    record_paired(
                        gk,
                        ToolCall(tool, inp),
                        ToolOutcome("out", op[2] if tool == "bash" else None),
                    ).ref
                )
            elif kind == "stamp":
                ref = refs[op[2] % len(refs)]
                if op[3] == "divergence_event":
                    gk.ingest(f"divergence_event: claim_id={op[1]} evidence_ref={ref}")
                elif op[3] == "inference_stamp":
                    gk.ingest(f"inference_stamp: claim_id={op[1]} evidence_ref={ref}")
                else:
                    gk.ingest(f"oracle_stamp: claim_id={op[1]} evidence_ref={ref} result={op[4]}")
            else:
                call = op[1]
                if op[2]:
                    os.environ["INFOMARK_BYPASS_GROUNDING"] = "1"
                try:
                    state = gk.state
                    outside = not (
                        state.has_ledger and state.premises and state.premises_grounded()
                    )
                    decision = gk.authorize(call)
                finally:
                    os.environ.pop("INFOMARK_BYPASS_GROUNDING", None)
                if decision.allowed and decision.tool_class in ("modify", "destructive", "unknown"):
                    if profile == "strict":
                        assert (state.has_ledger and not outside) or decision.code == "scratch"
                    if outside:
                        if decision.code == "scratch":
                            written = [e.payload for e in gk.events() if e.type == "files_written"][
                                -1:
                            ]
                            targets = written[0]["paths"] if written else []
                            assert not decision.reason.startswith("scratch run"), decision
                            for t in targets:
                                assert t not in before_session, (t, decision)
                                assert not t.startswith((".git", ".infomark")), decision
                                assert t != "conftest.py"
                        else:
                            assert decision.bypass and op[2], decision
                            bypassed.append(decision.decision_id)
                    if decision.code == "scratch":
                        for t in [p for p in (call.input.get("file_path"),) if p]:
                            full = root / str(t)
                            if not full.exists() and full.parent.is_dir():
                                full.write_text("own\n")  # the write happens: now it is own
                if decision.bypass:
                    bypassed.append(decision.decision_id)
        audit = gk.audit(verify=True)
        assert audit.verified
        listed = {b["decision_id"] for b in audit.bypasses}
        assert set(bypassed) <= listed
    finally:
        os.chdir(old_cwd)
        gk.close()
