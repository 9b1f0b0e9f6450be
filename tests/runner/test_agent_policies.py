"""Seed 000: packs and triggers are configurable per agent (a director and its workers may
differ), over the project's configuration. The director's agent file tightens
repeated_failures to fire on the first failure; its worker, started by spawn_agent, keeps the
project's packs and stays silent on the same failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from infomark.gates.config import Config
from infomark.kernel.errors import ConfigError
from infomark.tools.runner import Runner, ScriptedModelServer, load_agent
from infomark.tools.runner.agentfile import parse_agent
from infomark.tools.runner.loop import agent_config
from infomark.tools.runner.scripted import call, reply, tool_results

DIRECTOR = """\
name = "director"
tools = ["bash", "spawn_agent", "wait"]

[agents]
worker = "worker.toml"

[policies]
adaptive_packs = ["repeated_failures", "evidence_before_done"]

[policies.pack_overrides.repeated_failures]
threshold = 1
"""

WORKER = """\
name = "worker"
tools = ["bash"]
"""

PACK = "[infomark:pack repeated_failures]"


def test_a_director_and_its_worker_run_with_different_packs(
    server: ScriptedModelServer, project: Path, home: Path
) -> None:
    (project / "infomark.toml").write_text('[tools]\nbash = "execute"\n', encoding="utf-8")
    (project / "director.toml").write_text(DIRECTOR, encoding="utf-8")
    (project / "worker.toml").write_text(WORKER, encoding="utf-8")
    seen: dict[str, list[str]] = {"dir": [], "dir.w": []}

    def keep(session: str, then: dict[str, object]):  # type: ignore[no-untyped-def]
        def step(req):  # type: ignore[no-untyped-def]
            seen[session].extend(tool_results(req))
            return then

        return step

    server.add(
        "dir",
        reply("", call("bash", command="exit 1")),
        keep("dir", reply("", call("spawn_agent", name="w", task="fail once", agent="worker"))),
        reply("", call("wait", agents=["w"], seconds=60)),
        reply("Nothing changed; I am stopping here."),
    )
    server.add(
        "dir.w",
        reply("", call("bash", command="exit 1")),
        keep("dir.w", reply("The command failed; stopping.")),
    )
    spec = load_agent(project / "director.toml")
    assert spec.policies["adaptive_packs"] == ["repeated_failures", "evidence_before_done"]
    server_url = server.url
    with Runner(
        spec.with_model(server_url, "scripted"), home=home, session="dir", root=project
    ) as runner:
        assert runner.gk.policy.names == ["repeated_failures", "evidence_before_done"]
        result = runner.start("fail, then delegate")
    assert result.reason == "finished"
    assert any(PACK in r for r in seen["dir"])  # threshold 1: the first failure
    assert seen["dir.w"] and not any(PACK in r for r in seen["dir.w"])  # project default: 3


def test_agent_policies_merge_over_the_project_and_bad_ones_name_the_file() -> None:
    project = Config.from_dict(
        {
            "policies": {
                "max_active_packs": 2,
                "pack_overrides": {"read_heavy_drift": {"threshold": 4}},
            }
        }
    )
    spec = parse_agent(
        {"policies": {"pack_overrides": {"repeated_failures": {"threshold": 1}}}},
        where="director.toml",
    )
    merged = agent_config(spec, project).policies
    assert merged["max_active_packs"] == 2
    assert merged["pack_overrides"] == {
        "read_heavy_drift": {"threshold": 4},
        "repeated_failures": {"threshold": 1},
    }
    with pytest.raises(ConfigError, match=r"director.toml: \[policies\]: .*max_active_packs"):
        parse_agent({"policies": {"max_active_packs": 9}}, where="director.toml")
    with pytest.raises(ConfigError, match=r"director.toml: \[policies\]: .*unknown key"):
        parse_agent({"policies": {"packs": []}}, where="director.toml")
