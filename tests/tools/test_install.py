"""``infomark install claude-code`` / ``--uninstall`` say when nothing changed, exit 0, and then
leave the settings file byte for byte (and mtime) as it was (issue 14 §4)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

EXE = shutil.which("infomark") or str(Path(sys.executable).with_name("infomark"))


def install(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, "install", "claude-code", "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def stamp(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def test_install_twice_says_nothing_changed_and_leaves_the_file(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    first = install(tmp_path)
    assert first.returncode == 0
    assert first.stdout.startswith("installed infomark hooks into ")
    before = stamp(settings)
    again = install(tmp_path)
    assert again.returncode == 0, again.stderr
    assert "already installed" in again.stdout and "nothing changed" in again.stdout
    assert stamp(settings) == before


def test_install_json_reports_changed(tmp_path: Path) -> None:
    first = json.loads(install(tmp_path, "--json").stdout)
    assert first == {
        "action": "install",
        "changed": True,
        "settings": str(tmp_path / ".claude" / "settings.json"),
        "checks": [],  # an empty project: nothing detected
        "config": str(tmp_path / "infomark.toml"),
    }
    again = json.loads(install(tmp_path, "--json").stdout)
    assert again["changed"] is False and again["config"] is None  # kept, not rewritten


def test_install_detects_the_checks_allows_them_and_uninstall_removes_only_those(
    tmp_path: Path,
) -> None:
    """A newcomer's default: the verify profile with the detected checks, allowed to run in
    Claude Code (merged with the user's own rules), removed again by uninstall; the hook
    command names the launcher relative to $CLAUDE_PROJECT_DIR so a clone works."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    assert 1\n")
    settings = tmp_path / ".claude" / "settings.json"
    local = tmp_path / ".claude" / "settings.local.json"  # Claude Code reads it untrusted, -p
    settings.parent.mkdir()
    local.write_text('{"permissions": {"allow": ["Bash(ls)", "Bash(pytest -q)"]}}')
    got = install(tmp_path, "--yes", "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["checks"] == ["pytest -q"]
    config = (tmp_path / "infomark.toml").read_text()
    assert 'profile = "verify"' in config and 'require = ["pytest -q"]' in config
    data = json.loads(settings.read_text())
    assert "permissions" not in data
    mine = {"permissions": {"allow": ["Bash(ls)", "Bash(pytest -q)"]}}
    assert json.loads(local.read_text()) == mine  # merged, once
    command = data["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert command.startswith('"${CLAUDE_PROJECT_DIR:-.}"/.claude/infomark-hook hook claude-code')
    assert str(tmp_path) not in command
    install(tmp_path, "--uninstall")
    # the user's own Bash(pytest -q) was there before: install did not add it, so it stays
    assert json.loads(local.read_text()) == mine
    other = tmp_path / "other"
    other.mkdir()
    install(other, "--check", "make test", "--profile", "ledger")
    ours = json.loads((other / ".claude" / "settings.local.json").read_text())
    assert ours["permissions"]["allow"] == ["Bash(make test)"]
    assert 'profile = "ledger"' in (other / "infomark.toml").read_text()
    install(other, "--uninstall")
    assert not (other / ".claude" / "settings.local.json").exists()  # it held only ours


def test_uninstall_says_when_there_was_nothing_to_remove(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    missing = install(tmp_path, "--uninstall")
    assert missing.returncode == 0
    assert "nothing changed" in missing.stdout and not settings.exists()  # nothing created
    settings.parent.mkdir()
    settings.write_text('{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}')
    before = stamp(settings)
    other = install(tmp_path, "--uninstall", "--json")
    assert other.returncode == 0
    assert json.loads(other.stdout)["changed"] is False
    assert stamp(settings) == before  # someone else's hooks only: untouched
    install(tmp_path)
    removed = install(tmp_path, "--uninstall")
    assert removed.returncode == 0 and removed.stdout.startswith("removed infomark hooks from")
    assert json.loads(settings.read_text()) == json.loads(before[0])
    assert "nothing changed" in install(tmp_path, "--uninstall").stdout


def test_a_changed_entry_is_rewritten(tmp_path: Path) -> None:
    install(tmp_path)
    settings = tmp_path / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["hooks"]["Stop"][0]["hooks"][0].pop("onFailure")  # someone weakened our entry
    settings.write_text(json.dumps(data))
    proc = install(tmp_path, "--json")
    assert json.loads(proc.stdout)["changed"] is True
    restored = json.loads(settings.read_text())["hooks"]["Stop"][0]["hooks"][0]
    assert restored["onFailure"] == "block"


def test_an_install_from_before_postcompact_gains_it_once(tmp_path: Path) -> None:
    install(tmp_path)
    settings = tmp_path / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    assert [g["hooks"][0]["timeout"] for g in data["hooks"]["PostCompact"]] == [30]
    del data["hooks"]["PostCompact"]  # what an older infomark installed
    settings.write_text(json.dumps(data))
    upgraded = install(tmp_path)
    assert upgraded.stdout.startswith("installed infomark hooks into "), upgraded.stdout
    assert "PostCompact" in json.loads(settings.read_text())["hooks"]
    before = stamp(settings)
    assert "nothing changed" in install(tmp_path).stdout and stamp(settings) == before
    install(tmp_path, "--uninstall")
    assert "hooks" not in json.loads(settings.read_text())


def _run_installed(root: Path, event: str, **fields: object) -> subprocess.CompletedProcess[str]:
    """Run the command the settings file registers for ``event``, as Claude Code does."""
    data = json.loads((root / ".claude" / "settings.json").read_text())
    (group,) = data["hooks"][event]
    (entry,) = group["hooks"]
    payload = {
        "session_id": "sess-c",
        "transcript_path": str(root / "t.jsonl"),
        "cwd": str(root),
        "hook_event_name": event,
        **fields,
    }
    return subprocess.run(
        ["/bin/sh", "-c", entry["command"]],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=root,
        timeout=60,
        check=False,
    )


def test_the_installed_compaction_hooks_carry_and_close_each_compaction(tmp_path: Path) -> None:
    from infomark.gatekeeper import Gatekeeper

    (tmp_path / "t.jsonl").write_text("")
    install(tmp_path)
    with Gatekeeper.open(tmp_path / ".infomark", "sess-c", root=tmp_path) as gk:
        gk.ingest(
            'claim_ledger:\n  claims:\n    - id: C1\n      text: "x"\n      status: Guess\n'
            '      falsifier: "y"\n  premises_for_plan: [C1]\n'
        )
    for _ in range(2):  # Claude Code 2.1.328's order: PreCompact, SessionStart, PostCompact
        pre = _run_installed(tmp_path, "PreCompact", trigger="manual")
        assert (pre.returncode, pre.stdout) == (0, ""), pre.stderr
        start = _run_installed(tmp_path, "SessionStart", source="compact")
        assert start.returncode == 0, start.stderr
        context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "[infomark:carried]" in context and "C1" in context
        post = _run_installed(tmp_path, "PostCompact", trigger="manual")
        assert (post.returncode, post.stdout) == (0, ""), post.stderr
        with Gatekeeper.open(tmp_path / ".infomark", "sess-c", root=tmp_path) as gk:
            assert gk.state.cursors.get("compaction_pending", 0) == 0  # closed by PostCompact
    with Gatekeeper.open(tmp_path / ".infomark", "sess-c", root=tmp_path) as gk:
        assert gk.state.policy["metrics"]["compactions"] == 2  # each counted once
        assert [e.type for e in gk.events()].count("compaction_carried") == 2


def _install_on_a_terminal(root: Path, answer: str) -> str:
    """``install claude-code`` with its stdin and stdout on a real pseudo-terminal, answering
    the confirmation with ``answer``; everything it wrote to the terminal."""
    import os
    import pty
    import select

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [EXE, "install", "claude-code", "--root", str(root)],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        close_fds=True,
    )
    os.close(follower)
    seen = b""
    answered = False
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        assert ready, f"no output from install within 60 s: {seen!r}"
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: install ended
            break
        if not chunk:
            break
        seen += chunk
        if not answered and b"Require these" in seen:
            os.write(leader, answer.encode() + b"\n")
            answered = True
    os.close(leader)
    assert proc.wait(timeout=60) == 0, seen
    return seen.decode("utf-8", "replace")


def test_install_asks_on_a_terminal_and_takes_the_answer(tmp_path: Path) -> None:
    """Issue 34 §1: the detected checks are shown and confirmed by the user at install."""
    for name, answer, want in (("yes", "", ["pytest -q"]), ("typed", "make check", ["make check"])):
        root = tmp_path / name
        (root / "tests").mkdir(parents=True)
        (root / "tests" / "test_a.py").write_text("def test_a():\n    assert 1\n")
        shown = _install_on_a_terminal(root, answer)
        assert "detected checks: `pytest -q`" in shown
        config = (root / "infomark.toml").read_text()
        assert f"require = {json.dumps(want)}" in config, config
        local = json.loads((root / ".claude" / "settings.local.json").read_text())
        assert local["permissions"]["allow"] == [f"Bash({c})" for c in want]
