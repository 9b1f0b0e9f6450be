"""The MCP proxy's own tools: the ledger as structured tool calls, no text parsing needed.

``infomark_ledger`` declares claims, ``infomark_stamp`` binds evidence to a claim (an oracle
run, an observation, or with ``kind: source`` a fetched web page, graded by its authority),
``infomark_divergence`` records a refutation, ``infomark_status`` reads the ledger and
gate, and ``infomark_finish`` is the finish gate (may the agent stop now?) for clients
that have no Stop hook. Each renders the block text the agent would have written (with the ledger
renderer, so the parser reads back exactly these values) and ingests it; the result is
the ledger's report as JSON text plus structured content. A rejection is an
``is_error`` result carrying the reason, never an exception.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import mcp_types as types

from infomark.kernel.errors import UserError
from infomark.ledger.canonical import printable, scrub_surrogates
from infomark.ledger.evidence import stamps_backed  # re-exported: the tag's one rule

if TYPE_CHECKING:
    from infomark.ledger.blocks import Span
    from infomark.ledger.evidence import Evidence
    from infomark.tools.protocol import LedgerTools

__all__ = ["OWN_TOOL_NAMES", "call_own_tool", "evidence_tag", "own_tools", "stamps_backed"]

_STR: dict[str, Any] = {"type": "string"}
_IDS: dict[str, Any] = {"type": "array", "items": _STR}
_OBJECT_OUT: dict[str, Any] = {"type": "object"}
_CLAIM_FIELDS = ("id", "text", "status", "falsifier", "oracle", "observe")

_CLAIM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "claim id: letters, digits, '_', '.', '-'"},
        "text": {"type": "string", "description": "what the claim says"},
        "status": {
            "type": "string",
            "description": "Exact, Inferred, Hypothetical, Guess or Unknown (the runtime "
            "demotes a self-written Exact or Inferred to Hypothetical)",
        },
        "falsifier": {"type": "string", "description": "what observation would refute it"},
        "observe": {
            "type": "string",
            "description": "the path, URI or search an inference_stamp's read must match",
        },
        "oracle": {
            "type": "string",
            "description": "the exact command whose run decides the claim (for an MCP tool: "
            "'<tool> <arguments as canonical JSON>')",
        },
    },
    "required": ["id"],
    "additionalProperties": False,
}

_LEDGER_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "block": {
            "type": "string",
            "description": "a claim_ledger block as text; give this OR the structured fields",
        },
        "claims": {"type": "array", "items": _CLAIM_SCHEMA},
        "premises_for_plan": {**_IDS, "description": "ids of the claims the plan rests on"},
        "open_questions": {**_IDS, "description": "ids of claims left open"},
    },
    "additionalProperties": False,
}

_STAMP_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "claim_id": _STR,
        "evidence_ref": {"type": "string", "description": "ev_… from an [infomark …] tag"},
        "kind": {
            "type": "string",
            "enum": ["oracle", "inference", "source"],
            "default": "oracle",
            "description": "oracle: a run of the claim's oracle (→ Exact); "
            "inference: an observation (→ Inferred); source: a fetched web page (→ Inferred "
            "from a primary authority, Hypothetical from a secondary one)",
        },
        "authority": {
            "type": "string",
            "enum": ["primary", "secondary"],
            "description": "source stamps only: the authority you claim for the page; "
            "infomark decides it from its domain rules and demotes a higher claim",
        },
        "result": {
            "type": "string",
            "enum": ["PASS", "FAIL", "EXPECTED_FAIL"],
            "description": "oracle stamps only; default PASS",
        },
        "artifact": {"type": "string", "description": "a file whose change revokes the stamp"},
        "content_hash": _STR,
    },
    "required": ["claim_id", "evidence_ref"],
    "additionalProperties": False,
}

_DIVERGENCE_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"claim_id": _STR, "evidence_ref": _STR},
    "required": ["claim_id", "evidence_ref"],
    "additionalProperties": False,
}

_CHECK_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"claim_id": _STR},
    "required": ["claim_id"],
    "additionalProperties": False,
}

_FINISH_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "final_text": {
            "type": "string",
            "description": "the final message you are about to give (its completion claims "
            "and any ledger or stamps in it are judged)",
        }
    },
    "additionalProperties": False,
}

_META = types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)


def own_tools() -> list[types.Tool]:
    """The ledger tools the proxy adds to the downstream listing."""
    return [
        types.Tool(
            name="infomark_ledger",
            description="Declare or replace the claim ledger: claims (id, text, status, "
            "falsifier, oracle), premises_for_plan and open_questions. Modify and destructive "
            "tools are denied while a premise is not grounded.",
            input_schema=_LEDGER_INPUT,
            output_schema=_OBJECT_OUT,
            annotations=_META,
        ),
        types.Tool(
            name="infomark_stamp",
            description="Bind runtime evidence (the evidence_ref of an [infomark …] tag) to a "
            "claim: an oracle stamp for a run of the claim's oracle, an inference stamp for "
            "an observation, a source stamp for a fetched web page (re-fetched before a "
            "mutation: a changed page revokes it).",
            input_schema=_STAMP_INPUT,
            output_schema=_OBJECT_OUT,
            annotations=_META,
        ),
        types.Tool(
            name="infomark_divergence",
            description="Record evidence that refutes a claim: revokes its stamp and sets it "
            "Unknown.",
            input_schema=_DIVERGENCE_INPUT,
            output_schema=_OBJECT_OUT,
            annotations=_META,
        ),
        types.Tool(
            name="infomark_status",
            description="The ledger (claims with their ranks, premises, what is ungrounded) "
            "and the gate position.",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            output_schema=_OBJECT_OUT,
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(
            name="infomark_check",
            description="Ask infomark to run a claim's declared oracle itself: sandboxed, in "
            "a copy of the project made of its starting state and your source changes. The "
            "result binds the claim (Exact on a PASS) and names any changed file it did not use.",
            input_schema=_CHECK_INPUT,
            annotations=_META,
        ),
        types.Tool(
            name="infomark_finish",
            description="Call before you stop: may the task end now? Refused (isError) while a "
            "premise is ungrounded or a completion claim rests on stale evidence, with what to "
            "do; refusals are capped so you are never trapped.",
            input_schema=_FINISH_INPUT,
            output_schema=_OBJECT_OUT,
            annotations=_META,
        ),
    ]


OWN_TOOL_NAMES: frozenset[str] = frozenset(t.name for t in own_tools())


def call_own_tool(gk: LedgerTools, name: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
    """Run one of the proxy's own tools; bad input is an ``is_error`` result, never a raise."""
    handler = _HANDLERS.get(name)
    if handler is None:
        return _error(f"{name} is not an infomark tool; use one of {', '.join(sorted(_HANDLERS))}")
    try:
        return handler(gk, arguments)
    except (UserError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        return _error(f"{name}: {exc}")


# --------------------------------------------------------------------------- evidence tags


def evidence_tag(evidence: Evidence) -> str:
    """The tag the proxy appends: :attr:`Evidence.tag`, whose ``eligible=`` lists exactly
    what the evidence can back (:func:`~infomark.ledger.evidence.stamps_backed`)."""
    return evidence.tag


# --------------------------------------------------------------------------- handlers


def _ledger(gk: LedgerTools, args: Mapping[str, Any]) -> types.CallToolResult:
    _only(args, ("block", "claims", "premises_for_plan", "open_questions"), "infomark_ledger")
    block = args.get("block")
    structured = [k for k in ("claims", "premises_for_plan", "open_questions") if k in args]
    if block is not None:
        if structured:
            raise UserError(
                "give either `block` (text) or the structured fields "
                f"({', '.join(structured)}), not both"
            )
        text = _string(block, "block")
        if "claim_ledger" not in text:
            raise UserError("`block` holds no `claim_ledger:` block; start it with claim_ledger:")
    elif structured:
        text = _render_ledger(args)
    else:
        raise UserError("give `block` (a claim_ledger block as text) or `claims` [{id, text, …}]")
    report = gk.ingest(text, source="mcp").to_dict()
    if not report["ledger_updated"]:
        return _result(report, "no claim_ledger was applied: " + _diagnostics(report))
    return _result(report)


def _stamp(gk: LedgerTools, args: Mapping[str, Any]) -> types.CallToolResult:
    from infomark.ledger.blocks import StampBlock
    from infomark.ledger.render import render_stamp

    keys = ("claim_id", "evidence_ref", "kind", "result", "artifact", "content_hash", "authority")
    _only(args, keys, "infomark_stamp")
    kind = _string(args.get("kind", "oracle"), "kind")
    if kind not in ("oracle", "inference", "source"):
        raise UserError(f"kind must be oracle, inference or source, not {kind!r}")
    authority = _opt_string(args.get("authority"), "authority")
    if kind == "source":
        return _source_stamp(gk, args, authority)
    if authority is not None:
        raise UserError("only a source stamp takes an authority (kind=source); drop it")
    result = _opt_string(args.get("result"), "result")
    if kind == "oracle":
        result = (result or "PASS").upper()
        if result not in ("PASS", "FAIL", "EXPECTED_FAIL"):
            raise UserError(f"result must be PASS, FAIL or EXPECTED_FAIL, not {result!r}")
    elif result is not None:
        raise UserError("an inference stamp takes no result (only kind=oracle does); drop it")
    block = StampBlock(
        kind="oracle_stamp" if kind == "oracle" else "inference_stamp",
        claim_id=_string(args.get("claim_id"), "claim_id"),
        evidence_ref=_string(args.get("evidence_ref"), "evidence_ref"),
        result=result,
        artifact=_opt_string(args.get("artifact"), "artifact"),
        content_hash=_opt_string(args.get("content_hash"), "content_hash"),
        span=_span(),
    )
    return _ingest_one(gk, render_stamp(block), block.kind, "stamps_applied")


def _source_stamp(
    gk: LedgerTools, args: Mapping[str, Any], authority: str | None
) -> types.CallToolResult:
    from infomark.ledger.blocks import StampBlock
    from infomark.ledger.render import render_stamp

    extra = [k for k in ("result", "artifact", "content_hash") if args.get(k) is not None]
    if extra:
        raise UserError(f"a source stamp takes no {', '.join(extra)}; drop it")
    if authority is not None and authority.lower() not in ("primary", "secondary"):
        raise UserError(f"authority must be primary or secondary, not {authority!r}")
    block = StampBlock(
        kind="source_stamp",
        claim_id=_string(args.get("claim_id"), "claim_id"),
        evidence_ref=_string(args.get("evidence_ref"), "evidence_ref"),
        authority=authority,
        span=_span(),
    )
    return _ingest_one(gk, render_stamp(block), "source_stamp", "stamps_applied")


def _divergence(gk: LedgerTools, args: Mapping[str, Any]) -> types.CallToolResult:
    from infomark.ledger.blocks import DivergenceBlock
    from infomark.ledger.render import render_divergence

    _only(args, ("claim_id", "evidence_ref"), "infomark_divergence")
    block = DivergenceBlock(
        claim_id=_string(args.get("claim_id"), "claim_id"),
        evidence_ref=_string(args.get("evidence_ref"), "evidence_ref"),
        span=_span(),
    )
    return _ingest_one(gk, render_divergence(block), "divergence_event", "invalidated")


def _status(gk: LedgerTools, args: Mapping[str, Any]) -> types.CallToolResult:
    _only(args, (), "infomark_status")
    return _result({"ledger": gk.ledger().to_dict(), "gate": gk.gate().to_dict()})


def _check(gk: LedgerTools, args: Mapping[str, Any]) -> types.CallToolResult:
    _only(args, ("claim_id",), "infomark_check")
    claim_id = _string(args.get("claim_id"), "claim_id")
    attest = getattr(gk, "attester", None)
    if attest is None:
        raise UserError("attested runs need the session open here (a local ledger home)")
    text = attest(claim_id)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], is_error="evidence_ref=" not in text
    )


