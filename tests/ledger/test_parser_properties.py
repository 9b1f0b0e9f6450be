"""Properties of the block parser: render round-trips, totality, sane diagnostics."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any, Literal

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from infomark.ledger.blocks import (
    Block,
    ClaimBlock,
    DivergenceBlock,
    GateBlock,
    LedgerBlock,
    ParsedMessage,
    QuestionBlock,
    Span,
    StampBlock,
)
from infomark.ledger.parse.locate import locate, locate_blocks, may_contain_blocks
from infomark.ledger.parse.parser import parse_message
from infomark.ledger.render import (
    CLAIM_KEYS,
    DIVERGENCE_KEYS,
    GATE_NAMES,
    LEDGER_ALIASES,
    LEDGER_KEYS,
    STAMP_KEYS,
    render_block,
    render_divergence,
    render_ledger,
    render_question,
    render_stamp,
)

SPAN = Span(line=1, column=1, end_line=1, end_column=1)

# Any code point, lone surrogates included: quotes, colons, newlines, controls, NUL …
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=40)
IDS = st.from_regex(r"[A-Za-z0-9_.-]{1,12}", fullmatch=True)
OPTIONAL_TEXT = st.none() | ANY_TEXT


def extra_keys(known: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.from_regex(r"[A-Za-z_][A-Za-z0-9_.-]{0,10}", fullmatch=True).filter(
        lambda key: key.lower() not in known
    )


def extras(known: tuple[str, ...]) -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(extra_keys(known), ANY_TEXT, max_size=3)


CLAIMS = st.builds(
    ClaimBlock,
    id=IDS,
    text=OPTIONAL_TEXT,
    status=st.none() | st.sampled_from(["Exact", "Inferred", "Hypothetical", "Guess"]) | ANY_TEXT,
    falsifier=OPTIONAL_TEXT,
    oracle=OPTIONAL_TEXT,
    expect=st.none() | st.sampled_from(["PASS", "FAIL"]),
    observe=OPTIONAL_TEXT,
    reason=OPTIONAL_TEXT,
    evidence=OPTIONAL_TEXT,
    extra=extras(CLAIM_KEYS),
    span=st.just(SPAN),
)
LEDGERS = st.builds(
    LedgerBlock,
    claims=st.lists(CLAIMS, max_size=4),
    premises_for_plan=st.lists(IDS, max_size=4),
    open_questions=st.lists(IDS, max_size=4),
    done_when=st.lists(IDS, max_size=4),
    extra=extras((*LEDGER_KEYS, *LEDGER_ALIASES)),
    span=st.just(SPAN),
)
STAMP_KINDS: list[Literal["oracle_stamp", "inference_stamp", "source_stamp"]] = [
    "oracle_stamp",
    "inference_stamp",
    "source_stamp",
]
RESULTS = st.none() | st.sampled_from(["PASS", "FAIL", "EXPECTED_FAIL"])
AUTHORITY = st.none() | st.sampled_from(["primary", "secondary"])


@st.composite
def stamps(draw: st.DrawFn) -> StampBlock:
    kind = draw(st.sampled_from(STAMP_KINDS))
    result = draw(RESULTS) if kind == "oracle_stamp" else None
    authority = draw(AUTHORITY) if kind == "source_stamp" else None
    if kind != "source_stamp" and draw(st.booleans()):
        return StampBlock(kind=kind, claim_id=draw(IDS), result=result, legacy=True, span=SPAN)
    if kind == "source_stamp":
        return StampBlock(
            kind=kind,
            claim_id=draw(IDS),
            evidence_ref=draw(OPTIONAL_TEXT),
            authority=authority,
            extra=draw(extras(STAMP_KEYS[kind])),
            span=SPAN,
        )
    return StampBlock(
        kind=kind,
        claim_id=draw(IDS),
        evidence_ref=draw(OPTIONAL_TEXT),
        result=result,
        layer=draw(OPTIONAL_TEXT),
        artifact=draw(OPTIONAL_TEXT),
        content_hash=draw(OPTIONAL_TEXT),
        extra=draw(extras(STAMP_KEYS[kind])),
        span=SPAN,
    )


DIVERGENCES = st.builds(
    DivergenceBlock,
    claim_id=IDS,
    evidence_ref=OPTIONAL_TEXT,
    extra=extras(DIVERGENCE_KEYS),
    span=st.just(SPAN),
)
GATES = st.builds(
    GateBlock,
    gate=st.sampled_from(sorted(GATE_NAMES)),
    reason=OPTIONAL_TEXT,
    span=st.just(SPAN),
)
QUESTIONS = st.builds(QuestionBlock, text=ANY_TEXT, span=st.just(SPAN))
BLOCKS: st.SearchStrategy[Block] = st.one_of(LEDGERS, stamps(), DIVERGENCES, GATES, QUESTIONS)

WRAPPERS = st.sampled_from(
    [
        ("", ""),
        ("Some prose first.\n\n", "\nAnd after.\n"),
        ("```yaml\n", "```\n"),
        ("```\n", "```\n"),
        ("Intro\r\n", ""),
    ]
)


def without_spans(block: Block) -> dict[str, Any]:
    data = asdict(block)
    del data["span"]
    for claim in data.get("claims", []):
        del claim["span"]
    return data


def only_block(parsed: ParsedMessage) -> Block:
    assert parsed.errors == [], parsed.errors
    assert len(parsed.blocks) == 1, parsed.blocks
    return parsed.blocks[0]


# --------------------------------------------------------------------------- round trips


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(LEDGERS, WRAPPERS)
def test_ledger_round_trips(block: LedgerBlock, wrapper: tuple[str, str]) -> None:
    text = render_ledger(block)
    parsed = parse_message(wrapper[0] + text + wrapper[1])
    assert without_spans(only_block(parsed)) == without_spans(block)


@settings(max_examples=300)
@given(stamps(), WRAPPERS)
def test_stamp_round_trips(block: StampBlock, wrapper: tuple[str, str]) -> None:
    parsed = parse_message(wrapper[0] + render_stamp(block) + wrapper[1])
    assert without_spans(only_block(parsed)) == without_spans(block)


@settings(max_examples=200)
@given(DIVERGENCES)
def test_divergence_round_trips(block: DivergenceBlock) -> None:
    parsed = parse_message(render_divergence(block))
    assert without_spans(only_block(parsed)) == without_spans(block)


@settings(max_examples=100)
@given(st.lists(BLOCKS, min_size=1, max_size=6))
def test_several_rendered_blocks_parse_back_in_order(blocks: list[Block]) -> None:
    message = "\n".join("Prose between blocks.\n" + render_block(b) for b in blocks)
    parsed = parse_message(message)
    assert parsed.errors == []
    assert [without_spans(b) for b in parsed.blocks] == [without_spans(b) for b in blocks]
    starts = [(b.span.line, b.span.column) for b in parsed.blocks]
    assert starts == sorted(starts)


@settings(max_examples=200)
@given(GATES, WRAPPERS)
def test_gate_with_reason_round_trips(block: GateBlock, wrapper: tuple[str, str]) -> None:
    parsed = parse_message(wrapper[0] + render_block(block) + wrapper[1])
    assert without_spans(only_block(parsed)) == without_spans(block)


@settings(max_examples=200)
@given(QUESTIONS, WRAPPERS)
def test_question_round_trips(block: QuestionBlock, wrapper: tuple[str, str]) -> None:
    parsed = parse_message(wrapper[0] + render_question(block) + wrapper[1])
    assert without_spans(only_block(parsed)) == without_spans(block)


# --------------------------------------------------------------------------- totality

FRAGMENTS = st.sampled_from(
    [
        "claim_ledger:",
        "oracle_stamp:",
        "inference_stamp:",
        "source_stamp:",
        "divergence_event:",
        "gate:",
        "gate: G4",
        "gate: BLOCKED",
        " reason=",
        " — ",
        "question:",
        "expect: FAIL",
        "observe:",
        "done_when:",
        "authority=primary",
        "**",
        "`",
        "Claim_Ledger:",
        "**claim_ledger:**",
        "## Claim ledger",
        '{"claim_ledger": ',
        '"claims": ',
        '"id": "C1"',
        "null",
        "```json",
        "claim_ledger =",
        "claims:",
        "premises_for_plan:",
        "open:",
        "- id: C1",
        "- ",
        "-",
        "id:",
        "text:",
        "claim_id=C1",
        "evidence_ref=ev_1",
        "result=PASS",
        "C1 PASS",
        '"',
        "'",
        "\\",
        '\\"',
        "\\u12",
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        ": ",
        "=",
        "|",
        ">",
        "|-",
        ">+2",
        "#",
        "# heading",
        "---",
        "```",
        "```yaml",
        "~~~",
        "\n",
        "\r\n",
        "\r",
        "\t",
        "  ",
        "    ",
        "\x00",
        "\ud800",
        "é",
        "word",
    ]
)
NOISE = st.lists(st.one_of(FRAGMENTS, ANY_TEXT), max_size=60).map("".join)


def check_total(text: str) -> ParsedMessage:
    parsed = parse_message(text)
    assert isinstance(parsed, ParsedMessage)
    lines = text.split("\n")
    line_count = len(lines)
    for diagnostic in parsed.diagnostics:
        assert diagnostic.line >= 1 and diagnostic.column >= 1, diagnostic
        assert diagnostic.line <= line_count, diagnostic
        # the column points into its line (or just past its end)
        assert diagnostic.column <= len(lines[diagnostic.line - 1].rstrip("\r")) + 1, diagnostic
        assert diagnostic.message
    for block in parsed.blocks:
        assert 1 <= block.span.line <= block.span.end_line <= line_count
        assert block.span.column >= 1
    starts = [(b.span.line, b.span.column) for b in parsed.blocks]
    assert starts == sorted(starts)
    return parsed


@settings(max_examples=500)
@given(ANY_TEXT)
def test_parser_never_raises_on_arbitrary_text(text: str) -> None:
    check_total(text)


@settings(max_examples=1000)
@given(NOISE)
def test_parser_never_raises_on_block_like_noise(text: str) -> None:
    check_total(text)


@settings(max_examples=300)
@given(NOISE)
def test_locate_only_finds_what_may_contain_blocks_announces(text: str) -> None:
    found = locate(text)
    assert found.candidates == locate_blocks(text)
    if found.candidates or found.suspects:
        assert may_contain_blocks(text)


@settings(max_examples=200)
@given(BLOCKS, NOISE)
def test_valid_block_survives_malformed_noise_before_it(block: Block, noise: str) -> None:
    # A heading line ends whatever the noise opened (an unclosed quote, list, block scalar …);
    # the block after it must still apply. An unclosed code fence, though, legitimately runs
    # to the end of the message (CommonMark), so fence markers are kept out of the noise.
    assume("```" not in noise and "~~~" not in noise)
    message = noise + "\n\n# Next section\n\n" + render_block(block)
    parsed = check_total(message)
    assert parsed.blocks, parsed.diagnostics
    assert without_spans(parsed.blocks[-1]) == without_spans(block)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(NOISE, min_size=1, max_size=8))
def test_parser_never_raises_on_megabyte_input(pieces: list[str]) -> None:
    unit = "\n".join(pieces) + "\n"
    text = unit * (1_000_000 // len(unit) + 1)
    assert len(text) >= 1_000_000
    check_total(text)


# --------------------------------------------------------------------------- linear time


def test_pathological_inputs_stay_linear() -> None:
    # Each takes ~0.1-0.4 s when every stage is linear, and minutes if one were quadratic.
    cases = [
        'claim_ledger:\n  text: "' + "a\\" * 200_000,
        "claim_ledger:\n  premises: [" + "C1, " * 50_000,
        "claim_ledger:\n" + "  text: 'x\n" * 25_000,
        ("gate: G1\n" + " " * 40 + "gate:\n") * 2_500,
        "x" + " \tgate: G1" * 100_000,
        "claim_ledger:\n  claims:\n" + "    - id: C1\n      text: |\n        body\n" * 2_000,
    ]
    for text in cases:
        started = time.perf_counter()
        check_total(text)
        assert time.perf_counter() - started < 5.0, text[:40]
