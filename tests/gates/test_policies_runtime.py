"""The runtime API: custom policies (code, config, entry points), the generic phase API,
configuration errors, eviction by severity, and the journal shape of every intervention."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import grounded, ledger_text, record_paired
from policies_plugin import CiteSources
from policies_support import Session

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config, load_config
from infomark.gates.policies import (
    DEFAULT_PACKS,
    HookResult,
    PolicyRuntime,
    ToolResult,
    TurnContext,
    register_policy,
)
from infomark.kernel.errors import ConfigError, UserError
from infomark.ledger.calls import ToolCall, ToolOutcome


def _fetch(s: Session, url: str) -> str:
    return s.tool("WebFetch", {"url": url}, output="<html>", tool_class="web")


# -- custom policies ---------------------------------------------------------------------------


def test_custom_policy_keeps_its_state_and_fires_a_pack(gk: Gatekeeper) -> None:
    s = Session(gk, policies=[CiteSources()])
    s.prompt("research X")
    texts = [_fetch(s, f"https://example.org/{i}") for i in range(3)]
    assert texts[:2] == ["", ""]
    assert texts[2] == (
        "[infomark:pack cite_sources] 3 pages fetched: cite the source of each statement."
    )
    assert gk.state.policy["custom"] == {"cite_sources": {"fetched": 3}}
    added = s.events("instruction_pack_added")
    assert added[0]["severity"] == 6 and added[0]["evidence"] == {"fetched": 3}
    s.prompt("next")  # expires_after = 1
    assert "cite_sources" not in s.active()


def test_custom_policy_from_config_refuses_the_finish(gk: Gatekeeper) -> None:
    s = Session(gk, {"policies": ["policies_plugin:NeedsChangelog"]})
    assert s.rt.names == [*DEFAULT_PACKS, "needs_changelog"]
    s.prompt("ship it")
    _, verdict = s.finish("summary")
    assert not verdict.allow
    assert verdict.reason == (
        "[infomark:policy needs_changelog]\nAdd a line to CHANGELOG.md before you finish."
    )
    assert verdict.instructions == "" and verdict.packs == []  # said once, in the reason
    s.edit("CHANGELOG.md")
    _, verdict = s.finish("summary")
    assert verdict.allow
    assert "needs_changelog" not in s.active()


def test_a_failing_custom_policy_is_noted_not_fatal(gk: Gatekeeper) -> None:
    s = Session(gk, {"policies": ["policies_plugin:Broken"]})
    s.prompt("go")
    assert s.read("a.py") == ""
    notes = gk.state.policy["last_hook_results"]["after_tool_batch"]["notes"]
    assert notes == ["broken: failed with RuntimeError: this policy is broken"]


def test_policies_by_entry_point(
    gk: Gatekeeper, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    dist = site / "infomark_plugin_demo-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: infomark-plugin-demo\nVersion: 0.1\n"
    )
    (dist / "entry_points.txt").write_text(
        "[infomark.policies]\ncite_sources = policies_plugin:CiteSources\n"
    )
    monkeypatch.syspath_prepend(str(site))
    s = Session(gk, {"adaptive_packs": ["repeated_failures", "cite_sources"]})
    assert s.rt.names == ["repeated_failures", "cite_sources"]
    s.prompt("research")
    assert [bool(_fetch(s, f"u{i}")) for i in range(3)] == [False, False, True]


def test_register_policy_in_code(gk: Gatekeeper) -> None:
    register_policy("cite_sources_registered", CiteSources)
    s = Session(gk, {"adaptive_packs": ["cite_sources_registered"]})
    assert [p.name for p in s.rt.policies] == ["cite_sources"]  # the instance's own name


@pytest.mark.parametrize(
    ("policies", "message"),
    [
        ({"adaptive_packs": ["no_such_pack"]}, "unknown policy 'no_such_pack'"),
        ({"policies": ["policies_plugin"]}, "package.module:Class"),
        ({"policies": ["policies_plugin:Missing"]}, "cannot load"),
        ({"policies": ["policies_plugin:Nameless"]}, "needs a non-empty string attribute"),
        ({"max_active_packs": 4}, "max_active_packs"),
        ({"pack_budget_chars": 50}, "pack_budget_chars"),
        ({"pack_overrides": {"repeated_failures": {"treshold": 2}}}, "unknown key"),
        ({"pack_overrides": {"repeated_failures": {"severity": 11}}}, "severity"),
        ({"adaptive_packs": "repeated_failures"}, "list of names"),
        ({"budget": 5}, "unknown key"),
    ],
)
def test_configuration_errors_name_the_problem(policies: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PolicyRuntime(Config(policies=policies))


def test_a_policy_enabled_twice_is_an_error() -> None:
    config = Config(policies={"policies": ["policies_plugin:CiteSources"]})
    with pytest.raises(ConfigError, match="enabled twice"):
        PolicyRuntime(config, policies=[CiteSources()])


def test_policy_section_from_a_config_file(project: Path, home: Path) -> None:
    (project / "infomark.toml").write_text(
        "\n".join(
            [
                'adaptive_packs = ["repeated_failures", "stale_evidence"]',
                "max_active_packs = 2",
                "pack_budget_chars = 400",
                "[pack_overrides.repeated_failures]",
                "threshold = 2",
                "severity = 9",
                "[[triggers]]",
                'name = "voice-review"',
                'when = {file_written = "writing/*.md"}',
                'prompt = "Review the piece against voice.md."',
                'requires_read = ["voice.md"]',
            ]
        )
        + "\n"
    )
    home.mkdir()
    rt = PolicyRuntime(load_config(project, home))
    assert rt.names == ["repeated_failures", "stale_evidence"]
    assert rt.pack_settings("repeated_failures").threshold == 2
    assert rt.pack_settings("repeated_failures").severity == 9
    assert rt.pack_settings("stale_evidence").expires_after == 2
    assert rt.settings.max_active_packs == 2 and rt.settings.pack_budget_chars == 400
    assert [t.name for t in rt.settings.triggers] == ["voice-review"]
    assert rt.settings.triggers[0].requires_read == ("voice.md",)


# -- the generic phase API -------------------------------------------------------------------------


def test_run_phase_for_a_custom_runtime(gk: Gatekeeper) -> None:
    rt = PolicyRuntime(gk.config)
    with gk.store.transaction() as led:
        step = rt.run_phase(led, "before_model_call", TurnContext(prompt="fix it"))
        assert gk.store.emitted() == []  # the runtime returns its events, it never writes them
        for type_, payload in step.events:
            led.emit(type_, payload)
    results = []
    for i in range(3):
        call = ToolCall("bash", {"command": "make"})
        outcome = ToolOutcome(output=f"make: *** [all] Error {i}", exit_code=2)
        # a custom runtime's record
        ev = record_paired(gk.store, call, outcome, tool_class="execute")
        results.append(ToolResult(call, outcome, ev, "execute"))
    with gk.store.transaction() as led:
        step = rt.run_phase(led, "after_tool_batch", TurnContext(tool_results=tuple(results)))
        hook = step.hook
        assert [t for t, _ in step.events] == ["instruction_pack_added", "policy_updated"]
        for type_, payload in step.events:
            led.emit(type_, payload)
    assert isinstance(hook, HookResult) and hook.continue_
    assert len(hook.instructions) == 1
    assert hook.instructions[0].startswith("[infomark:pack repeated_failures] Stop guessing: 3")
    assert '"make: *** [all] Error 2"' in hook.instructions[0]
    assert hook.events[0].startswith("pack repeated_failures added")
    with gk.store.transaction() as led, pytest.raises(UserError, match="unknown policy phase"):
        rt.run_phase(led, "after_lunch", TurnContext())


def test_after_decision_ignores_allowed_calls(gk: Gatekeeper) -> None:
    s = Session(gk)
    grounded(gk)
    s.prompt("go")
    before = len(s.events())
    decision, text = s.authorize(ToolCall("Edit", {"file_path": "a.py"}))
    assert decision.allowed and text == ""
    assert [e["type"] for e in s.events()][before:] == ["decision"]


# -- eviction and the journal shape ----------------------------------------------------------------


def test_a_more_severe_pack_evicts_a_lesser_one(gk: Gatekeeper) -> None:
    s = Session(
        gk, {"max_active_packs": 1, "pack_overrides": {"read_heavy_drift": {"threshold": 2}}}
    )
    s.prompt("go")
    s.read("a.py")
    assert s.read("b.py") != ""  # read_heavy_drift (severity 4)
    for _ in range(3):  # failing reads: still reading, and failing
        last = s.tool("Read", {"file_path": "gone.py"}, is_error=True, tool_class="read")
    assert last.startswith("[infomark:pack repeated_failures]")  # severity 7
    assert s.active() == ["repeated_failures"]
    removed = s.events("instruction_pack_removed")
    assert [(e["name"], e["why"]) for e in removed] == [("read_heavy_drift", "evicted")]
    # a lesser pack cannot push a more severe one out: it is not admitted, and that is noted
    texts = [s.tool("Task", {"prompt": "q"}, is_error=True, tool_class="unknown") for _ in range(4)]
    assert "excessive_subagents" not in " ".join(texts)
    assert s.active() == ["repeated_failures"]
    notes = gk.state.policy["last_hook_results"]["after_tool_batch"]["notes"]
    assert any(n.startswith("pack excessive_subagents not admitted") for n in notes)


def test_every_pack_event_has_the_documented_payload(gk: Gatekeeper) -> None:
    s = Session(gk)
    s.prompt("go")
    s.say(ledger_text(("C1", "Hypothetical", "pytest -q"), premises=("C1",)))
    for _ in range(3):
        s.bash("pytest -q", exit_code=1, output="boom")
    s.bash("pytest -q")
    for e in s.events("instruction_pack_added"):
        assert set(e) >= {"name", "text", "severity", "reason", "evidence", "renewed"}
    for e in s.events("instruction_pack_removed"):
        assert e["why"] in ("expired", "evicted", "resolved")
    updates = s.events("policy_updated")
    keys = {"metrics", "working_set", "packs", "memory", "triggers", "last_hook_results", "custom"}
    keys |= {"conversation"}  # the recent messages and the pending turn
    assert updates and all(set(u.get("set", {})) <= keys for u in updates)
    assert all(op[0] in "smdac" and op[1][0] in keys for u in updates for op in u.get("patch", []))


def test_the_runtime_holds_no_session_state(gk: Gatekeeper, home: Path, project: Path) -> None:
    """Two runtimes (two hook processes) continue one session from the journal alone."""
    first = Session(gk)
    first.prompt("go")
    first.bash("make", exit_code=1, output="boom")
    first.bash("make", exit_code=1, output="boom")
    other = Gatekeeper.open(home, "s1", root=project)
    try:
        second = Session(other)
        assert second.bash("make", exit_code=1, output="boom").startswith(
            "[infomark:pack repeated_failures] Stop guessing: 3 tool calls failed"
        )
    finally:
        other.close()


def test_docs_cover_every_pack_event_and_phase() -> None:
    from infomark.gates.policies import ALL_PHASES

    doc = (Path(__file__).parents[2] / "docs" / "policies.md").read_text()
    for name in DEFAULT_PACKS:
        assert f"| `{name}` |" in doc, name
    for event in (
        "policy_updated",
        "instruction_pack_added",
        "instruction_pack_removed",
        "working_memory_updated",
        "trigger_fired",
        "trigger_obligation_met",
        "trigger_obligation_missed",
    ):
        assert f"| `{event}` |" in doc, event
    for phase in ALL_PHASES:
        assert f"| `{phase}` |" in doc, phase
