"""The fields added for grading (issues 11, 18): expect, observe, done_when, gate reasons,
questions and source stamps: parsing, diagnostics and canonical rendering."""

from __future__ import annotations

import textwrap

import pytest

from infomark.kernel.errors import UserError
from infomark.ledger.blocks import (
    Block,
    ClaimBlock,
    GateBlock,
    LedgerBlock,
    ParsedMessage,
    QuestionBlock,
    Span,
    StampBlock,
)
from infomark.ledger.parse.locate import may_contain_blocks
from infomark.ledger.parse.parser import parse_message
from infomark.ledger.render import (
    render_block,
    render_gate,
    render_ledger,
    render_question,
    render_stamp,
)

EV = "ev_0123456789abcdef01234567"
SPAN = Span(line=1, column=1, end_line=1, end_column=1)


def parse(text: str) -> ParsedMessage:
    return parse_message(textwrap.dedent(text))


def one(text: str) -> Block:
    parsed = parse(text)
    assert parsed.errors == [], parsed.errors
    assert len(parsed.blocks) == 1, parsed.blocks
    return parsed.blocks[0]


def claim_with(line: str) -> ClaimBlock:
    block = one(f"claim_ledger:\n  claims:\n    - id: C1\n      {line}\n")
    assert isinstance(block, LedgerBlock)
    return block.claims[0]


# --------------------------------------------------------------------------- claims


@pytest.mark.parametrize(
    ("written", "expect"),
    [("PASS", "PASS"), ("pass", "PASS"), ("Fail", "FAIL"), ('"FAIL"', "FAIL"), (" fail", "FAIL")],
)
def test_expect_is_case_insensitive_and_normalised(written: str, expect: str) -> None:
    assert claim_with(f"expect: {written}").expect == expect


def test_a_claim_that_says_nothing_expects_nothing() -> None:
    claim = claim_with('oracle: "pytest -q"')
    assert claim.expect is None
    assert claim.observe is None


@pytest.mark.parametrize("word", ["maybe", "EXPECTED_FAIL", "passes", '""'])
def test_other_expectations_are_errors_at_the_value(word: str) -> None:
    parsed = parse(f"claim_ledger:\n  claims:\n    - id: C1\n      expect: {word}\n")
    assert parsed.blocks == []
    (error,) = parsed.errors
    assert (error.line, error.column) == (4, 15)
    assert "not PASS or FAIL" in error.message
    assert error.expected == ["PASS", "FAIL"]


def test_expect_must_be_a_single_value() -> None:
    parsed = parse("claim_ledger:\n  claims:\n    - id: C1\n      expect: [PASS, FAIL]\n")
    assert parsed.blocks == []
    assert any("single value" in d.message for d in parsed.errors)


def test_observe_is_kept_verbatim() -> None:
    assert claim_with('observe: "src/calc.py:def add"').observe == "src/calc.py:def add"
    assert claim_with("observe: grep -n add src").observe == "grep -n add src"


def test_done_when_takes_flow_and_block_lists_of_ids() -> None:
    flow = one("claim_ledger:\n  claims: []\n  done_when: [C2, C3]\n")
    block = one("claim_ledger:\n  done_when:\n    - C2\n    - C3\n")
    assert isinstance(flow, LedgerBlock) and isinstance(block, LedgerBlock)
    assert flow.done_when == block.done_when == ["C2", "C3"]
    assert flow.extra == {}


def test_done_when_rejects_a_bad_id_at_its_place() -> None:
    parsed = parse("claim_ledger:\n  done_when: [C1, 'C 2']\n")
    assert parsed.blocks == []
    (error,) = parsed.errors
    assert (error.line, error.column) == (2, 19)
    assert "done_when: [C1, C2]" in error.message


def test_done_when_in_the_flow_ledger_form() -> None:
    block = one("claim_ledger: {claims: [{id: C1, expect: fail}], done_when: [C1]}\n")
    assert isinstance(block, LedgerBlock)
    assert block.done_when == ["C1"]
    assert block.claims[0].expect == "FAIL"


