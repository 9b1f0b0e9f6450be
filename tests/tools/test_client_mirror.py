"""The clients mirror the facade method for method, and the route table drives them.

A facade method added without a route and a client counterpart fails here: either give
it a route (``infomark/tools/routes.py``) and a request builder
(``infomark/tools/client_core.py``), or list it in :data:`LOCAL_ONLY` with the reason.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from infomark.client import AsyncClient, Client
from infomark.gatekeeper import Gatekeeper
from infomark.kernel.errors import UserError
from infomark.kernel.session_id import check_session_id, is_session_id
from infomark.tools.client_core import Requests
from infomark.tools.routes import OPERATIONS, operation

#: Every public member of the facade, as of this test (a new one must be sorted out below).
FACADE = {
    "after_tool_text", "approve", "approve_baseline", "approve_grading", "audit", "authorize",
    "can_finish", "record_baseline", "baseline_pending",
    "check_status",
    "classify", "close", "compaction_context", "context_view", "events", "evidence", "fork",
    "gate", "home", "host_report", "ingest", "ledger", "merge_from", "move", "new_turn",
    "on_prompt", "open", "policy", "record", "record_attested", "record_attested_check",
    "record_sandbox", "session", "state",
    "state_document", "store",
    "store_cursor", "tool", "use_policies", "wrap",
}  # fmt: skip

#: Facade members a remote client cannot have, and why.
LOCAL_ONLY = {
    "baseline_pending": (
        "the HTTP service's pool reads it in-process to keep a call that copies the project "
        "off its event loop; a remote caller has nothing to schedule"
    ),
    "record_sandbox": (
        "the integration that starts the agent's commands records it in-process (the hook, "
        "the HTTP service's hook route, the MCP proxy); a remote caller vouching for its own "
        "commands' sandbox would be self-attestation"
    ),
    "open": "the constructor: Client(base_url, token, session, home) is its counterpart",
    "policy": "the in-process policy runtime object; its channels have routes",
    "use_policies": "installs Python policy objects into this process",
    "store": "the in-process ledger engine (journal, key, projection)",
    "state": "the in-process projection; state_document is its remote view",
    "store_cursor": "the Claude Code hook's transcript cursor; the hook route keeps it",
    "record_attested": "only infomark's own attested runner mints attested evidence; the "
    "agent asks for a run on the check route (POST /sessions/{s}/check)",
    "record_attested_check": "the same, for a verify profile's required check: the finish "
    "runs it (in the service's own process), no route records it",
    "check_status": "the verify profile's view of the required checks, for `infomark run`'s "
    "end report in-process; over HTTP a finish refusal names the checks and failing tests",
    "approve_grading": "an operator act on the project's test files: never on a route the "
    "agent's token can reach (infomark approve --grading FILE, in a terminal)",
    "approve_baseline": "an operator act on the project's baseline: never on a route the "
    "agent's token can reach (infomark approve --baseline, in a terminal)",
    "record_baseline": "the integration's session start records it in-process (the hook); a "
    "remote session records it at its first call",
}

#: Facade members the client implements itself (no request): attributes and plumbing.
CLIENT_SIDE = {"session", "home", "close", "wrap", "tool", "after_tool_text"}


def _public(cls: type) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_")}


def _params(fn: Any) -> list[tuple[str, Any, Any]]:
    sig = inspect.signature(fn)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values() if p.name != "self"]


def test_the_facade_list_is_complete() -> None:
    assert _public(Gatekeeper) - {"config"} == FACADE, (
        "the facade's public members changed: add the new one to FACADE and give it a route "
        "and a client method (or a reason in LOCAL_ONLY)"
    )
    assert set(LOCAL_ONLY) <= FACADE and CLIENT_SIDE <= FACADE


@pytest.mark.parametrize("name", sorted(FACADE - set(LOCAL_ONLY)))
def test_each_facade_method_has_a_client_counterpart(name: str) -> None:
    for cls in (Client, AsyncClient):
        made = cls("http://127.0.0.1:9", token="t")  # attributes (home, session) are set here
        assert hasattr(made, name), f"{cls.__name__} lacks {name}"
    facade = getattr(Gatekeeper, name)
    if isinstance(facade, property) or name in ("wrap", "tool"):
        return
    for cls in (Client, AsyncClient):
        mine, theirs = _params(getattr(cls, name)), _params(facade)
        # the facade's parameters, in order, with its defaults; extras only keyword-only
        # with a default (events(follow=False): a remote stream can wait for more)
        assert mine[: len(theirs)] == theirs, (cls.__name__, name)
        for _, kind, default in mine[len(theirs) :]:
            assert kind is inspect.Parameter.KEYWORD_ONLY and default is not inspect._empty
    async_method = getattr(AsyncClient, name)
    if name == "events":
        assert inspect.isasyncgenfunction(async_method)
    elif name != "after_tool_text":
        assert inspect.iscoroutinefunction(async_method), name


def test_every_remote_facade_method_has_a_route() -> None:
    served = {m for op in OPERATIONS for m in op.facade}
    remote = FACADE - set(LOCAL_ONLY) - (CLIENT_SIDE - {"after_tool_text"})
    assert remote <= served, f"facade methods without a route: {sorted(remote - served)}"
    assert served <= FACADE, f"routes name no facade method: {sorted(served - FACADE)}"


def test_every_request_builder_names_a_route() -> None:
    # Building each call looks its route up by name: an unknown name is a KeyError.
    names = {n for n in _public(Requests) if callable(getattr(Requests, n))}
    assert names <= _public(Client) and names <= _public(AsyncClient)
    with pytest.raises(KeyError, match="no route"):
        operation("no_such_route")
    assert {op.name for op in OPERATIONS} >= {"classify", "evidence", "move"}


@pytest.mark.parametrize(
    "bad", ["", "../etc", "a b", "a\x00b", "x" * 129, "abc\n", ".hidden", "-x", "é"]
)
def test_one_session_rule_on_every_entry_point(bad: str, tmp_path: Any) -> None:
    assert not is_session_id(bad)
    with pytest.raises(UserError, match="session id"):
        check_session_id(bad)
    with pytest.raises(UserError, match="session id"):
        Client("http://127.0.0.1:9", token="t", session=bad)
    with pytest.raises(UserError, match="session id"):
        AsyncClient("http://127.0.0.1:9", token="t", session=bad)
    with pytest.raises(UserError, match="session id"):
        Gatekeeper.open(tmp_path / "home", bad)
    assert not (tmp_path / "home").exists()  # refused before anything is created


@pytest.mark.parametrize("good", ["a", "agent-1", "ci:1234@runner", "0f1e2d3c-" + "a" * 27])
def test_good_session_ids_pass_everywhere(good: str) -> None:
    assert check_session_id(good) == good
    assert Client("http://127.0.0.1:9", token="t", session=good).session == good
