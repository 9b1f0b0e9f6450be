"""The MCP proxy beyond tools, end to end: real proxy and downstream processes, a real client.

Resources, templates, prompts, completions and logging are forwarded unchanged; a resource
read is gated and recorded as a read; downstream notifications reach the client; the
downstream server never sees an ``INFOMARK_*`` variable; ``infomark_finish`` is the finish
gate; evidence tags say exactly which stamps they can back.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from helpers import GROUND_ORACLE, run
from helpers import stamp as stamp_text
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from test_mcp_proxy import SESSION, TAG, _downstream_params, _proxy_params, _run, _tag, _texts

from infomark.gatekeeper import Gatekeeper
from infomark.kernel.environ import child_env
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.tools.mcp_forward import resource_call
from infomark.tools.mcp_tools import call_own_tool, evidence_tag, stamps_backed

PROMPT = types.PromptReference(type="ref/prompt", name="review")
TEMPLATE = types.ResourceTemplateReference(type="ref/resource", uri="notes://note/{name}")


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    d = tmp_path / "notes"
    d.mkdir()
    (d / "status.txt").write_text("ready", encoding="utf-8")
    (d / "summary.md").write_text("all good", encoding="utf-8")
    return d


def _dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, exclude_none=True)


# --------------------------------------------------------------------------- passed through


def test_resources_templates_prompts_and_completions_match_the_downstream(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    seen: dict[str, dict[str, Any]] = {"direct": {}, "proxied": {}}

    def collect(into: dict[str, Any]) -> Any:
        async def scenario(s: ClientSession) -> None:
            caps = s.server_capabilities
            assert caps is not None
            into["caps"] = (caps.resources is not None, caps.prompts is not None,
                            caps.completions is not None, caps.logging is not None)  # fmt: skip
            into["resources"] = _dump(await s.list_resources())
            into["templates"] = _dump(await s.list_resource_templates())
            into["prompts"] = _dump(await s.list_prompts())
            into["prompt"] = _dump(await s.get_prompt("review", {"name": "status.txt"}))
            into["complete_prompt"] = _dump(
                await s.complete(PROMPT, {"name": "name", "value": "s"})
            )
            into["complete_template"] = _dump(
                await s.complete(TEMPLATE, {"name": "name", "value": "su"})
            )
            into["read"] = await s.read_resource("notes://note/summary.md")

        return scenario

    _run(_downstream_params(notes), tmp_path / "err", collect(seen["direct"]))
    _run(_proxy_params(project, home, notes), tmp_path / "err", collect(seen["proxied"]))

    direct, proxied = seen["direct"], seen["proxied"]
    assert proxied["caps"] == direct["caps"] == (True, True, True, True)
    for key in ("resources", "templates", "prompts", "prompt", "complete_prompt",
                "complete_template"):  # fmt: skip
        assert proxied[key] == direct[key], key
    assert direct["complete_template"]["completion"]["values"] == ["summary.md"]
    # The read: the downstream contents unchanged, then the evidence tag as one more entry.
    read_direct, read_proxied = direct["read"], proxied["read"]
    assert read_proxied.contents[:-1] == read_direct.contents
    tag_entry = read_proxied.contents[-1]
    assert isinstance(tag_entry, types.TextResourceContents)
    match = TAG.match(tag_entry.text)
    assert match is not None, tag_entry.text
    assert tag_entry.uri == f"infomark:evidence/{match['ref']}"
    assert (match["tool"], match["outcome"], match["eligible"]) == (
        "read", "OBSERVED", "inference_stamp",
    )  # fmt: skip


def test_a_resource_read_is_a_gated_read_whose_evidence_backs_an_inference(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    refs: list[str] = []

    async def scenario(s: ClientSession) -> None:
        declared = await s.call_tool(
            "infomark_ledger",
            {"claims": [{"id": "C1", "text": "status.txt says ready", "status": "Guess",
                         "falsifier": "status.txt says something else",
                         "observe": "notes://status"}],
             "premises_for_plan": ["C1"]},
        )  # fmt: skip
        assert not declared.is_error, _texts(declared)
        read = await s.read_resource("notes://status")
        tag = read.contents[-1]
        assert isinstance(tag, types.TextResourceContents)
        match = TAG.match(tag.text)
        assert match is not None
        refs.append(match["ref"])
        stamped = await s.call_tool(
            "infomark_stamp", {"claim_id": "C1", "evidence_ref": match["ref"], "kind": "inference"}
        )
        assert not stamped.is_error, _texts(stamped)
        status = await s.call_tool("infomark_status", {})
        assert status.structured_content["ledger"]["claims"][0]["status"] == "Inferred"

    _run(_proxy_params(project, home, notes), tmp_path / "err", scenario)
    with Gatekeeper.open(home, SESSION, root=project) as gk:
        decisions = [e.payload for e in gk.events() if e.type == "decision"]
        assert [(d["tool"], d["tool_class"], d["decision"]) for d in decisions] == [
            ("read", "read", "allow")
        ]
        ev = gk.evidence(refs[0])
        assert ev is not None and ev.evidence_class.value == "observation"
        assert ev.record["input"] == {"uri": "notes://status"}
        assert ev.tool_call_id is not None


def test_reading_the_ledger_home_through_a_resource_is_refused(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    """The attack: a downstream server that serves files, asked for the home's key."""
    Gatekeeper.open(home, SESSION, root=project).close()  # the home and its key exist
    key = home / "key"
    assert key.exists()

    async def scenario(s: ClientSession) -> None:
        listed = [str(r.uri) for r in (await s.list_resources()).resources]
        assert f"file://{key}" in listed
        with pytest.raises(MCPError) as info:
            await s.read_resource(f"file://{key}")
        assert "protected_home" in info.value.error.message
        with pytest.raises(MCPError):  # a spelling with a dot segment resolves the same
            await s.read_resource(f"file://{key.parent}/./{key.name}")

    _run(_proxy_params(project, home, notes, "--secret", str(key)), tmp_path / "err", scenario)
    with Gatekeeper.open(home, SESSION, root=project) as gk:
        events = list(gk.events())
        assert not [e for e in events if e.type == "evidence_recorded"]  # never read
        assert {e.payload["code"] for e in events if e.type == "decision"} == {"protected_home"}


