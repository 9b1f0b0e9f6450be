"""Issue 12 §2: the ledger forms models really write are accepted, or answered with a diagnostic.

Bold / capitalised keys, the JSON object form (bare or fenced), the YAML object form (quoted
keys); what only looks like a ledger is an error at its own line; an unclosed quote is reported
where it opens. Properties: every accepted variant yields the canonical model, and diagnostics
always point inside the text.
"""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_parser_properties import LEDGERS, check_total, without_spans

from infomark.ledger.blocks import GateBlock, LedgerBlock, ParsedMessage, StampBlock
from infomark.ledger.parse.locate import may_contain_blocks
from infomark.ledger.parse.parser import parse_message
from infomark.ledger.render import render_ledger

EV = "ev_0123456789abcdef01234567"
CANONICAL = """\
claim_ledger:
  claims:
    - id: C1
      text: "open window uses chars/4"
      oracle: "pytest -q"
  premises_for_plan: [C1]
  open_questions: []
"""


def parse(text: str) -> ParsedMessage:
    return parse_message(textwrap.dedent(text))


def the_ledger(text: str) -> LedgerBlock:
    parsed = parse(text)
    assert parsed.errors == [], parsed.errors
    ledgers = [b for b in parsed.blocks if isinstance(b, LedgerBlock)]
    assert len(ledgers) == 1, parsed.blocks
    return ledgers[0]


def same_as_canonical(text: str) -> None:
    assert without_spans(the_ledger(text)) == without_spans(the_ledger(CANONICAL))


# --------------------------------------------------------------------------- accepted forms


def test_bold_and_capitalised_keys() -> None:
    same_as_canonical(
        """\
        **Claim_Ledger:**
          **Claims:**
            - **id**: C1
              **Text:** "open window uses chars/4"
              `oracle`: "pytest -q"
          Premises_For_Plan: [C1]
          OPEN_QUESTIONS: []
        """
    )


def test_keyword_spellings() -> None:
    for head in ("Claim ledger:", "CLAIM-LEDGER:", "**claim_ledger**:", "`claim_ledger`:"):
        same_as_canonical(CANONICAL.replace("claim_ledger:", head, 1))


def test_json_object_in_a_json_fence_and_bare() -> None:
    obj = {
        "claim_ledger": {
            "claims": [{"id": "C1", "text": "open window uses chars/4", "oracle": "pytest -q"}],
            "premises_for_plan": ["C1"],
            "open_questions": [],
        }
    }
    same_as_canonical("```json\n" + json.dumps(obj, indent=2) + "\n```\n")
    same_as_canonical("Here it is: \n" + json.dumps(obj) + "\n")
    same_as_canonical("```\n" + json.dumps(obj, indent=4) + "\n```\n")


def test_json_null_means_no_value() -> None:
    ledger = the_ledger('{"claim_ledger": {"claims": [{"id": "C1", "oracle": null}]}}')
    assert ledger.claims[0].oracle is None


def test_one_object_holds_several_blocks_in_order() -> None:
    text = json.dumps(
        {
            "claim_ledger": {"claims": [{"id": "C1"}]},
            "oracle_stamp": {"claim_id": "C1", "evidence_ref": EV, "result": "pass"},
            "gate": "G4",
        },
        indent=2,
    )
    parsed = parse(text)
    assert parsed.errors == []
    assert [b.kind for b in parsed.blocks] == ["claim_ledger", "oracle_stamp", "gate"]
    stamp = parsed.blocks[1]
    assert isinstance(stamp, StampBlock) and stamp.result == "PASS"
    assert stamp.span.line == text[: text.index('"oracle_stamp"')].count("\n") + 1


def test_a_gate_object_with_a_reason() -> None:
    parsed = parse('{"gate": {"gate": "blocked", "reason": "no credentials"}}')
    assert parsed.errors == []
    (gate,) = parsed.blocks
    assert isinstance(gate, GateBlock) and (gate.gate, gate.reason) == ("BLOCKED", "no credentials")
    assert parse('{"gate": {"reason": "x"}}').errors[0].message.startswith("unknown gate")


def test_unknown_key_of_a_block_object_is_a_warning() -> None:
    parsed = parse('{"claim_ledger": {"claims": []}, "note": "x"}')
    assert [b.kind for b in parsed.blocks] == ["claim_ledger"]
    (warning,) = parsed.diagnostics
    assert warning.severity == "warning" and "note" in warning.message


