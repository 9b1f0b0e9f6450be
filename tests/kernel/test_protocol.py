"""The agent-facing protocol text: deterministic, bounded, generated from the kernel data."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from infomark.kernel.errors import GraphError
from infomark.kernel.graph import DEFAULT_GRAPH, Gate
from infomark.kernel.infomark import InfoMark
from infomark.kernel.protocol import (
    EXAMPLE_LEDGER,
    MAX_PROTOCOL_BYTES,
    protocol_sha256,
    render_protocol,
)
from infomark.kernel.reasons import RejectReason

TEXT = render_protocol()

SPEC_EXAMPLE = (
    "claim_ledger:\n"
    "  claims:\n"
    "    - id: C1\n"
    '      text: "open window uses chars/4"\n'
    "      status: Hypothetical\n"
    '      falsifier: "read computeOpenWindowTokens"\n'
    '      oracle: "pytest tests/test_window.py -k chars"\n'
    "  premises_for_plan: [C1]\n"
    "  open_questions: [C2]\n"
)

_GATE_LINE = re.compile(r"^- (G\d+) (\S+): (.+) → moves: (.+)$", re.MULTILINE)
_MOVE = re.compile(r"^(\w+)(?: \((.+)\))?$")


def test_deterministic_in_process() -> None:
    assert render_protocol() == TEXT
    assert render_protocol(DEFAULT_GRAPH) == TEXT


def test_deterministic_across_hash_seeds(tmp_path: Path) -> None:
    probe = "from infomark.kernel.protocol import protocol_sha256; print(protocol_sha256())"
    digests = set()
    for seed in ("0", "1", "4242", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=str(tmp_path),
            timeout=60,
        )
        digests.add(result.stdout.strip())
    assert digests == {protocol_sha256()}


def test_within_size_bound() -> None:
    assert MAX_PROTOCOL_BYTES == 6656
    assert len(TEXT.encode("utf-8")) <= MAX_PROTOCOL_BYTES


def test_oversized_protocol_is_refused() -> None:
    wordy = tuple(dataclasses.replace(g, allows="x" * 1000) for g in DEFAULT_GRAPH.gates)
    with pytest.raises(GraphError, match="6656"):
        render_protocol(dataclasses.replace(DEFAULT_GRAPH, gates=wordy))


def test_sha256_is_the_digest_of_the_text() -> None:
    digest = protocol_sha256()
    assert digest == hashlib.sha256(TEXT.encode("utf-8")).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert protocol_sha256() == digest


def test_text_follows_the_graph_data() -> None:
    gates = list(DEFAULT_GRAPH.gates)
    gates[8] = Gate("G8", "ORACLE", "a sentence only this test uses")
    changed = dataclasses.replace(DEFAULT_GRAPH, gates=tuple(gates))
    assert "- G8 ORACLE: a sentence only this test uses → moves:" in render_protocol(changed)
    assert protocol_sha256(changed) != protocol_sha256()


def test_mentions_every_gate_and_terminal() -> None:
    for gate in DEFAULT_GRAPH.gates:
        assert f"- {gate.id} {gate.name}: {gate.allows} → moves:" in TEXT
    for terminal in DEFAULT_GRAPH.terminals:
        assert terminal in TEXT
    assert "Spine: G0 → G1 → G2 → G3 → G4 → G6 → G7 → G8 → G9." in TEXT


def test_each_gate_line_lists_exactly_its_moves() -> None:
    assert "From every gate, `gate: BLOCKED" in TEXT
    lines = _GATE_LINE.findall(TEXT)
    assert [gid for gid, *_ in lines] == list(DEFAULT_GRAPH.gate_ids)
    for gid, _name, _allows, moves in lines:
        parsed = [_MOVE.fullmatch(part) for part in moves.split(", ")]
        assert all(parsed), moves
        destinations = tuple(m.group(1) for m in parsed if m)
        # BLOCKED is reachable from every gate and said once, not on each line
        moves_out = DEFAULT_GRAPH.allowed_moves(gid)
        assert destinations == tuple(d for d in moves_out if d != "BLOCKED")
        for m in parsed:
            assert m
            guards = {e.guard for e in DEFAULT_GRAPH.edge(gid, m.group(1))} - {"always"}
            shown = set(m.group(2).split(" | ")) if m.group(2) else set()
            assert shown == guards


def test_mentions_every_reason_code_with_its_hint() -> None:
    for reason in RejectReason:
        assert f"- {reason.value}: {reason.hint}\n" in TEXT


def test_ladder_and_grounding_set() -> None:
    assert "Exact > Inferred > Hypothetical > Guess > Unknown. G = {Exact, Inferred}." in TEXT
    for mark in InfoMark:
        assert mark.label in TEXT


def test_evidence_tag_and_stamp_formats() -> None:
    assert re.search(
        r"\[infomark evidence_ref=ev_\S+ tool=bash outcome=PASS "
        r"eligible=oracle_stamp,inference_stamp\]",
        TEXT,
    )
    assert "`oracle_stamp: claim_id=C1 evidence_ref=ev_… result=PASS`" in TEXT
    assert "`inference_stamp: claim_id=C2 evidence_ref=ev_…`" in TEXT
    assert "`divergence_event: claim_id=C1 evidence_ref=ev_…`" in TEXT
    assert "EXPECTED_FAIL" in TEXT
    assert "`gate: G4`" in TEXT


@pytest.mark.parametrize(
    "rule",
    [
        "Only the runtime raises a claim into G",
        "Web evidence backs no other stamp",
        "primary (vendor docs, spec) → at most Inferred",
        "demoted to\nHypothetical",
        "artifact=PATH",
        "Only G7 mutates, and only with premises_for_plan ⊆ G",
        "strict profile",
        "modify and destructive tools are denied",
        "open_questions",
        "predates",
        "Words do not decide",
    ],
)
def test_states_the_rules(rule: str) -> None:
    assert rule in TEXT


def test_contains_the_canonical_example() -> None:
    assert EXAMPLE_LEDGER == SPEC_EXAMPLE
    assert f"```\n{EXAMPLE_LEDGER}```\n" in TEXT


def test_protocol_text_parses_to_exactly_the_example_ledger() -> None:
    from infomark.ledger.blocks import LedgerBlock
    from infomark.ledger.parse.parser import parse_message

    parsed = parse_message(TEXT)
    assert parsed.errors == []
    assert len(parsed.blocks) == 1  # example stamps and `gate:` lines stay prose
    ledger = parsed.blocks[0]
    assert isinstance(ledger, LedgerBlock)
    assert [c.id for c in ledger.claims] == ["C1"]
    claim = ledger.claims[0]
    assert claim.text == "open window uses chars/4"
    assert claim.status == "Hypothetical"
    assert claim.oracle == "pytest tests/test_window.py -k chars"
    assert ledger.premises_for_plan == ["C1"]
    assert ledger.open_questions == ["C2"]