@pytest.mark.parametrize(
    ("uri", "path"),
    [("notes://status", None), ("file:///etc/passwd", "/etc/passwd"),
     ("FILE:///a%20b/c", "/a b/c"), ("file://host", "/")],
)  # fmt: skip
def test_a_resource_call_names_the_local_path_of_a_file_uri(uri: str, path: str | None) -> None:
    call = resource_call(uri, "mcp-1")
    assert call.tool == "read" and call.input["uri"] == uri and call.tool_call_id == "mcp-1"
    assert call.input.get("path") == path


# --------------------------------------------------------------------------- notifications


def test_logging_and_list_changed_reach_the_client(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    logs: list[tuple[str, Any, str | None]] = []
    notices: list[str] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data, params.logger))

    async def on_message(message: Any) -> None:
        if not isinstance(message, Exception):
            notices.append(type(message).__name__)

    async def scenario(s: ClientSession) -> None:
        assert "grown" not in {t.name for t in (await s.list_tools()).tools}
        with pytest.warns(Warning):  # the SDK marks logging as deprecated; it is still served
            await s.set_logging_level("debug")
        assert _texts(await s.call_tool("log_level", {}))[0] == "debug"
        shouted = await s.call_tool("shout", {"text": "disk almost full"})
        assert _texts(shouted)[0] == "disk almost full"
        grew = await s.call_tool("grow", {})
        assert not grew.is_error
        tools = {t.name for t in (await s.list_tools()).tools}
        assert "grown" in tools
        grown = await s.call_tool("grown", {})
        assert _texts(grown)[0] == "grown" and _tag(grown)["tool"] == "grown"

    _run(
        _proxy_params(project, home, notes),
        tmp_path / "err",
        scenario,
        logging_callback=on_log,
        message_handler=on_message,
    )
    assert ("warning", "disk almost full", "notes") in logs
    assert "ToolListChangedNotification" in notices


# --------------------------------------------------------------------------- environment


def test_the_downstream_server_never_sees_infomark_variables(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    """The attack of issue 10: the downstream server's get-env tool returned INFOMARK_KEY."""
    key_hex = secrets.token_hex(32)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("INFOMARK_")},
        "INFOMARK_KEY": key_hex,
        "INFOMARK_TOKEN": "tok-secret",
        "infomark_bypass_grounding": "1",
        "NOTES_MARKER": "visible",
    }
    seen: dict[str, str] = {}

    async def scenario(s: ClientSession) -> None:
        await s.list_tools()
        for name in ("INFOMARK_KEY", "INFOMARK_TOKEN", "infomark_bypass_grounding", "NOTES_MARKER"):
            result = await s.call_tool("get_env", {"name": name})
            assert not result.is_error, _texts(result)
            seen[name] = _texts(result)[0]

    _run(_proxy_params(project, home, notes, env=env), tmp_path / "err", scenario)
    assert seen["NOTES_MARKER"] == "visible"  # the tool works, and passes ordinary variables
    assert seen["INFOMARK_KEY"] == "" and seen["INFOMARK_TOKEN"] == ""
    assert seen["infomark_bypass_grounding"] == ""


def test_child_env_drops_every_infomark_variable() -> None:
    env = {"INFOMARK_KEY": "k", "Infomark_Home": "h", "PATH": "/bin", "MY_INFOMARK_X": "keep"}
    assert child_env(env) == {"PATH": "/bin", "MY_INFOMARK_X": "keep"}
    assert "INFOMARK_KEY" not in child_env({**os.environ, "INFOMARK_KEY": "k"})


# --------------------------------------------------------------------------- finish, tags


