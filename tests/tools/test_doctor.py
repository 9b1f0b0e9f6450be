"""``infomark doctor`` against real homes, real settings files and real hook runs (issue 14 §4).

Each test builds a project in a temp dir (with its own ``$HOME``, so the user's settings and
Claude Code's transcripts are the test's), breaks one thing, and runs the installed
executable: the problem is named with its fix, the exit code is 1, and nothing is written.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from store_backends import Backend

EXE = shutil.which("infomark") or str(Path(sys.executable).with_name("infomark"))
SID = "0b5e8c1e-5d1f-4c8e-9a41-2f1f3c9d7a10"
LEDGER = (
    'Plan.\n\nclaim_ledger:\n  claims:\n    - id: C1\n      text: "the suite passes"\n'
    '      status: Guess\n      falsifier: "pytest fails"\n      oracle: "pytest -q"\n'
    "  premises_for_plan: [C1]\n"
)


class Project:
    """A project dir with its own $HOME, ledger home and Claude Code transcript."""

    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "project"
        self.root.mkdir()
        self.user = tmp / "user"
        self.user.mkdir()
        self.home = self.root / ".infomark"
        slug = str(self.root).replace("/", "-")
        self.transcript = self.user / ".claude" / "projects" / slug / f"{SID}.jsonl"
        self.transcript.parent.mkdir(parents=True)
        self.transcript.touch()

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("INFOMARK_", "CLAUDE_PROJECT_DIR"))
        }
        return {**env, "HOME": str(self.user), **extra}

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [EXE, *args],
            capture_output=True,
            text=True,
            cwd=self.root,
            env=self.env(**extra),
            timeout=120,
            check=False,
        )

    def doctor(self, **extra: str) -> tuple[int, dict[str, Any]]:
        proc = self.run("doctor", "--json", **extra)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc.returncode, json.loads(proc.stdout)

    def settings(self) -> Path:
        return self.root / ".claude" / "settings.json"

    def hook(self, event: str, **fields: Any) -> dict[str, Any] | None:
        payload = {
            "session_id": SID,
            "transcript_path": str(self.transcript),
            "cwd": str(self.root),
            "hook_event_name": event,
            "permission_mode": "default",
            **fields,
        }
        proc = subprocess.run(
            [EXE, "hook", "claude-code"],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            cwd=self.root,
            env=self.env(),
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout) if proc.stdout.strip() else None

    def append(self, entry: dict[str, Any]) -> None:
        with self.transcript.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def say(self, text: str) -> None:
        content = [{"type": "text", "text": text}]
        self.append({"type": "assistant", "message": {"role": "assistant", "content": content}})

    def host_writes(self, event: str, answer: dict[str, Any] | None, use_id: str = "") -> None:
        """What Claude Code writes into its transcript for a hook's answer."""
        if answer is None:
            return
        out = answer.get("hookSpecificOutput", {})
        if "additionalContext" in out:
            attachment = {
                "type": "hook_additional_context",
                "content": [out["additionalContext"]],
                "hookEvent": event,
                "toolUseID": use_id,
            }
            self.append({"type": "attachment", "attachment": attachment})
        if out.get("permissionDecision") == "deny":
            block = {
                "type": "tool_result",
                "tool_use_id": use_id,
                "content": out["permissionDecisionReason"],
                "is_error": True,
            }
            self.append({"type": "user", "message": {"role": "user", "content": [block]}})


@pytest.fixture
def proj(tmp_path: Path) -> Project:
    p = Project(tmp_path)
    assert p.run("init").returncode == 0
    assert p.run("install", "claude-code", "--profile", "ledger").returncode == 0
    return p


def by_check(report: dict[str, Any], check: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["check"] == check]


def problems(report: dict[str, Any]) -> set[str]:
    return {f["check"] for f in report["findings"] if f["status"] == "problem"}


