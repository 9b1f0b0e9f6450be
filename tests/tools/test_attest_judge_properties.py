"""``judge``'s security properties over every report (Hypothesis): what can never be a PASS."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from infomark.kernel.reasons import RejectReason
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
        assert got.code is RejectReason.MASKED_FAILURE


@given(reports, st.sampled_from([0, 1]))
def test_a_tampered_report_is_runner_tampered(report: RunnerReport, exit_code: int) -> None:
    if not report.tampered:
        return
    got = judge(report, exit_code)
    assert (got.outcome, got.code) == (Outcome.ERROR, RejectReason.RUNNER_TAMPERED)


def test_expect_must_be_pass_or_fail() -> None:
    import pytest

    with pytest.raises(ValueError, match="PASS or FAIL"):
        judge(RunnerReport(format=ReportFormat.EXIT_STATUS, exit_code=0), 0, expect=Outcome.ERROR)