def _finish(gk: LedgerTools, args: Mapping[str, Any]) -> types.CallToolResult:
    _only(args, ("final_text",), "infomark_finish")
    final = args.get("final_text", "")
    if not isinstance(final, str):
        raise UserError("`final_text` must be a string (the final message)")
    result = gk.can_finish(final).to_dict()
    if not result["allow"]:
        return _result(result, f"not finished ({result['code']}): {result['reason']}")
    return _result(result)


_HANDLERS: dict[str, Callable[[LedgerTools, Mapping[str, Any]], types.CallToolResult]] = {
    "infomark_ledger": _ledger,
    "infomark_stamp": _stamp,
    "infomark_divergence": _divergence,
    "infomark_status": _status,
    "infomark_check": _check,
    "infomark_finish": _finish,
}


# --------------------------------------------------------------------------- helpers


def _span() -> Span:
    """Rendered blocks are parsed again on ingest; this span only satisfies the model."""
    from infomark.ledger.blocks import Span

    return Span(line=1, column=1, end_line=1, end_column=1)


def _render_ledger(args: Mapping[str, Any]) -> str:
    from infomark.ledger.blocks import ClaimBlock, LedgerBlock
    from infomark.ledger.render import render_ledger

    raw_claims = args.get("claims", [])
    if not isinstance(raw_claims, list):
        raise UserError("`claims` must be a list of {id, text, status, falsifier, oracle}")
    claims = []
    for n, raw in enumerate(raw_claims, 1):
        if not isinstance(raw, Mapping):
            raise UserError(f"claims[{n}] must be an object with id, text, status, …")
        unknown = sorted(set(raw) - set(_CLAIM_FIELDS))
        if unknown:
            raise UserError(
                f"claims[{n}] has unknown field(s) {', '.join(unknown)}; "
                f"use {', '.join(_CLAIM_FIELDS)}"
            )
        claims.append(
            ClaimBlock(
                id=_string(raw.get("id"), f"claims[{n}].id"),
                text=_opt_string(raw.get("text"), f"claims[{n}].text"),
                status=_opt_string(raw.get("status"), f"claims[{n}].status"),
                falsifier=_opt_string(raw.get("falsifier"), f"claims[{n}].falsifier"),
                oracle=_opt_string(raw.get("oracle"), f"claims[{n}].oracle"),
                observe=_opt_string(raw.get("observe"), f"claims[{n}].observe"),
                span=_span(),
            )
        )
    block = LedgerBlock(
        claims=claims,
        premises_for_plan=_ids(args.get("premises_for_plan", []), "premises_for_plan"),
        open_questions=_ids(args.get("open_questions", []), "open_questions"),
        span=_span(),
    )
    return render_ledger(block)


