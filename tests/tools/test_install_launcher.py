"""The hook launcher ``install claude-code`` writes (issue 13): ``python -I -S`` with a recorded
``sys.path``, run as Claude Code runs it (``/bin/sh -c COMMAND``, real JSON on stdin, a temp
project), failing closed when its interpreter or package moved, checked by ``doctor``."""

from __future__ import annotations

import ast
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import infomark
from infomark.tools.install import hook_argv, hook_form
from infomark.tools.launcher import hook_prefix, read_launcher, render, search_paths

EXE = shutil.which("infomark") or str(Path(sys.executable).with_name("infomark"))
SID = "3f1c2b7e-0000-4000-8000-00000000abcd"
REINSTALL = "re-run `infomark install claude-code`"


def run(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )


def install(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Install with the ledger profile (these tests are about the launcher; the ledger
    profile's denial of an edit is what shows the hook judged)."""
    profile = () if "--uninstall" in args else ("--profile", "ledger")
    done = run(root, "install", "claude-code", "--root", str(root), *profile, *args)
    assert done.returncode == 0, done.stderr
    return done


def entries(settings: Path) -> dict[str, list[dict[str, Any]]]:
    data = json.loads(settings.read_text())
    return {e: [h for g in groups for h in g["hooks"]] for e, groups in data["hooks"].items()}


def payload(root: Path, event: str, **fields: Any) -> str:
    base = {
        "session_id": SID,
        "transcript_path": "",
        "cwd": str(root),
        "hook_event_name": event,
        "permission_mode": "default",
    }
    return json.dumps({**base, **fields})


def as_claude(command: str, root: Path, stdin: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a hook command the way Claude Code does: through the shell, payload on stdin."""
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=root,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("INFOMARK_")},
            "CLAUDE_PROJECT_DIR": str(root),  # as Claude Code sets it for every hook
            **env,
        },
        timeout=120,
        check=False,
    )


def decision(proc: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    return out["permissionDecision"], out["permissionDecisionReason"]


def pre_command(root: Path) -> str:
    (entry,) = entries(root / ".claude" / "settings.json")["PreToolUse"]
    command: str = entry["command"]
    return command


EDIT = {"tool_name": "Bash", "tool_input": {"command": "sed -i s/a/b/ calc.py"}}
READ = {"tool_name": "Read", "tool_input": {"file_path": "calc.py"}}


def test_install_writes_an_isolated_launcher_beside_the_settings(project: Path) -> None:
    install(project)
    launcher = project / ".claude" / "infomark-hook"
    assert stat.S_IMODE(launcher.stat().st_mode) == 0o500
    text = launcher.read_text()
    assert text.splitlines()[0] == f"#!{sys.executable} -IS"  # one shebang argument
    found = read_launcher(launcher)
    package_dir = str(Path(infomark.__file__).resolve().parents[1])
    import tree_sitter

    assert package_dir in found.paths
    assert str(Path(tree_sitter.__file__).resolve().parents[1]) in found.paths
    assert not [p for p in found.paths if p.endswith(("lib-dynload", "python311.zip"))]
    assert found.version == tuple(sys.version_info[:2]) and found.problems() == []
    for event, handlers in entries(project / ".claude" / "settings.json").items():
        (handler,) = handlers
        settings = project / ".claude" / "settings.json"
        assert hook_argv(handler["command"], settings)[:3] == [str(launcher), "hook", "claude-code"]
        assert hook_form(handler["command"]) == "launcher", event


def test_install_is_idempotent_and_rewrites_a_changed_launcher(project: Path) -> None:
    install(project)
    launcher = project / ".claude" / "infomark-hook"
    before = (launcher.read_bytes(), launcher.stat().st_mtime_ns)
    again = install(project, "--json")
    assert json.loads(again.stdout)["changed"] is False
    assert (launcher.read_bytes(), launcher.stat().st_mtime_ns) == before
    os.chmod(launcher, 0o700)
    launcher.write_text("#!/bin/sh\nexit 0\n")  # swapped: the hooks would fail open
    assert json.loads(install(project, "--json").stdout)["changed"] is True
    assert launcher.read_bytes() == before[0]
    assert stat.S_IMODE(launcher.stat().st_mode) == 0o500


def test_the_installed_hook_judges_through_the_launcher(project: Path) -> None:
    install(project)
    command = pre_command(project)
    allowed = as_claude(command, project, payload(project, "PreToolUse", **READ))
    assert (allowed.returncode, allowed.stdout) == (0, ""), allowed.stderr  # allow = no output
    denied = as_claude(command, project, payload(project, "PreToolUse", **EDIT))
    assert denied.returncode == 0, denied.stderr
    verdict, reason = decision(denied)  # tree-sitter imported from the recorded site-packages
    assert verdict == "deny" and "claim_ledger" in reason
    start = as_claude(command, project, payload(project, "SessionStart", source="startup"))
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "claim_ledger" in context


def test_code_planted_for_python_start_up_does_not_run_in_the_launcher(
    project: Path, tmp_path: Path
) -> None:
    """-I ignores PYTHONPATH and -S imports no sitecustomize and reads no .pth file; the
    console script (the control) runs the planted code before it decides."""
    evil = tmp_path / "evil"
    evil.mkdir()
    marker = tmp_path / "ran"
    plant = f"open({str(marker)!r}, 'a').write('x')\n"
    (evil / "sitecustomize.py").write_text(plant)
    (evil / "usercustomize.py").write_text(plant)
    (evil / "zz-evil.pth").write_text("import os; " + plant)
    install(project)
    launcher = project / ".claude" / "infomark-hook"
    os.chmod(launcher, 0o700)  # the launcher again, with the planted directory on its paths
    launcher.write_text(render(paths=[*search_paths(), str(evil)]))
    env = {"PYTHONPATH": str(evil), "PYTHONSTARTUP": str(evil / "sitecustomize.py")}
    done = as_claude(pre_command(project), project, payload(project, "PreToolUse", **EDIT), **env)
    assert decision(done)[0] == "deny"
    assert not marker.exists()
    control = as_claude(
        f"{shlex.quote(EXE)} hook claude-code",
        project,
        payload(project, "PreToolUse", **EDIT),
        **env,
    )
    assert decision(control)[0] == "deny" and marker.exists()  # site ran it first


def test_the_launcher_process_loads_no_site_and_the_same_modules(project: Path) -> None:
    from test_import_discipline import FIRST_CALL_ONLY, HEAVY, PRETOOL_MODULES, SLOW_STDLIB

    install(project)
    launcher = project / ".claude" / "infomark-hook"
    os.chmod(launcher, 0o700)  # the installed text, reporting its modules after the answer
    text = launcher.read_text()
    report = (
        "\n    main(['hook', 'claude-code'])\n    print(sorted(sys.modules), file=sys.stderr)\n"
    )
    assert text.count("\n    raise SystemExit(main())\n") == 1
    launcher.write_text(
        text.replace("\n    raise SystemExit(main())\n", report + "    raise SystemExit(0)\n")
    )
    warm = as_claude(pre_command(project), project, payload(project, "PreToolUse", **READ))
    assert warm.returncode == 0, warm.stderr  # the first call validates infomark.toml (cached)
    done = as_claude(pre_command(project), project, payload(project, "PreToolUse", **READ))
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    modules = set(ast.literal_eval(done.stderr.strip().splitlines()[-1]))
    assert not modules & {
        "site",
        "_distutils_hack",
        "sitecustomize",
        "usercustomize",
        "_virtualenv",
    }
    # the warm-up (the session's first decision) judged the agent's sandbox: this one does not
    steady = PRETOOL_MODULES - FIRST_CALL_ONLY
    assert {m for m in modules if m.split(".")[0] == "infomark"} == steady
    bad = {m.split(".")[0] for m in modules} & {*HEAVY, *SLOW_STDLIB}
    assert not bad, bad  # none added either


def _moved(project: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A launcher whose infomark is a copy in ``site``, which is then moved away."""
    site = tmp_path / "site"
    shutil.copytree(
        Path(infomark.__file__).parent, site / "infomark", ignore=shutil.ignore_patterns("*.pyc")
    )
    install(project)
    launcher = project / ".claude" / "infomark-hook"
    others = [p for p in search_paths() if not (Path(p) / "infomark").is_dir()]
    os.chmod(launcher, 0o700)
    launcher.write_text(render(paths=[str(site), *others]))
    ok = as_claude(pre_command(project), project, payload(project, "PreToolUse", **READ))
    assert (ok.returncode, ok.stdout) == (0, ""), ok.stderr  # it ran from the copy
    site.rename(tmp_path / "site-moved")
    return launcher, site


def test_a_moved_package_fails_closed_with_the_fix(project: Path, tmp_path: Path) -> None:
    _launcher, site = _moved(project, tmp_path)
    command = pre_command(project)
    for call in (EDIT, READ):  # without infomark even a read cannot be judged
        denied = as_claude(command, project, payload(project, "PreToolUse", **call))
        verdict, reason = decision(denied)
        assert verdict == "deny" and f"{site} is gone" in reason and REINSTALL in reason
    stop = as_claude(command, project, payload(project, "Stop", last_assistant_message="done"))
    assert json.loads(stop.stdout)["decision"] == "block" and REINSTALL in stop.stdout
    post = as_claude(command, project, payload(project, "PostToolUse", **READ))
    assert (post.returncode, post.stdout) == (0, "") and REINSTALL in post.stderr
    broken = as_claude(command, project, '{"hook_event_name": "PreTool')  # unreadable: exit 2
    assert broken.returncode == 2 and "failing closed" in broken.stderr
    truncated = as_claude(command, project, payload(project, "PreToolUse", **EDIT)[:-20])
    assert decision(truncated)[0] == "deny"  # the event is still visible in the raw bytes
    code, report = doctor(project)
    assert code == 1
    (found,) = [f for f in report["findings"] if f["check"] == "hook_launcher"]
    assert found["status"] == "problem" and f"{site} is gone" in found["message"]
    assert "infomark install claude-code" in found["fix"]


def test_an_infomark_that_does_not_import_or_another_python_fails_closed(
    project: Path, tmp_path: Path
) -> None:
    install(project)
    launcher = project / ".claude" / "infomark-hook"
    os.chmod(launcher, 0o700)
    empty = tmp_path / "empty"
    empty.mkdir()
    launcher.write_text(render(paths=[str(empty)]))
    denied = as_claude(pre_command(project), project, payload(project, "PreToolUse", **EDIT))
    verdict, reason = decision(denied)
    assert verdict == "deny" and "infomark does not import" in reason and REINSTALL in reason
    text = render().replace(f"PYTHON = {tuple(sys.version_info[:2])!r}", "PYTHON = (3, 99)")
    launcher.write_text(text)
    denied = as_claude(pre_command(project), project, payload(project, "PreToolUse", **READ))
    verdict, reason = decision(denied)
    assert verdict == "deny" and "written for Python 3.99" in reason


def test_the_launcher_runs_only_the_hook(project: Path) -> None:
    install(project)
    done = as_claude(f"{pre_command(project).split()[0]} doctor", project, "")
    assert done.returncode == 2 and "the CLI is `infomark`" in done.stderr


def test_uninstall_removes_the_launcher_and_only_an_infomark_one(project: Path) -> None:
    install(project)
    launcher = project / ".claude" / "infomark-hook"
    removed = run(project, "install", "claude-code", "--root", str(project), "--uninstall")
    assert removed.returncode == 0 and removed.stdout.startswith("removed infomark hooks")
    assert not launcher.exists() and "hooks" not in json.loads(
        launcher.with_name("settings.json").read_text()
    )
    again = run(project, "install", "claude-code", "--root", str(project), "--uninstall")
    assert "nothing changed" in again.stdout
    launcher.write_text("#!/bin/sh\necho mine\n")  # someone else's file of that name
    run(project, "install", "claude-code", "--root", str(project), "--uninstall")
    assert launcher.read_text() == "#!/bin/sh\necho mine\n"


def test_user_scope_writes_the_launcher_beside_the_user_settings(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    done = run(tmp_path, "install", "claude-code", "--scope", "user", HOME=str(user))
    assert done.returncode == 0, done.stderr
    launcher = user / ".claude" / "infomark-hook"
    assert read_launcher(launcher).problems() == []
    (entry,) = entries(user / ".claude" / "settings.json")["Stop"]
    assert entry["command"].startswith(str(launcher) + " hook claude-code")
    run(tmp_path, "install", "claude-code", "--scope", "user", "--uninstall", HOME=str(user))
    assert not launcher.exists()


def test_an_interpreter_no_shebang_can_name_is_started_explicitly(
    project: Path, tmp_path: Path
) -> None:
    spaced = tmp_path / "with space" / "python"
    spaced.parent.mkdir()
    spaced.symlink_to(sys.executable)
    launcher = project / ".claude" / "infomark-hook"
    prefix = hook_prefix(launcher, python=str(spaced))
    assert shlex.split(prefix) == [str(spaced), "-I", "-S", str(launcher)]
    assert hook_form(prefix + " hook claude-code --home /h") == "launcher"
    install(project)
    os.chmod(launcher, 0o700)
    launcher.write_text(render(python=str(spaced)))
    command = prefix + " hook claude-code"
    denied = as_claude(command, project, payload(project, "PreToolUse", **EDIT))
    assert decision(denied)[0] == "deny" and "claim_ledger" in decision(denied)[1]
    settings = project / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    for groups in data["hooks"].values():
        for group in groups:
            for handler in group["hooks"]:
                handler["command"] = command
    settings.write_text(json.dumps(data))
    assert run(project, "init").returncode == 0
    code, report = doctor(project)
    assert code == 0 and [f["status"] for f in _launcher_findings(report)] == ["ok"]
    launcher.unlink()
    code, report = doctor(project)
    (found,) = _launcher_findings(report)
    assert code == 1 and "does not exist" in found["message"]


def test_hook_form_tells_both_forms_and_others_apart() -> None:
    assert hook_form("/p/.claude/infomark-hook hook claude-code --home /h") == "launcher"
    assert hook_form("'/v env/bin/infomark' hook claude-code") == "console"
    assert hook_form("/usr/bin/python3 -m infomark hook claude-code --url http://x") == "console"
    assert hook_form("echo mine") is None
    assert hook_form("/p/.claude/infomark-hook") is None  # not the hook command


def doctor(project: Path) -> tuple[int, dict[str, Any]]:
    proc = run(project, "doctor", "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _launcher_findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["check"] == "hook_launcher"]


@pytest.fixture
def initialised(project: Path) -> Path:
    assert run(project, "init").returncode == 0
    return project


def test_doctor_reports_an_old_form_install_and_install_upgrades_it(initialised: Path) -> None:
    project = initialised
    settings = project / ".claude" / "settings.json"
    install(project)
    data = json.loads(settings.read_text())
    for groups in data["hooks"].values():  # what an infomark before the launcher installed
        for group in groups:
            for handler in group["hooks"]:
                handler["command"] = f"{shlex.quote(EXE)} hook claude-code"
    settings.write_text(json.dumps(data))
    (project / ".claude" / "infomark-hook").unlink()
    code, report = doctor(project)
    (old,) = _launcher_findings(report)
    assert code == 0 and old["status"] == "warning" and "site" in old["message"]
    assert "infomark install claude-code" in old["fix"]
    upgraded = install(project)
    assert upgraded.stdout.startswith("installed infomark hooks into ")
    assert all(
        len(h) == 1 and hook_form(h[0]["command"]) == "launcher" for h in entries(settings).values()
    )
    code, report = doctor(project)
    assert code == 0 and [f["status"] for f in _launcher_findings(report)] == ["ok"]


def test_doctor_finds_a_launcher_that_cannot_run(initialised: Path, tmp_path: Path) -> None:
    project = initialised
    install(project)
    launcher = project / ".claude" / "infomark-hook"
    os.chmod(launcher, 0o700)
    text = launcher.read_text()
    launcher.write_text(text.replace(sys.executable, str(tmp_path / "gone" / "python"), 1))
    code, report = doctor(project)
    (found,) = _launcher_findings(report)
    assert code == 1 and found["status"] == "problem" and "interpreter" in found["message"]
    launcher.write_text(text)
    os.chmod(launcher.parent, 0o777)
    code, report = doctor(project)
    (found,) = [f for f in _launcher_findings(report) if f["status"] == "problem"]
    assert code == 1 and "writable by group or others" in found["message"]
    assert found["fix"] == "chmod go-w .claude"  # shown as the settings file is
    os.chmod(launcher.parent, 0o755)
    launcher.write_text("#!/bin/sh\nexit 0\n")  # swapped for something that lets all through
    code, report = doctor(project)
    (found,) = _launcher_findings(report)
    assert code == 1 and "not an infomark hook launcher" in found["message"]
    os.chmod(launcher, 0o600)
    code, report = doctor(project)
    assert code == 1 and "hook_command" in {f["check"] for f in report["findings"]}
