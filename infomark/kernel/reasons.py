"""Stable reason codes. Outside checks and other integrations rely on these strings."""

from __future__ import annotations

from infomark.kernel.enums import StrEnum

__all__ = ["AttestRefusal", "RejectReason", "RunReason"]


class RejectReason(StrEnum):
    """Why a stamp or divergence was rejected. Exactly one code per rejection."""

    MISSING_EVIDENCE = "missing_evidence"  # legacy `oracle_stamp: C1 PASS`, or no evidence_ref
    UNKNOWN_EVIDENCE = "unknown_evidence"  # never issued by this registry
    TAMPERED_EVIDENCE = "tampered_evidence"  # stored record whose MAC no longer matches
    FOREIGN_EVIDENCE = "foreign_evidence"  # issued to another session
    INELIGIBLE_EVIDENCE = "ineligible_evidence"  # evidence class cannot back this stamp
    FAILED_EVIDENCE = "failed_evidence"  # outcome contradicts the stamped result
    UNKNOWN_CLAIM = "unknown_claim"
    MISSING_FALSIFIER = "missing_falsifier"
    MISSING_ORACLE = "missing_oracle"
    ORACLE_MISMATCH = "oracle_mismatch"
    EVIDENCE_PREDATES_CLAIM = "evidence_predates_claim"
    CONTENT_MISMATCH = "content_mismatch"
    WEAK_ORACLE = "weak_oracle"  # the oracle cannot fail, masks failure or selects nothing
    ORACLE_NOT_ALLOWED = "oracle_not_allowed"  # the operator's [oracles] allow list excludes it
    SELF_GRADED = "self_graded"  # a grading file changed since the claim was declared
    UNPAIRED_RECORD = "unpaired_record"  # a record named no pending authorized call
    REPEATED_RECORD = "repeated_record"  # a second record for an already recorded call
    EXPECTATION_MISMATCH = "expectation_mismatch"  # EXPECTED_FAIL on a claim that expects a pass
    EVIDENCE_NOT_NAMED = "evidence_not_named"  # inference evidence the claim does not name
    BACKGROUND_RUN = "background_run"  # a background run has no outcome yet
    WRONG_DIRECTORY = "wrong_directory"  # the run happened in another working directory
    DELEGATED_EVIDENCE = "delegated_evidence"  # a sub-agent's answer: may falsify, never stamp
    UNSANDBOXED_RUN = "unsandboxed_run"  # the agent's own run, while its commands had no sandbox

    @property
    def hint(self) -> str:
        """One sentence telling the agent how to fix it."""
        return _HINTS[self]


_HINTS: dict[RejectReason, str] = {
    RejectReason.MISSING_EVIDENCE: (
        "copy evidence_ref=ev_… from a result's tag; a bare `oracle_stamp: C1 PASS` "
        "is self-certification"
    ),
    RejectReason.UNKNOWN_EVIDENCE: "never issued; copy it exactly from a tool result tag",
    RejectReason.TAMPERED_EVIDENCE: "the stored evidence no longer verifies; run the check again",
    RejectReason.FOREIGN_EVIDENCE: "issued to another session; run the check in this session",
    RejectReason.INELIGIBLE_EVIDENCE: (
        "oracle_stamp needs a command run, inference_stamp a run or a read, source_stamp a "
        "page fetch; a page backs no other stamp"
    ),
    RejectReason.FAILED_EVIDENCE: (
        "the outcome contradicts the result: fix and re-run, or stamp what the evidence shows"
    ),
    RejectReason.UNKNOWN_CLAIM: "declare the claim in a claim_ledger before stamping it",
    RejectReason.MISSING_FALSIFIER: "give the claim a falsifier: what observation would refute it",
    RejectReason.MISSING_ORACLE: "declare `oracle:` (the command that decides it), then run it",
    RejectReason.ORACLE_MISMATCH: "run exactly the declared oracle, then stamp that run",
    RejectReason.EVIDENCE_PREDATES_CLAIM: "the run predates the claim's oracle; run it again now",
    RejectReason.CONTENT_MISMATCH: "the artifact changed since that hash; re-run the check on it",
    RejectReason.WEAK_ORACLE: (
        "use an oracle that can fail: no `|| true`, `exit 0`, empty selection or infomark call"
    ),
    RejectReason.ORACLE_NOT_ALLOWED: "declare one of the oracles the operator allows",
    RejectReason.SELF_GRADED: "a test file changed since the claim; restore it or ask the user",
    RejectReason.UNPAIRED_RECORD: "only results of calls infomark authorized become evidence",
    RejectReason.REPEATED_RECORD: "a call is recorded exactly once",
    RejectReason.EXPECTATION_MISMATCH: "result=EXPECTED_FAIL needs `expect: FAIL` on the claim",
    RejectReason.EVIDENCE_NOT_NAMED: "use a run of the claim's oracle or a Read of its `observe:`",
    RejectReason.BACKGROUND_RUN: "a background run has no outcome; run it in the foreground",
    RejectReason.WRONG_DIRECTORY: "run the oracle from the project root",
    RejectReason.UNSANDBOXED_RUN: (
        "the agent's commands run outside the OS sandbox, so its own runs ground nothing; "
        "`infomark check <claim>` runs the oracle in infomark's sandbox (the user turns the "
        "agent's sandbox on as the SessionStart warning says)"
    ),
    RejectReason.DELEGATED_EVIDENCE: (
        "a sub-agent's answer may back a divergence_event, never a stamp; run the check yourself"
    ),
}


