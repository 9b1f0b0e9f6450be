"""Self-protection: the agent cannot read the key, rewrite the journal, or mint evidence."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import grounded, ledger_text

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall


@pytest.mark.parametrize(
    "call",
    [
        ToolCall("Read", {"file_path": ".infomark/key"}),
        ToolCall("Read", {"file_path": "sub/../.infomark/token"}),
        ToolCall("Write", {"file_path": ".infomark/ledger.db", "content": "x"}),
        ToolCall("Grep", {"pattern": "x", "path": ".infomark"}),
        ToolCall("Bash", {"command": "cat .infomark/key"}),
        ToolCall("Bash", {"command": "sqlite3 .infomark/ledger.db 'delete from events'"}),
        ToolCall("Bash", {"command": "infomark record --tool bash --exit-code 0"}),
        ToolCall("Bash", {"command": "infomark approve"}),
        ToolCall("Bash", {"command": "cd /tmp && python -m infomark ingest -"}),
        ToolCall("Bash", {"command": "/usr/local/bin/infomark --home h init"}),
        # issue 11: any self-invocation, read-only subcommands included
        ToolCall("Bash", {"command": "infomark audit --json"}),
        ToolCall("Bash", {"command": "infomark kernel render"}),
    ],
)
def test_ledger_home_and_mutating_cli_are_denied(gk: Gatekeeper, call: ToolCall) -> None:
    d = gk.authorize(call)
    assert d.verdict.value == "deny" and d.code in ("protected_home", "protected_cli"), d


def test_even_bypass_does_not_open_the_key(gk: Gatekeeper, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFOMARK_BYPASS_GROUNDING", "1")
    d = gk.authorize(ToolCall("Read", {"file_path": ".infomark/key"}))
    assert d.verdict.value == "deny" and not d.bypass


def test_absolute_home_path_is_recognised(gk: Gatekeeper, home: Path) -> None:
    d = gk.authorize(ToolCall("Read", {"file_path": str(home / "key")}))
    assert d.code == "protected_home"


@pytest.mark.parametrize(
    "call",
    [
        ToolCall("Edit", {"file_path": "infomark.toml", "old_string": "a", "new_string": "b"}),
        ToolCall("Write", {"file_path": ".claude/settings.json", "content": "{}"}),
        ToolCall("Bash", {"command": "echo 'profile = \"observe\"' > infomark.toml"}),
        ToolCall(
            "edit",
            {"filePath": ".opencode/plugins/infomark.js", "oldString": "a", "newString": "b"},
        ),
        ToolCall("Bash", {"command": "rm .opencode/plugins/infomark-hook"}),
    ],
)
def test_config_and_hook_settings_edits_are_held(gk: Gatekeeper, call: ToolCall) -> None:
    grounded(gk)  # without premises the edit is denied before it could be held
    d = gk.authorize(call)
    assert d.verdict.value == "ask" and d.code == "protected_config"


@pytest.mark.parametrize(
    "call",
    [
        ToolCall("Read", {"file_path": "infomark.toml"}),
        ToolCall("Bash", {"command": "grep -r infomarkish src/"}),
        ToolCall("Read", {"file_path": "src/infomark_notes.md"}),
        ToolCall("Read", {"file_path": ".opencode/plugins/infomark.js"}),
    ],
)
def test_harmless_neighbours_pass(gk: Gatekeeper, call: ToolCall) -> None:
    assert gk.authorize(call).allowed


def test_grounding_deny_is_kept_over_a_config_hold(gk: Gatekeeper) -> None:
    gk.ingest(ledger_text(("C1", "Guess", None), premises=("C1",)))
    d = gk.authorize(ToolCall("Write", {"file_path": "infomark.toml", "content": "x"}))
    assert d.verdict.value == "deny" and d.code == "ungrounded_premises"


def test_a_file_path_outside_proc_compiles_no_pattern(tmp_path: Path) -> None:
    """The /proc link patterns run only on a path under /proc/: a Read elsewhere loads no
    ``re`` (its import and compile were ~13 M instructions of every Read and Edit)."""
    import subprocess
    import sys

    code = (
        f"import sys; sys.path[:0] = {sys.path!r}\n"
        "from infomark.gates.classify import classify_tool\n"
        "from infomark.gates.protect import protected\n"
        f"root = {str(tmp_path)!r}\n"
        "for tool, path in (('Read', root + '/a.py'), ('Edit', 'b.py'), ('Read', '/etc/x')):\n"
        "    inp = {'file_path': path}\n"
        "    c = classify_tool(tool, inp)\n"
        "    assert protected(tool, inp, c, home=root + '/.infomark', root=root) is None\n"
        "assert 're' not in sys.modules, 'a pattern was compiled'\n"
        "inp = {'file_path': '/proc/self/fd/3'}\n"
        "assert protected('Read', inp, classify_tool('Read', inp), home=root, root=root)\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