def _only(args: Mapping[str, Any], allowed: tuple[str, ...], tool: str) -> None:
    unknown = sorted(set(args) - set(allowed))
    if unknown:
        valid = ", ".join(allowed) or "none"
        raise UserError(f"{tool} got unknown argument(s) {', '.join(unknown)}; it takes {valid}")


def _string(value: object, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise UserError(f"`{field}` must be a non-empty string")
    return value


def _opt_string(value: object, field: str) -> str | None:
    return None if value is None else _string(value, field)


def _ids(value: object, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise UserError(f"`{field}` must be a list of claim ids (strings)")
    return list(value)


def _diagnostics(report: Mapping[str, Any]) -> str:
    """The parser's diagnostics as the agent reads them everywhere: line, column, what was
    expected, the line with a caret under the column."""
    from infomark.gates.authorize import parse_error_text

    found = report.get("diagnostics", [])
    errors = [d for d in found if d.get("severity", "error") == "error"]
    return parse_error_text(errors or found) or "the text held no claim_ledger block"


def _ingest_one(gk: LedgerTools, text: str, what: str, landed: str) -> types.CallToolResult:
    """Ingest one rendered stamp or divergence: an error result naming why when it was
    rejected or did not land (``landed``: the report's list that holds it when it did)."""
    report = gk.ingest(text, source="mcp").to_dict()
    if report["stamps_rejected"] or not report[landed]:
        return _result(report, f"{what} rejected: " + _rejections(report))
    return _result(report)


def _rejections(report: Mapping[str, Any]) -> str:
    msgs = [
        f"{r.get('reason')}: {r['message']}" if r.get("message") else str(r.get("reason"))
        for r in report.get("stamps_rejected", [])
    ]
    return "; ".join(msgs) or _diagnostics(report)


def _result(data: dict[str, Any], error: str | None = None) -> types.CallToolResult:
    data = printable(data)  # a lone surrogate in a claim must not break serialisation
    body = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    content: list[types.ContentBlock] = [
        types.TextContent(type="text", text=scrub_surrogates(body))
    ]
    if error is not None:
        content.insert(0, types.TextContent(type="text", text=scrub_surrogates(error)))
    return types.CallToolResult(
        content=content, structured_content=data, is_error=error is not None
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=scrub_surrogates(message))], is_error=True
    )