def test_yaml_object_form_with_quoted_keys() -> None:
    same_as_canonical(
        """\
        claim_ledger:
          "claims":
            - "id": C1
              'text': "open window uses chars/4"
              "oracle": "pytest -q"
          "premises_for_plan": ["C1"]
          "open_questions": []
        """
    )
    same_as_canonical(
        'claim_ledger: {"claims": [{"id": "C1", "text": "open window uses chars/4", '
        '"oracle": "pytest -q"}], "premises_for_plan": ["C1"], "open_questions": []}\n'
    )


def test_json_in_a_code_fence_of_another_language_is_an_example() -> None:
    text = '```python\n{"claim_ledger": {"claims": []}}\n```\n'
    assert parse(text) == ParsedMessage()


def test_yaml_null_stays_text_outside_the_json_form() -> None:
    ledger = the_ledger("claim_ledger: {claims: [{id: C1, oracle: null}]}\n")
    assert ledger.claims[0].oracle == "null"


def test_question_is_not_taken_from_prose_or_decorations() -> None:
    for text in ("Question: is it done?", "**Question:** is it done?", "**question:** why"):
        assert parse(text).blocks == []


# --------------------------------------------------------------------------- looks like


def _only_error(text: str) -> tuple[int, int, str]:
    parsed = parse(text)
    assert parsed.blocks == [], parsed.blocks
    (error,) = parsed.errors
    return error.line, error.column, error.message


def test_ledger_keys_without_the_keyword() -> None:
    line, column, message = _only_error(
        "My ledger:\n\n```yaml\nclaims:\n  - id: C1\npremises_for_plan: [C1]\n```\n"
    )
    assert (line, column) == (4, 1)
    assert message.startswith("this looks like a claim_ledger but has no 'claim_ledger:'")


def test_keys_without_the_keyword_in_json() -> None:
    line, column, _ = _only_error('Ledger:\n  "premises_for_plan": ["C1"]\n')
    assert (line, column) == (2, 3)


def test_a_keyword_without_its_colon() -> None:
    for text in ("claim_ledger = {'claims': []}", "oracle_stamp = C1 PASS", "claim_ledger"):
        line, column, message = _only_error("Prose.\n" + text + "\n")
        assert (line, column) == (2, 1)
        assert message.startswith("this looks like a")


def test_a_heading_without_a_block_after_it() -> None:
    line, _, message = _only_error("# Plan\n\n## Claim Ledger\n\n- C1 is Hypothetical\n")
    assert line == 3 and "heading" in message
    parsed = parse("## Claim ledger\n\n```yaml\nclaim_ledger:\n  claims: []\n```\n")
    assert parsed.errors == [] and [b.kind for b in parsed.blocks] == ["claim_ledger"]


def test_prose_that_merely_mentions_the_words_is_not_suspect() -> None:
    for text in (
        "Open questions: none.",
        "Claims: the window code is fine.",
        "claims: [x]",
        "The claim_ledger is below.",
        "Gates: none",
    ):
        assert parse(text + "\n") == ParsedMessage(), text


def test_unclosed_quote_is_reported_at_its_own_line() -> None:
    text = CANONICAL.replace('"open window uses chars/4"', '"open window uses chars/4')
    line, column, message = _only_error(text)
    assert (line, column) == (4, 13)
    assert "unterminated double-quoted value" in message and "line 5" in message


def test_unclosed_quote_in_an_inline_stamp_is_reported_at_its_line() -> None:
    line, column, _ = _only_error(f'oracle_stamp: claim_id=C1 evidence_ref="{EV}\nprose "after"\n')
    assert (line, column) == (1, 40)


def test_quote_continued_deeper_than_its_key_still_folds() -> None:
    ledger = the_ledger('claim_ledger:\n  claims:\n    - id: C1\n      text: "a\n        b"\n')
    assert ledger.claims[0].text == "a b"


def test_every_new_form_is_announced_by_the_cheap_check() -> None:
    for text in (
        "**Claim_Ledger:**",
        '{"claim_ledger": {}}',
        '{\n  "claim_ledger": {}\n}',
        "## Claim ledger",
        "claims:",
        '  "done_when": []',
        "**gate:** G4",
        "question: why?",
    ):
        assert may_contain_blocks(text), text
    assert not may_contain_blocks("The question: why? And the gate: closed.")


# --------------------------------------------------------------------------- properties


