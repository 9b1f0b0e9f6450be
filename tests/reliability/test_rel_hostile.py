"""Hostile input to the grammar and the ingest path: never an exception, always a located
reason, linear time on inputs that hurt backtracking parsers, and bounded size handling.

Fast: grammar-aware fuzzing, 1 MB inputs, 50 KB vs 400 KB timings of the cheap shapes.
Slow (soak): every shape, through ``Gatekeeper.ingest`` too, and 10 MB inputs.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rel_hostile import BIG_SHAPES, DENSE_SHAPES, MEMORY_BOUND, SHAPES, peak_rss, scaling
from rel_support import examples, run_cli

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.blocks import ClaimBlock, LedgerBlock, ParsedMessage, Span
from infomark.ledger.claims import apply_ledger
from infomark.ledger.engine import Ledger
from infomark.ledger.parse.parser import parse_message
from infomark.ledger.report import IngestReport

# Fragments of the block language and of what breaks naive parsers (no lone surrogates:
# those are D2, tested on their own below).
_FRAGMENTS = [
    "claim_ledger:", "oracle_stamp:", "inference_stamp:", "divergence_event:", "gate:",
    "claims:", "- id: C1", "-", "- ", "text:", "status: Exact", "falsifier: x", "oracle: x",
    "premises_for_plan: [C1]", "open_questions:", "{", "}", "[", "]", ",", ":", '"', "'",
    "\\", "\\u", "\\x4", "\\U0010FFFF", "\\uD83D\\uDE00", "|", ">-", "|+2", "#", "```", "```yaml",
    "```python", "~~~", "---", "claim_id=C1", "evidence_ref=ev_0123456789abcdef01234567",
    "result=PASS", "key=", "=", "\t", "\r", "\x00", "\u2028", "\x85", "é", "\U0001f600",
    "\ufeff", "G4", "SUCCESS", "C1", "ev_", "a" * 300,
]  # fmt: skip
_SPACE = st.sampled_from(["", " ", "  ", "    ", "\t", " \t", "        "])
_LINE = st.tuples(_SPACE, st.lists(st.sampled_from(_FRAGMENTS), max_size=6)).map(
    lambda p: p[0] + " ".join(p[1])
)
MESSAGES = st.tuples(st.lists(_LINE, max_size=25), st.sampled_from(["\n", "\r\n"])).map(
    lambda p: p[1].join(p[0])
)
SURROGATE_FRAGMENTS = st.sampled_from(['"\\ud800"', '"\\udfff x"', "\ud800", "x\udc80y"])


def _check_located(text: str, parsed: ParsedMessage) -> None:
    lines = text.count("\n") + 1
    for d in parsed.diagnostics:
        assert 1 <= d.line <= lines and d.column >= 1, d
        assert d.message.strip(), d
        assert not d.message.startswith("internal parser error"), d.message
    for block in parsed.blocks:
        assert 1 <= block.span.line <= lines, block.span


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(text=MESSAGES)
def test_grammar_fuzz_never_raises_and_locates_every_problem(text: str) -> None:
    _check_located(text, parse_message(text))


@pytest.fixture
def gk(tmp_path: Path) -> Iterator[Gatekeeper]:
    g = Gatekeeper.open(tmp_path / ".infomark", "fuzz", root=tmp_path)
    yield g
    g.close()


def test_ingest_fuzz_never_raises(gk: Gatekeeper) -> None:
    @settings(max_examples=examples(120), suppress_health_check=list(HealthCheck), deadline=None)
    @given(text=MESSAGES)
    def check(text: str) -> None:
        report = gk.ingest(text)
        for d in report.diagnostics:
            assert d["line"] >= 1 and d["column"] >= 1 and d["message"]

    check()


def test_ingest_with_lone_surrogates_never_raises(gk: Gatekeeper) -> None:
    """D2: fails until the journal can store (or the ingest path rejects) lone surrogates."""

    @settings(max_examples=examples(25), suppress_health_check=list(HealthCheck), deadline=None)
    @given(text=MESSAGES, bad=SURROGATE_FRAGMENTS)
    def check(text: str, bad: str) -> None:
        ledger = f"claim_ledger:\n  claims:\n    - id: C1\n      text: {bad}\n"
        gk.ingest(text + "\n" + ledger)

    check()


def test_regression_d2_surrogate_escape_in_a_claim(gk: Gatekeeper) -> None:
    """D2 (deterministic): a YAML escape the parser accepts must not break the journal."""
    text = (
        'claim_ledger:\n  claims:\n    - id: C1\n      text: "a \\ud800 b"\n      status: Guess\n'
    )
    report = gk.ingest(text)  # raises UnicodeEncodeError today
    assert report.ledger_updated or report.diagnostics
    assert gk.audit().verified


# --------------------------------------------------------------------------- big inputs

FAST_BIG = ["prose", "prose with CRLF", "one giant ledger value", "giant claim id",
            "open brackets", "deepening indentation"]  # fmt: skip


@pytest.mark.parametrize("name", FAST_BIG)
def test_one_megabyte_inputs(gk: Gatekeeper, name: str) -> None:
    text = BIG_SHAPES[name](1_000_000)
    assert len(text) >= 900_000
    started = time.perf_counter()
    report = gk.ingest(text)
    assert time.perf_counter() - started < 30
    for d in report.diagnostics:
        assert d["line"] >= 1 and d["column"] >= 1 and d["message"]
    assert gk.audit().verified


def test_cli_ingest_of_invalid_utf8_and_nul(tmp_path: Path) -> None:
    blob = b"prose \xff\xfe\x00 more\r\nclaim_ledger:\r\n  claims:\r\n    - id: C1\x00\r\n\xc3("
    proc = run_cli("ingest", "-", "--json", "--home", str(tmp_path / "h"), stdin=blob)
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr


# --------------------------------------------------------------------------- linear time

FAST_SHAPES = [
    "trailing whitespace", "spaces before a keyword", "open brackets", "backslashes in a quote",
    "keyword-like prose", "dashes on a line", "deepening indentation", "folded plain text",
    "broken escapes", "comment hashes", "fence toggles", "CR-only newlines",
]  # fmt: skip


@pytest.mark.parametrize("name", FAST_SHAPES)
def test_parse_time_is_linear(name: str) -> None:
    s = scaling(parse_message, SHAPES[name])
    assert s.linear(), f"{name}: {s!r}"


def _claims_block(n: int, *, dup: bool) -> LedgerBlock:
    span = Span(line=1, column=1, end_line=1, end_column=1)
    ids = [f"C{i}" for i in range(n // 2 if dup else n)]
    claims = [ClaimBlock(id=c, status="Exact", span=span) for c in (ids + ids if dup else ids)]
    return LedgerBlock(claims=claims, premises_for_plan=[], open_questions=[], span=span)


@pytest.mark.parametrize("dup", [False, True], ids=["unique-exact", "duplicate-ids"])
def test_regression_d6_ledger_semantics_are_linear_in_claims(tmp_path: Path, dup: bool) -> None:
    """D6: apply_ledger is quadratic (list scans per claim); fails until it is linear.

    8x the claims: linear work takes ~8x the CPU time, quadratic ~64x. The small size takes
    only ~10 ms, so one slow sample moved the ratio past 12 now and then (seen at 12.0 on a
    linear tree): each size keeps the best of five, and the bound is 16, far below 64."""
    timings = []
    for n in (1_000, 8_000):
        block = _claims_block(n, dup=dup)
        with Ledger(tmp_path / f"h{n}", "s", root=tmp_path) as led, led.transaction():
            best = float("inf")
            for _ in range(5):
                gc.collect()
                gc.disable()  # CPU time with the GC paused: see rel_hostile._best
                try:
                    t0 = time.process_time()
                    apply_ledger(led, block, IngestReport())
                    best = min(best, time.process_time() - t0)
                finally:
                    gc.enable()
        timings.append(best)
    ratio = timings[1] / timings[0]
    assert ratio <= 16, f"1k claims {timings[0]:.3f}s, 8k claims {timings[1]:.3f}s ({ratio:.0f}x)"


def test_regression_d11_memory_per_message_byte_is_bounded() -> None:
    """D11: every unknown key of a stamp becomes a ~3.7 KB diagnostic, all kept: a 2 MB
    message of `a=b` pairs peaks at 1.9 GB (a 10 MB HTTP body would need ~9 GB)."""
    size = 250_000
    result = peak_rss(SHAPES["inline pairs"](size))
    assert result.get("error") is None, result
    growth_kb = int(result["peak_kb"]) - int(result["base_kb"])
    assert growth_kb * 1024 <= MEMORY_BOUND * size, f"+{growth_kb / 1024:.0f} MiB for 250 KB"


# --------------------------------------------------------------------------- soak


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_soak_parse_and_ingest_time_is_linear(gk: Gatekeeper, name: str) -> None:
    parse = scaling(parse_message, SHAPES[name])
    ingest = scaling(gk.ingest, SHAPES[name], runs=2)
    assert parse.linear() and ingest.linear(), f"{name}: parse {parse!r}, ingest {ingest!r}"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BIG_SHAPES))
def test_soak_ten_megabyte_inputs(name: str) -> None:
    size = 10_000_000
    result = peak_rss(BIG_SHAPES[name](size))
    assert result.get("error") is None, result
    growth_kb = int(result["peak_kb"]) - int(result["base_kb"])
    assert growth_kb * 1024 <= MEMORY_BOUND * size, result


@pytest.mark.slow
@pytest.mark.parametrize("name", DENSE_SHAPES)
def test_soak_memory_of_dense_one_megabyte_messages(name: str) -> None:
    """Known failure: 'inline pairs' (D11)."""
    size = 1_000_000
    result = peak_rss(SHAPES[name](size))
    assert result.get("error") is None, result
    growth_kb = int(result["peak_kb"]) - int(result["base_kb"])
    assert growth_kb * 1024 <= MEMORY_BOUND * size, f"+{growth_kb / 1024:.0f} MiB"
