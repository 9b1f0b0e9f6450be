"""The records of an attested run's report: how to run it, what it counted, the verdict."""

from __future__ import annotations

from dataclasses import dataclass

from infomark.kernel.reasons import RejectReason, RunReason
from infomark.kernel.runners import ReportFormat, RunnerKind
from infomark.ledger.evidence import Outcome

__all__ = ["Judgement", "PreparedRun", "RunnerReport"]


@dataclass(frozen=True, slots=True)
class PreparedRun:
    """What to add to an attested run so its runner writes a machine-readable report.

    ``argv``: the oracle's argv with the report options added (unchanged when the report comes
    through the environment); ``env``: variables to set (``PYTEST_ADDOPTS``, ``PYTHONPATH``,
    ``INFOMARK_ATTEST_REPORT`` …); ``files``: what ``prepare`` wrote into ``workdir`` (the
    standalone pytest plugin); ``report_path``: where the runner writes; ``readable``: paths
    the sandbox must let the run read (the plugin's directory) and ``writable`` write.
    """

    kind: RunnerKind
    format: ReportFormat
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    workdir: str
    report_path: str
    files: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RunnerReport:
    """What the runner's own report counted (``format`` says which report, or none).

    ``tests``: ``(node id, outcome)`` per test, outcome one of ``passed``, ``failed``,
    ``errors``, ``skipped``, ``xfailed``, ``xpassed``. ``tampered``: the report shows the
    runner was patched or disagrees with itself (``detail`` says how). ``complete``: the
    report reached its end (a run killed or ``os._exit``-ed part way does not).
    """

    format: ReportFormat
    exit_code: int
    collected: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    deselected: int = 0
    xfailed: int = 0
    xpassed: int = 0
    collection_errors: int = 0
    runner_status: int | None = None
    failed_tests: tuple[str, ...] = ()
    tests: tuple[tuple[str, str], ...] = ()
    tampered: bool = False
    detail: str = ""
    complete: bool = True
    notes: tuple[str, ...] = ()

    @property
    def ran(self) -> int:
        """Tests that ran to an outcome (skipped and deselected ones did not)."""
        return self.passed + self.failed + self.errors + self.xfailed + self.xpassed

    def to_dict(self) -> dict[str, object]:
        """The report as the evidence records it (JSON types only)."""
        from dataclasses import fields

        # the fields hold immutable values: no deep copy (``asdict`` walked every test's tuple)
        data: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self)}
        data["format"] = self.format.value
        data["tests"] = [list(t) for t in self.tests]
        data["failed_tests"] = list(self.failed_tests)
        data["notes"] = list(self.notes)
        return data


@dataclass(frozen=True, slots=True)
class Judgement:
    """The outcome of an attested run and, when it cannot ground a claim, why.

    ``outcome``: PASS, FAIL or ERROR (neither: the run shows nothing about the claim);
    ``code``: None for a plain PASS or FAIL, else the reason: :func:`judge` gives a
    :class:`RunReason` (``runner_tampered``, ``no_tests_ran``, ``masked_failure`` …); a
    caller may put a :class:`RejectReason` (``weak_oracle``) in one it builds. ``detail``: one
    sentence naming what was seen.
    """

    outcome: Outcome
    code: RunReason | RejectReason | None
    detail: str
    exit_status_only: bool = False

    @property
    def grounds(self) -> bool:
        """A PASS with no reason against it."""
        return self.outcome is Outcome.PASS and self.code is None
