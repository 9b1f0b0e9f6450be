"""``infomark replay``: today's rules over recorded sessions, through the installed executable.

The scenario files in tests/scenarios are policy regression tests: they cover every reason a
stamp is rejected (infomark/kernel/reasons.py) and the main decision and finish codes, and
this module runs them in ``make test``. Recorded sources: a JSONL of tool calls, a Claude Code
transcript, and the journal of a real ``infomark run`` session.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from infomark.kernel.errors import UserError
from infomark.kernel.reasons import RejectReason
from infomark.tools.eval.sources import load_sources

EXE = shutil.which("infomark") or str(Path(sys.executable).with_name("infomark"))
SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args], capture_output=True, text=True, timeout=300, check=False, cwd=cwd
    )


def test_the_scenarios_pass_and_cover_every_reason_code(tmp_path: Path) -> None:
    junit = tmp_path / "replay.xml"
    proc = cli("replay", str(SCENARIOS), "--junit", str(junit), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    out = json.loads(proc.stdout)
    assert out["differences"] == 0 and len(out["sources"]) >= 6
    tree = ET.parse(junit).getroot()
    assert tree.tag == "testsuites" and tree.get("failures") == "0"
    assert int(tree.get("tests") or 0) >= 35
    expected = {r for s in load_sources([SCENARIOS]) for st in s.steps for r in st.rejected or ()}
    assert expected == {r.value for r in RejectReason}, sorted(
        {r.value for r in RejectReason} - expected
    )
    codes = {st.code for s in load_sources([SCENARIOS]) for st in s.steps if st.code}
    assert {
        "no_ledger",
        "scratch",
        "ungrounded_premises",
        "grounded",
        "destructive",
        "dryrun",
        "protected_home",
        "protected_cli",
        "protected_config",
        "completion_without_evidence",
    } <= codes


def test_a_changed_rule_is_reported_with_where_it_was_recorded(tmp_path: Path) -> None:
    text = (SCENARIOS / "grounding.scenario.toml").read_text()
    wrong = text.replace('code = "no_ledger"', 'code = "grounded"', 1)
    (tmp_path / "g.scenario.toml").write_text(wrong)
    junit = tmp_path / "r.xml"
    proc = cli("replay", str(tmp_path / "g.scenario.toml"), "--junit", str(junit), cwd=tmp_path)
    assert proc.returncode == 1
    assert re.search(
        r"step 1 call edit calc\.py: recorded deny \(grounded\), today deny \(no_ledger\)",
        proc.stdout,
    )
    fails = ET.parse(junit).getroot().findall(".//failure")
    assert len(fails) == 1 and "g.scenario.toml: step 1" in (fails[0].text or "")


def test_a_jsonl_of_tool_calls_is_replayed(tmp_path: Path) -> None:
    lines = [
        {"prompt": "fix add"},
        {
            "tool": "Edit",
            "input": {"file_path": "calc.py", "old_string": "-", "new_string": "+"},
            "output": "ok",
            "decision": "allow",
        },
        {
            "tool": "Bash",
            "input": {"command": "ls"},
            "output": "calc.py",
            "exit_code": 0,
            "decision": "allow",
        },
        {"finish": "Done, fixed.", "expect": "allow"},
    ]
    src = tmp_path / "calls.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    proc = cli("replay", str(src), "--json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    steps = json.loads(proc.stdout)["sources"][0]["steps"]
    diff = [(s["index"], s["got"], s["code"]) for s in steps if s["ok"] is False]
    # recorded as allowed, both: today an Edit with no ledger is denied, and a finish that
    # claims completion with no evidence is refused
    assert diff == [(2, "deny", "no_ledger"), (4, "refuse", "completion_without_evidence")]


def test_a_claude_code_transcript_is_replayed(tmp_path: Path) -> None:
    rows = [
        {"type": "user", "message": {"role": "user", "content": "fix the bug in app.py"}},
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "I'll run the tests."},
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Bash",
                        "input": {"command": "pytest -q"},
                    },
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "1 failed"},
                ],
            },
        },
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t2",
                        "name": "Bash",
                        "input": {"command": "sed -i s/-/+/ app.py"},
                    },
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t2", "content": ""},
                ],
            },
        },
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Fixed."},
                ],
            },
        },
    ]
    src = tmp_path / "session.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    [source] = load_sources([src])
    assert [s.kind for s in source.steps] == ["prompt", "text", "call", "call", "text", "finish"]
    assert source.steps[3].expect == "allow" and source.steps[3].output == ""
    proc = cli("replay", str(src), "--json", cwd=tmp_path)
    out = json.loads(proc.stdout)["sources"][0]
    differ = {s["what"]: (s["got"], s["code"]) for s in out["steps"] if s["ok"] is False}
    # recorded without infomark: today the in-place edit with no ledger is denied
    assert differ == {"Bash sed -i s/-/+/ app.py": ("deny", "no_ledger")}, out
    assert proc.returncode == 1


def test_a_runner_journal_is_replayed_with_no_difference(tmp_path: Path) -> None:
    from infomark.tools.runner.agentfile import AgentSpec, ModelSpec
    from infomark.tools.runner.demo import fix_script, prepare_project
    from infomark.tools.runner.loop import Runner
    from infomark.tools.runner.scripted import ScriptedModelServer

    project = tmp_path / "project"
    prepare_project(project)
    # no trigger; the runs grade as the agent made them (the explicit opt-out of attested
    # runs: a replay re-decides the recorded steps and makes no sandboxed run of its own)
    own = "[attest]\nrequired = false\n"
    (project / "infomark.toml").write_text(own)
    (tmp_path / "own.toml").write_text(own)
    script = [s for i, s in enumerate(fix_script()) if i < 6]
    with ScriptedModelServer({"demo": script}) as server:
        spec = AgentSpec(name="demo", model=ModelSpec(url=server.url, name="s", retries=0))
        with Runner(spec, home=tmp_path / "home", session="demo", root=project) as runner:
            assert runner.start("Fix add() in calc.py").reason == "finished"
    shutil.copy(project / "calc.py", tmp_path / "calc.fixed")
    proc = cli(
        "replay",
        str(tmp_path / "home"),
        "--session",
        "demo",
        "--config",
        str(tmp_path / "own.toml"),
        "--json",
        cwd=tmp_path,
    )
    out = json.loads(proc.stdout)
    assert proc.returncode == 0, out
    [src] = out["sources"]
    assert src["compared"] >= 6 and src["differences"] == 0
    kinds = [s["got"] for s in src["steps"] if s["kind"] == "call"]
    assert "deny" in kinds and "allow" in kinds


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[[step]]\ntool = 'Bash'\ntext = 'x'\n", "exactly one of"),
        ("[[step]]\ntool = 'Bash'\nexpect = 'maybe'\n", "expect must be"),
        ("[[step]]\nprompt = 'x'\ncolour = 'red'\n", "unknown step key"),
        ("name = 'x'\n", "needs [[step]]"),
        ("[[step\n", "not valid TOML"),
    ],
)
def test_a_bad_scenario_is_a_clear_error(tmp_path: Path, body: str, message: str) -> None:
    bad = tmp_path / "bad.scenario.toml"
    bad.write_text(body)
    with pytest.raises(UserError, match=re.escape(message)):
        load_sources([bad])
    proc = cli("replay", str(bad), cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
