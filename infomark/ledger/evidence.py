"""Evidence: a tool result the runtime observed, signed so the agent cannot invent one.

``evidence_ref = "ev_" + HMAC-SHA256(key, canonical record)[:24]``. The record
binds session, seq, tool, input digest, output digest and outcome, so a reference
is valid only for the one result it was issued for, in the one session.
Standard library only (hot path).
"""

from __future__ import annotations

from collections.abc import Mapping

from infomark.kernel.enums import StrEnum
from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.records import dataclass
from infomark.kernel.tools import (
    EvidenceClass,
    ToolClass,
    lookup_tool,
    normalise_tool_name,
    split_mcp_name,
)
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.canonical import canonical_json, digest, normalize_command
from infomark.ledger.keys import Key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.kernel.spooled import LargeText

__all__ = [
    "DECLARED_EVIDENCE",
    "REF_PATTERN",
    "TAGGED_REF",
    "Evidence",
    "EvidenceClass",
    "Outcome",
    "build_record",
    "evidence_class_for",
    "outcome_for",
    "record_command",
    "ref_for",
    "stamps_backed",
]

REF_PATTERN = lazy_compile(r"ev_[0-9a-f]{24}")
# An evidence ref as a result's tag spells it (``Evidence.tag``); group 1 is the ref.
TAGGED_REF = lazy_compile(r"evidence_ref=(ev_[0-9a-f]{24})")


class Outcome(StrEnum):
    PASS = "PASS"  # noqa: S105 - exit 0 (an outcome, not a password)
    FAIL = "FAIL"  # non-zero exit
    ERROR = "ERROR"  # the tool errored or timed out
    OBSERVED = "OBSERVED"  # no exit status: a read, a search


def _key(name: str) -> str:
    mcp = split_mcp_name(name)
    return normalise_tool_name(mcp[1] if mcp is not None else name)


#: The evidence class a *declared* tool class gives (``@gk.tool(tool_class=…)``,
#: ``record(tool_class=…)``): only a run can back an oracle stamp, only a read or a search an
#: inference; every other class backs nothing.
DECLARED_EVIDENCE: Mapping[ToolClass, EvidenceClass] = {
    ToolClass.EXECUTE: EvidenceClass.EXECUTION,
    ToolClass.READ: EvidenceClass.OBSERVATION,
    ToolClass.SEARCH: EvidenceClass.OBSERVATION,
    ToolClass.WEB: EvidenceClass.WEB,
}


def evidence_class_for(
    tool: str,
    overrides: Mapping[str, str] | None = None,
    *,
    declared: ToolClass | None = None,
) -> EvidenceClass:
    """Evidence class of a tool's results: config by name, else the declared class, else the
    name in the kernel's one tool table.

    Names are compared normalised (an MCP name by its ``<tool>`` part). A declared class maps
    through :data:`DECLARED_EVIDENCE` (``execute`` → ``execution``, ``read``/``search`` →
    ``observation``, ``web`` → ``web``, any other → ``ineligible``); with no declared class, a
    name the table does not know is ``ineligible``.
    """
    key = _key(tool)
    if overrides:
        for name, cls in overrides.items():
            if _key(name) == key:
                return EvidenceClass(cls)
    if declared is not None:
        return DECLARED_EVIDENCE.get(declared, EvidenceClass.INELIGIBLE)
    spec = lookup_tool(tool)
    return spec.evidence_class if spec is not None else EvidenceClass.INELIGIBLE


def outcome_for(outcome: ToolOutcome) -> Outcome:
    if outcome.error is not None and outcome.exit_code is None:
        return Outcome.ERROR
    if outcome.exit_code is None:
        return Outcome.ERROR if outcome.is_error else Outcome.OBSERVED
    return Outcome.PASS if outcome.exit_code == 0 else Outcome.FAIL


def record_command(call: ToolCall) -> str:
    """The command a run stands for, whitespace-normalised (matched against oracles).

    Shell tools: their ``command``. Other tools: ``<tool> <canonical JSON input>``.
    """
    for field_name in ("command", "cmd", "script"):
        value = call.input.get(field_name)
        if isinstance(value, str):
            return normalize_command(value)
    return normalize_command(f"{call.tool} {canonical_json(dict(call.input)).decode()}")


def _output_digest(output: str | bytes | LargeText) -> tuple[str, int]:
    if isinstance(output, bytes | str):
        data = output if isinstance(output, bytes) else output.encode("utf-8", "surrogatepass")
        return digest(data), len(data)
    return output.digest()  # streamed from the hook's stdin (kernel.spooled)


