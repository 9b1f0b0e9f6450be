"""The MCP gatekeeper proxy, end to end: real proxy and downstream processes, a real client."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from helpers import grounded
from hypothesis import example, given
from hypothesis import strategies as st
from mcp import ClientSession, StdioServerParameters, stdio_client

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall
from infomark.ledger.evidence import record_command
from infomark.ledger.semantics import shell_text
from infomark.tools.mcp_proxy import main, outcome_of
from infomark.tools.mcp_tools import call_own_tool

DOWNSTREAM = Path(__file__).with_name("mcp_downstream_server.py")
SESSION = "t"
OWN = {
    "infomark_ledger", "infomark_stamp", "infomark_divergence", "infomark_status",
    "infomark_check", "infomark_finish",
}  # fmt: skip
DOWNSTREAM_TOOLS = {
    "read_note", "write_note", "run_check", "wipe", "explode", "get_env", "shout", "grow",
    "log_level",
}  # fmt: skip
TAG = re.compile(
    r"^\[infomark evidence_ref=(?P<ref>ev_[0-9a-f]{24}) tool=(?P<tool>\S+) "
    r"outcome=(?P<outcome>[A-Z]+) eligible=(?P<eligible>\S+)\]$"
)
CHECK_ARGS = {"name": "status.txt", "expect": "ready"}
# run_check is an MCP tool, not a shell: its run stands for "<tool> <canonical JSON input>".
CHECK_ORACLE = 'run_check {"expect":"ready","name":"status.txt"}'
# The project declares the downstream checker: it executes, and its runs are evidence.
CONFIG = '[tools]\nrun_check = "execute"\n\n[evidence_classes]\nrun_check = "execution"\n'

Scenario = Callable[[ClientSession], Awaitable[None]]


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    d = tmp_path / "notes"
    d.mkdir()
    (d / "status.txt").write_text("ready", encoding="utf-8")
    return d


@pytest.fixture
def configured(project: Path) -> Path:
    (project / "infomark.toml").write_text(CONFIG, encoding="utf-8")
    return project


def _downstream_params(notes: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(DOWNSTREAM), str(notes), *extra])


def _proxy_params(
    project: Path,
    home: Path,
    notes: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    sandbox: bool = False,
) -> StdioServerParameters:
    down = _downstream_params(notes, *extra)
    args = ["-m", "infomark.tools.mcp_proxy", "--home", str(home), "--session", SESSION]
    args += ["--sandbox", "--"] if sandbox else ["--"]
    return StdioServerParameters(
        command=sys.executable, args=[*args, down.command, *down.args], cwd=project, env=env
    )


@asynccontextmanager
async def _client(
    params: StdioServerParameters, errlog: Path, **callbacks: Any
) -> AsyncIterator[ClientSession]:
    with errlog.open("a", encoding="utf-8") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write, **callbacks) as session,
        ):
            with anyio.fail_after(60):
                await session.initialize()
            yield session


def _run(params: StdioServerParameters, errlog: Path, scenario: Scenario, **callbacks: Any) -> None:
    async def go() -> None:
        async with _client(params, errlog, **callbacks) as session:
            with anyio.fail_after(120):
                await scenario(session)

    anyio.run(go)


def _ground(project: Path, home: Path) -> None:
    """A session whose premise is grounded: mutations may run (issue 12: none without)."""
    with Gatekeeper.open(home, SESSION, root=project) as gk:
        grounded(gk)


def _texts(result: types.CallToolResult) -> list[str]:
    return [b.text for b in result.content if isinstance(b, types.TextContent)]


def _tag(result: types.CallToolResult) -> re.Match[str]:
    match = TAG.match(_texts(result)[-1])
    assert match is not None, _texts(result)
    return match


def _tool_dicts(result: types.ListToolsResult) -> dict[str, dict[str, Any]]:
    return {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in result.tools}


# --------------------------------------------------------------------------- listing


def test_listing_is_the_downstream_listing_plus_the_ledger_tools(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    direct: dict[str, dict[str, Any]] = {}
    proxied: dict[str, dict[str, Any]] = {}

    async def list_direct(s: ClientSession) -> None:
        direct.update(_tool_dicts(await s.list_tools()))

    async def list_proxied(s: ClientSession) -> None:
        proxied.update(_tool_dicts(await s.list_tools()))

    _run(_downstream_params(notes), tmp_path / "err", list_direct)
    _run(_proxy_params(project, home, notes), tmp_path / "err", list_proxied)

    assert set(direct) == DOWNSTREAM_TOOLS
    assert set(proxied) == set(direct) | OWN
    for name, tool in direct.items():
        assert proxied[name] == tool  # names, schemas, annotations unchanged
    assert proxied["read_note"]["annotations"] == {"readOnlyHint": True}
    assert proxied["wipe"]["annotations"] == {"destructiveHint": True}
    assert proxied["infomark_status"]["annotations"]["readOnlyHint"] is True
    for name in OWN - {"infomark_status"}:
        assert proxied[name]["annotations"]["readOnlyHint"] is False


def test_a_colliding_downstream_tool_is_shadowed_with_a_warning(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    async def scenario(s: ClientSession) -> None:
        names = [t.name for t in (await s.list_tools()).tools]
        assert names.count("infomark_status") == 1
        result = await s.call_tool("infomark_status", {})
        assert not result.is_error
        assert result.structured_content["ledger"]["session"] == SESSION

    _run(_proxy_params(project, home, notes, "--collide"), tmp_path / "err", scenario)
    err = (tmp_path / "err").read_text(encoding="utf-8")
    assert "'infomark_status' has the name of an infomark tool" in err


# --------------------------------------------------------------------------- gating


def test_a_read_only_call_is_forwarded_and_tagged(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    (notes / "hello.txt").write_text("hello, world", encoding="utf-8")

    async def scenario(s: ClientSession) -> None:
        await s.list_tools()
        result = await s.call_tool("read_note", {"name": "hello.txt"})
        assert not result.is_error
        assert _texts(result)[0] == "hello, world"
        assert result.structured_content == {"result": "hello, world"}
        tag = _tag(result)
        assert (tag["tool"], tag["outcome"]) == ("read_note", "OBSERVED")

    _run(_proxy_params(project, home, notes), tmp_path / "err", scenario)


def test_the_declared_oracle_is_the_recorded_command() -> None:
    assert record_command(ToolCall(tool="run_check", input=CHECK_ARGS)) == CHECK_ORACLE


def test_a_write_is_denied_until_its_premise_is_grounded_by_a_stamped_run(
    configured: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    from infomark.tools import sandbox

    if not sandbox.probe().available:
        pytest.skip(f"SKIPPED LOUDLY: no sandbox here ({sandbox.probe().detail})")

    async def scenario(s: ClientSession) -> None:
        declared = await s.call_tool(
            "infomark_ledger",
            {
                "claims": [
                    {
                        "id": "C1",
                        "text": "status.txt says ready",
                        "status": "Hypothetical",
                        "falsifier": "run_check exits 1",
                        "oracle": CHECK_ORACLE,
                    }
                ],
                "premises_for_plan": ["C1"],
            },
        )
        assert not declared.is_error, _texts(declared)
        assert declared.structured_content["ledger_updated"] is True

        denied = await s.call_tool("write_note", {"name": "out.txt", "text": "x"})
        assert denied.is_error
        assert "denied" in _texts(denied)[0]
        assert "C1" in _texts(denied)[0]
        assert not (notes / "out.txt").exists()  # never reached the downstream server

        # A run with other arguments is not the oracle: stamping it is rejected.
        other = await s.call_tool("run_check", {"name": "status.txt", "expect": "nope"})
        assert _tag(other)["outcome"] == "FAIL"
        mismatch = await s.call_tool(
            "infomark_stamp", {"claim_id": "C1", "evidence_ref": _tag(other)["ref"]}
        )
        assert mismatch.is_error
        assert "oracle" in _texts(mismatch)[0].lower()

        run = await s.call_tool("run_check", CHECK_ARGS)
        assert not run.is_error
        assert run.structured_content == {
            "exit_code": 0,
            "detail": "status.txt holds the expected text",
        }
        tag = _tag(run)
        # exactly what it can back: an execution PASS backs both kinds of stamp
        assert (tag["outcome"], tag["eligible"]) == ("PASS", "oracle_stamp,inference_stamp")

        stamped = await s.call_tool(
            "infomark_stamp", {"claim_id": "C1", "evidence_ref": tag["ref"], "result": "PASS"}
        )
        assert not stamped.is_error, _texts(stamped)
        assert stamped.structured_content["stamps_applied"]

        status = await s.call_tool("infomark_status", {})
        assert status.structured_content["ledger"]["grounded"] is True

        allowed = await s.call_tool("write_note", {"name": "out.txt", "text": "x"})
        assert not allowed.is_error, _texts(allowed)
        assert _tag(allowed)["tool"] == "write_note"
        assert (notes / "out.txt").read_text(encoding="utf-8") == "x"

    # the downstream's runs ground claims only when it runs in the sandbox (issue 27)
    _run(_proxy_params(configured, home, notes, sandbox=True), tmp_path / "err", scenario)


def test_a_destructive_tool_is_held_for_approval(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    async def scenario(s: ClientSession) -> None:
        await s.list_tools()
        held = await s.call_tool("wipe", {})
        assert held.is_error
        assert "approval" in _texts(held)[0]
        assert not any(TAG.match(t) for t in _texts(held))  # nothing ran, nothing recorded

    _ground(project, home)
    _run(_proxy_params(project, home, notes), tmp_path / "err", scenario)
    assert (notes / "status.txt").exists()


def test_the_journal_holds_the_decisions_and_the_evidence(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    refs: list[str] = []

    async def scenario(s: ClientSession) -> None:
        await s.list_tools()
        refs.append(_tag(await s.call_tool("read_note", {"name": "status.txt"}))["ref"])
        refs.append(_tag(await s.call_tool("write_note", {"name": "a.txt", "text": "a"}))["ref"])
        await s.call_tool("wipe", {})

    _ground(project, home)
    _run(_proxy_params(project, home, notes), tmp_path / "err", scenario)

    with Gatekeeper.open(home, SESSION, root=project) as gk:
        events = list(gk.events())
        decisions = [
            (e.payload["tool"], e.payload["decision"], e.payload["tool_class"])
            for e in events
            if e.type == "decision"
        ]
        assert decisions == [
            ("bash", "allow", "execute"),  # the run that grounded the premise (_ground)
            ("read_note", "allow", "read"),
            ("write_note", "allow", "modify"),
            ("wipe", "ask", "destructive"),
        ]
        recorded = [e.payload["ref"] for e in events if e.type == "evidence_recorded"]
        assert recorded[1:] == refs  # [0]: the run that grounded the premise
        ev = gk.evidence(refs[1])
        assert ev is not None
        assert ev.record["input"] == {"name": "a.txt", "text": "a"}
        assert ev.tool_call_id is not None
        assert gk.audit(verify=True).verified is True


def test_a_downstream_tool_that_raises_is_recorded_as_error_and_serving_goes_on(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    refs: list[str] = []

    async def scenario(s: ClientSession) -> None:
        await s.list_tools()
        failed = await s.call_tool("explode", {"message": "boom"})
        assert failed.is_error
        tag = _tag(failed)
        assert tag["outcome"] == "ERROR"
        refs.append(tag["ref"])
        missing = await s.call_tool("no_such_tool", {})
        assert missing.is_error
        assert _tag(missing)["outcome"] == "ERROR"
        after = await s.call_tool("read_note", {"name": "status.txt"})
        assert not after.is_error
        assert _texts(after)[0] == "ready"

    _ground(project, home)
    _run(_proxy_params(project, home, notes), tmp_path / "err", scenario)

    with Gatekeeper.open(home, SESSION, root=project) as gk:
        ev = gk.evidence(refs[0])
        assert ev is not None
        assert ev.outcome.value == "ERROR"
        assert ev.record["error"]


def test_bad_calls_to_the_ledger_tools_are_error_results(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    async def scenario(s: ClientSession) -> None:
        bad: list[tuple[str, dict[str, Any]]] = [
            ("infomark_stamp", {}),
            ("infomark_stamp", {"claim_id": "C1", "evidence_ref": "ev_" + "0" * 24}),
            ("infomark_stamp", {"claim_id": "C1", "evidence_ref": "x", "kind": "guess"}),
            (
                "infomark_stamp",
                {"claim_id": "C1", "evidence_ref": "x", "kind": "inference", "result": "PASS"},
            ),
            ("infomark_ledger", {}),
            ("infomark_ledger", {"block": "claim_ledger:\n  claims: []\n", "claims": []}),
            ("infomark_ledger", {"claims": [{"id": "bad id"}]}),
            ("infomark_ledger", {"claims": [{"id": "C1", "colour": "red"}]}),
            ("infomark_ledger", {"block": "no ledger here"}),
            ("infomark_divergence", {"claim_id": "C9", "evidence_ref": "ev_" + "1" * 24}),
            ("infomark_status", {"extra": 1}),
        ]
        for name, args in bad:
            result = await s.call_tool(name, args)
            assert result.is_error, (name, args, _texts(result))
            assert _texts(result)[0].strip()
        ok = await s.call_tool("infomark_status", {})
        assert not ok.is_error

    _run(_proxy_params(project, home, notes), tmp_path / "err", scenario)


def test_a_ledger_block_given_as_text_is_ingested(
    project: Path, home: Path, notes: Path, tmp_path: Path
) -> None:
    block = (
        "claim_ledger:\n"
        "  claims:\n"
        "    - id: C1\n"
        '      text: "notes exist"\n'
        "      status: Hypothetical\n"
        '      falsifier: "the notes dir is empty"\n'
        "  premises_for_plan: [C1]\n"
        "  open_questions: []\n"
    )

    async def scenario(s: ClientSession) -> None:
        result = await s.call_tool("infomark_ledger", {"block": block})
        assert not result.is_error, _texts(result)
        assert json.loads(_texts(result)[0]) == result.structured_content
        status = await s.call_tool("infomark_status", {})
        ledger = status.structured_content["ledger"]
        assert ledger["premises"] == ["C1"]
        assert ledger["ungrounded"] == [{"id": "C1", "status": "Hypothetical"}]

    _run(_proxy_params(project, home, notes), tmp_path / "err", scenario)


# --------------------------------------------------------------------------- in process

_TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=40)


@given(text=_TEXT, falsifier=_TEXT, oracle=_TEXT)
@example(text="t", falsifier="0", oracle="\xa0")  # str.strip() blank, not a shell blank
@example(text="t", falsifier="0", oracle="a\n  b")  # two commands stay two
def test_structured_claims_survive_rendering_exactly(
    gk: Gatekeeper, text: str, falsifier: str, oracle: str
) -> None:
    """Whatever the values hold (quotes, colons, newlines, block keywords), they stay data."""
    result = call_own_tool(
        gk,
        "infomark_ledger",
        {
            "claims": [
                {"id": "C1", "text": text, "falsifier": falsifier, "oracle": oracle},
                {"id": "C2", "text": "second", "falsifier": "f"},
            ],
            "premises_for_plan": ["C2"],
            "open_questions": ["C1"],
        },
    )
    assert not result.is_error, result.content
    view = gk.ledger()
    claim = view.claim("C1")
    assert claim is not None
    assert claim["text"] == text.strip()  # the ledger strips claim text
    assert claim["falsifier"] == falsifier
    # oracles are normalised as the shell reads them (a newline stays a command separator);
    # one that is only (Unicode) whitespace is no oracle at all
    assert claim["oracle"] == (shell_text(oracle) if oracle.strip() else None)
    assert [c["id"] for c in view.claims] == ["C1", "C2"]
    assert view.premises == ("C2",)
    assert view.open_questions == ("C1",)


@given(
    code=st.integers(min_value=-(2**31), max_value=2**31),
    key=st.sampled_from(["exit_code", "exitCode"]),
)
def test_an_integer_exit_code_in_structured_content_is_the_outcome(code: int, key: str) -> None:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text="ran")], structured_content={key: code}
    )
    assert outcome_of(result).exit_code == code


@pytest.mark.parametrize(
    ("structured", "is_error", "expected"),
    [
        (None, False, (None, None)),
        ({"exit_code": True}, False, (None, None)),
        ({"exit_code": "0"}, False, (None, None)),
        ([0], False, (None, None)),
        ({"exit_code": 0}, True, (None, "failed")),
        (None, True, (None, "failed")),
    ],
)
def test_outcome_without_an_integer_exit_code(
    structured: object, is_error: bool, expected: tuple[int | None, str | None]
) -> None:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text="failed")],
        structured_content=structured,
        is_error=is_error,
    )
    outcome = outcome_of(result)
    assert (outcome.exit_code, outcome.error) == expected
    assert outcome.is_error is is_error


def test_main_without_a_server_command_is_a_usage_error(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--home", str(home), "--"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no downstream server command" in captured.err


def test_a_server_command_that_cannot_start_fails_cleanly(
    project: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(project / "no-such-server")
    assert main(["--home", str(home), "--", missing]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no-such-server" in captured.err


# --------------------------------------------------------------------------- sandbox (issue 27)


@pytest.mark.parametrize("sandboxed", [False, True])
def test_a_sandboxed_downstream_server_never_sees_the_home(
    project: Path, home: Path, tmp_path: Path, sandboxed: bool
) -> None:
    """A downstream server pointed at the ledger home (a hostile one) reads the key, unless the
    proxy started it with --sandbox: then the home is an empty directory to it."""
    from infomark.tools import sandbox

    if sandboxed and not sandbox.probe().available:
        pytest.skip(f"SKIPPED LOUDLY: no sandbox here ({sandbox.probe().detail})")
    Gatekeeper.open(home, SESSION, root=project).close()
    (home / "secret.txt").write_text("SECRET-IN-THE-HOME")  # text: read_note decodes UTF-8
    down = _downstream_params(home)
    args = ["-m", "infomark.tools.mcp_proxy", "--home", str(home), "--session", SESSION]
    args += ["--sandbox"] if sandboxed else []
    params = StdioServerParameters(
        command=sys.executable, args=[*args, "--", down.command, *down.args], cwd=project
    )
    seen: list[str] = []

    async def scenario(session: ClientSession) -> None:
        result = await session.call_tool("read_note", {"name": "secret.txt"})
        seen.extend(_texts(result))

    _run(params, tmp_path / "err.log", scenario)
    text = "".join(seen)
    with Gatekeeper.open(home, SESSION, root=project) as gk:
        recorded = gk.state.agent_sandbox
    assert recorded["sandboxed"] is sandboxed and recorded["host"] == "mcp-proxy"
    if sandboxed:
        assert "SECRET" not in text and "outcome=ERROR" in text, seen
        assert "NOT sandboxed" not in text
    else:
        assert "SECRET-IN-THE-HOME" in text  # the control: the hostile server reads the home
        # ... and the first result says so, with the fix
        assert "commands are NOT sandboxed" in text and "mcp-proxy --sandbox" in text
