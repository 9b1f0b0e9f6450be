"""The block vocabulary and the records of blocks parsed out of assistant text.

The vocabulary (block keywords, keys and their aliases, result and authority
words, stamp kinds, gate names, id and key patterns) is written here once; the
parser and the renderer import it. The records are the parser's output, with
source spans: frozen, slotted, keyword-only dataclasses (``kernel/records.py``,
so a hook process that parses a block defines them in well under a millisecond;
``asdict`` gives their plain data). The ledger semantics consume them; nothing
here decides anything.
"""

from __future__ import annotations

from infomark.kernel.errors import BlockSyntaxError
from infomark.kernel.graph import DEFAULT_GRAPH, TERMINALS
from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.records import asdict, dataclass, field
from infomark.ledger.parse.locate import BLOCK_KEYWORDS
from infomark.ledger.parse.locate_keys import is_key

__all__ = [
    "AUTHORITIES",
    "BLOCK_KEYWORDS",
    "CLAIM_ID_PATTERN",
    "CLAIM_KEYS",
    "DIVERGENCE_KEYS",
    "EXPECTATIONS",
    "GATE_NAMES",
    "KEY_PATTERN",
    "LEDGER_ALIASES",
    "LEDGER_KEYS",
    "RESULTS",
    "STAMP_KEYS",
    "STAMP_KINDS",
    "Block",
    "ClaimBlock",
    "Diagnostic",
    "DivergenceBlock",
    "GateBlock",
    "LedgerBlock",
    "ParsedMessage",
    "QuestionBlock",
    "Span",
    "StampBlock",
    "StampKind",
    "is_claim_id",
    "is_key",
]

# --------------------------------------------------------------------------- vocabulary

CLAIM_ID_PATTERN = lazy_compile(r"[A-Za-z0-9_.-]+")
"""A claim id, in full (use ``fullmatch``); the parser uses :func:`is_claim_id`."""

KEY_PATTERN = lazy_compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
"""A mapping key, in full (use ``fullmatch``); the parser uses :func:`is_key`."""

_CLAIM_ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"


def is_claim_id(text: str) -> bool:
    """``CLAIM_ID_PATTERN.fullmatch(text)``, without compiling it (a hook parses once)."""
    return bool(text) and not text.strip(_CLAIM_ID_CHARS)


CLAIM_KEYS: tuple[str, ...] = (
    "id",
    "text",
    "status",
    "falsifier",
    "oracle",
    "expect",
    "observe",
    "reason",
    "evidence",
)
"""The keys of one claim, in canonical order."""

LEDGER_KEYS: tuple[str, ...] = ("claims", "premises_for_plan", "open_questions", "done_when")
"""The keys of a ``claim_ledger``, in canonical order."""

LEDGER_ALIASES: dict[str, str] = {"premises": "premises_for_plan", "open": "open_questions"}
"""Short spellings of ledger keys."""

TYPE_CHECKING = False  # not typing's: the hook path never imports typing
if TYPE_CHECKING:
    from typing import Any, Literal, TypeAlias

    StampKind: TypeAlias = Literal["oracle_stamp", "inference_stamp", "source_stamp"]
else:
    StampKind = str
STAMP_KINDS: tuple[StampKind, ...] = ("oracle_stamp", "inference_stamp", "source_stamp")

STAMP_KEYS: dict[str, tuple[str, ...]] = {
    "oracle_stamp": ("claim_id", "evidence_ref", "result", "layer", "artifact", "content_hash"),
    "inference_stamp": ("claim_id", "evidence_ref", "layer", "artifact", "content_hash"),
    "source_stamp": ("claim_id", "evidence_ref", "authority"),
}
"""The keys each stamp kind takes, in canonical order."""

DIVERGENCE_KEYS: tuple[str, ...] = ("claim_id", "evidence_ref")

RESULTS: frozenset[str] = frozenset({"PASS", "FAIL", "EXPECTED_FAIL"})
"""The words of an ``oracle_stamp``'s ``result`` (normalised upper case)."""

