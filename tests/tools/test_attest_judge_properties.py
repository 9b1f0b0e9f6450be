"""``judge``'s security properties over every report (Hypothesis): what can never be a PASS."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from infomark.kernel.reasons import RunReason
from infomark.kernel.runners import ReportFormat
from infomark.ledger.evidence import Outcome
from infomark.tools.attest_report import RunnerReport, judge

counts = st.integers(min_value=0, max_value=5)
names = st.lists(st.sampled_from(["t.py::a", "t.py::b", "t.py::c[1]", "u.py::d"]), max_size=3)
reports = st.builds(
    RunnerReport,
    format=st.sampled_from(list(ReportFormat)),
    exit_code=st.sampled_from([0, 1, 2, 5, 137]),
    collected=counts,
    passed=counts,
    failed=counts,
    errors=counts,
    skipped=counts,
    deselected=counts,
    xfailed=counts,
    xpassed=counts,
    collection_errors=st.integers(min_value=0, max_value=2),
    tests=st.lists(
        st.tuples(
            st.sampled_from(["t.py::a", "t.py::b", "t.py::c[1]"]),
            st.sampled_from(["passed", "failed", "skipped", "xfailed", "errors"]),
        ),
        max_size=4,
    ).map(tuple),
    tampered=st.booleans(),
    complete=st.booleans(),
)
expects = st.sampled_from([Outcome.PASS, Outcome.FAIL])


@given(reports, st.sampled_from([0, 1, 2, 5]), st.none() | reports, expects, names)
def test_never_a_grounding_pass_when_the_report_says_otherwise(
    report: RunnerReport,
    exit_code: int,
    baseline: RunnerReport | None,
    expect: Outcome,
    named: list[str],
) -> None:
    got = judge(report, exit_code, baseline=baseline, expect=expect, named_tests=named)
    if not got.grounds:
        return
    assert exit_code == 0
    assert not report.tampered
    assert expect is Outcome.PASS
    if report.format is not ReportFormat.EXIT_STATUS:
        assert report.ran > 0  # never PASS with no test that ran
        assert report.failed == report.errors == report.collection_errors == 0  # nor failures
        assert (
            baseline is None
            or report.collected >= baseline.collected
            or (baseline.format is not report.format)
        )
        for name in named:
            hits = [o for n, o in report.tests if n == name or n.startswith(name + "::")]
            assert any(o not in ("skipped", "xfailed") for o in hits)
    else:
        assert got.exit_status_only


@given(reports, st.sampled_from([0, 1]))
def test_failures_in_a_report_are_never_pass(report: RunnerReport, exit_code: int) -> None:
    if report.format is ReportFormat.EXIT_STATUS or report.tampered:
        return
    if report.failed + report.errors + report.collection_errors == 0:
        return
    got = judge(report, exit_code)
    assert got.outcome is not Outcome.PASS
    if exit_code == 0 and not (report.format is ReportFormat.PYTEST_PLUGIN and not report.complete):
        assert got.code is RunReason.MASKED_FAILURE


@given(reports, st.sampled_from([0, 1]))
def test_a_tampered_report_is_runner_tampered(report: RunnerReport, exit_code: int) -> None:
    if not report.tampered:
        return
    got = judge(report, exit_code)
    assert (got.outcome, got.code) == (Outcome.ERROR, RunReason.RUNNER_TAMPERED)


def test_expect_must_be_pass_or_fail() -> None:
    import pytest

    with pytest.raises(ValueError, match="PASS or FAIL"):
        judge(RunnerReport(format=ReportFormat.EXIT_STATUS, exit_code=0), 0, expect=Outcome.ERROR)


def test_every_run_reason_is_documented_with_its_outcome() -> None:
    from pathlib import Path

    from infomark.kernel.reasons import RunReason

    text = (Path(__file__).resolve().parents[2] / "docs" / "gates.md").read_text("utf-8")
    start = text.index("| code | outcome | when |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[1].strip().strip("`"))
    assert sorted(rows) == sorted(r.value for r in RunReason)
    for reason in RunReason:
        assert reason.hint.strip() and "\n" not in reason.hint


def test_named_tests_match_from_the_root_or_the_rootdir() -> None:
    from infomark.tools.attest_report import named_in

    report = RunnerReport(
        format=ReportFormat.PYTEST_PLUGIN,
        exit_code=0,
        collected=2,
        passed=1,
        skipped=1,
        tests=(("tests/test_a.py::test_x[1]", "passed"), ("tests/test_a.py::T::test_y", "skipped")),
    )
    assert named_in(report, "sub/tests/test_a.py::test_x") == [
        ("tests/test_a.py::test_x[1]", "passed")
    ]
    assert len(named_in(report, "tests/test_a.py")) == 2
    assert named_in(report, "tests/test_a.py::test_xy") == []
    got = judge(report, 0, named_tests=["tests/test_a.py::T"])
    assert got.code is RunReason.NAMED_TEST_NOT_RUN and "skipped" in got.detail