def test_infomark_finish_is_the_finish_gate(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    async def scenario(s: ClientSession) -> None:
        listed = {t.name: t for t in (await s.list_tools()).tools}
        assert "infomark_finish" in listed
        await s.call_tool(
            "infomark_ledger",
            {"claims": [{"id": "C1", "text": "the check passes", "status": "Guess",
                         "falsifier": "it fails", "oracle": "pytest -q"}],
             "premises_for_plan": ["C1"]},
        )  # fmt: skip
        refused = await s.call_tool("infomark_finish", {"final_text": "Done, it works."})
        assert refused.is_error
        assert _texts(refused)[0].startswith("not finished (")
        assert refused.structured_content["allow"] is False
        assert "C1" in _texts(refused)[0]
        bad = await s.call_tool("infomark_finish", {"final_text": 3})
        assert bad.is_error and "final_text" in _texts(bad)[0]

    _run(_proxy_params(project, home, notes), tmp_path / "err", scenario)
    with Gatekeeper.open(home, SESSION, root=project) as gk:
        assert [e.payload["allow"] for e in gk.events() if e.type == "finish_decision"] == [False]


def test_infomark_finish_allows_a_session_with_nothing_to_prove(gk: Gatekeeper) -> None:
    result = call_own_tool(gk, "infomark_finish", {})
    assert not result.is_error and result.structured_content["allow"] is True


_EVIDENCE = {  # a case → (the evidence class of its call, the call)
    "execution": ("execution", ToolCall("bash", {"command": "pytest -q"})),
    "observation": ("observation", ToolCall("read", {"file_path": "a.py"})),
    "web": ("web", ToolCall("webfetch", {"url": "https://example.org/spec"})),
    "web-search": ("web", ToolCall("websearch", {"query": "rfc 9110"})),
    # a run, but of a web page: only a source_stamp can bind it
    "shell-fetch": ("execution", ToolCall("bash", {"command": "curl -s https://example.org/x"})),
    "ineligible": ("ineligible", ToolCall("frobnicate", {"x": 1})),
}
_OUTCOMES = {
    "PASS": ToolOutcome("ok", exit_code=0),
    "FAIL": ToolOutcome("1 failed", exit_code=1),
    "OBSERVED": ToolOutcome("text"),
    "ERROR": ToolOutcome("boom", error="boom", is_error=True),
}
_STAMPS = {  # what the tag can say → the stamp text that tries it
    "oracle_stamp": "oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS",
    "oracle_stamp(result=FAIL|EXPECTED_FAIL)": (
        "oracle_stamp: claim_id=C1 evidence_ref={ref} result=FAIL"
    ),
    "inference_stamp": "inference_stamp: claim_id=C1 evidence_ref={ref}",
    "source_stamp": "source_stamp: claim_id=C1 evidence_ref={ref} authority=secondary",
}


@pytest.mark.parametrize("case", sorted(_EVIDENCE))
@pytest.mark.parametrize("outcome", sorted(_OUTCOMES))
def test_the_tag_says_exactly_what_the_ledger_accepts(
    home: Path, project: Path, case: str, outcome: str
) -> None:
    """Each stamp the tag lists is accepted by the ledger; each one it leaves out is refused.
    The tag is the one every surface prints (the hook, the CLI, wrap(), HTTP, this proxy)."""
    from infomark.ledger.evidence import record_command

    eclass, call = _EVIDENCE[case]
    ledger = (  # G1, the plan's premise, is grounded first: an unknown tool counts as modify
        'claim_ledger:\n  claims:\n    - id: C1\n      text: "x"\n      status: Guess\n'
        f"      falsifier: \"y\"\n      oracle: '{record_command(call)}'\n"
        '    - id: G1\n      text: "g"\n      status: Hypothetical\n      falsifier: "h"\n'
        f'      oracle: "{GROUND_ORACLE}"\n'
        "  premises_for_plan: [G1]\n"
    )
    for n, (named, stamp) in enumerate(_STAMPS.items()):
        with Gatekeeper.open(home, f"{case}-{outcome}-{n}", root=project) as gk:
            report = gk.ingest(ledger)
            assert report.ledger_updated, report.diagnostics
            assert gk.ingest(stamp_text("G1", run(gk, GROUND_ORACLE).ref)).stamps_applied
            decided = gk.authorize(call)  # the record pairs with its authorization
            assert decided.allowed, decided.reason
            ev = gk.record(call, _OUTCOMES[outcome], call_id=decided.call_id)
            assert (ev.evidence_class.value, ev.outcome.value) == (eclass, outcome)
            accepted = bool(gk.ingest(stamp.format(ref=ev.ref)).stamps_applied)
            backed = stamps_backed(eclass, outcome, ev.record)
            assert accepted == (named in backed), (case, outcome, named, backed)
            assert evidence_tag(ev) == ev.tag
            assert ev.tag.endswith(f"eligible={','.join(backed) or 'none'}]")