def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def drive_session(p: Project, *, deliver: bool = True) -> None:
    """A short Claude Code session through the real hook; the host writes what it received
    into the transcript (unless ``deliver`` is False: a host that drops hook context)."""

    def host(event: str, answer: dict[str, Any] | None, use_id: str = "") -> None:
        if deliver:
            p.host_writes(event, answer, use_id)

    host("SessionStart", p.hook("SessionStart", source="startup"))
    p.say(LEDGER)
    edit = {"file_path": str(p.root / "calc.py"), "old_string": "a", "new_string": "b"}
    denied = p.hook("PreToolUse", tool_name="Edit", tool_input=edit, tool_use_id="t1")
    host("PreToolUse", denied, "t1")
    bash = {"command": "pytest -q"}
    assert p.hook("PreToolUse", tool_name="Bash", tool_input=bash, tool_use_id="t2") is None
    response = {"stdout": "3 passed", "stderr": "", "interrupted": False}
    post = p.hook(
        "PostToolUse", tool_name="Bash", tool_input=bash, tool_response=response, tool_use_id="t2"
    )
    host("PostToolUse", post, "t2")


def test_a_fresh_install_is_healthy_and_says_it_has_not_run(proj: Project) -> None:
    before = tree(proj.root)
    code, report = proj.doctor()
    assert code == 0, report
    assert report["ok"] is True and report["problems"] == 0
    assert {f["status"] for f in by_check(report, "home_private")} == {"ok"}
    assert {f["status"] for f in by_check(report, "agent_reach")} == {"ok"}
    (ran,) = by_check(report, "ran")
    assert ran["status"] == "warning" and "no Claude Code session" in ran["message"]
    assert tree(proj.root) == before  # doctor wrote nothing


def test_text_output_names_each_problem_with_its_fix(proj: Project) -> None:
    os.chmod(proj.home, 0o755)
    proc = proj.run("doctor")
    assert proc.returncode == 1
    assert "PROBLEM  home: .infomark is mode 755" in proc.stdout
    assert "fix: chmod 700 .infomark" in proc.stdout
    assert "fix: chmod 600 .infomark/ledger.db" in proc.stdout  # 0644 in an open folder
    assert proc.stdout.rstrip().endswith("2 problems, 1 warning")


def test_no_home_is_a_problem_and_nothing_is_created(tmp_path: Path) -> None:
    p = Project(tmp_path)
    code, report = p.doctor()
    assert code == 1 and "home_exists" in problems(report)
    assert not p.home.exists()


def test_loose_modes_are_problems_with_chmod_fixes(proj: Project) -> None:
    os.chmod(proj.home, 0o755)
    os.chmod(proj.home / "key", 0o644)
    code, report = proj.doctor()
    assert code == 1
    assert {"home_private", "secret_mode"} <= problems(report)
    fixes = " ".join(f["fix"] for f in report["findings"])
    assert "chmod 700 .infomark" in fixes and "chmod 600 .infomark/key" in fixes


def test_key_in_the_environment_or_in_settings_env_is_a_problem(proj: Project) -> None:
    code, report = proj.doctor(INFOMARK_KEY="00" * 32)
    assert code == 1 and "secret_in_env" in problems(report)
    data = json.loads(proj.settings().read_text())
    data["env"] = {"INFOMARK_TOKEN": "t0k3n"}
    proj.settings().write_text(json.dumps(data))
    code, report = proj.doctor()
    assert code == 1
    (found,) = [f for f in by_check(report, "secret_in_env") if f["status"] == "problem"]
    assert ".claude/settings.json" in found["message"] and "remove INFOMARK_TOKEN" in found["fix"]
    assert "t0k3n" not in json.dumps(report)  # the secret itself is never printed


def test_a_config_that_does_not_parse_is_a_problem(proj: Project) -> None:
    (proj.root / "infomark.toml").write_text('profile = "lenient"\n')
    code, report = proj.doctor()
    assert code == 1 and "config_parses" in problems(report)
    (proj.root / "infomark.toml").write_text('profile = "observe"\n')
    code, report = proj.doctor()
    assert code == 0
    assert {f["status"] for f in by_check(report, "profile")} == {"warning"}


def test_settings_that_do_not_parse_are_a_problem(proj: Project) -> None:
    proj.settings().write_text("{not json")
    code, report = proj.doctor()
    assert code == 1 and "settings_parse" in problems(report)


