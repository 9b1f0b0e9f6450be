"""Issue 34 §2: a claim_ledger the agent meant to write that cannot be read reaches it with the
parser's exact diagnostic (line, column, what was expected, the line with a caret under the
column) through every integration, not only the Claude Code hook (tests/tools/
test_anyagent_table.py): the Python API and its adapters, the MCP proxy (a real stdio server),
the HTTP service (real uvicorn on 127.0.0.1, httpx) and the runner (`infomark run` against a
scripted model). The malformed ledger: an unterminated quote at line 4, column 13.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
from conftest import start_service, stop_service
from hook_session import EXE
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolOutcome
from infomark.tools.adapters import OpenAIChat
from infomark.tools.runner.scripted import ScriptedModelServer, call, reply, tool_results
from infomark.wrapping import ingest_note

BAD = (
    "claim_ledger:\n  claims:\n    - id: C1\n"
    '      text: "the tests pass\n      status: Guess\n  premises_for_plan: [C1]\n'
)
WHERE = "line 4, column 13"
CARET = '      text: "the tests pass\n' + " " * 16 + "^"  # under the quote, column 13
DOWNSTREAM = Path(__file__).with_name("mcp_downstream_server.py")


def _shows_the_diagnostic(text: str) -> None:
    assert WHERE in text, text
    assert 'a closing "' in text, text  # what was expected
    assert CARET in text, text


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text("VALUE = 1\n")
    return project


# -- the Python API, and an agent loop built on its adapters ---------------------------------
def test_python_api_report_and_the_adapters_note(tmp_path: Path) -> None:
    project = _project(tmp_path)
    with Gatekeeper.open(project / ".infomark", "s", root=project) as gk:
        report = gk.ingest(BAD)
        (diag,) = [d for d in report.diagnostics if d["severity"] == "error"]
        assert (diag["line"], diag["column"]) == (4, 13)
        assert diag["source"] == '      text: "the tests pass'  # the line, for a caret
        _shows_the_diagnostic(ingest_note(report))
        adapter = OpenAIChat(gk, tools={"read": lambda c: ToolOutcome("VALUE = 1\n")})
        response = {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": BAD,
                        "tool_calls": [
                            {
                                "id": "t1",
                                "type": "function",
                                "function": {"name": "read", "arguments": '{"path": "app.py"}'},
                            }
                        ],
                    }
                }
            ]
        }
        turn = adapter.handle(response)
        (result,) = [m for m in turn.messages if m.get("role") == "tool"]
        _shows_the_diagnostic(str(result["content"]))


# -- MCP: the proxy's infomark_ledger tool, and a write it then denies -------------------------
def test_mcp_proxy_names_the_diagnostic_and_the_denial_shows_it(tmp_path: Path) -> None:
    project = _project(tmp_path)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "status.txt").write_text("ready")
    args = ["-m", "infomark.tools.mcp_proxy", "--home", str(project / ".infomark")]
    args += ["--session", "m1", "--", sys.executable, str(DOWNSTREAM), str(notes)]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=project)
    texts: dict[str, str] = {}

    async def go() -> None:
        with (tmp_path / "err.log").open("w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as s,
            ):
                with anyio.fail_after(120):
                    await s.initialize()
                    res = await s.call_tool("infomark_ledger", {"block": BAD})
                    texts["ledger"] = _text(res)
                    res = await s.call_tool("write_note", {"name": "a.txt", "text": "x"})
                    texts["write"] = _text(res)

    anyio.run(go)
    _shows_the_diagnostic(texts["ledger"])
    assert "no_ledger" in texts["write"]
    _shows_the_diagnostic(texts["write"])


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


# -- HTTP: real uvicorn on 127.0.0.1, httpx ----------------------------------------------------
def test_http_ingest_reports_it_and_the_denial_shows_it(tmp_path: Path) -> None:
    svc = start_service(tmp_path)
    try:
        headers = {"authorization": f"Bearer {svc.token}"}
        with httpx.Client(base_url=svc.url, headers=headers, timeout=60) as h:
            r = h.post("/v1/sessions/h1/ingest", json={"text": BAD})
            assert r.status_code == 200, r.text
            (diag,) = [d for d in r.json()["diagnostics"] if d["severity"] == "error"]
            assert (diag["line"], diag["column"], diag["source"]) == (
                4,
                13,
                '      text: "the tests pass',
            )
            assert 'a closing "' in diag["expected"]
            body = {"tool": "Edit", "input": {"file_path": "app.py", "old_string": "1"}}
            r = h.post("/v1/sessions/h1/authorize", json=body)
            assert r.status_code == 200, r.text
            decision = r.json()
            assert decision["code"] == "no_ledger"
            _shows_the_diagnostic(decision["reason"])
    finally:
        stop_service(svc)


# -- the runner: `infomark run` against a scripted model on 127.0.0.1 -------------------------
def test_infomark_run_tells_the_model_with_its_next_tool_result(tmp_path: Path) -> None:
    project = _project(tmp_path)
    seen: list[str] = []

    def record(req: Any) -> dict[str, Any]:
        seen.extend(tool_results(req))
        return reply("I will fix the ledger first.")

    with ScriptedModelServer() as server:
        server.add(
            "r1",
            reply(BAD, call("read", file_path="app.py")),
            lambda req: (
                seen.extend(tool_results(req)),
                reply("", call("edit", file_path="app.py", old_string="1", new_string="2")),
            )[1],
            record,
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("INFOMARK_")}
        home = str(project / ".infomark")
        where = ["--home", home, "--session", "r1", "--root", str(project)]
        proc = subprocess.run(
            [EXE, "run", "--model", server.url, *where, "fix app.py"],
            capture_output=True,
            text=True,
            cwd=project,
            env=env,
            timeout=120,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    assert len(seen) == 2, (proc.stdout, proc.stderr)
    _shows_the_diagnostic(seen[0])  # with the read's result, right after the reply
    assert "no_ledger" in seen[1]
    _shows_the_diagnostic(seen[1])  # and in the denial of the edit
