"""Issue 10 through the real Claude Code binary: installed hooks fail closed.

* The installer's PreToolUse entry carries ``"onFailure": "block"``: a hook that crashes,
  times out or cannot be started blocks the Write (and without it, the host lets the call
  through: the control case).
* The hook launcher the installer writes (``.claude/infomark-hook``, ``python -I -S``) whose
  infomark moved away denies the Write itself, with the fix (re-run the installer).
* ``install --http`` forwards to a live ``infomark serve`` (token read from the home, never
  from the environment), keeps SessionStart working, and when the service is gone the hook
  still judges locally: an ungrounded edit stays denied.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infomark.kernel.protocol import render_protocol

from .anthropic_stub import AnthropicStub, MessagesRequest, Reply, ToolCall
from .claude_harness import result_json, run_claude
from .scripts_infomark import BUGGY_BODY, FIXED_BODY, install_hooks, write_project

_EXE = str(Path(sys.executable).with_name("infomark"))
_LEDGER = (
    'Plan.\n\nclaim_ledger:\n  claims:\n    - id: C1\n      text: "parse keeps blanks"\n'
    '      status: Exact\n      falsifier: "test passes"\n'
    '      oracle: "python3 test_parser.py"\n  premises_for_plan: [C1]\n'
)


def _pre_tool_entry(settings: Path) -> dict[str, Any]:
    data = json.loads(settings.read_text())
    (group,) = [g for g in data["hooks"]["PreToolUse"] if "infomark" in json.dumps(g)]
    entry: dict[str, Any] = group["hooks"][0]
    return entry


def _swap_pre_tool(settings: Path, command: str, *, timeout: int | None = None,
                   keep_on_failure: bool = True) -> None:  # fmt: skip
    data = json.loads(settings.read_text())
    for group in data["hooks"]["PreToolUse"]:
        for entry in group["hooks"]:
            entry["command"] = command
            if timeout is not None:
                entry["timeout"] = timeout
            if not keep_on_failure:
                entry.pop("onFailure", None)
    settings.write_text(json.dumps(data, indent=2))


def _write_session(target: Path) -> list[Any]:
    call = ToolCall("Write", {"file_path": str(target), "content": "x = 1\n"}, id="toolu_w")
    return [Reply(text="Writing.", tool_calls=(call,)), Reply(text="Finished.")]


def _tool_errors(stub: AnthropicStub) -> list[str]:
    return [r.content for q in stub.model_requests for r in q.tool_results() if r.is_error]


BROKEN = {
    "crash": (f"{shlex.quote(sys.executable)} -c 'import sys; sys.exit(1)'", None),
    "timeout": (f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(8)'", 2),
    "missing": ("/nonexistent/infomark-hook claude-code", None),
}


def test_the_installer_marks_pretooluse_and_stop_block_on_failure(tmp_path: Path) -> None:
    settings = install_hooks(tmp_path)
    data = json.loads(settings.read_text())
    for event in ("PreToolUse", "Stop"):
        (entry,) = [h for g in data["hooks"][event] for h in g["hooks"]]
        assert entry["onFailure"] == "block"
    assert "onFailure" not in data["hooks"]["PostToolUse"][0]["hooks"][0]


def _installed(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A project with infomark's hooks installed, and an empty Claude home for the run."""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    return project, home, install_hooks(project)


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_pretooluse_hook_blocks_the_call(
    claude_bin: Path, tmp_path: Path, kind: str
) -> None:
    project, home, settings = _installed(tmp_path)
    assert _pre_tool_entry(settings)["onFailure"] == "block"
    command, timeout = BROKEN[kind]
    _swap_pre_tool(settings, command, timeout=timeout)
    target = project / "new.py"
    with AnthropicStub(_write_session(target)) as stub:
        proc = run_claude(project, "write it", stub, claude_bin=claude_bin, home=home)
    result_json(proc)
    assert not target.exists(), f"{kind}: the Write ran although its hook failed"
    errors = _tool_errors(stub)
    assert any("onFailure" in e and "block" in e for e in errors), errors