def test_an_unmounted_hook_command_and_a_missing_event_are_problems(proj: Project) -> None:
    data = json.loads(proj.settings().read_text())
    for groups in data["hooks"].values():
        for group in groups:
            for handler in group["hooks"]:
                handler["command"] = "/nonexistent/bin/infomark hook claude-code"
    del data["hooks"]["PreToolUse"]
    proj.settings().write_text(json.dumps(data))
    code, report = proj.doctor()
    assert code == 1
    assert {"hook_command", "hook_missing"} <= problems(report)
    (missing,) = by_check(report, "hook_missing")
    assert "PreToolUse" in missing["message"] and "infomark install claude-code" in missing["fix"]


def test_an_install_without_the_compaction_hooks_says_so(proj: Project) -> None:
    """Every installed event has a reason when it is missing (PreCompact had none: a crash)."""
    data = json.loads(proj.settings().read_text())
    del data["hooks"]["PreCompact"], data["hooks"]["PostCompact"]  # an older install
    proj.settings().write_text(json.dumps(data))
    code, report = proj.doctor()
    assert code == 1
    missing = {f["message"].split(":")[0] for f in by_check(report, "hook_missing")}
    assert missing == {"no infomark hook for PreCompact", "no infomark hook for PostCompact"}


def test_an_http_session_start_entry_and_a_token_from_the_env_are_problems(proj: Project) -> None:
    data = json.loads(proj.settings().read_text())
    data["hooks"]["SessionStart"] = [
        {
            "hooks": [
                {
                    "type": "http",
                    "url": "http://127.0.0.1:9/v1/hooks/claude-code",
                    "headers": {"Authorization": "Bearer $INFOMARK_TOKEN"},
                    "allowedEnvVars": ["INFOMARK_TOKEN"],
                }
            ]
        }
    ]
    proj.settings().write_text(json.dumps(data))
    code, report = proj.doctor()
    assert code == 1
    assert {"http_session_start", "token_in_env"} <= problems(report)


def test_a_hook_without_on_failure_block_is_a_warning(proj: Project) -> None:
    data = json.loads(proj.settings().read_text())
    data["hooks"]["PreToolUse"][0]["hooks"][0].pop("onFailure")
    proj.settings().write_text(json.dumps(data))
    code, report = proj.doctor()
    assert code == 0
    assert [f["status"] for f in by_check(report, "fail_open")] == ["warning"]


def test_a_session_that_ran_and_delivered_everything_is_healthy(proj: Project) -> None:
    drive_session(proj)
    code, report = proj.doctor()
    assert code == 0, [f for f in report["findings"] if f["status"] == "problem"]
    (ran,) = by_check(report, "ran")
    assert ran["status"] == "ok" and SID in ran["message"]
    assert [f["status"] for f in by_check(report, "tags_delivered")] == ["ok"]
    assert by_check(report, "pack_delivered") == []  # the denial carried its pack
    assert by_check(report, "protocol_delivered") == []


def test_the_verify_brief_counts_as_delivered_and_the_protocol_is_not_asked(
    proj: Project,
) -> None:
    """In the verify profile SessionStart sends a brief, not the protocol: delivered is ok."""
    config = proj.root / "infomark.toml"
    text = config.read_text()
    assert 'profile = "ledger"' in text
    config.write_text(text.replace('profile = "ledger"', 'profile = "verify"'))
    answer = proj.hook("SessionStart", source="startup")
    assert answer is not None
    assert "claim_ledger" not in answer["hookSpecificOutput"]["additionalContext"]
    proj.host_writes("SessionStart", answer, "")
    _code, report = proj.doctor()
    assert by_check(report, "protocol_delivered") == []


def test_messages_that_never_reached_the_model_are_problems(proj: Project) -> None:
    drive_session(proj, deliver=False)  # the host ran the hooks but dropped their answers
    code, report = proj.doctor()
    assert code == 1
    assert {"tags_delivered", "pack_delivered", "protocol_delivered"} <= problems(report)
    (pack,) = by_check(report, "pack_delivered")
    assert "ungrounded_premises" in pack["message"]


def test_hook_errors_in_the_journal_are_problems(proj: Project) -> None:
    drive_session(proj)
    (proj.root / "infomark.toml").write_text("profile = [\n")  # the next hook run hits it
    edit = {"file_path": str(proj.root / "calc.py"), "old_string": "a", "new_string": "b"}
    proj.hook("PreToolUse", tool_name="Edit", tool_input=edit, tool_use_id="t3")
    (proj.root / "infomark.toml").unlink()
    code, report = proj.doctor()
    assert code == 1
    (err,) = [f for f in report["findings"] if f["check"] == "config_error"]
    assert err["area"] == "claude-code" and SID in err["message"]


