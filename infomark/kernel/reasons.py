"""Stable reason codes. Outside checks and other integrations rely on these strings."""

from __future__ import annotations

import enum

__all__ = ["RejectReason"]


class RejectReason(enum.StrEnum):
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
    DELEGATED_EVIDENCE = "delegated_evidence"  # a sub-agent's answer: may falsify, never stamp
    # web sources (source_stamp, docs/blocks.md#source_stamp)
    NOT_WEB_EVIDENCE = "not_web_evidence"  # a source_stamp on evidence that fetched no page
    SEARCH_SNIPPET = "search_snippet"  # a search result page: snippets ground nothing
    WEB_EVIDENCE = "web_evidence"  # an oracle/inference stamp on a page (or a local copy)
    RANK_ABOVE_SOURCE = "rank_above_source"  # the claim already ranks above what a page gives

    @property
    def hint(self) -> str:
        """One sentence telling the agent how to fix it."""
        return _HINTS[self]


_HINTS: dict[RejectReason, str] = {
    RejectReason.NOT_WEB_EVIDENCE: "stamp the evidence of the fetch itself (WebFetch, fetch, curl)",
    RejectReason.SEARCH_SNIPPET: "a search result grounds nothing; fetch the page, stamp that",
    RejectReason.WEB_EVIDENCE: "a page backs a claim only through source_stamp",
    RejectReason.RANK_ABOVE_SOURCE: "a page never lowers a claim another stamp ranks higher",
    RejectReason.MISSING_EVIDENCE: (
        "give evidence_ref=ev_… copied from an [infomark evidence_ref=…] tag; "
        "a bare `oracle_stamp: C1 PASS` is self-certification"
    ),
    RejectReason.UNKNOWN_EVIDENCE: (
        "that evidence_ref was never issued; copy it exactly from a tool result tag"
    ),
    RejectReason.TAMPERED_EVIDENCE: "the stored evidence no longer verifies; run the check again",
    RejectReason.FOREIGN_EVIDENCE: (
        "that evidence belongs to another session; run the check in this session"
    ),
    RejectReason.INELIGIBLE_EVIDENCE: (
        "oracle_stamp needs execution evidence (a command run); inference_stamp needs "
        "observation or execution evidence; web results back neither"
    ),
    RejectReason.FAILED_EVIDENCE: (
        "the evidence outcome contradicts the stamped result; fix the code and re-run, "
        "or stamp the result the evidence shows"
    ),
    RejectReason.UNKNOWN_CLAIM: "declare the claim in a claim_ledger block before stamping it",
    RejectReason.MISSING_FALSIFIER: "give the claim a falsifier: what observation would refute it",
    RejectReason.MISSING_ORACLE: (
        "declare `oracle:` on the claim (the exact command that decides it), then run it"
    ),
    RejectReason.ORACLE_MISMATCH: "run exactly the declared oracle command, then stamp that run",
    RejectReason.EVIDENCE_PREDATES_CLAIM: (
        "the run happened before the claim declared its oracle; run the oracle again now"
    ),
    RejectReason.CONTENT_MISMATCH: (
        "the artifact changed since the hash you gave; re-run the check on the current file"
    ),
    RejectReason.DELEGATED_EVIDENCE: (
        "a sub-agent's or model call's answer is hearsay: it may back a divergence_event, "
        "never a stamp; run the check yourself and stamp that run"
    ),
}
