"""The block parser: every form of the contract, spans, diagnostics, robustness."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from infomark.ledger.blocks import (
    Diagnostic,
    DivergenceBlock,
    GateBlock,
    LedgerBlock,
    ParsedMessage,
    Span,
    StampBlock,
)
from infomark.ledger.parse.locate import locate_blocks, may_contain_blocks
from infomark.ledger.parse.parser import MAX_DEPTH, parse_message

ISSUE_LEDGER = """\
claim_ledger:
  claims:
    - id: C1
      text: "open window uses chars/4"
      status: Hypothetical
      falsifier: "read computeOpenWindowTokens"
      oracle: "pytest tests/test_window.py -k chars"
  premises_for_plan: [C1]
  open_questions: [C2]
"""

EV = "ev_0123456789abcdef01234567"


def parse(text: str) -> ParsedMessage:
    return parse_message(textwrap.dedent(text))


def clean(text: str) -> ParsedMessage:
    """Parse and require no error diagnostics."""
    parsed = parse(text)
    assert parsed.errors == [], parsed.errors
    return parsed


def ledger(text: str) -> LedgerBlock:
    parsed = clean(text)
    assert len(parsed.blocks) == 1, parsed.blocks
    block = parsed.blocks[0]
    assert isinstance(block, LedgerBlock)
    return block


def stamp(text: str) -> StampBlock:
    parsed = clean(text)
    assert len(parsed.blocks) == 1, parsed.blocks
    block = parsed.blocks[0]
    assert isinstance(block, StampBlock)
    return block


def divergence(text: str) -> DivergenceBlock:
    parsed = clean(text)
    assert len(parsed.blocks) == 1, parsed.blocks
    block = parsed.blocks[0]
    assert isinstance(block, DivergenceBlock)
    return block


def single_error(text: str) -> Diagnostic:
    parsed = parse(text)
    assert parsed.blocks == [], parsed.blocks
    assert len(parsed.errors) == 1, parsed.diagnostics
    return parsed.errors[0]


# --------------------------------------------------------------------------- claim_ledger


def test_issue_example_parses_to_every_field() -> None:
    block = ledger(ISSUE_LEDGER)
    (claim,) = block.claims
    assert claim.id == "C1"
    assert claim.text == "open window uses chars/4"
    assert claim.status == "Hypothetical"
    assert claim.falsifier == "read computeOpenWindowTokens"
    assert claim.oracle == "pytest tests/test_window.py -k chars"
    assert block.premises_for_plan == ["C1"]
    assert block.open_questions == ["C2"]
    assert block.extra == {} and claim.extra == {}


@pytest.mark.parametrize(
    ("opening", "closing"),
    [("```", "```"), ("```yaml", "```"), ("```yml", "```"), ("```YAML", "```"), ("~~~yaml", "~~~")],
)
def test_ledger_inside_a_fence(opening: str, closing: str) -> None:
    message = f"Here is my ledger:\n\n{opening}\n{ISSUE_LEDGER}{closing}\n\nDone.\n"
    block = ledger(message)
    assert [c.id for c in block.claims] == ["C1"]
    assert block.span.line == 4


@pytest.mark.parametrize("language", ["python", "json", "text", "markdown"])
def test_blocks_inside_other_fences_are_examples_not_blocks(language: str) -> None:
    message = f"```{language}\n{ISSUE_LEDGER}gate: G4\n```\ngate: G5\n"
    parsed = clean(message)
    assert [b.kind for b in parsed.blocks] == ["gate"]
    assert isinstance(parsed.blocks[0], GateBlock) and parsed.blocks[0].gate == "G5"


def test_aliases_premises_and_open() -> None:
    block = ledger(
        """
        claim_ledger:
          claims:
            - id: C1
          premises: [C1]
          open: [C2, C3]
        """
    )
    assert block.premises_for_plan == ["C1"]
    assert block.open_questions == ["C2", "C3"]


def test_block_lists_and_compact_block_lists() -> None:
    block = ledger(
        """
        claim_ledger:
          claims:
          - id: C1
          - id: C2
          premises_for_plan:
            - C1
            - C2
          open_questions:
          - C3
        """
    )
    assert [c.id for c in block.claims] == ["C1", "C2"]
    assert block.premises_for_plan == ["C1", "C2"]
    assert block.open_questions == ["C3"]


def test_flow_lists_with_quotes_and_trailing_comma() -> None:
    block = ledger(
        """
        claim_ledger:
          claims: []
          premises_for_plan: ["C1", 'C2', C3,]
          open_questions: []
        """
    )
    assert block.claims == []
    assert block.premises_for_plan == ["C1", "C2", "C3"]
    assert block.open_questions == []


def test_flow_list_spanning_lines() -> None:
    block = ledger(
        """
        claim_ledger:
          premises_for_plan: [C1,
            C2,
        C3]
          open_questions: [C4]
        """
    )
    assert block.premises_for_plan == ["C1", "C2", "C3"]
    assert block.open_questions == ["C4"]


def test_whole_ledger_in_flow_form() -> None:
    block = ledger('claim_ledger: {claims: [{id: C1, text: "a, b"}], premises: [C1]}\n')
    assert block.claims[0].text == "a, b"
    assert block.premises_for_plan == ["C1"]


def test_literal_block_scalar_keeps_lines() -> None:
    block = ledger(
        """
        claim_ledger:
          claims:
            - id: C1
              text: |
                first line
                  indented: yes
                last line
              status: Exact
        """
    )
    claim = block.claims[0]
    assert claim.text == "first line\n  indented: yes\nlast line\n"
    assert claim.status == "Exact"


def test_folded_block_scalar_and_chomping() -> None:
    block = ledger(
        """
        claim_ledger:
          claims:
            - id: C1
              text: >
                one
                two

                three
              falsifier: |-
                no trailing newline
              oracle: >+
                keep

              reason: x
        """
    )
    claim = block.claims[0]
    assert claim.text == "one two\nthree\n"
    assert claim.falsifier == "no trailing newline"
    assert claim.oracle == "keep\n\n"
    assert claim.reason == "x"


def test_bare_continuation_lines_fold_into_one_value() -> None:
    block = ledger(
        """
        claim_ledger:
          claims:
            - id: C1
              text: open window
                uses chars/4
                  and more
              status: Inferred
        """
    )
    assert block.claims[0].text == "open window uses chars/4 and more"
    assert block.claims[0].status == "Inferred"


def test_quoted_values_with_escapes_colons_and_hashes() -> None:
    block = ledger(
        r"""
        claim_ledger:
          claims:
            - id: C1
              text: "say \"hi\": a\tb\nc \u00e9 \x41 \\ # not a comment"
              falsifier: 'it''s: fine # still text'
              oracle: pytest -k "a: b" tests/x.py
        """
    )
    claim = block.claims[0]
    assert claim.text == 'say "hi": a\tb\nc é A \\ # not a comment'
    assert claim.falsifier == "it's: fine # still text"
    assert claim.oracle == 'pytest -k "a: b" tests/x.py'


def test_double_quoted_value_over_several_lines_folds() -> None:
    block = ledger(
        """
        claim_ledger:
          claims:
            - id: C1
              text: "first
                second

                third"
        """
    )
    assert block.claims[0].text == "first second\nthird"


def test_yaml_comment_lines_inside_a_block_are_skipped() -> None:
    block = ledger(
        """
        claim_ledger:
          # the claims I rely on
          claims:
            # first
            - id: C1
              text: plain text # is kept verbatim
        """
    )
    assert block.claims[0].text == "plain text # is kept verbatim"


def test_all_claim_fields_and_unknown_keys_warn() -> None:
    parsed = parse(
        """
        claim_ledger:
          claims:
            - id: C1
              text: t
              status: Exact
              falsifier: f
              oracle: o
              reason: r
              evidence: e
              notes: kept
          budget: 3
        """
    )
    assert parsed.errors == []
    block = parsed.blocks[0]
    assert isinstance(block, LedgerBlock)
    claim = block.claims[0]
    assert (claim.reason, claim.evidence) == ("r", "e")
    assert claim.extra == {"notes": "kept"}
    assert block.extra == {"budget": "3"}
    warnings = [(d.line, d.column, d.text) for d in parsed.diagnostics if d.severity == "warning"]
    assert warnings == [(11, 7, "notes"), (12, 3, "budget")]


def test_unknown_key_with_collection_value_is_kept_as_flow_text() -> None:
    parsed = parse(
        """
        claim_ledger:
          notes:
            a: [1, "x y"]
          claims: []
        """
    )
    block = parsed.blocks[0]
    assert isinstance(block, LedgerBlock)
    assert block.extra == {"notes": '{a: [1, "x y"]}'}
    assert [d.severity for d in parsed.diagnostics] == ["warning"]


def test_unrecognised_status_is_a_warning_not_an_error() -> None:
    parsed = parse("claim_ledger:\n  claims:\n    - id: C1\n      status: Certain\n")
    assert parsed.errors == []
    assert len(parsed.blocks) == 1
    (warning,) = parsed.diagnostics
    assert warning.severity == "warning" and "Certain" in warning.message


def test_duplicate_key_warns_and_the_last_counts() -> None:
    parsed = parse("claim_ledger:\n  claims:\n    - id: C1\n      text: a\n      text: b\n")
    block = parsed.blocks[0]
    assert isinstance(block, LedgerBlock)
    assert block.claims[0].text == "b"
    assert [(d.severity, d.line) for d in parsed.diagnostics] == [("warning", 5)]


@pytest.mark.parametrize("claim_id", ["C 1", "C1!", '"C/1"', '""', "Ç1"])
def test_bad_claim_id_is_an_error_with_position(claim_id: str) -> None:
    error = single_error(f"Prose.\nclaim_ledger:\n  claims:\n    - id: C0\n    - id: {claim_id}\n")
    assert (error.line, error.column) == (5, len("    - id: ") + 1)
    assert error.severity == "error"
    assert error.block == "claim_ledger"
    assert "claim id" in error.message
    assert error.expected


def test_bad_id_in_premises_is_an_error() -> None:
    error = single_error("claim_ledger:\n  premises_for_plan: C1, C2\n")
    assert (error.line, error.column) == (2, 22)
    assert "[C1, C2]" in error.message


def test_claim_without_id_is_an_error() -> None:
    error = single_error("claim_ledger:\n  claims:\n    - text: no id here\n")
    assert (error.line, error.column) == (3, 7)


def test_claims_must_be_a_list_of_mappings() -> None:
    assert single_error("claim_ledger:\n  claims: C1\n").line == 2
    assert single_error("claim_ledger:\n  claims:\n    - C1\n").line == 3


def test_empty_ledger_is_an_error() -> None:
    error = single_error("claim_ledger:\n\nSome prose.\n")
    assert error.line == 1
    assert "indented" in error.message


def test_keywords_need_a_colon_and_any_case_opens_a_block() -> None:
    # Issue 12 §2: a capitalised keyword is a ledger the agent meant to write (it used to be
    # ignored); "gates:", "gate G4" and a keyword inside a sentence are still prose.
    parsed = clean("Claim_ledger:\n  claims: []\ngates: G4\ngate G4\nThe gate: G4\n")
    assert [block.kind for block in parsed.blocks] == ["claim_ledger"]


# --------------------------------------------------------------------------- stamps


@pytest.mark.parametrize("kind", ["oracle_stamp", "inference_stamp"])
def test_stamp_inline_form(kind: str) -> None:
    block = stamp(
        f"{kind}: claim_id=C1 evidence_ref={EV} layer=unit artifact=src/x.py "
        "content_hash=sha256:ab12\n"
    )
    assert block.kind == kind
    assert (block.claim_id, block.evidence_ref) == ("C1", EV)
    assert (block.layer, block.artifact, block.content_hash) == ("unit", "src/x.py", "sha256:ab12")
    assert block.legacy is False


def test_oracle_stamp_inline_with_result_and_colon_separators() -> None:
    block = stamp(
        f'oracle_stamp: claim_id:C1 evidence_ref: {EV} result=expected_fail artifact:"a b.py" '
        "content_hash: sha256:ab12, layer=unit\n"
    )
    assert block.claim_id == "C1"
    assert block.evidence_ref == EV
    assert block.result == "EXPECTED_FAIL"
    assert block.artifact == "a b.py"
    assert block.content_hash == "sha256:ab12"
    assert block.layer == "unit"


@pytest.mark.parametrize("kind", ["oracle_stamp", "inference_stamp"])
def test_stamp_flow_form(kind: str) -> None:
    block = stamp(f"{kind}: {{claim_id: C1, evidence_ref: {EV}, layer: e2e}}\n")
    assert (block.kind, block.claim_id, block.evidence_ref, block.layer) == (kind, "C1", EV, "e2e")


@pytest.mark.parametrize("kind", ["oracle_stamp", "inference_stamp"])
def test_stamp_block_mapping_form(kind: str) -> None:
    block = stamp(f"{kind}:\n  claim_id: C1\n  evidence_ref: {EV}\n  artifact: src/x.py\n")
    assert (block.kind, block.claim_id, block.evidence_ref, block.artifact) == (
        kind,
        "C1",
        EV,
        "src/x.py",
    )


def test_oracle_result_forms_normalise_to_upper_case() -> None:
    cases = [("pass", "PASS"), ("Fail", "FAIL"), ("EXPECTED_FAIL", "EXPECTED_FAIL")]
    for written, expected in cases:
        block = stamp(f"oracle_stamp: {{claim_id: C1, evidence_ref: {EV}, result: {written}}}\n")
        assert block.result == expected


def test_oracle_result_outside_the_set_is_kept_with_a_warning() -> None:
    parsed = parse(f"oracle_stamp: claim_id=C1 evidence_ref={EV} result=MAYBE\n")
    block = parsed.blocks[0]
    assert isinstance(block, StampBlock) and block.result == "MAYBE"
    assert [d.severity for d in parsed.diagnostics] == ["warning"]


def test_result_on_inference_stamp_is_an_unknown_key() -> None:
    parsed = parse(f"inference_stamp: claim_id=C1 evidence_ref={EV} result=PASS\n")
    block = parsed.blocks[0]
    assert isinstance(block, StampBlock)
    assert block.result is None and block.extra == {"result": "PASS"}
    assert [d.severity for d in parsed.diagnostics] == ["warning"]


def test_legacy_short_form_parses_for_the_runtime_to_reject() -> None:
    block = stamp("oracle_stamp: C1 PASS\n")
    assert block.legacy is True
    assert (block.claim_id, block.result, block.evidence_ref) == ("C1", "PASS", None)


def test_legacy_form_of_inference_stamp_takes_only_an_id() -> None:
    block = stamp("inference_stamp: C7\n")
    assert (block.legacy, block.claim_id) == (True, "C7")
    assert single_error("inference_stamp: C7 PASS\n").column == 21


def test_stamp_missing_evidence_ref_is_not_a_parse_error() -> None:
    block = stamp("oracle_stamp: claim_id=C1 result=PASS\n")
    assert block.evidence_ref is None and block.legacy is False


@pytest.mark.parametrize(
    "text",
    [
        f"oracle_stamp: evidence_ref={EV} result=PASS\n",
        f"inference_stamp: {{evidence_ref: {EV}}}\n",
        f"divergence_event:\n  evidence_ref: {EV}\n",
    ],
)
def test_stamp_missing_claim_id_is_an_error(text: str) -> None:
    error = single_error(text)
    assert (error.line, error.column) == (1, 1)
    assert "claim_id" in error.message


def test_stamp_with_bad_claim_id_is_an_error() -> None:
    error = single_error("oracle_stamp: claim_id=C/1 evidence_ref=ev_1\n")
    assert (error.line, error.column) == (1, 24)


def test_divergence_event_in_three_forms() -> None:
    forms = [
        f"divergence_event: claim_id=C1 evidence_ref={EV}\n",
        f"divergence_event: {{claim_id: C1, evidence_ref: {EV}}}\n",
        f"divergence_event:\n  claim_id: C1\n  evidence_ref: {EV}\n",
    ]
    for text in forms:
        block = divergence(text)
        assert (block.claim_id, block.evidence_ref) == ("C1", EV)


def test_inline_stamp_may_continue_on_indented_lines() -> None:
    block = stamp(f"oracle_stamp: claim_id=C1\n    evidence_ref={EV}\n    result=PASS\n")
    assert (block.evidence_ref, block.result) == (EV, "PASS")


# --------------------------------------------------------------------------- gate


@pytest.mark.parametrize(
    ("written", "gate"),
    [
        ("G0", "G0"),
        ("g4", "G4"),
        ("G9", "G9"),
        ("success", "SUCCESS"),
        ("Blocked", "BLOCKED"),
        ("out_of_scope", "OUT_OF_SCOPE"),
        ("WAITING_APPROVAL", "WAITING_APPROVAL"),
        ('"G3"', "G3"),
        ("G5   # moving on", "G5"),
    ],
)
def test_gate_lines(written: str, gate: str) -> None:
    parsed = clean(f"Moving on.\ngate: {written}\nMore prose.\n")
    (block,) = parsed.blocks
    assert isinstance(block, GateBlock)
    assert block.gate == gate
    assert (block.span.line, block.span.column) == (2, 1)


@pytest.mark.parametrize("written", ["G10", "G", "DONE", "G4 now", ""])
def test_bad_gate_is_an_error(written: str) -> None:
    error = single_error(f"gate: {written}\n")
    assert error.line == 1 and error.block == "gate"


def test_gate_is_one_line_only() -> None:
    parsed = clean("gate: G2\n  this indented prose is not part of it\n")
    assert [b.kind for b in parsed.blocks] == ["gate"]
    assert parsed.blocks[0].span.end_line == 1


# --------------------------------------------------------------------------- message level


def test_malformed_block_is_dropped_and_later_block_still_applies() -> None:
    parsed = parse_message(
        "claim_ledger:\n"
        "  claims:\n"
        "    - id: C1\n"
        '      text: "unterminated\n'
        "\n"
        "gate: G3\n"
        "oracle_stamp: claim_id=C2 evidence_ref=ev_1\n"
    )
    assert [b.kind for b in parsed.blocks] == ["gate", "oracle_stamp"]
    (error,) = parsed.errors
    assert (error.line, error.column) == (4, 13)
    assert error.expected == ['a closing "']
    assert error.text.startswith('"unterminated')


def test_syntax_error_reports_expected_tokens() -> None:
    error = single_error("claim_ledger:\n  claims:\n    - id: C1\n    just words\n")
    assert (error.line, error.column) == (4, 5)
    assert "a '- ' list item" in error.expected
    assert error.text == "just words"


def test_blocks_keep_textual_order() -> None:
    parsed = clean(
        f"gate: G1\n{ISSUE_LEDGER}oracle_stamp: claim_id=C1 evidence_ref={EV}\n"
        "divergence_event: claim_id=C1 evidence_ref=ev_2\ngate: G2\n"
    )
    assert [b.kind for b in parsed.blocks] == [
        "gate",
        "claim_ledger",
        "oracle_stamp",
        "divergence_event",
        "gate",
    ]
    lines = [b.span.line for b in parsed.blocks]
    assert lines == sorted(lines)


def test_spans_are_in_original_message_coordinates() -> None:
    message = "Intro line.\n\n  claim_ledger:\n    claims:\n      - id: C1\n        text: hi\n"
    parsed = clean(message)
    block = parsed.blocks[0]
    assert isinstance(block, LedgerBlock)
    assert block.span == Span(line=3, column=3, end_line=6, end_column=17)
    assert block.claims[0].span == Span(line=5, column=9, end_line=6, end_column=17)
    assert message.splitlines()[4][8:10] == "id"


def test_inline_stamp_span_covers_the_line() -> None:
    line = f"oracle_stamp: claim_id=C1 evidence_ref={EV}"
    block = stamp(f"prose\n{line}\n")
    assert block.span == Span(line=2, column=1, end_line=2, end_column=len(line) + 1)


def test_windows_newlines() -> None:
    message = ("Prose.\n\n" + ISSUE_LEDGER + "gate: G4\n").replace("\n", "\r\n")
    parsed = clean(message)
    assert [b.kind for b in parsed.blocks] == ["claim_ledger", "gate"]
    block = parsed.blocks[0]
    assert isinstance(block, LedgerBlock)
    assert block.claims[0].oracle == "pytest tests/test_window.py -k chars"
    assert block.span.line == 3
    assert block.span.end_column == len("  open_questions: [C2]") + 1


def test_block_after_long_prose_is_found() -> None:
    prose = ("word " * 20 + "\n") * 100  # 10,100 characters, well past 8,000
    parsed = clean(prose + "\n" + ISSUE_LEDGER)
    assert len(prose) > 8000
    assert [b.kind for b in parsed.blocks] == ["claim_ledger"]
    assert parsed.blocks[0].span.line == 102


def test_huge_ledger_is_not_cut() -> None:
    claims = "".join(f"    - id: C{i}\n      text: {'x' * 100}\n" for i in range(200))
    block = ledger("claim_ledger:\n  claims:\n" + claims)
    assert len(block.claims) == 200


def test_block_ends_at_heading_rule_and_dedent() -> None:
    parsed = clean(
        "claim_ledger:\n  claims:\n    - id: C1\n## Next\nclaim_ledger:\n  claims:\n"
        "    - id: C2\n---\n  premises: [C2]\n"
    )
    assert [len(b.claims) for b in parsed.blocks if isinstance(b, LedgerBlock)] == [1, 1]


def test_block_ends_at_its_fence() -> None:
    parsed = clean("```yaml\ngate: G1\nclaim_ledger:\n  claims: []\n```\n  claims: [x]\n")
    assert [b.kind for b in parsed.blocks] == ["gate", "claim_ledger"]
    assert parsed.blocks[1].span.end_line == 4


def test_unclosed_quote_does_not_swallow_a_later_keyword() -> None:
    parsed = parse_message('claim_ledger:\n  claims: ["C1\nprose\ngate: G6\n')
    assert [b.kind for b in parsed.blocks] == ["gate"]
    assert len(parsed.errors) == 1


def test_tabs_nul_and_surrogates_do_not_break_parsing() -> None:
    parsed = parse_message(
        'claim_ledger:\n\tclaims:\n\t\t- id: C1\n\t\t  text: "a\x00b \ud800"\n\x00gate: G1\n'
    )
    assert parsed.errors == []
    block = parsed.blocks[0]
    assert isinstance(block, LedgerBlock)
    assert block.claims[0].text == "a\x00b \ud800"


def test_deep_nesting_is_a_diagnostic() -> None:
    flow = parse_message("claim_ledger:\n  x: " + "[" * 5000 + "]" * 5000 + "\n")
    assert flow.blocks == [] and "nested" in flow.errors[0].message
    lines = "".join(" " * (i + 1) + "- \n" for i in range(MAX_DEPTH + 5))
    block = parse_message("claim_ledger:\n" + lines)
    assert block.blocks == [] and "nested" in block.errors[0].message


def test_non_string_input_is_a_diagnostic() -> None:
    parsed = parse_message(b"gate: G1")  # type: ignore[arg-type]
    assert parsed.blocks == [] and parsed.errors[0].line == 1


def test_prose_without_keywords() -> None:
    text = "Nothing to see. The gate: closed.\n" * 10
    assert may_contain_blocks(text) is False
    assert locate_blocks(text) == []
    assert parse_message(text) == ParsedMessage()


def test_may_contain_blocks_agrees_with_locate() -> None:
    assert may_contain_blocks("x\n  \tgate: G1") is True
    assert may_contain_blocks("x gate: G1") is False
    assert may_contain_blocks("gate:G1") is True
    for text in ["x\n  \tgate: G1", "x gate: G1", ISSUE_LEDGER, "```\noracle_stamp: C1\n```"]:
        assert may_contain_blocks(text) == bool(locate_blocks(text))


def test_prose_path_imports_neither_lark_nor_pydantic() -> None:
    code = (
        "import sys\n"
        "from infomark.ledger.parse.locate import may_contain_blocks\n"
        "assert may_contain_blocks('no blocks here') is False\n"
        "assert 'lark' not in sys.modules and 'pydantic' not in sys.modules\n"
        "from infomark.ledger.parse.parser import parse_message\n"
        "parse_message('prose only\\n' * 100)\n"
        "assert 'lark' not in sys.modules, 'prose must not load lark'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