def build_record(
    *,
    session: str,
    seq: int,
    call: ToolCall,
    outcome: ToolOutcome,
    evidence_class: EvidenceClass,
    key_id: str,
    tool_class: str | None = None,
    output: tuple[str, int] | None = None,
) -> dict[str, Any]:
    """The canonical evidence record (everything the MAC covers).

    A caller that already hashed the output (the engine, while storing its blob) passes
    it as ``output``, ``(digest, size)``, so a large output is encoded and hashed once.
    """
    output_digest, output_size = output or _output_digest(outcome.output)
    inp = dict(call.input)
    record: dict[str, Any] = {
        "v": 1,
        "session": session,
        "seq": seq,
        "tool": call.tool,
        "tool_call_id": call.tool_call_id,
        "input": inp,
        "input_digest": digest(canonical_json(inp)),
        "command": record_command(call),
        "output_digest": output_digest,
        "output_size": output_size,
        "exit_code": outcome.exit_code,
        "error": outcome.error,
        "duration_ms": outcome.duration_ms,
        "evidence_class": evidence_class.value,
        "outcome": outcome_for(outcome).value,
        "tool_class": tool_class,
        "key_id": key_id,
    }
    for key in _OPTIONAL:  # absent rather than null (issue 13: journal size); read with .get
        if record[key] is None:
            del record[key]
    return record


#: record keys left out when they have no value (``Evidence.from_record`` and every reader
#: use ``.get``; records written before keep their nulls and verify as they were signed)
_OPTIONAL = ("tool_call_id", "error", "duration_ms")


def ref_for(key: Key, record: Mapping[str, Any]) -> tuple[str, str]:
    """Return ``(evidence_ref, full_mac)`` for a record."""
    mac = key.mac(canonical_json(dict(record)))
    return "ev_" + mac[:24], mac


@dataclass(frozen=True, slots=True)
class Evidence:
    """A recorded, signed tool result."""

    ref: str
    session: str
    seq: int
    tool: str
    tool_call_id: str | None
    command: str
    evidence_class: EvidenceClass
    outcome: Outcome
    exit_code: int | None
    output_digest: str
    tool_class: str | None
    record: Mapping[str, Any]

    @classmethod
    def from_record(cls, ref: str, record: Mapping[str, Any]) -> Evidence:
        return cls(
            ref=ref,
            session=str(record["session"]),
            seq=int(record["seq"]),
            tool=str(record["tool"]),
            tool_call_id=record.get("tool_call_id"),
            command=str(record.get("command", "")),
            evidence_class=EvidenceClass(record["evidence_class"]),
            outcome=Outcome(record["outcome"]),
            exit_code=record.get("exit_code"),
            output_digest=str(record["output_digest"]),
            tool_class=record.get("tool_class"),
            record=record,
        )

    @property
    def eligible_for(self) -> tuple[str, ...]:
        return self.evidence_class.eligible_for

    @property
    def tag(self) -> str:
        """The one-line tag the agent sees after the result (stable format): ``eligible=``
        lists exactly the stamps this evidence can back (:func:`stamps_backed`), or ``none``.
        Every surface prints this one (the hook, the CLI, the MCP proxy, ``wrap()``, HTTP)."""
        backed = stamps_backed(self.evidence_class.value, self.outcome.value, self.record)
        return (
            f"[infomark evidence_ref={self.ref} tool={self.tool} "
            f"outcome={self.outcome.value} eligible={','.join(backed) or 'none'}]"
        )


def _may_fetch(evidence_class: str, record: Mapping[str, Any]) -> bool:
    """Cheap pre-check: could this record be a page fetch (web tool, or a URL in a shell)?"""
    if evidence_class == EvidenceClass.WEB.value:
        return True
    inp = record.get("input")
    if not isinstance(inp, Mapping):
        return False
    return any(
        isinstance(v := inp.get(k), str) and "://" in v for k in ("command", "cmd", "script")
    )


def stamps_backed(
    evidence_class: str, outcome: str, record: Mapping[str, Any] | None = None
) -> tuple[str, ...]:
    """The stamps an evidence of this class and outcome (and ``record``) can back, exactly.

    A page fetch (a web tool such as ``WebFetch``, or a shell ``curl``/``wget`` of a URL:
    :func:`infomark.ledger.stamps.sources.web_source` of ``record``) backs a ``source_stamp``
    when it fetched (PASS or OBSERVED) and is not a search, and nothing else. Otherwise an
    oracle_stamp needs execution evidence: ``result=PASS`` a PASS run, ``result=FAIL`` or
    ``EXPECTED_FAIL`` a FAIL run; an inference_stamp needs execution or observation evidence
    whose outcome is PASS or OBSERVED; ERROR, web and ineligible evidence back nothing. A
    stamp must still fit its claim (the declared oracle, the claim's age): the tag says what
    the evidence can back, not which claim it fits. One case only the stamp finds out: a
    ``Read`` of a file a fetch of this session wrote is refused as ``ineligible_evidence``.
    """
    if record is not None and _may_fetch(evidence_class, record):
        from infomark.ledger.stamps.sources import web_source  # only for a possible fetch

        page = web_source(record)
        if page is not None:
            fetched = outcome in ("PASS", "OBSERVED") and not page.search
            return ("source_stamp",) if fetched else ()
    out: list[str] = []
    run = evidence_class in ("execution", "attested")
    if run and outcome == "PASS":
        out.append("oracle_stamp")
    if run and outcome == "FAIL":
        out.append("oracle_stamp(result=FAIL|EXPECTED_FAIL)")
    if (run or evidence_class == "observation") and outcome in ("PASS", "OBSERVED"):
        out.append("inference_stamp")
    return tuple(out)
