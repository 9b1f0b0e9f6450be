"""What both HTTP clients share: one request builder per facade method, and the decoding.

:class:`Requests` turns each facade call into a :class:`Call` (the route from the table
:data:`~infomark.tools.routes.OPERATIONS`, the JSON body, the query, and how to turn the
answer back into the facade's type). :class:`~infomark.tools.client_base.ClientBase` holds
the URL, token, session and error mapping. The transports in
:mod:`infomark.tools.http_client` only send a :class:`Call` (blocking or async): every method
body is written once, here.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Generic, TypeVar, Unpack

from infomark.gates.decision import Decision, FinishDecision, Verdict
from infomark.gates.views import GateView, LedgerView
from infomark.kernel.errors import UserError
from infomark.kernel.session_id import check_session_id
from infomark.ledger.audit import AuditReport
from infomark.ledger.calls import RECORD_OPTIONS, ToolCall, ToolOutcome, check_options
from infomark.ledger.evidence import Evidence
from infomark.ledger.report import INGEST_OPTIONS, IngestReport
from infomark.tools.routes import operation

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from infomark.ledger.calls import RecordOptions
    from infomark.ledger.report import IngestOptions

__all__ = ["Call", "RemoteEvent", "Requests"]

D = TypeVar("D", bound="DataclassInstance")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class RemoteEvent:
    """One journal event as the service streams it (``EventRow.public()`` shape); what a
    line may leave out has its default."""

    session: str
    seq: int
    type: str
    payload: dict[str, Any] = field(default_factory=dict)
    timestamp: str = ""
    hash: str = ""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RemoteEvent:
        return _build(cls, d)

    def public(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # the fields are the shape

    to_dict = public


# -- bodies and decoding ------------------------------------------------
def _call_body(
    call: ToolCall, tool_class: str | None, bypass: bool | None = None
) -> dict[str, Any]:
    if bypass is not None:
        raise UserError(
            "bypass cannot be set over HTTP: the service decides it from its own "
            "environment (INFOMARK_BYPASS_GROUNDING=1 where `infomark serve` runs)"
        )
    body: dict[str, Any] = {"tool": call.tool, "input": dict(call.input)}
    if call.tool_call_id is not None:
        body["tool_call_id"] = call.tool_call_id
    if call.annotations is not None:
        body["annotations"] = dict(call.annotations)
    if call.cwd is not None:
        body["cwd"] = call.cwd
    if tool_class is not None:
        body["tool_class"] = tool_class
    return body


def _record_body(call: ToolCall, outcome: ToolOutcome, tool_class: str | None) -> dict[str, Any]:
    body = _call_body(call, tool_class)
    if isinstance(outcome.output, bytes):
        body["output"] = base64.b64encode(outcome.output).decode("ascii")
        body["output_encoding"] = "base64"
    else:  # a text streamed from a hook's stdin (kernel.spooled) is sent whole
        body["output"] = str(outcome.output)
    body.update(
        exit_code=outcome.exit_code,
        error=outcome.error,
        duration_ms=outcome.duration_ms,
        is_error=outcome.is_error,
    )
    return body


def _ingest_body(text: str, opts: IngestOptions) -> dict[str, Any]:
    source, cursor = opts.get("source", "assistant"), opts.get("cursor")
    body: dict[str, Any] = {"text": text, "source": source, "dedupe": opts.get("dedupe", False)}
    if cursor is not None:
        body["cursor"] = [cursor[0], cursor[1]]
    return body


def _host_body(
    tokens_used: int | None, context_window: int | None, compacted: bool
) -> dict[str, Any]:
    return {"tokens_used": tokens_used, "context_window": context_window, "compacted": compacted}


def _pairs(items: Any) -> tuple[tuple[str, str], ...]:
    return tuple((str(u["id"]), str(u["status"])) for u in items or ())


def _build(cls: type[D], d: Mapping[str, Any], **given: Any) -> D:
    """A facade dataclass from its ``to_dict()`` shape, field by field.

    Fields the service sent are taken as they are (JSON lists become tuples where the
    field is a tuple); ``given`` overrides; an ``extra`` field collects unknown keys
    (the facade spreads ``extra`` into ``to_dict()``). New facade fields need no
    change here.
    """
    names = {f.name: str(f.type) for f in fields(cls)}
    kw: dict[str, Any] = {}
    for name, typ in names.items():
        if name in given:
            kw[name] = given[name]
        elif name in d:
            value = d[name]
            kw[name] = (
                tuple(value) if typ.startswith("tuple") and isinstance(value, list) else value
            )
    if "extra" in names and "extra" not in given:
        kw["extra"] = {k: v for k, v in d.items() if k not in names}
    return cls(**kw)


def _decision(d: Mapping[str, Any]) -> Decision:
    return _build(
        Decision, d, verdict=Verdict(d["decision"]), ungrounded=_pairs(d.get("ungrounded"))
    )


def _finish(d: Mapping[str, Any]) -> FinishDecision:
    return _build(FinishDecision, d, ungrounded=_pairs(d.get("ungrounded")))


def _ingest(d: Mapping[str, Any]) -> IngestReport:
    return _build(IngestReport, d)


def _evidence(d: Mapping[str, Any]) -> Evidence:
    return Evidence.from_record(str(d["evidence_ref"]), dict(d["record"]))


def _ledger(d: Mapping[str, Any]) -> LedgerView:
    return _build(LedgerView, d, ungrounded=_pairs(d.get("ungrounded")))


def _gate(d: Mapping[str, Any]) -> GateView:
    return _build(GateView, d)


def _audit(d: Mapping[str, Any]) -> AuditReport:
    return _build(AuditReport, d)


def _classified(d: Mapping[str, Any]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    return str(d["tool_class"]), tuple(d["families"]), tuple(d["reasons"])


def _maybe_evidence(d: Mapping[str, Any] | None) -> Evidence | None:
    return None if d is None else _evidence(d)


# -- requests ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Call(Generic[R]):
    """One request to send: ``method path`` (+ JSON ``body``, ``params``) and its decoder.

    ``missing``: an error code that means "there is none" (the decoder gets ``None``).
    """

    method: str
    path: str
    decode: Callable[[Any], R]
    body: Mapping[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    missing: str | None = None


class Requests:
    """The facade's methods as :class:`Call` s, for one session (checked by the shared rule)."""

    def __init__(self, session: str) -> None:
        self.session = check_session_id(session)
        self.tool_text: dict[str, str] = {}

    def _call(
        self,
        name: str,
        decode: Callable[[Any], R],
        body: Mapping[str, Any] | None = None,
        *,
        missing: str | None = None,
        path: Mapping[str, str] | None = None,
        **params: Any,
    ) -> Call[R]:
        op = operation(name)
        where = {"session": self.session} if "session" in op.path_params else {}
        url = op.url_path(**where, **(path or {}))
        return Call(op.method, url, decode, body, params, missing)

    def health(self) -> Call[dict[str, Any]]:
        """Liveness of the service (no token needed)."""
        return self._call("health", dict)

    def sessions(self) -> Call[list[dict[str, Any]]]:
        """Sessions in the service's ledger home, with their event counts."""
        return self._call("sessions", lambda d: list(d["sessions"]))

    def ingest(self, text: str, **opts: Unpack[IngestOptions]) -> Call[IngestReport]:
        """Parse assistant text; apply claim_ledger, stamps, divergences and gate lines."""
        check_options("ingest", opts, INGEST_OPTIONS)
        return self._call("ingest", _ingest, _ingest_body(text, opts))

    def classify(
        self, call: ToolCall, tool_class: str | None = None
    ) -> Call[tuple[str, tuple[str, ...], tuple[str, ...]]]:
        """``(class, families, reasons)`` of a call; a declared class wins."""
        return self._call("classify", _classified, _call_body(call, tool_class))

    def authorize(
        self, call: ToolCall, *, bypass: bool | None = None, tool_class: str | None = None
    ) -> Call[Decision]:
        """allow / deny / ask for one call (``bypass`` is the service's to decide)."""
        return self._call("authorize", _decision, _call_body(call, tool_class, bypass))

    def record(
        self, call: ToolCall, outcome: ToolOutcome, **opts: Unpack[RecordOptions]
    ) -> Call[Evidence]:
        """Record the result of an authorized call (``call_id`` from its decision)."""
        check_options("record", opts, RECORD_OPTIONS)
        body = _record_body(call, outcome, opts.get("tool_class"))
        call_id = opts.get("call_id")
        if call_id:  # the service pairs the record with the call authorize returned
            body["tool_call_id"] = call_id
        for key in ("cwd", "background_id"):  # sent only when given
            value = opts.get(key)
            if value is not None:
                body[key] = value
        return self._call("record", self._recorded, body)

    def _recorded(self, body: Mapping[str, Any]) -> Evidence:
        evidence = _evidence(body)
        text = str(body.get("instructions") or "")
        if text:
            self.tool_text[evidence.ref] = text
        return evidence

    def evidence(self, ref: str) -> Call[Evidence | None]:
        """The evidence recorded under ``ref`` in this session, or None."""
        return self._call(
            "evidence", _maybe_evidence, missing="unknown_evidence", path={"ref": ref}
        )

    def can_finish(self, final_text: str = "") -> Call[FinishDecision]:
        """May the agent stop now?"""
        return self._call("finish", _finish, {"text": final_text})

    def check(self, claim_id: str) -> Call[dict[str, Any]]:
        """Ask infomark to run ``claim_id``'s oracle itself (an attested run): the text for
        the agent, ``evidence_ref``, ``outcome`` and the claim's rank after it."""
        return self._call("check", dict, {"claim_id": claim_id})

    def approve(
        self, *, by: str = "operator", note: str = "", operator_token: str | None = None
    ) -> Call[None]:
        """Record the G4 approval: an operator act, so the service needs the operator's token
        (``serve --operator-token-file``), never the agent-readable service token."""
        body: dict[str, Any] = {"by": by, "note": note}
        if operator_token is not None:
            body["operator_token"] = operator_token
        return self._call("approve", lambda d: None, body)

    def new_turn(self, prompt: str | None = None) -> Call[str]:
        """Start a user turn; returns context text for the next model call."""
        return self._call("turn", lambda d: str(d["context"]), {"prompt": prompt})

    def on_prompt(self, prompt: str) -> Call[str]:
        """A new user prompt: start a turn; return context text for the next model call."""
        return self.new_turn(prompt)

    def move(self, gate: str) -> Call[dict[str, Any]]:
        """Request a gate move as the agent would with a ``gate:`` line."""
        return self._call("move", dict, {"gate": gate})

    def host_report(
        self,
        *,
        tokens_used: int | None = None,
        context_window: int | None = None,
        compacted: bool = False,
    ) -> Call[str]:
        """Usage and compaction as the host reports them; returns packs that fired."""
        body = _host_body(tokens_used, context_window, compacted)
        return self._call("host_report", lambda d: str(d["instructions"]), body)

    def context_view(self, budget: int = 1200) -> Call[str]:
        """What goes into the next model call: active packs, working memory, ledger summary."""
        return self._call("context", lambda d: str(d["context"]), budget=budget)

    def compaction_context(self) -> Call[str]:
        """After a compaction: claim ids, ranks and live evidence refs, verbatim."""
        return self._call("compaction_context", lambda d: str(d["context"]))

    def state_document(self) -> Call[dict[str, Any]]:
        """The session's state: ledger, gate, metrics, policy state."""
        return self._call("state", dict)

    def ledger(self) -> Call[LedgerView]:
        """A read-only view of the session's ledger."""
        return self._call("session", lambda d: _ledger(d["ledger"]))

    def gate(self) -> Call[GateView]:
        """The gate position, its allowed moves and loop budget."""
        return self._call("gate", _gate)

    def audit(self, verify: bool = True) -> Call[AuditReport]:
        """Every claim's rank and why; ``verify`` checks the hash chain and MACs."""
        return self._call("audit", _audit, verify=int(verify))

    def fork(self, as_session: str, upto: int | None = None) -> Call[dict[str, Any]]:
        """Fork this session up to seq ``upto`` (default: the head) into ``as_session``."""
        body: dict[str, Any] = {"as_session": check_session_id(as_session), "upto": upto}
        return self._call("fork", dict, body)

    def merge_from(self, session: str) -> Call[dict[str, Any]]:
        """Merge what the fork ``session`` settled after its fork point into this session."""
        return self._call("merge", dict, {"from_session": check_session_id(session)})

    def events(self, *, after: int = 0, follow: bool = False) -> Call[RemoteEvent | None]:
        """Journal events after ``after`` (JSON lines; each line decodes to one event)."""
        return self._call("events", _line_event, after=after, follow=int(follow))


def _line_event(line: str) -> RemoteEvent | None:
    return RemoteEvent.from_dict(json.loads(line)) if line.strip() else None
