"""The agent file's checks and the `infomark run` / `infomark send` commands, run for real."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from infomark.kernel.errors import ConfigError
from infomark.tools.runner.agentfile import DEFAULT_TOOLS, load_agent
from infomark.tools.runner.scripted import ScriptedModelServer, call, reply
from infomark.tools.sandbox import probe

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agents"


def _cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "infomark", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_full_agent_file_parses(tmp_path: Path) -> None:
    (tmp_path / "w.toml").write_text('name = "w"\n')
    (tmp_path / "a.toml").write_text(
        'name = "fixer"\ninstructions = "Fix it."\ntools = ["read", "bash", "spawn_agent"]\n'
        'max_steps = 9\n[model]\nurl = "http://127.0.0.1:1/v1"\nname = "m"\n'
        'api_key_env = "K_1"\ntimeout_seconds = 5\nretries = 0\n'
        "[bash]\ntimeout_seconds = 3\noutput_cap_chars = 100\n"
        '[idle]\npersistent = true\nbase_seconds = 1.5\nwatch = ["src/*.py"]\n'
        '[agents]\nworker = "w.toml"\n'
    )
    spec = load_agent(tmp_path / "a.toml")
    assert (spec.name, spec.tools, spec.max_steps) == ("fixer", ("read", "bash", "spawn_agent"), 9)
    assert (spec.model.api_key_env, spec.bash.output_cap_chars) == ("K_1", 100)
    assert spec.idle.persistent and spec.idle.watch == ("src/*.py",)
    assert spec.agents["worker"] == tmp_path / "w.toml"
    assert load_agent(tmp_path / "w.toml").tools == DEFAULT_TOOLS


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nme = 1\n", "unknown key 'nme'"),
        ("[model]\nurl = 3\n", "model.url must be"),
        ("[modle]\n", "unknown table [modle]"),
        ('tools = ["rm"]\n', "unknown tool 'rm'"),
        ("max_steps = 0\n", "max_steps must be a positive integer"),
        ("[idle]\npersistent = 1\n", "idle.persistent must be true or false"),
        ('[model]\napi_key_env = "sk-abc.def"\n', "NAME of an environment variable"),
        ("name = \n", "not valid TOML"),
    ],
)
def test_bad_agent_files_say_what_and_where(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "a.toml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_agent(tmp_path / "a.toml")
    assert message in str(info.value) and "a.toml" in str(info.value)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_the_example_agent_files_load(path: Path) -> None:
    assert load_agent(path).name


def test_run_demo_runs_offline_and_exits_0(tmp_path: Path) -> None:
    got = _cli("run", "--demo", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert "finish refused (ungrounded_premises)" in got.stdout
    assert "finish refused (trigger_fired)" in got.stdout
    assert "journal verified" in got.stdout


def test_send_to_a_session_without_inbox_is_refused_with_exit_3(project: Path) -> None:
    got = _cli("send", "--session", "ghost", "hello", cwd=project)
    assert got.returncode == 3
    assert "not delivered" in got.stderr and "never_had_inbox" in got.stderr
    got = _cli("send", "--json", "--session", "ghost", "hello", cwd=project)
    assert json.loads(got.stdout) == {"delivered": False, "reason": "never_had_inbox",
                                      "session": "ghost"}  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "fix it"], "no model endpoint"),
        (["run", "--model", "ftp://x", "fix it"], "must start with http"),
        (["run", "--resume", "nothing-here"], "no run to resume"),
        (["run", "--model", "http://127.0.0.1:9/v1"], "give a TASK"),
        (["run", "--agent", "missing.toml", "x"], "cannot read the agent file"),
    ],
)
def test_run_usage_errors_are_one_clear_line(project: Path, args: list[str], message: str) -> None:
    got = _cli(*args, cwd=project)
    assert got.returncode == 2, got.stdout + got.stderr
    assert message in got.stderr and "Traceback" not in got.stderr


def test_run_json_reports_cost_and_finish(server: ScriptedModelServer, project: Path) -> None:
    server.add("j", reply("Nothing to change."))
    got = _cli("run", "--json", "--session", "j", "--model", server.url, "look", cwd=project)
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    assert data["reason"] == "finished" and data["finish"]["allow"] is True
    assert data["cost"] == {"working_calls": 1, "idle_calls": 0, "working_tokens": 120,
                            "idle_tokens": 0}  # fmt: skip


def test_run_reports_the_tasks_checks_and_exits_5_when_they_do_not_pass(
    server: ScriptedModelServer, project: Path
) -> None:
    """Issue 34: a model that changes nothing and proves nothing while the project's test
    fails is not "finished clean": the verdict says so, the check is named, exit 5."""
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    server.add("idle", reply("I could not find the file."))
    got = _cli("run", "--session", "idle", "--model", server.url, "fix the test", cwd=project)
    assert got.returncode == 5, got.stdout + got.stderr
    assert "verdict: finished_unchanged: ended without changes" in got.stdout
    assert "no check was run" in got.stdout
    # the agent ran no check: infomark runs it at the end, so the report says it fails now
    if probe().available:
        want = "check `pytest -q`: fail in infomark's own run (failing: test_calc.py::test_add)"
    else:  # no sandbox: nothing can run it here
        want = "check `pytest -q`: not_run"
    assert want in got.stdout, got.stdout
    server.add("idle2", reply("Nothing."))
    again = _cli("run", "--json", "--session", "idle2", "--model", server.url, "x", cwd=project)
    assert again.returncode == 5
    data = json.loads(again.stdout)
    assert data["unverified"] is True
    assert data["checks"][0]["state"] == ("fail" if probe().available else "not_run")


def test_run_exits_5_when_its_agent_is_let_out_at_the_refusal_cap(
    server: ScriptedModelServer, project: Path
) -> None:
    """Issue 34 §3: a finish the refusal cap let through is not a pass for CI."""
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (project / "infomark.toml").write_text(
        'profile = "verify"\nfinish_refusal_cap = 1\n[attest]\nrequired = false\n'
    )
    wrong = "def add(a, b):\n    return a * b\n"
    server.add(
        "capped",
        reply("Fixing it.", call("write", file_path=str(project / "calc.py"), content=wrong)),
        reply("Done."),
        reply("Done, really."),
    )
    got = _cli("run", "--json", "--session", "capped", "--model", server.url, "fix", cwd=project)
    assert got.returncode == 5, got.stdout + got.stderr
    data = json.loads(got.stdout)
    assert data["verdict"] == "finished_unverified" and data["unverified"] is True, data