# --------------------------------------------------------------------------- gate reasons


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('gate: BLOCKED reason="needs the staging password"', "needs the staging password"),
        ("gate: BLOCKED reason='it''s locked'", "it's locked"),
        ('gate: blocked reason="tab\\there"', "tab\there"),
        ("gate: BLOCKED — the spec contradicts the tests", "the spec contradicts the tests"),
        ("gate: BLOCKED—no spaces", "no spaces"),
        ("gate: BLOCKED – en dash", "en dash"),
        ("gate: BLOCKED - hyphen", "hyphen"),
        ("gate: BLOCKED -- two hyphens", "two hyphens"),
        ("gate: BLOCKED: waiting for the #42 fix", "waiting for the #42 fix"),
        ("gate: BLOCKED : spaced colon", "spaced colon"),
        ('gate: "BLOCKED": quoted name', "quoted name"),
        ('gate: BLOCKED: "quoted" # a comment', "quoted"),
        ("gate: WAITING_APPROVAL reason=needs a yes", "needs a yes"),
    ],
)
def test_gate_reason_forms(line: str, reason: str) -> None:
    block = one(line + "\n")
    assert isinstance(block, GateBlock)
    assert block.reason == reason
    assert block.gate in ("BLOCKED", "WAITING_APPROVAL")


@pytest.mark.parametrize("line", ["gate: BLOCKED", "gate: blocked  # no reason", "gate: G4"])
def test_gate_without_reason(line: str) -> None:
    block = one(line)
    assert isinstance(block, GateBlock)
    assert block.reason is None


@pytest.mark.parametrize(
    "line", ["gate: BLOCKED reason=", "gate: BLOCKED:", "gate: BLOCKED — ", "gate: BLOCKED: # x"]
)
def test_an_empty_reason_is_an_error(line: str) -> None:
    parsed = parse("Prose.\n" + line + "\n")
    assert parsed.blocks == []
    (error,) = parsed.errors
    assert error.line == 2
    assert "empty reason" in error.message


def test_unclosed_quote_in_a_reason_is_reported_on_its_line() -> None:
    parsed = parse('Prose.\ngate: BLOCKED reason="never closed\nmore prose\n')
    assert parsed.blocks == []
    (error,) = parsed.errors
    assert (error.line, error.column) == (2, 22)
    assert "unterminated" in error.message


def test_other_text_after_a_gate_is_still_an_error() -> None:
    parsed = parse("gate: G4 because\n")
    assert parsed.blocks == []
    (error,) = parsed.errors
    assert (error.line, error.column) == (1, 10)
    assert "reason=" in error.message


def test_text_after_a_quoted_reason_is_an_error() -> None:
    parsed = parse('gate: BLOCKED reason="x" trailing\n')
    assert parsed.blocks == []
    assert parsed.errors[0].column == 26


# --------------------------------------------------------------------------- questions


def test_question_forms() -> None:
    parsed = parse(
        """\
        question: "Keep the old column?"
        question: Which test first,
          the slow one or the flaky one?
        ```yaml
        question: |
          line one
          line two
        ```
        """
    )
    assert parsed.errors == []
    texts = [b.text for b in parsed.blocks if isinstance(b, QuestionBlock)]
    assert texts == [
        "Keep the old column?",
        "Which test first, the slow one or the flaky one?",
        "line one\nline two\n",
    ]
    assert parsed.blocks[1].span.line == 2


@pytest.mark.parametrize("text", ["question:", "question: [a, b]", 'question: "a" b'])
def test_a_question_needs_one_value(text: str) -> None:
    parsed = parse(text + "\n")
    assert parsed.blocks == []
    assert parsed.errors and parsed.errors[0].block == "question"


def test_question_keyword_is_lower_case_at_line_start_only() -> None:
    assert parse("The question: is it done?\n").blocks == []
    assert not may_contain_blocks("The question: is it done?")
    assert may_contain_blocks("  question: is it done?")


