"""The keyword options of ``record``, ``ingest`` and ``Runner`` are declared once.

``RecordOptions`` and ``IngestOptions`` are ``TypedDict`` types (type-only: the hook path
never imports :mod:`typing`) that every implementation takes as ``**opts: Unpack[...]``, so
mypy checks each call site against the one declaration. ``**opts`` takes any keyword at
run time, so the public entry points check the keys against a tuple; these tests keep the
tuples equal to the declarations and a misspelt option a TypeError, as it was when the
options were spelled out in each signature.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import RECORD_OPTIONS, ToolCall, ToolOutcome
from infomark.ledger.report import INGEST_OPTIONS
from infomark.tools.client_core import Requests
from infomark.tools.runner.agentfile import AgentSpec
from infomark.tools.runner.loop import RUNNER_OPTIONS, Runner, RunnerOptions
from infomark.tools.runner.resume import resume_run

ROOT = Path(__file__).resolve().parents[1] / "infomark"


def _declared(module: str, name: str) -> tuple[str, ...]:
    """The keys a type-only ``TypedDict`` declares (read from the source: it does not exist
    at run time)."""
    tree = ast.parse((ROOT / module).read_text("utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return tuple(
                s.target.id
                for s in node.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            )
    raise AssertionError(f"{name} is not declared in {module}")


def test_the_checked_keys_are_the_declared_ones() -> None:
    assert _declared("ledger/calls.py", "RecordOptions") == RECORD_OPTIONS
    assert _declared("ledger/report.py", "IngestOptions") == INGEST_OPTIONS
    assert set(RUNNER_OPTIONS) == set(RunnerOptions.__optional_keys__)
    assert set(RUNNER_OPTIONS) == {"client", "clock", "parent", "echo", "profile", "config"}


def test_a_misspelt_option_is_a_type_error(tmp_path: Path) -> None:
    call, outcome = ToolCall("Read", {"file_path": "x"}, tool_call_id="t1"), ToolOutcome("x")
    with Gatekeeper.open(tmp_path / "home", "s", root=tmp_path) as gk:
        gk.authorize(call)
        with pytest.raises(TypeError, match="unexpected keyword argument 'cdw'"):
            gk.record(call, outcome, cdw=str(tmp_path))  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="unexpected keyword argument 'sauce'"):
            gk.ingest("text", sauce="mcp")  # type: ignore[call-arg]
        assert [e.type for e in gk.events()][-1] == "decision"  # nothing journaled for them
        evidence = gk.record(call, outcome, cwd=str(tmp_path))  # the right spelling records
        assert evidence.ref.startswith("ev_")
    requests = Requests("s")
    with pytest.raises(TypeError, match="unexpected keyword argument 'callid'"):
        requests.record(call, outcome, callid="t1")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'dedup'"):
        requests.ingest("text", dedup=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'clok'"):
        Runner(AgentSpec(), home=tmp_path, session="r", root=tmp_path, clok=None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'parent'"):
        resume_run(home=tmp_path, session="r", root=tmp_path, parent="p")  # the journal's