def _json_form(block: LedgerBlock, data: st.DataObject) -> str:
    draw = data.draw

    def claim(c: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"id": c.id}
        for key in ("text", "status", "falsifier", "oracle", "expect", "observe", "reason"):
            value = getattr(c, key)
            if value is not None:
                out[key] = value
            elif draw(st.booleans()):
                out[key] = None  # JSON null: no value
        if c.evidence is not None:
            out["evidence"] = c.evidence
        out.update(c.extra)
        return out

    body: dict[str, Any] = {"claims": [claim(c) for c in block.claims]}
    for key in ("premises_for_plan", "open_questions", "done_when"):
        ids = getattr(block, key)
        if ids or draw(st.booleans()):
            body[key] = ids
    body.update(block.extra)
    indent = draw(st.sampled_from([None, 2, 4]))
    text = json.dumps({"claim_ledger": body}, indent=indent, ensure_ascii=draw(st.booleans()))
    return draw(st.sampled_from(["", "```json\n", "```\n"])) + text + "\n```\n"


_KEY_LINE = re.compile(r"^( *(?:- )?)([A-Za-z_][A-Za-z0-9_.-]*):(?= |$)")


def _decorated(canonical: str, data: st.DataObject, known: frozenset[str]) -> str:
    """Each key line of the canonical text in a form models write (same meaning)."""
    draw = data.draw
    out = []
    for line in canonical.split("\n"):
        match = _KEY_LINE.match(line)
        if match is None:
            out.append(line)
            continue
        lead, key = match.groups()
        name = key
        if key in known and draw(st.booleans()):
            name = draw(st.sampled_from([key.upper(), key.title(), key.capitalize()]))
        style = draw(st.sampled_from(["{}:", "**{}**:", "**{}:**", "`{}`:", '"{}":']))
        out.append(lead + style.format(name) + line[match.end() :])
    return "\n".join(out)


KNOWN = frozenset(
    {"claim_ledger", "claims", "premises_for_plan", "open_questions", "done_when"}
    | {"id", "text", "status", "falsifier", "oracle", "expect", "observe", "reason", "evidence"}
)


@settings(max_examples=100, deadline=None)
@given(LEDGERS, st.data())
def test_every_variant_yields_the_canonical_model(block: LedgerBlock, data: st.DataObject) -> None:
    canonical = render_ledger(block)
    expected = without_spans(the_ledger(canonical))
    assert expected == without_spans(block)
    variants = [
        _json_form(block, data),
        _decorated(canonical, data, KNOWN),
    ]
    for text in variants:
        parsed = parse_message(text)
        assert parsed.errors == [], (text, parsed.errors)
        ledgers = [b for b in parsed.blocks if isinstance(b, LedgerBlock)]
        assert len(ledgers) == 1, text
        assert without_spans(ledgers[0]) == expected, text


VARIANT_NOISE = st.lists(
    st.sampled_from(
        [
            "**",
            "`",
            '"',
            "{",
            "}",
            "[",
            "]",
            ":",
            ", ",
            "\n",
            "  ",
            "- ",
            "#",
            "null",
            "claim_ledger",
            "Claim Ledger",
            "claims",
            "premises_for_plan",
            "id",
            "C1",
            "```json\n",
            "```\n",
            '{"claim_ledger": ',
            '"claims": [',
            '{"id": "C1"}',
            "gate",
            "question",
            "oracle_stamp",
            "\\u12",
            "é",
        ]
    ),
    max_size=50,
).map("".join)


@settings(max_examples=300)
@given(VARIANT_NOISE)
def test_no_variant_noise_crashes_and_diagnostics_point_inside(text: str) -> None:
    check_total(text)


# --------------------------------------------------------------------------- hostile input


def test_yaml_tags_anchors_and_aliases_stay_text_and_no_yaml_library_loads() -> None:
    code = textwrap.dedent(
        """\
        import sys
        from infomark.ledger.parse.parser import parse_message
        text = (
            "claim_ledger:\\n"
            "  claims:\\n"
            "    - id: C1\\n"
            "      text: !!python/object/apply:os.system ['touch pwned']\\n"
            "      reason: &a [*a, *a, *a]\\n"
            "      evidence: !!binary aGVsbG8=\\n"
        )
        parsed = parse_message(text)
        assert parsed.errors == [], parsed.errors
        claim = parsed.blocks[0].claims[0]
        assert claim.text == "!!python/object/apply:os.system ['touch pwned']", claim.text
        assert claim.reason == "&a [*a, *a, *a]", claim.reason
        assert claim.evidence == "!!binary aGVsbG8=", claim.evidence
        assert "yaml" not in sys.modules and "ruamel" not in sys.modules
        """
    )
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_flood_of_lookalikes_is_bounded() -> None:
    text = "claim_ledger = nothing\n" * 20_000
    parsed = parse_message(text)
    assert parsed.blocks == []
    assert len(parsed.diagnostics) <= 201
    assert "more diagnostics" in parsed.diagnostics[-1].message
