"""A compaction through the real Claude Code binary (issue 18): ids, ranks and live evidence
refs survive it verbatim.

Observed with Claude Code 2.1.328: ``claude --resume S -p /compact`` compacts the session and
fires ``SessionStart`` (``resume``), ``PreCompact`` (``trigger: manual``), ``SessionStart``
(``source: compact``) and ``PostCompact``; the compaction's own model request comes before
the ``SessionStart(compact)`` hook, and the next prompt's request carries that hook's
``additionalContext`` after the summary.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infomark.gatekeeper import Gatekeeper

from .anthropic_stub import AnthropicStub, MessagesRequest, Reply, ToolCall
from .claude_harness import result_json, run_claude
from .scripts_infomark import (
    ORACLE,
    allow_oracle_args,
    evidence_refs,
    install_hooks,
    oracle_env,
    write_project,
)

_LEDGER = f"""Checking before any change.

claim_ledger:
  claims:
    - id: C1
      text: "test_parser.py passes on parser.py"
      status: Hypothetical
      falsifier: "test_parser.py fails"
      oracle: "{ORACLE}"
  premises_for_plan: [C1]
"""


@pytest.mark.e2e
def test_a_compaction_keeps_claim_ids_ranks_and_refs_verbatim(
    claude_bin: Path, tmp_path: Path
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    home.mkdir()
    write_project(project)
    install_hooks(project)
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert {"PreCompact", "PostCompact"} <= set(settings["hooks"])  # the installer wires both
    refs: list[str] = []

    def stamp(request: MessagesRequest) -> Reply:
        refs.extend(evidence_refs(request))
        return Reply(
            text=f"oracle_stamp: claim_id=C1 evidence_ref={refs[-1]} result=PASS\n\n"
            "C1 holds; nothing to change yet."
        )

    oracle = ToolCall("Bash", {"command": ORACLE, "description": "run the tests"}, id="toolu_o")
    script = [
        Reply(text=_LEDGER, tool_calls=(oracle,)),
        stamp,
        Reply(text="Summary: the parser's tests were run and C1 was stamped."),  # /compact
        Reply(text="Noted."),
        Reply(text="Continuing from the ledger."),
    ]
    args = allow_oracle_args()
    with AnthropicStub(script) as stub:
        first = run_claude(
            project, "Check parse().", stub, claude_bin=claude_bin, home=home,
            extra_env=oracle_env(), extra_args=args,
        )  # fmt: skip
        assert first.returncode == 0, first.stderr
        session = str(result_json(first)["session_id"])
        for prompt in ("/compact", "Go on."):
            proc = run_claude(
                project, prompt, stub, claude_bin=claude_bin, home=home,
                extra_env=oracle_env(), extra_args=["--resume", session, *args],
            )  # fmt: skip
            assert proc.returncode == 0, proc.stderr
        asked = [r.all_text() for r in stub.model_requests]

    (ref,) = refs
    carried = [t for t in asked if "[infomark:carried]" in t]
    assert carried, "no model request after the compaction carried the ledger"
    text = carried[-1][carried[-1].index("[infomark:carried]") :]
    assert f"- C1 [Exact {ref}] 'test_parser.py passes on parser.py'" in text
    assert f"live evidence: [execution {ref}] Bash `{ORACLE}` PASS" in text
    assert "premises_for_plan: [C1]" in text

    with Gatekeeper.open(project / ".infomark", session, root=project) as gk:
        kinds = [e.type for e in gk.events()]
        assert kinds.count("compaction_carried") == 1  # PreCompact carried it, once
        assert gk.state.policy["metrics"]["compactions"] == 1
        assert gk.state.cursors.get("compaction_pending", 0) == 0  # PostCompact closed it
        assert gk.ledger().status("C1") == "Exact"
        assert gk.audit().verified is True
