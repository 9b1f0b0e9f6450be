"""Seed 002's research ladder: local code search (``codesearch``, ``codegraph``, an MCP code
search) is tagged ``eligible=inference_stamp``, and a claim whose ``observe:`` names what the
search looked for is raised to Inferred by it, whatever key the tool uses for its query."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome

LEDGER = """claim_ledger:
  claims:
    - id: C1
      text: "add is defined in calc.py"
      status: Guess
      falsifier: "the code search finds no def add"
      observe: "def add"
  premises_for_plan: [C1]
"""


def _host(call: ToolCall) -> ToolOutcome:
    return ToolOutcome(output="calc.py:1: def add(a, b):")


def _ref(text: str) -> str:
    found = re.search(r"evidence_ref=(ev_[0-9a-f]{24})", text)
    assert found is not None, text
    return found[1]


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("codesearch", {"query": "def add"}),
        ("codesearch", {"q": "def add", "max_results": 5}),
        ("codegraph", {"symbol": "def add"}),
        ("mcp__sourcegraph__codesearch", {"q": "def add", "repo": "."}),
    ],
)
def test_a_code_search_the_claim_names_grounds_it_at_inferred(
    tmp_path: Path, tool: str, tool_input: dict[str, object]
) -> None:
    gk = Gatekeeper.open(tmp_path / ".infomark", session="cs", root=tmp_path)
    try:
        run = gk.wrap(_host)
        gk.ingest(LEDGER)
        out = run(ToolCall(tool, tool_input))
        assert "eligible=inference_stamp]" in out.output  # the tag's promise …
        report = gk.ingest(f"inference_stamp: claim_id=C1 evidence_ref={_ref(out.output)}")
        assert report.stamps_rejected == []  # … is kept
        assert gk.ledger().status("C1") == "Inferred"
    finally:
        gk.close()


def test_a_search_for_something_else_or_a_runs_description_does_not_name_the_claim(
    tmp_path: Path,
) -> None:
    """The hostile agent: a search for another string, or a Bash call whose *description*
    (not its command) names the target, does not ground the claim."""
    gk = Gatekeeper.open(tmp_path / ".infomark", session="cs2", root=tmp_path)
    try:
        gk.ingest(LEDGER)
        other = gk.wrap(_host)(ToolCall("codesearch", {"q": "def sub"}))
        report = gk.ingest(f"inference_stamp: claim_id=C1 evidence_ref={_ref(other.output)}")
        assert [r["reason"] for r in report.stamps_rejected] == ["evidence_not_named"]

        def shell(call: ToolCall) -> ToolOutcome:
            return ToolOutcome(output="", exit_code=0)

        run = gk.wrap(shell, tool_class="execute")
        out = run(ToolCall("bash", {"command": "true", "description": "def add"}))
        report = gk.ingest(f"inference_stamp: claim_id=C1 evidence_ref={_ref(out.output)}")
        assert [r["reason"] for r in report.stamps_rejected] == ["evidence_not_named"]
        assert gk.ledger().status("C1") == "Guess"
    finally:
        gk.close()
