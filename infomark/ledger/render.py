"""Render parsed blocks back to canonical text.

``parse_message(render_x(block))`` yields a block equal to ``block`` (spans
aside) for every block the parser can produce: values are written bare only
when that is unambiguous and double-quoted with escapes otherwise, so any
string (quotes, colons, newlines, control characters, lone surrogates)
survives the round trip.
"""

from __future__ import annotations

from infomark.kernel.errors import UserError
from infomark.ledger.blocks import (
    AUTHORITIES,
    CLAIM_ID_PATTERN,
    CLAIM_KEYS,
    DIVERGENCE_KEYS,
    GATE_NAMES,
    KEY_PATTERN,
    LEDGER_ALIASES,
    LEDGER_KEYS,
    RESULTS,
    STAMP_KEYS,
    Block,
    ClaimBlock,
    DivergenceBlock,
    GateBlock,
    LedgerBlock,
    QuestionBlock,
    StampBlock,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection

__all__ = [
    "CLAIM_ID_PATTERN",
    "CLAIM_KEYS",
    "DIVERGENCE_KEYS",
    "GATE_NAMES",
    "KEY_PATTERN",
    "LEDGER_ALIASES",
    "LEDGER_KEYS",
    "STAMP_KEYS",
    "quote_scalar",
    "render_block",
    "render_divergence",
    "render_gate",
    "render_ledger",
    "render_question",
    "render_stamp",
    "scalar_text",
]
# The vocabulary above is re-exported for callers that imported it from here; it lives in
# infomark.ledger.blocks.

_BARE_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_BARE_CHARS = _BARE_FIRST | frozenset(".:/@+-")
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def quote_scalar(value: str) -> str:
    """``value`` as a double-quoted scalar; every control or invisible break is escaped."""
    out = ['"']
    for ch in value:
        short = _SHORT_ESCAPES.get(ch)
        if short is not None:
            out.append(short)
            continue
        code = ord(ch)
        if (
            code < 0x20
            or 0x7F <= code <= 0x9F
            or 0xD800 <= code <= 0xDFFF
            or ch in "\u2028\u2029\ufeff"
        ):
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def scalar_text(value: str) -> str:
    """``value`` bare when that reads back identically everywhere, else double-quoted."""
    if (
        value
        and value[0] in _BARE_FIRST
        and value[-1] != ":"
        and all(ch in _BARE_CHARS for ch in value)
    ):
        return value
    return quote_scalar(value)


def render_ledger(block: LedgerBlock) -> str:
    """A ``claim_ledger:`` block in canonical block form (ends with a newline)."""
    lines = ["claim_ledger:"]
    if block.claims:
        lines.append("  claims:")
        for claim in block.claims:
            for number, (key, value) in enumerate(_claim_entries(claim)):
                lead = "    - " if number == 0 else "      "
                lines.append(f"{lead}{key}: {scalar_text(value)}")
    else:
        lines.append("  claims: []")
    lines.append(f"  premises_for_plan: {_id_list(block.premises_for_plan)}")
    lines.append(f"  open_questions: {_id_list(block.open_questions)}")
    if block.done_when:
        lines.append(f"  done_when: {_id_list(block.done_when)}")
    for key, value in _extras(block.extra, (*LEDGER_KEYS, *LEDGER_ALIASES), "claim_ledger"):
        lines.append(f"  {key}: {scalar_text(value)}")
    return "\n".join(lines) + "\n"


def _own_field(
    kind: str,
    name: str,
    value: str | None,
    owner: str,
    known: Collection[str],
    fold: Callable[[str], str],
) -> str | None:
    """A field only ``owner`` stamps carry: refused on another kind; a known value in any
    case is written in its canonical case (``fold``), anything else as given."""
    if value is None:
        return None
    if kind != owner:
        raise UserError(
            f"{kind} has no {name} field (only {owner} does); put it in extra or remove it"
        )
    return fold(value) if fold(value) in known else value


def render_stamp(block: StampBlock) -> str:
    """An ``oracle_stamp:`` / ``inference_stamp:`` line (inline pairs, or the legacy form)."""
    if block.claim_id is None:
        raise UserError(f"cannot render {block.kind} without a claim_id; set claim_id")
    _check_id(block.claim_id)
    result = _own_field(block.kind, "result", block.result, "oracle_stamp", RESULTS, str.upper)
    authority = _own_field(
        block.kind, "authority", block.authority, "source_stamp", AUTHORITIES, str.lower
    )
    if block.legacy:
        if block.kind == "source_stamp":
            raise UserError("source_stamp has no legacy form; set legacy=False")
        if any(v is not None for v in (block.evidence_ref, block.layer, block.artifact)) or (
            block.content_hash is not None or block.authority is not None or block.extra
        ):
            raise UserError(
                f"a legacy {block.kind} carries only a claim id and a result; "
                "set legacy=False to render the other fields"
            )
        words = [block.claim_id] + ([result] if result is not None else [])
        return f"{block.kind}: {' '.join(scalar_text(w) for w in words)}\n"
    pairs = [
        ("claim_id", block.claim_id),
        ("evidence_ref", block.evidence_ref),
        ("result", result),
        ("layer", block.layer),
        ("artifact", block.artifact),
        ("content_hash", block.content_hash),
        ("authority", authority),
    ]
    pairs += _extras(block.extra, STAMP_KEYS[block.kind], block.kind)
    return _inline(block.kind, pairs)


def render_divergence(block: DivergenceBlock) -> str:
    """A ``divergence_event:`` line with inline pairs."""
    if block.claim_id is None:
        raise UserError("cannot render divergence_event without a claim_id; set claim_id")
    _check_id(block.claim_id)
    pairs = [("claim_id", block.claim_id), ("evidence_ref", block.evidence_ref)]
    pairs += _extras(block.extra, DIVERGENCE_KEYS, "divergence_event")
    return _inline("divergence_event", pairs)


def render_gate(block: GateBlock) -> str:
    """A ``gate:`` line, with ``reason="…"`` when the block carries a reason."""
    gate = block.gate.strip().upper()
    if gate not in GATE_NAMES:
        raise UserError(
            f"cannot render gate {block.gate!r}: expected G0..G9, SUCCESS, BLOCKED, "
            "OUT_OF_SCOPE or WAITING_APPROVAL"
        )
    if block.reason is None:
        return f"gate: {gate}\n"
    return f"gate: {gate} reason={quote_scalar(block.reason)}\n"


def render_question(block: QuestionBlock) -> str:
    """A ``question:`` line (the text double-quoted, so any text survives)."""
    return f"question: {quote_scalar(block.text)}\n"


def render_block(block: Block) -> str:
    """Render any parsed block with the matching ``render_*`` function."""
    if isinstance(block, LedgerBlock):
        return render_ledger(block)
    if isinstance(block, StampBlock):
        return render_stamp(block)
    if isinstance(block, DivergenceBlock):
        return render_divergence(block)
    if isinstance(block, QuestionBlock):
        return render_question(block)
    return render_gate(block)


# --------------------------------------------------------------------------- internals


def _inline(kind: str, pairs: list[tuple[str, str | None]]) -> str:
    parts = [f"{key}={scalar_text(value)}" for key, value in pairs if value is not None]
    return f"{kind}: {' '.join(parts)}\n"


def _claim_entries(claim: ClaimBlock) -> list[tuple[str, str]]:
    _check_id(claim.id)
    entries: list[tuple[str, str]] = [("id", claim.id)]
    for key in CLAIM_KEYS[1:]:
        value = getattr(claim, key)
        if value is not None:
            entries.append((key, value))
    entries += _extras(claim.extra, CLAIM_KEYS, f"claim {claim.id}")
    return entries


def _extras(extra: dict[str, str], known: tuple[str, ...], where: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in extra.items():
        if key.lower() in known or KEY_PATTERN.fullmatch(key) is None:
            raise UserError(
                f"cannot render extra key {key!r} of {where}: extra keys must match "
                f"{KEY_PATTERN.pattern} and must not be one of {', '.join(known)} in any case"
            )
        out.append((key, value))
    return out


def _check_id(claim_id: str) -> None:
    if CLAIM_ID_PATTERN.fullmatch(claim_id) is None:
        raise UserError(
            f"cannot render claim id {claim_id!r}: ids use only letters, digits, '_', '.' and '-'"
        )


def _id_list(ids: list[str]) -> str:
    for claim_id in ids:
        _check_id(claim_id)
    return "[" + ", ".join(scalar_text(claim_id) for claim_id in ids) + "]"
