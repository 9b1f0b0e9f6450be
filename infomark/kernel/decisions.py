"""Decision codes: the stable ``code`` of every gate decision (integrations match on these).

Standard library only (hot path). The reason text that comes with a code is written for the
agent; the code is written for programs.
"""

from __future__ import annotations

from infomark.kernel.enums import StrEnum

__all__ = ["LEDGER_EXAMPLE", "DecisionCode", "FinishCode"]


class DecisionCode(StrEnum):
    """Why a tool call was allowed, denied or held. Exactly one code per decision."""

    ALLOWED = "allowed"  # the class does not mutate
    SCRATCH = "scratch"  # writes only the agent's own new files or the temp dir
    REVERT = "revert"  # restores files an unannounced mutation changed
    NO_LEDGER = "no_ledger"  # no claim_ledger, or no premises_for_plan
    UNANNOUNCED_MUTATION = "unannounced_mutation"  # a run changed tracked files while ungrounded
    UNGROUNDED_PREMISES = "ungrounded_premises"
    APPROVAL_TURN = "approval_turn"
    GATE_POSITION = "gate_position"
    DESTRUCTIVE = "destructive"
    BYPASS = "bypass"
    GROUNDED = "grounded"
    DRYRUN = "dryrun"
    PROTECTED_HOME = "protected_home"
    PROTECTED_CLI = "protected_cli"
    PROTECTED_CONFIG = "protected_config"
    PROTECTED_INSTALL = "protected_install"  # infomark's own installed files
    PROTECTED_OPAQUE = "protected_opaque"  # the paths a command names cannot be known statically
    PROTECTED_TRANSCRIPT = "protected_transcript"  # the host's transcript, the journal's witness
    PROTECTED_SANDBOX = "protected_sandbox"  # a call that asks to leave the OS sandbox
    GRADING_EDIT = "grading_edit"  # an edit of a declared oracle's test or its configuration
    OPERATOR_APPROVED = "operator_approved"  # a held call the operator approved, run once
    VERIFY = "verify"  # verify profile: edits run ungated; the finish is judged on the checks


class FinishCode(StrEnum):
    """Why a finish was allowed or refused (the first problem found names it)."""

    ALLOWED = "allowed"
    FINISHED_BLOCKED = "finished_blocked"  # the agent declared BLOCKED or asked, after its edits
    SELF_GRADED = "self_graded"  # grading files changed after the claims were declared
    UNGROUNDED_PREMISES = "ungrounded_premises"
    STALE_EVIDENCE = "stale_evidence"  # a stamp predates the last edit
    ORACLE_FAILED = "oracle_failed"  # a stamped oracle failed later
    COMPLETION_WITHOUT_EVIDENCE = "completion_without_evidence"
    REQUIRED_ORACLE = "required_oracle"  # the operator's [oracles] require was not run fresh
    CHECK_FAILED = "check_failed"  # verify profile: a required check's latest run failed
    WEAKENED_CHECKS = "weakened_checks"  # an empty or skipped test, a suppression, a loosened gate
    GATE_POSITION = "gate_position"  # strict: finish only from G9
    REFUSAL_CAP_REACHED = "refusal_cap_reached"  # finished UNVERIFIED through the cap


#: the five-line claim_ledger a denial teaches (parsed by a test, so it stays valid)
LEDGER_EXAMPLE = (
    "claim_ledger:\n"
    "  claims:\n"
    '    - {id: C1, text: "<what this change rests on>", status: Hypothetical,\n'
    '       falsifier: "<what would refute it>", oracle: "<the command that decides it>"}\n'
    "  premises_for_plan: [C1]\n"
)