def test_the_mcp_proxy_config_is_checked(proj: Project) -> None:
    mcp = {
        "mcpServers": {
            "notes": {"command": EXE, "args": ["mcp-proxy", "--session", "notes", "--", EXE]},
            "broken": {"command": EXE, "args": ["mcp-proxy", "--", "/nonexistent/server"]},
            "leaky": {
                "command": "/nonexistent/infomark",
                "args": ["mcp-proxy", "--", EXE],
                "env": {"INFOMARK_KEY": "ab" * 32},
            },
            "other": {"command": "python", "args": ["server.py"]},
        }
    }
    (proj.root / ".mcp.json").write_text(json.dumps(mcp))
    code, report = proj.doctor()
    assert code == 1
    assert {"downstream", "proxy_command", "secret_in_env"} <= problems(report)
    installed = [f["message"] for f in by_check(report, "installed") if f["area"] == "mcp"]
    assert len(installed) == 3  # "other" is not a proxy
    ran = [f for f in by_check(report, "ran") if f["area"] == "mcp"]
    assert all(f["status"] == "warning" for f in ran)


def test_reach_check_fails_when_self_protection_would_let_a_read_through(
    proj: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infomark.gates import protect
    from infomark.tools.doctor import reach_findings

    assert [f.status for f in reach_findings(proj.home, proj.root)] == ["ok"]
    monkeypatch.setattr(protect, "protected", lambda *a, **k: None)
    (found,) = reach_findings(proj.home, proj.root)
    assert found.status == "problem" and "cat .infomark/key" in found.message


def test_the_service_is_checked_with_the_homes_token(
    tmp_path: Path, spawn: Callable[..., Any]
) -> None:
    svc = spawn()
    (tmp_path / "mine").mkdir()
    p = Project(tmp_path / "mine")
    code, report = p.doctor()  # no home here: a problem, but not the service's
    assert code == 1
    assert by_check(report, "service_up") == []
    proc = p.run("doctor", "--json", "--home", str(svc.home), "--url", svc.url)
    served = json.loads(proc.stdout)
    assert [f["status"] for f in by_check(served, "service_up")] == ["ok"]
    assert p.run("init").returncode == 0  # another home: its token is not the service's
    proc = p.run("doctor", "--json", "--url", svc.url)
    assert proc.returncode == 1
    assert "service_token" in problems(json.loads(proc.stdout))
    svc.stop()
    proc = p.run("doctor", "--json", "--home", str(svc.home), "--url", svc.url)
    assert proc.returncode == 1 and "service_up" in problems(json.loads(proc.stdout))


def test_doctor_reads_the_journal_on_either_store(tmp_path: Path, backend: Backend) -> None:
    """A home on PostgreSQL (``init --store``) has no ledger.db: doctor reads its store."""
    p = Project(tmp_path)
    init = ("init",) if backend.url is None else ("init", "--store", backend.url)
    assert p.run(*init).returncode == 0
    assert p.run("install", "claude-code", "--profile", "ledger").returncode == 0
    drive_session(p)
    assert (p.home / "ledger.db").exists() is (not backend.pg)
    code, report = p.doctor()
    assert code == 0, [f for f in report["findings"] if f["status"] == "problem"]
    (ran,) = by_check(report, "ran")
    assert ran["status"] == "ok" and SID in ran["message"]
    assert [f["status"] for f in by_check(report, "tags_delivered")] == ["ok"]
    assert by_check(report, "home_exists") == []


def test_the_otel_switch_is_checked(proj: Project) -> None:
    code, report = proj.doctor(INFOMARK_OTEL="maybe")
    assert code == 1 and "otel" in problems(report)
    (bad,) = by_check(report, "otel")
    assert "INFOMARK_OTEL='maybe' is neither on nor off" in bad["message"]
    code, report = proj.doctor(INFOMARK_OTEL="1", OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    (ok,) = by_check(report, "otel")
    assert ok["status"] == "ok" and "http://127.0.0.1:9" in ok["message"]
    _, report = proj.doctor()
    assert by_check(report, "otel") == []
