"""Pydantic models of the blocks parsed out of assistant text.

These are the parser's output (a boundary), with source spans. The ledger
semantics consume them; nothing here decides anything.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Block",
    "ClaimBlock",
    "Diagnostic",
    "DivergenceBlock",
    "GateBlock",
    "LedgerBlock",
    "ParsedMessage",
    "Span",
    "StampBlock",
]

StampKind = Literal["oracle_stamp", "inference_stamp"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Span(_Frozen):
    """Where something stands in the message: 1-based line and column."""

    line: int
    column: int
    end_line: int
    end_column: int


class Diagnostic(_Frozen):
    """A problem found while parsing. Errors mean the block was not applied."""

    line: int
    column: int
    message: str
    severity: Literal["error", "warning"] = "error"
    expected: list[str] = Field(default_factory=list)
    text: str = ""  # the offending text (truncated to a readable length)
    block: str | None = None  # claim_ledger | oracle_stamp | … when known


class ClaimBlock(_Frozen):
    id: str
    text: str | None = None
    status: str | None = None  # as written; InfoMark.parse() judges it
    falsifier: str | None = None
    oracle: str | None = None
    reason: str | None = None
    evidence: str | None = None
    extra: dict[str, str] = Field(default_factory=dict)  # unknown keys, kept
    span: Span


class LedgerBlock(_Frozen):
    kind: Literal["claim_ledger"] = "claim_ledger"
    claims: list[ClaimBlock] = Field(default_factory=list)
    premises_for_plan: list[str] = Field(default_factory=list)
    open_questions: list[str] = Field(default_factory=list)
    extra: dict[str, str] = Field(default_factory=dict)
    span: Span


class StampBlock(_Frozen):
    kind: StampKind
    claim_id: str | None = None
    evidence_ref: str | None = None
    result: str | None = None  # PASS | FAIL | EXPECTED_FAIL when valid; as written otherwise
    layer: str | None = None
    artifact: str | None = None
    content_hash: str | None = None
    legacy: bool = False  # the short `oracle_stamp: C1 PASS` form
    extra: dict[str, str] = Field(default_factory=dict)
    span: Span


class DivergenceBlock(_Frozen):
    kind: Literal["divergence_event"] = "divergence_event"
    claim_id: str | None = None
    evidence_ref: str | None = None
    extra: dict[str, str] = Field(default_factory=dict)
    span: Span


class GateBlock(_Frozen):
    """A `gate: G4` line: the agent moves its position in the gate machine."""

    kind: Literal["gate"] = "gate"
    gate: str  # normalised upper-case: G0..G9 or a terminal name
    span: Span


Block = Annotated[
    LedgerBlock | StampBlock | DivergenceBlock | GateBlock, Field(discriminator="kind")
]


class ParsedMessage(_Frozen):
    """Every block found in one message, in textual order, plus diagnostics."""

    blocks: list[Block] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]