def test_without_on_failure_the_host_lets_a_crashed_hook_through(
    claude_bin: Path, tmp_path: Path
) -> None:
    """The control: what every hook installed before this fix did."""
    project, home, settings = _installed(tmp_path)
    _swap_pre_tool(settings, BROKEN["crash"][0], keep_on_failure=False)
    target = project / "new.py"
    with AnthropicStub(_write_session(target)) as stub:
        run_claude(project, "write it", stub, claude_bin=claude_bin, home=home)
    assert target.exists()


def test_a_launcher_whose_package_moved_denies_with_the_fix(
    claude_bin: Path, tmp_path: Path
) -> None:
    from infomark.tools.launcher import render

    project, home, settings = _installed(tmp_path)
    assert "infomark-hook hook claude-code" in _pre_tool_entry(settings)["command"]
    launcher = project / ".claude" / "infomark-hook"
    launcher.chmod(0o700)
    launcher.write_text(render(paths=[str(tmp_path / "rebuilt-venv" / "site-packages")]))
    target = project / "new.py"
    with AnthropicStub(_write_session(target)) as stub:
        run_claude(project, "write it", stub, claude_bin=claude_bin, home=home)
    assert not target.exists(), "the Write ran although the hook could not start"
    errors = _tool_errors(stub)
    assert any("re-run `infomark install claude-code`" in e for e in errors), errors


def _start_service(project: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [_EXE, "serve", "--home", str(project / ".infomark"), "--port", "0"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc


def _service_url(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        if "http://" in line and "/v1" in line:
            url = line.split("http://", 1)[1].split("/v1", 1)[0]
            return "http://" + url
    raise AssertionError("the service printed no URL")


def _edit_session(parser: Path, seen: list[str]) -> list[Any]:
    edit = {"file_path": str(parser), "old_string": BUGGY_BODY, "new_string": FIXED_BODY}

    def after(request: MessagesRequest) -> Reply:
        seen.extend(r.content for r in request.tool_results() if r.is_error)
        return Reply(text="Blocked; stopping.")

    return [
        Reply(text="Reading.", tool_calls=(ToolCall("Read", {"file_path": str(parser)}, id="r"),)),
        Reply(text=_LEDGER, tool_calls=(ToolCall("Edit", edit, id="toolu_edit"),)),
        after,
    ]


def test_http_install_forwards_keeps_session_start_and_survives_the_service(
    claude_bin: Path, tmp_path: Path
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    home.mkdir()
    parser = write_project(project)
    service = _start_service(project)
    try:
        url = _service_url(service)
        done = subprocess.run(
            [_EXE, "install", "claude-code", "--root", str(project), "--http", url,
             "--profile", "ledger"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        settings = json.loads((project / ".claude" / "settings.json").read_text())
        entries = [h for groups in settings["hooks"].values() for g in groups for h in g["hooks"]]
        assert all(h["type"] == "command" and "--url" in h["command"] for h in entries)
        assert "TOKEN" not in json.dumps(settings)  # nothing for the agent's environment
        seen: list[str] = []
        with AnthropicStub(_edit_session(parser, seen)) as stub:
            run_claude(project, "fix it", stub, claude_bin=claude_bin, home=home)
        first = stub.scripted_requests[0]
        assert any(render_protocol().strip()[:200] in t for t in first.texts()), "no protocol"
        assert parser.read_text().count(BUGGY_BODY) == 1
        assert any("C1" in e for e in seen), seen
    finally:
        service.terminate()
        service.wait(timeout=30)
    # The service is gone: the same hooks judge locally, and the edit stays denied.
    seen_after: list[str] = []
    with AnthropicStub(_edit_session(parser, seen_after)) as stub:
        run_claude(project, "fix it", stub, claude_bin=claude_bin, home=home)
    assert parser.read_text().count(BUGGY_BODY) == 1, "the edit ran with the service down"
    assert any("C1" in e for e in seen_after), seen_after


def test_http_install_refuses_a_port_where_nothing_listens(tmp_path: Path) -> None:
    (tmp_path / ".infomark").mkdir()
    (tmp_path / ".infomark" / "token").write_text("t" * 32)
    done = subprocess.run(
        [_EXE, "install", "claude-code", "--root", str(tmp_path), "--http", "http://127.0.0.1:9"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode != 0 and "nothing answers" in done.stderr
    assert not (tmp_path / ".claude" / "settings.json").exists()
