"""Model building: parse-tree nodes → :mod:`infomark.ledger.blocks` models, with diagnostics.

:class:`Builder` judges keys (known, aliased, unknown, duplicate), claim ids,
statuses, results, expectations and authorities, and collects warnings and
errors; a block with an error is not returned.
"""

from __future__ import annotations

from infomark.kernel.infomark import InfoMark
from infomark.ledger.blocks import (
    AUTHORITIES,
    BLOCK_KEYWORDS,
    CLAIM_KEYS,
    DIVERGENCE_KEYS,
    EXPECTATIONS,
    GATE_NAMES,
    LEDGER_ALIASES,
    LEDGER_KEYS,
    RESULTS,
    STAMP_KEYS,
    STAMP_KINDS,
    Block,
    ClaimBlock,
    Diagnostic,
    DivergenceBlock,
    GateBlock,
    LedgerBlock,
    QuestionBlock,
    Span,
    StampBlock,
    StampKind,
    is_claim_id,
)
from infomark.ledger.parse.diagnose import short, snippet
from infomark.ledger.parse.locate import Candidate
from infomark.ledger.parse.tree import Legacy, Map, Node, Pos, Scalar, Seq, Top

TYPE_CHECKING = False  # not typing's: the hook path never imports typing
if TYPE_CHECKING:  # annotations only: a hook process that parses a block never loads typing
    from collections.abc import Iterable
    from typing import Literal

__all__ = ["MAX_BLOCK_DIAGNOSTICS", "Builder"]

MAX_BLOCK_DIAGNOSTICS = 20  # per block (then one summary line)
_GATE_KEYS = ("gate", "reason")


def _span(pos: Pos) -> Span:
    return Span(line=pos[0], column=pos[1], end_line=pos[2], end_column=pos[3])


def _node_pos(node: Node | Legacy, fallback: Pos) -> Pos:
    return fallback if node is None else node.pos


def _canonical(key: str, known: Iterable[str]) -> str:
    """``key`` as the known key it spells in another case (``Claims`` → ``claims``), else as is."""
    lowered = key.lower()
    return lowered if lowered != key and lowered in known else key


def _as_text(node: Node) -> str:
    """An unknown key's value, kept as text (collections in canonical flow form)."""
    if node is None:
        return ""
    if isinstance(node, Scalar):
        return node.value
    return _flow_text(node)


def _flow_text(node: Node) -> str:
    if node is None:
        return '""'
    if isinstance(node, Scalar):
        from infomark.ledger.render import scalar_text  # rare: a collection kept as text

        return scalar_text(node.value)
    if isinstance(node, Seq):
        return "[" + ", ".join(_flow_text(item) for item in node.items) + "]"
    return "{" + ", ".join(f"{key.value}: {_flow_text(value)}" for key, value in node.pairs) + "}"


def _stamp_kind(keyword: str) -> StampKind:
    for kind in STAMP_KINDS:
        if kind == keyword:
            return kind
    raise ValueError(f"not a stamp keyword: {keyword!r}")  # the tokenizer admits no other


