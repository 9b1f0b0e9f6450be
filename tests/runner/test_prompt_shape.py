"""What the runner sends a model: a system message that never changes within a session, the
context view as the request's last message (never kept in the history), and the claim-ledger
protocol where the profile reads a ledger.

A server's prompt cache reuses the longest common prefix of two requests; a context view in
the system message changed that prefix at every step, so a local model recomputed the whole
conversation (1,100-2,800 tokens, 20-65 s on two cores) at each turn.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from infomark.kernel.errors import ConfigError
from infomark.kernel.protocol import CONTEXT_HEADER, render_protocol
from infomark.tools.runner import Runner, ScriptedModelServer
from infomark.tools.runner.agentfile import parse_agent
from infomark.tools.runner.demo import fix_script, prepare_project
from infomark.tools.runner.scripted import reply
from tests.runner.conftest import scripted_spec

PROTOCOL_LINE = render_protocol().splitlines()[0]


def test_one_system_message_per_session_and_the_context_view_last(
    server: ScriptedModelServer, project: Path, home: Path
) -> None:
    prepare_project(project)
    server.add("s1", *fix_script())
    with Runner(scripted_spec(server), home=home, session="s1", root=project) as runner:
        assert runner.start("Fix add() in calc.py; check.py must pass.").reason == "finished"
    requests = [r for r in server.requests if r.session == "s1"]
    assert len(requests) >= 5
    systems = {str(r.messages[0]["content"]) for r in requests}
    assert len(systems) == 1, "the system message changed within the session"
    # every request's conversation is the previous one's, extended: a cacheable prefix
    for before, after in itertools.pairwise(requests):
        assert after.conversation[: len(before.conversation)] == before.conversation
    # the context view rides last, carries the ledger with ranks, and is never kept
    views = [r.messages[-1] for r in requests if r.messages[-1] is not r.last]
    assert views, "no request carried the context view"
    assert all(str(v["content"]).startswith(CONTEXT_HEADER) for v in views)
    assert any("C1" in str(v["content"]) and "Exact" in str(v["content"]) for v in views)
    for r in requests:
        kept = [m for m in r.conversation if str(m.get("content") or "").startswith(CONTEXT_HEADER)]
        assert kept == []


@pytest.mark.parametrize(
    ("profile", "protocol", "shown"),
    [
        ("ledger", None, True),
        ("strict", None, True),
        ("observe", None, True),
        ("verify", None, False),  # asks no protocol of the agent
        ("verify", True, True),
        ("ledger", False, False),
    ],
)
def test_the_protocol_is_shown_where_the_profile_reads_a_ledger(
    server: ScriptedModelServer,
    project: Path,
    home: Path,
    profile: str,
    protocol: bool | None,
    shown: bool,
) -> None:
    server.add("p", reply("Nothing to do here."))
    spec = scripted_spec(server, protocol=protocol)
    with Runner(spec, home=home, session="p", root=project, profile=profile) as runner:
        runner.start("Say hello.")
    system = str(server.requests[0].messages[0]["content"])
    assert (PROTOCOL_LINE in system) is shown
    assert ("claim_ledger" in system) is shown
    assert system.rstrip().endswith("infomark session: p")


def test_the_agent_file_protocol_key() -> None:
    assert parse_agent({"protocol": False}, where="a.toml").protocol is False
    assert parse_agent({}, where="a.toml").protocol is None
    with pytest.raises(ConfigError, match=r"a\.toml.*protocol.*true or false"):
        parse_agent({"protocol": "no"}, where="a.toml")