class RunReason(StrEnum):
    """Why an attested run cannot ground a claim: what the runner's own report showed
    (``infomark.tools.attest_report.judge``). Exactly one code per judgement."""

    NO_TESTS_RAN = "no_tests_ran"  # the runner's report counts no test that ran
    FEWER_TESTS = "fewer_tests"  # fewer tests collected than at the baseline
    NAMED_TEST_NOT_RUN = "named_test_not_run"  # a test the claim names is missing or skipped
    COLLECTION_ERROR = "collection_error"  # a test file failed to import or collect
    MASKED_FAILURE = "masked_failure"  # exit 0 while the report counts failures
    ORACLE_CANNOT_FAIL = "oracle_cannot_fail"  # passes on the baseline where the claim expects FAIL
    RUNNER_TAMPERED = "runner_tampered"  # the runner was patched, or its counts disagree

    @property
    def hint(self) -> str:
        """One sentence telling the agent how to fix it."""
        return _RUN_HINTS[self]


_RUN_HINTS: dict[RunReason, str] = {
    RunReason.NO_TESTS_RAN: (
        "declare an oracle that selects the tests the claim is about (a test file or node id)"
    ),
    RunReason.FEWER_TESTS: "undo the change that keeps tests from being collected, then re-run",
    RunReason.NAMED_TEST_NOT_RUN: (
        "make the named test run (no skip marker, right node id), or name a test that exists"
    ),
    RunReason.COLLECTION_ERROR: "fix the import or syntax error the report names, then re-run",
    RunReason.MASKED_FAILURE: (
        "declare the test command itself as the oracle, without `|| true`, `; exit 0` or the like"
    ),
    RunReason.ORACLE_CANNOT_FAIL: (
        "declare an oracle that fails before the fix: a test that reproduces the bug"
    ),
    RunReason.RUNNER_TAMPERED: (
        "remove the code that replaces the test runner's functions or hooks (named), then re-run"
    ),
}


class AttestRefusal(StrEnum):
    """Why infomark would not start an attested run at all (``infomark.tools.attest.run``):
    the run could not be trusted before it began. Exactly one code per refusal; its hint is
    the one next step, which is the operator's or the user's, never the agent's alone."""

    NO_SANDBOX = "no_sandbox"  # no sandbox can run on this machine
    BASELINE_UNUSABLE = "baseline_unusable"  # none recorded, or its record is damaged
    BASELINE_LATE = "baseline_late"  # the project's record was taken after a change
    BASELINE_AFTER_CHANGE = "baseline_after_change"  # this session's, after its first change
    ENVIRONMENT_CHANGED = "environment_changed"  # .venv & co differ from the baseline's

    @property
    def hint(self) -> str:
        """One sentence: the next step that works."""
        return _REFUSAL_HINTS[self]


_ACCEPT = (
    "the user looks at the tree (`git status`, `git diff`) and accepts it with "
    "`infomark approve --baseline`"
)
_REFUSAL_HINTS: dict[AttestRefusal, str] = {
    AttestRefusal.NO_SANDBOX: (
        "ask the operator to install bubblewrap (`infomark doctor` says what is missing)"
    ),
    AttestRefusal.BASELINE_UNUSABLE: _ACCEPT,
    AttestRefusal.BASELINE_LATE: _ACCEPT,
    AttestRefusal.BASELINE_AFTER_CHANGE: (
        "start a new session, which records its baseline before its first action"
    ),
    AttestRefusal.ENVIRONMENT_CHANGED: _ACCEPT,
}
