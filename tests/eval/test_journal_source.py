"""The eval harness reads a runner's journal from the home's store, SQLite or PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from store_backends import Backend

from infomark.tools.eval.sources import load_sources


def test_a_runner_journal_is_a_source_on_either_store(tmp_path: Path, backend: Backend) -> None:
    from infomark.tools.runner.agentfile import AgentSpec, ModelSpec
    from infomark.tools.runner.demo import fix_script, prepare_project
    from infomark.tools.runner.loop import Runner
    from infomark.tools.runner.scripted import ScriptedModelServer

    project = tmp_path / "project"
    prepare_project(project)
    home = tmp_path / "home"
    with ScriptedModelServer({"demo": fix_script()}) as server:
        spec = AgentSpec(name="demo", model=ModelSpec(url=server.url, name="s", retries=0))
        with Runner(spec, home=home, session="demo", root=project) as runner:
            assert runner.start("Fix add() in calc.py").reason == "finished"
    assert (home / "ledger.db").exists() is (not backend.pg)  # the PG journal is elsewhere
    [source] = load_sources([home], session="demo")
    assert source.name == "demo"
    calls = [s for s in source.steps if s.kind == "call"]
    assert calls and all(s.expect in ("allow", "deny", "ask") for s in calls)
    assert any(s.recorded_ref for s in calls)  # the evidence refs the run was given
    assert source.steps[-1].kind == "finish" and source.steps[-1].expect == "allow"