EXPECTATIONS: tuple[Literal["PASS", "FAIL"], ...] = ("PASS", "FAIL")
"""The words of a claim's ``expect`` (normalised upper case)."""

AUTHORITIES: tuple[str, ...] = ("primary", "secondary")
"""The words of a ``source_stamp``'s ``authority`` (normalised lower case)."""

GATE_NAMES: frozenset[str] = frozenset([gate.id for gate in DEFAULT_GRAPH.gates] + list(TERMINALS))
"""What a ``gate:`` line may name: a gate id of the default graph or a terminal."""


# --------------------------------------------------------------------------- models


@dataclass(frozen=True, slots=True, kw_only=True)
class Span:
    """Where something stands in the message: 1-based line and column."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnostic:
    """A problem found while parsing. Errors mean the block was not applied."""

    line: int
    column: int
    message: str
    severity: Literal["error", "warning"] = "error"
    expected: list[str] = field(default_factory=list)
    text: str = ""  # the offending text (truncated to a readable length)
    block: str | None = None  # claim_ledger | oracle_stamp | … when known

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready), as ``IngestReport.diagnostics`` and ``--json`` carry it."""
        return asdict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimBlock:
    id: str
    text: str | None = None
    status: str | None = None  # as written; InfoMark.parse() judges it
    falsifier: str | None = None
    oracle: str | None = None
    expect: Literal["PASS", "FAIL"] | None = None  # None: a PASS claim that says nothing
    observe: str | None = None  # a path or search an inference_stamp's Read/Grep/run must match
    reason: str | None = None
    evidence: str | None = None
    extra: dict[str, str] = field(default_factory=dict)  # unknown keys, kept
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerBlock:
    kind: Literal["claim_ledger"] = "claim_ledger"
    claims: list[ClaimBlock] = field(default_factory=list)
    premises_for_plan: list[str] = field(default_factory=list)
    open_questions: list[str] = field(default_factory=list)
    done_when: list[str] = field(default_factory=list)  # ids of the completion claims
    extra: dict[str, str] = field(default_factory=dict)
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class StampBlock:
    kind: StampKind
    claim_id: str | None = None
    evidence_ref: str | None = None
    result: str | None = None  # PASS | FAIL | EXPECTED_FAIL when valid; as written otherwise
    layer: str | None = None
    artifact: str | None = None
    content_hash: str | None = None
    authority: str | None = None  # source_stamp: primary | secondary when valid; else as written
    legacy: bool = False  # the short `oracle_stamp: C1 PASS` form
    extra: dict[str, str] = field(default_factory=dict)
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class DivergenceBlock:
    kind: Literal["divergence_event"] = "divergence_event"
    claim_id: str | None = None
    evidence_ref: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class GateBlock:
    """A `gate: G4` line: the agent moves its position in the gate machine."""

    kind: Literal["gate"] = "gate"
    gate: str  # normalised upper-case: G0..G9 or a terminal name
    reason: str | None = None  # `gate: BLOCKED reason="…"` (also `— text`, `: text`)
    span: Span


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionBlock:
    """A `question: "…"` line: the agent asks the user and is not done."""

    kind: Literal["question"] = "question"
    text: str
    span: Span


Block = LedgerBlock | StampBlock | DivergenceBlock | GateBlock | QuestionBlock


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedMessage:
    """Every block found in one message, in textual order, plus diagnostics."""

    blocks: list[Block] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    def raise_for_errors(self) -> ParsedMessage:
        """Raise :class:`BlockSyntaxError` at the first error diagnostic; else return self.

        For callers that want all-or-nothing (``ingest --strict``): the error
        carries the first problem's line and column, and ``.diagnostics`` holds
        every error, so a caller can report them all.
        """
        errors = self.errors
        if not errors:
            return self
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        exc = BlockSyntaxError(first.message + more, line=first.line, column=first.column)
        exc.diagnostics = errors
        raise exc