class Builder:
    """Maps the parse tree of one block onto the models; collects diagnostics."""

    def __init__(self, candidate: Candidate) -> None:
        self.candidate = candidate
        self.keyword = candidate.keyword
        self.diagnostics: list[Diagnostic] = []
        self.error_seen = False
        self.unlisted = 0

    def note(
        self,
        pos: Pos,
        message: str,
        *,
        severity: Literal["error", "warning"] = "error",
        expected: Iterable[str] = (),
        text: str = "",
    ) -> None:
        if severity == "error":
            self.error_seen = True
        if len(self.diagnostics) >= MAX_BLOCK_DIAGNOSTICS:
            self.unlisted += 1  # bounded memory: a block cannot produce unbounded problems
            return
        self.diagnostics.append(
            Diagnostic(
                line=pos[0],
                column=pos[1],
                message=message,
                severity=severity,
                expected=list(expected),
                text=short(text) if text else snippet(self.candidate, pos[0], pos[1]),
                block=self.keyword,
            )
        )

    def build(self, top: Top) -> list[Block]:
        """The block(s) of one candidate: one, or one per keyword key of an object."""
        blocks: list[Block] = []
        if top.keyword == "object" and isinstance(top.body, Map):
            for key, node in top.body.pairs:
                keyword = _canonical(key.value, BLOCK_KEYWORDS)
                if keyword not in BLOCK_KEYWORDS:
                    self.keyword = "object"
                    self.unknown_key(key, BLOCK_KEYWORDS, "a block object")
                    continue
                self.keyword = keyword
                end = _node_pos(node, key.pos)
                pos = (key.pos[0], key.pos[1], end[2], end[3])
                block = self.one(keyword, node, None, pos)
                if block is not None:
                    blocks.append(block)
        else:
            block = self.one(top.keyword, top.body, top.reason, top.pos)
            if block is not None:
                blocks.append(block)
        if self.unlisted:
            self.diagnostics.append(
                Diagnostic(
                    line=top.pos[0],
                    column=top.pos[1],
                    message=f"{self.unlisted} more problems in this block were not listed",
                    severity="warning",
                    block=self.keyword,
                )
            )
        if self.error_seen:
            return []
        return blocks

    def one(
        self, keyword: str, body: Node | Legacy, reason: Scalar | None, pos: Pos
    ) -> Block | None:
        span = _span(pos)
        if keyword == "claim_ledger":
            return self.ledger(body, pos, span)
        if keyword == "gate" and isinstance(body, Map):  # {"gate": "BLOCKED", "reason": "…"}
            fields: dict[str, Node] = {}
            for key, node in body.pairs:
                name = _canonical(key.value, _GATE_KEYS)
                if name not in _GATE_KEYS:
                    self.unknown_key(key, _GATE_KEYS, "gate")
                    continue
                if self.single(node, key) is not None or node is None:
                    fields[name] = node
            said = fields.get("reason")
            return self.gate(
                fields.get("gate"), said if isinstance(said, Scalar) else None, pos, span
            )
        if keyword == "gate":
            return self.gate(body, reason, pos, span)
        if keyword == "question":
            return self.question(body, pos, span)
        return self.stamp(keyword, body, pos, span)

    # -- claim_ledger

    def ledger(self, body: Node | Legacy, where: Pos, span: Span) -> LedgerBlock | None:
        keyword = "claim_ledger"
        if not isinstance(body, Map):
            self.note(where, "claim_ledger must be a mapping", expected=["claims:"])
            return None
        claims: list[ClaimBlock] = []
        lists: dict[str, list[str]] = {
            "premises_for_plan": [],
            "open_questions": [],
            "done_when": [],
        }
        extra: dict[str, str] = {}
        seen: set[str] = set()
        for key, node in body.pairs:
            name = _canonical(key.value, (*LEDGER_KEYS, *LEDGER_ALIASES))
            name = LEDGER_ALIASES.get(name, name)
            self.check_duplicate(name, key, seen)
            if name == "claims":
                claims = self.claims(node, key.pos)
            elif name in lists:
                lists[name] = self.id_list(node, key)
            else:
                extra[key.value] = _as_text(node)
                self.unknown_key(key, LEDGER_KEYS, keyword)
        return LedgerBlock(
            claims=claims,
            premises_for_plan=lists["premises_for_plan"],
            open_questions=lists["open_questions"],
            done_when=lists["done_when"],
            extra=extra,
            span=span,
        )

    def claims(self, node: Node, where: Pos) -> list[ClaimBlock]:
        if node is None:
            return []
        if not isinstance(node, Seq):
            self.note(
                node.pos,
                "claims must be a list of claims",
                expected=["a list of '- id: …' entries"],
                text=_as_text(node),
            )
            return []
        out: list[ClaimBlock] = []
        for item in node.items:
            if not isinstance(item, Map):
                self.note(
                    _node_pos(item, where),
                    "each claim must be a mapping that starts with id:",
                    expected=["id: <claim id>"],
                    text=_as_text(item),
                )
                continue
            claim = self.claim(item)
            if claim is not None:
                out.append(claim)
        return out

    def claim(self, mapping: Map) -> ClaimBlock | None:
        fields: dict[str, str | None] = {}
        extra: dict[str, str] = {}
        seen: set[str] = set()
        id_node: Scalar | None = None
        places: dict[str, Pos] = {}
        for key, node in mapping.pairs:
            name = _canonical(key.value, CLAIM_KEYS)
            if name not in CLAIM_KEYS:
                extra[name] = _as_text(node)
                self.unknown_key(key, CLAIM_KEYS, "a claim")
                continue
            self.check_duplicate(name, key, seen)
            fields[name] = self.single(node, key)
            places[name] = _node_pos(node, key.pos)
            if name == "id" and isinstance(node, Scalar):
                id_node = node
        claim_id = fields.get("id")
        if claim_id is None or id_node is None:
            self.note(mapping.pos, "claim without an id", expected=["id: <claim id>"])
            return None
        if not self.check_id(claim_id, id_node.pos):
            return None
        status = fields.get("status")
        if (
            status is not None
            and InfoMark.parse(status) is InfoMark.UNKNOWN
            and status.strip().lower() != InfoMark.UNKNOWN.name.lower()
        ):
            self.note(
                mapping.pos,
                f"unrecognised status {short(status)!r} on claim {claim_id}; it counts as Unknown",
                severity="warning",
                expected=[m.label for m in sorted(InfoMark, reverse=True)],
                text=status,
            )
        expect = self.expectation(fields.get("expect"), places.get("expect", mapping.pos), claim_id)
        return ClaimBlock(
            id=claim_id,
            text=fields.get("text"),
            status=status,
            falsifier=fields.get("falsifier"),
            oracle=fields.get("oracle"),
            expect=expect,
            observe=fields.get("observe"),
            reason=fields.get("reason"),
            evidence=fields.get("evidence"),
            extra=extra,
            span=_span(mapping.pos),
        )

    def expectation(
        self, value: str | None, pos: Pos, claim_id: str
    ) -> Literal["PASS", "FAIL"] | None:
        if value is None:
            return None
        word = value.strip().upper()
        for known in EXPECTATIONS:
            if word == known:
                return known
        self.note(
            pos,
            f"expect {short(value)!r} on claim {claim_id} is not PASS or FAIL; "
            "write expect: FAIL for a claim that its oracle fails, or leave it out",
            expected=list(EXPECTATIONS),
            text=value,
        )
        return None

    def id_list(self, node: Node, key: Scalar) -> list[str]:
        if node is None:
            return []
        items: list[Node] = node.items if isinstance(node, Seq) else [node]
        out: list[str] = []
        for item in items:
            if not isinstance(item, Scalar):
                self.note(
                    _node_pos(item, key.pos),
                    f"{key.value} must list claim ids",
                    expected=["[C1, C2]", "a '- C1' list"],
                    text=_as_text(item),
                )
                continue
            if self.check_id(item.value, item.pos, hint=f"; write a list as {key.value}: [C1, C2]"):
                out.append(item.value)
        return out

    # -- stamps

    def stamp(
        self, keyword: str, body: Node | Legacy, where: Pos, span: Span
    ) -> StampBlock | DivergenceBlock | None:
        """One stamp or divergence_event: its fields (:meth:`stamp_fields`), a claim id that
        is one, then its result and authority normalised (a warning when unknown)."""
        fields = self.stamp_fields(keyword, body, where)
        if fields is None:
            return None
        values, extra, (id_pos, result_pos, authority_pos) = fields
        claim_id = values.get("claim_id")
        if claim_id is None:
            self.note(where, f"{keyword} without claim_id", expected=["claim_id=<claim id>"])
            return None
        if not self.check_id(claim_id, id_pos):
            return None
        if keyword == "divergence_event":
            return DivergenceBlock(
                claim_id=claim_id, evidence_ref=values.get("evidence_ref"), extra=extra, span=span
            )
        return StampBlock(
            kind=_stamp_kind(keyword),
            claim_id=claim_id,
            evidence_ref=values.get("evidence_ref"),
            result=self.stamp_result(values.get("result"), result_pos),
            layer=values.get("layer"),
            artifact=values.get("artifact"),
            content_hash=values.get("content_hash"),
            authority=self.stamp_authority(values.get("authority"), authority_pos),
            legacy=isinstance(body, Legacy),
            extra=extra,
            span=span,
        )

    def stamp_fields(
        self, keyword: str, body: Node | Legacy, where: Pos
    ) -> tuple[dict[str, str | None], dict[str, str], tuple[Pos, Pos, Pos]] | None:
        """``(values, unknown keys, positions of claim_id, result, authority)`` of a stamp's
        body: the legacy words, or key=value pairs (None, noted, when it is neither)."""
        known = DIVERGENCE_KEYS if keyword == "divergence_event" else STAMP_KEYS[keyword]
        values: dict[str, str | None] = {}
        extra: dict[str, str] = {}
        if isinstance(body, Legacy):
            limit = {"oracle_stamp": 2, "inference_stamp": 1}.get(keyword, 0)
            if len(body.words) > limit:
                word = body.words[limit]
                self.note(
                    word.pos,
                    f"unexpected {short(word.value)!r}: {keyword} takes key=value pairs",
                    expected=["claim_id=<id> evidence_ref=<ev_…>"],
                    text=word.value,
                )
                return None
            values["claim_id"] = body.words[0].value
            if len(body.words) == 2:
                values["result"] = body.words[1].value
            return values, extra, (body.words[0].pos, body.words[-1].pos, where)
        if not isinstance(body, Map):
            self.note(where, f"{keyword} needs claim_id and evidence_ref", expected=["claim_id="])
            return None
        seen: set[str] = set()
        pos = {"claim_id": where, "result": where, "authority": where}
        for key, node in body.pairs:
            name = _canonical(key.value, known)
            if name not in known:
                extra[key.value] = _as_text(node)
                self.unknown_key(key, known, keyword)
                continue
            self.check_duplicate(name, key, seen)
            values[name] = self.single(node, key)
            if name in pos:
                pos[name] = _node_pos(node, key.pos)
        return values, extra, (pos["claim_id"], pos["result"], pos["authority"])

    def stamp_result(self, result: str | None, pos: Pos) -> str | None:
        """PASS, FAIL or EXPECTED_FAIL in capitals; another word stays, with a warning."""
        return self._stamp_word(
            "result", result, pos, result.upper() if result else "", sorted(RESULTS),
            "PASS, FAIL or EXPECTED_FAIL",
        )  # fmt: skip

    def stamp_authority(self, authority: str | None, pos: Pos) -> str | None:
        """primary or secondary in lower case; another word stays, with a warning."""
        return self._stamp_word(
            "authority", authority, pos, authority.lower() if authority else "",
            list(AUTHORITIES), "primary or secondary",
        )  # fmt: skip

    def _stamp_word(
        self, key: str, word: str | None, pos: Pos, folded: str, allowed: list[str], say: str
    ) -> str | None:
        """``word`` as ``folded`` when that is one of ``allowed``; another word stays as
        written, with a warning that names ``say``."""
        if word is None or folded in allowed:
            return None if word is None else folded
        self.note(
            pos,
            f"{key} {short(word)!r} is not {say}",
            severity="warning",
            expected=allowed,
            text=word,
        )
        return word

    # -- gate

    def gate(
        self, body: Node | Legacy, reason: Scalar | None, where: Pos, span: Span
    ) -> GateBlock | None:
        value = body.value.strip() if isinstance(body, Scalar) else ""
        gate = value.upper()
        if gate not in GATE_NAMES:
            self.note(
                _node_pos(body, where),
                f"unknown gate {short(value)!r}",
                expected=["G0..G9", "SUCCESS", "BLOCKED", "OUT_OF_SCOPE", "WAITING_APPROVAL"],
                text=value,
            )
            return None
        return GateBlock(gate=gate, reason=None if reason is None else reason.value, span=span)

    # -- question

    def question(self, body: Node | Legacy, where: Pos, span: Span) -> QuestionBlock | None:
        if not isinstance(body, Scalar):  # the grammar admits only a scalar
            self.note(where, "question takes one value", expected=['question: "…"'])
            return None
        return QuestionBlock(text=body.value, span=span)

    # -- shared checks

    def single(self, node: Node, key: Scalar) -> str | None:
        if node is None or isinstance(node, Scalar):
            return None if node is None else node.value
        self.note(
            node.pos,
            f"{key.value} must be a single value, not a list or mapping",
            expected=["a value"],
            text=_as_text(node),
        )
        return None

    def check_id(self, claim_id: str, pos: Pos, hint: str = "") -> bool:
        if is_claim_id(claim_id):
            return True
        self.note(
            pos,
            f"invalid claim id {short(claim_id)!r}: ids use only letters, digits, "
            f"'_', '.' and '-'{hint}",
            expected=["a claim id matching [A-Za-z0-9_.-]+"],
            text=claim_id,
        )
        return False

    def check_duplicate(self, name: str, key: Scalar, seen: set[str]) -> None:
        if name in seen:
            self.note(
                key.pos,
                f"duplicate key {key.value!r}; the last one counts",
                severity="warning",
                text=key.value,
            )
        seen.add(name)

    def unknown_key(self, key: Scalar, known: Iterable[str], where: str) -> None:
        why = "unknown key"
        if key.value == "result" and where == "inference_stamp":
            why = "result is only meaningful on oracle_stamp; unknown key"
        self.note(
            key.pos,
            f"{why} {short(key.value)!r} in {where} (kept in extra)",
            severity="warning",
            expected=list(known),
            text=key.value,
        )