# --------------------------------------------------------------------------- source stamps


@pytest.mark.parametrize(
    "text",
    [
        f"source_stamp: claim_id=C1 evidence_ref={EV} authority=primary",
        f"source_stamp: {{claim_id: C1, evidence_ref: {EV}, authority: PRIMARY}}",
        f"source_stamp:\n  claim_id: C1\n  evidence_ref: {EV}\n  authority: Primary",
    ],
)
def test_source_stamp_forms(text: str) -> None:
    block = one(text)
    assert isinstance(block, StampBlock)
    assert (block.kind, block.claim_id, block.evidence_ref, block.authority) == (
        "source_stamp",
        "C1",
        EV,
        "primary",
    )
    assert may_contain_blocks(text)


def test_unknown_authority_is_kept_with_a_warning() -> None:
    text = f"source_stamp: claim_id=C1 evidence_ref={EV} authority=official"
    parsed = parse(text)
    (block,) = parsed.blocks
    assert isinstance(block, StampBlock) and block.authority == "official"
    (warning,) = parsed.diagnostics
    assert warning.severity == "warning" and warning.column == text.index("official") + 1


def test_source_stamp_has_no_legacy_form_and_no_result() -> None:
    parsed = parse("source_stamp: C1 primary\n")
    assert parsed.blocks == [] and parsed.errors[0].column == 15
    parsed = parse(f"source_stamp: claim_id=C1 evidence_ref={EV} result=PASS\n")
    (block,) = parsed.blocks
    assert isinstance(block, StampBlock) and block.result is None
    assert block.extra == {"result": "PASS"}


def test_authority_on_other_stamps_is_an_unknown_key() -> None:
    parsed = parse(f"oracle_stamp: claim_id=C1 evidence_ref={EV} authority=primary\n")
    (block,) = parsed.blocks
    assert isinstance(block, StampBlock) and block.authority is None
    assert block.extra == {"authority": "primary"}
    assert parsed.diagnostics[0].severity == "warning"


# --------------------------------------------------------------------------- rendering


def test_canonical_renderings() -> None:
    ledger = LedgerBlock(
        claims=[
            ClaimBlock(id="C1", oracle="pytest -q", expect="FAIL", observe="src/a.py", span=SPAN)
        ],
        done_when=["C1"],
        span=SPAN,
    )
    assert render_ledger(ledger) == (
        "claim_ledger:\n"
        "  claims:\n"
        "    - id: C1\n"
        '      oracle: "pytest -q"\n'
        "      expect: FAIL\n"
        "      observe: src/a.py\n"
        "  premises_for_plan: []\n"
        "  open_questions: []\n"
        "  done_when: [C1]\n"
    )
    no_done = LedgerBlock(span=SPAN)
    assert "done_when" not in render_ledger(no_done)
    gate = GateBlock(gate="blocked", reason='say "no"', span=SPAN)
    assert render_gate(gate) == 'gate: BLOCKED reason="say \\"no\\""\n'
    assert render_question(QuestionBlock(text="a?\nb", span=SPAN)) == 'question: "a?\\nb"\n'
    source = StampBlock(
        kind="source_stamp", claim_id="C1", evidence_ref=EV, authority="Primary", span=SPAN
    )
    assert (
        render_stamp(source) == f"source_stamp: claim_id=C1 evidence_ref={EV} authority=primary\n"
    )
    assert render_block(QuestionBlock(text="x", span=SPAN)).startswith("question: ")


def test_render_refuses_what_cannot_parse_back() -> None:
    with pytest.raises(UserError, match="only source_stamp"):
        render_stamp(StampBlock(kind="oracle_stamp", claim_id="C1", authority="primary", span=SPAN))
    with pytest.raises(UserError, match="no legacy form"):
        render_stamp(StampBlock(kind="source_stamp", claim_id="C1", legacy=True, span=SPAN))
