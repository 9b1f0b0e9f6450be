"""Sub-agents on a fork of their parent (issue 17): the child starts from the parent's ledger,
proves a claim with its own evidence, and ``wait`` merges what it proved back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import OWN_RUNS_TOML

from infomark.tools.runner import AgentSpec, ModelSpec, Runner, ScriptedModelServer
from infomark.tools.runner.scripted import Request, call, evidence_refs, reply, tool_results
from tests.runner.conftest import events

ORACLE = "test -f calc.py"
LEDGER = (
    "claim_ledger:\n  claims:\n    - id: C1\n      text: calc.py exists\n"
    f'      status: Hypothetical\n      falsifier: "it is missing"\n      oracle: "{ORACLE}"\n'
    "  premises_for_plan: [C1]\n"
)


def _spec(server: ScriptedModelServer) -> AgentSpec:
    return AgentSpec(
        name="boss",
        tools=("wait", "spawn_agent", "send", "bash"),
        model=ModelSpec(url=server.url, name="scripted", retries=0),
    )


def _stamp_last(req: Request) -> dict[str, Any]:
    ref = evidence_refs(req)[-1]
    return reply(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS")


def test_a_forked_child_proves_a_claim_and_wait_merges_it_back(
    server: ScriptedModelServer, project: Path, home: Path
) -> None:
    project.mkdir(parents=True, exist_ok=True)
    (project / "calc.py").write_text("x = 1\n")
    (project / "infomark.toml").write_text(OWN_RUNS_TOML)  # forks and merges, not grounding
    seen: list[str] = []

    def after_wait(req: Request) -> dict[str, Any]:
        seen.extend(tool_results(req))
        return reply("C1 is proven by the sub-agent's own run; done.")

    server.add(
        "boss",
        reply(LEDGER, call("spawn_agent", name="w", task="prove C1", fork=True)),
        reply("", call("wait", agents=["w"], seconds=60)),
        after_wait,
    )
    child_saw: list[str] = []

    def child_first(req: Request) -> dict[str, Any]:
        child_saw.append(req.text())
        return reply("", call("bash", command=ORACLE))

    server.add("boss.w", child_first, _stamp_last, reply("C1 holds: calc.py exists."))
    with Runner(_spec(server), home=home, session="boss", root=project) as runner:
        result = runner.start("check calc.py with a sub-agent")
        status = runner.gk.ledger().status("C1")
        audit = runner.gk.audit(verify=True)
    assert result.reason == "finished", result.finish
    assert status == "Exact"
    assert audit.verified is True
    assert any("w: merged into your session: C1 (Exact)" in t for t in seen), seen
    # the child saw the parent's claim in its context: it started from the fork
    assert "C1" in child_saw[0]
    child = events(home, "boss.w")
    assert child[0][1] == "forked_from" and child[0][2]["session"] == "boss"
    merged = [p for _, t, p in events(home, "boss") if t == "merged_from"]
    assert len(merged) == 1 and merged[0]["session"] == "boss.w"
    assert merged[0]["provenance"]["C1"]["evidence_session"] == "boss.w"
    spawned = [p for _, t, p in events(home, "boss") if t == "agent_spawned"]
    assert spawned[0]["fork"] is True


def test_a_child_without_fork_merges_nothing(
    server: ScriptedModelServer, project: Path, home: Path
) -> None:
    project.mkdir(parents=True, exist_ok=True)
    (project / "calc.py").write_text("x = 1\n")
    seen: list[str] = []

    def after_wait(req: Request) -> dict[str, Any]:
        seen.extend(tool_results(req))
        return reply("I could not ground C1; stopping.")

    server.add(
        "boss",
        reply(LEDGER, call("spawn_agent", name="w", task="prove C1")),
        reply("", call("wait", agents=["w"], seconds=60)),
        after_wait,
    )
    # The child has its own empty ledger: its stamp names a claim it does not have.
    server.add("boss.w", reply("", call("bash", command=ORACLE)), _stamp_last, reply("C1 holds."))
    with Runner(_spec(server), home=home, session="boss", root=project) as runner:
        runner.start("check calc.py with a sub-agent")
        status = runner.gk.ledger().status("C1")
    assert status != "Exact"
    assert not any("merged" in t for t in seen)
    assert "merged_from" not in [t for _, t, _ in events(home, "boss")]
    rejected = [p for _, t, p in events(home, "boss.w") if t == "stamp_rejected"]
    assert rejected and rejected[0]["reason"] == "unknown_claim"


def test_a_bad_fork_argument_spawns_nothing(
    server: ScriptedModelServer, project: Path, home: Path
) -> None:
    project.mkdir(parents=True, exist_ok=True)
    seen: list[str] = []

    def final(req: Request) -> dict[str, Any]:
        seen.extend(tool_results(req))
        return reply("stopping.")

    server.add("boss", reply("", call("spawn_agent", name="w", task="x", fork="yes")), final)
    with Runner(_spec(server), home=home, session="boss", root=project) as runner:
        runner.start("try")
    assert any("fork must be true or false" in t for t in seen), seen
    assert "agent_spawned" not in [t for _, t, _ in events(home, "boss")]
