"""The ledger engine of one session: journal + key + projection, behind write transactions.

Every command runs inside :meth:`Ledger.transaction`: it takes the write lock,
catches the projection up with events other processes appended, lets the caller
emit events (each applied to the projection as it is appended) and commits them
whole. Standard library only; the parser loads lazily in :meth:`ingest`, and only
when the text may hold a block.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping

from infomark.kernel.contexts import Closing, contextmanager
from infomark.kernel.digest import compare_digest, sha256
from infomark.kernel.errors import RecordRefused, StoreError
from infomark.kernel.reasons import RejectReason
from infomark.kernel.tools import ToolClass
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.canonical import canonical_json, digest
from infomark.ledger.evidence import (
    REF_PATTERN,
    Evidence,
    EvidenceClass,
    Outcome,
    build_record,
    evidence_class_for,
    ref_for,
)
from infomark.ledger.home import ensure_private_dir
from infomark.ledger.keys import Key, load_key
from infomark.ledger.lineage import inherits
from infomark.ledger.report import IngestReport
from infomark.ledger.semantics import LedgerRules, check_artifacts, shell_text
from infomark.ledger.state import SessionState, apply, state_from_dict
from infomark.ledger.store.base import BaseJournal, EventRow
from infomark.ledger.store.select import open_blobs, open_journal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Unpack

    from _typeshed import StrPath

    from infomark.ledger.blocks import ParsedMessage
    from infomark.ledger.calls import RecordOptions
    from infomark.ledger.report import IngestOptions

    class EngineRecordOptions(RecordOptions, total=False):
        """:class:`RecordOptions` and what the facade adds: the declared class, the output
        already stored (:meth:`Ledger.record`)."""

        declared: ToolClass | None
        stored: tuple[str, int] | None

    #: :meth:`Ledger.preparse`'s answer: the text's digest, whether it may hold blocks,
    #: and its parse (None when it holds none or is a known duplicate).
    Preparsed = tuple[str, bool, ParsedMessage | None]

__all__ = ["ON_OPEN", "Ledger", "call_digest"]

_SNAPSHOT_EVERY = 64

#: Called with every :class:`Ledger` this process opens, once it is ready: the process-wide
#: OpenTelemetry export (``INFOMARK_OTEL``, :mod:`infomark.tools.otel`) attaches its listener
#: here. Empty unless something registered; the hook path never does when OTel is off.
ON_OPEN: list[Callable[[Ledger], None]] = []


def call_digest(call: ToolCall) -> str:
    """The digest of a call's input that pairs its authorization with its record."""
    try:
        return digest(canonical_json(dict(call.input)))
    except (TypeError, ValueError):
        return digest(repr(call.input).encode("utf-8", "replace"))


def _read_only(call: ToolCall) -> bool:
    ann = call.annotations or {}
    return ann.get("readOnlyHint") is True or ann.get("read_only_hint") is True


class Ledger(Closing):
    """One session's ledger in a home directory."""

    def __init__(
        self,
        home: StrPath,
        session: str = "default",
        *,
        key: Key | None = None,
        rules: LedgerRules | None = None,
        root: StrPath | None = None,
        evidence_overrides: Mapping[str, str] | None = None,
        store: str | None = None,
    ) -> None:
        #: the home and the project root as str: what the hook's path uses (no pathlib there)
        self.home_dir = os.fspath(home)
        ensure_private_dir(self.home_dir)
        self.session = session
        self.key = key or load_key(self.home_dir)
        self.journal: BaseJournal = open_journal(self.home_dir, self.key, store)
        self.blobs = open_blobs(self.home_dir, self.journal)
        self.rules = rules or LedgerRules()
        self.root_dir = os.fspath(root) if root else os.getcwd()
        self.evidence_overrides = dict(evidence_overrides or {})
        self._in_tx = False
        self._steady = 0  # 1: inside steady(), 2: and caught up there
        self._emitted: list[EventRow] = []
        #: Called with the events of each committed transaction (after the commit, in order;
        #: an exception in a listener is logged, never raised: the command has committed).
        self.listeners: list[Callable[[list[EventRow]], None]] = []
        self._snap_seq = 0  # seq of the newest snapshot persisted (by any process)
        self._state = self._load_state()
        for on_open in ON_OPEN:
            on_open(self)

    # -- projection -----------------------------------------------------------------

    @property
    def home(self) -> Path:
        """The ledger home (:attr:`home_dir` as a :class:`~pathlib.Path`)."""
        from pathlib import Path

        return Path(self.home_dir)

    @property
    def root(self) -> Path:
        """The project root (:attr:`root_dir` as a :class:`~pathlib.Path`)."""
        from pathlib import Path

        return Path(self.root_dir)

    def _load_state(self) -> SessionState:
        """The snapshot (at most ``_SNAPSHOT_EVERY`` events behind the head) plus the rest."""
        snap = self.journal.load_snapshot(self.session)
        state = SessionState(session=self.session)
        self._snap_seq = 0
        if snap is not None:
            try:
                state = state_from_dict(snap[1])
                self._snap_seq = state.seq
            except (TypeError, KeyError, ValueError):
                state = SessionState(session=self.session)  # older shape: replay
        self._replay_into(state)
        return state

    def _replay_into(self, state: SessionState) -> None:
        for row in self.journal.events(self.session, after=state.seq):
            try:
                apply(state, row.seq, row.type, row.payload)
            except (KeyError, TypeError, ValueError, AttributeError):
                state.seq = row.seq  # a garbled row: `audit --verify` names it; skip it here

    @property
    def state(self) -> SessionState:
        """The projection as of the last transaction (call :meth:`refresh` to catch up)."""
        return self._state

    def refresh(self) -> SessionState:
        """Catch the projection up with events appended by other processes (inside
        :meth:`steady`, only the first time)."""
        if not self._in_tx and self._steady != 2:
            self._replay_into(self._state)
            if self._steady:
                self._steady = 2
        return self._state

    @contextmanager
    def steady(self) -> Iterator[None]:
        """One view for one hook call: inside, :meth:`refresh` catches up once and then
        returns the projection as it is (with this session's own events, applied as they are
        emitted). A transaction still catches up under its lock, so what is written is judged
        on every committed event; only what the call *reads* outside one stops following
        other processes' appends (which any read could miss by a millisecond anyway). Saves
        the journal query that each ``gk.state`` read repeated: four per PreToolUse.
        Nested use joins the outer one."""
        if self._steady:
            yield
            return
        self._steady = 1
        try:
            yield
        finally:
            self._steady = 0

    def replay(self) -> SessionState:
        """A fresh projection from the whole journal, ignoring snapshots."""
        state = SessionState(session=self.session)
        self._replay_into(state)
        return state

    # -- transactions -----------------------------------------------------------------
    @contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[Ledger]:
        """Serialise a command: lock, catch up, emit, commit (nested use joins the open one).

        ``durable=False``: for events whose loss fails closed (an allow of a call that
        changes nothing: a result recorded for a lost decision is refused, never evidence;
        a deny: nothing ran). The commit survives any process crash; only an OS crash or
        power loss before the next durable commit can drop it (SQLite: no fsync for it;
        PostgreSQL commits stay synchronous). :meth:`require_sync` inside undoes it.
        """
        if self._in_tx:
            yield self
            return
        if not durable:
            self.journal.relax_next()
        committed = False
        try:
            with self.journal.write(self.session):
                self._in_tx = True
                self._emitted = []
                self._replay_into(self._state)
                yield self
                self.blobs.flush_staged()  # small outputs, with the events pointing to them
                # Whoever emitted the events: a process that finds the head too far from
                # the last snapshot writes one, in the same transaction as its appends.
                if self._state.seq - self._snap_seq >= _SNAPSHOT_EVERY:
                    view = self._state.snapshot_view()
                    self.journal.save_snapshot(self.session, self._state.seq, view)
                    self._snap_seq = self._state.seq
            committed = True
            if self._steady:  # caught up under the lock, then our own events applied
                self._steady = 2
        except BaseException:
            # The journal rolled back: rebuild the projection from what is committed.
            self.blobs.drop_staged()
            self._in_tx = False
            self._state = self._load_state()
            raise
        finally:
            self._in_tx = False
        if committed and self.listeners and self._emitted:
            self._notify(list(self._emitted))

    def _notify(self, rows: list[EventRow]) -> None:
        for listener in list(self.listeners):
            try:
                listener(rows)
            except Exception:  # telemetry never fails a committed command
                import logging  # lazily: the hook's start-up never pays for it

                logging.getLogger("infomark.ledger").exception(
                    "an event listener failed (the events are committed)"
                )

    def emit(self, type_: str, payload: Mapping[str, Any], payload_json: str | None = None) -> int:
        """Append an event and apply it; only inside :meth:`transaction`.

        ``payload_json``, when given, must be ``canonical_json(payload)`` (saves encoding twice).
        """
        if not self._in_tx:
            raise StoreError("emit outside a transaction")
        row = self.journal.append(self.session, type_, payload, payload_json=payload_json)
        apply(self._state, row.seq, row.type, row.payload)
        self._emitted.append(row)
        return row.seq

    def require_sync(self) -> None:
        """The open transaction (begun with ``durable=False``) needs the disk after all."""
        if self._in_tx:
            self.journal.require_sync()

    def emitted(self) -> list[EventRow]:
        """Events appended by the current (or last) transaction."""
        return list(self._emitted)

    # -- evidence --------------------------------------------------------------------------
    def store_output(self, outcome: ToolOutcome) -> tuple[str, int]:
        """The output's blob, stored: ``(digest, size)``. Hashed once (a large text chunk by
        chunk, never copied whole); durable (fsync'd) before any event points to it."""
        return self.blobs.put_output(outcome.output)  # a small one: a row, with the event

    def record(
        self, call: ToolCall, outcome: ToolOutcome, **opts: Unpack[EngineRecordOptions]
    ) -> Evidence:
        """Record the result of an authorized call as signed evidence (with its ref and tag).

        The options are :class:`~infomark.ledger.calls.RecordOptions` and two of the facade's:
        ``stored``, what :meth:`store_output` returned for this outcome, called before the
        write transaction (a large output is then written without holding the home's lock);
        ``declared``, the class the integration declared for this tool, which decides the
        evidence class (see :func:`~infomark.ledger.evidence.evidence_class_for`).

        ``call_id`` (default: ``call.tool_call_id``) must name a pending call that was
        authorized with the same tool and input, and only once: anything else is journaled
        as ``record_refused`` and raises :class:`RecordRefused`; it never yields evidence.
        """
        cid = opts.get("call_id") or call.tool_call_id
        declared = opts.get("declared")
        output = opts.get("stored") or self.store_output(outcome)
        eclass = evidence_class_for(call.tool, self.evidence_overrides, declared=declared)
        if eclass is EvidenceClass.INELIGIBLE and declared is None and _read_only(call):
            eclass = EvidenceClass.OBSERVATION  # an MCP tool that declares it only reads
        background = call.input.get("run_in_background") is True
        if background:
            eclass = EvidenceClass.INELIGIBLE  # no outcome until its exit status is observed
        refused: RecordRefused | None = None
        with self.transaction():
            refused = self._unpaired(call, cid)
            finished = self._background_finished(call, outcome)
            if finished is not None:
                eclass = EvidenceClass.EXECUTION  # the background run's exit status, observed
            if refused is not None:
                self.emit(
                    "record_refused",
                    {
                        "call_id": cid,
                        "tool": call.tool,
                        "input_digest": call_digest(call),
                        "exit_code": outcome.exit_code,
                        "reason": refused.code,
                        "message": refused.message,
                    },
                )
            else:
                tool_class = opts.get("tool_class")  # as the caller declared or classified it
                seq, record = self._next_record(call, outcome, eclass, tool_class, output)
                record["call_id"] = cid
                record["cwd"] = opts.get("cwd") or self.root_dir
                command = call.command
                if command is not None:
                    record["oracle_key"] = shell_text(command)
                if finished is not None:  # stands for the command that ran in the background
                    record["command"] = str(finished.get("command") or "")
                    record["oracle_key"] = shell_text(record["command"])
                    record["completes"] = finished.get("ref")
                if background:
                    record["background"] = True
                    record["background_id"] = opts.get("background_id")
                ref = self._sign(record, seq)
        if refused is not None:
            raise refused
        return Evidence.from_record(ref, record)

    def _next_record(
        self,
        call: ToolCall,
        outcome: ToolOutcome,
        eclass: EvidenceClass,
        tool_class: str | None,
        output: tuple[str, int],
    ) -> tuple[int, dict[str, Any]]:
        """The journal's next seq and the evidence record of ``call`` at it (in a transaction:
        :meth:`_sign` journals it at that seq); ``output``: the stored output's digest, size."""
        seq = self.journal.last_seq(self.session) + 1
        record = build_record(
            session=self.session,
            seq=seq,
            call=call,
            outcome=outcome,
            evidence_class=eclass,
            key_id=self.key.key_id,
            tool_class=tool_class,
            output=output,
        )
        return seq, record

    def _sign(self, record: dict[str, Any], seq: int) -> str:
        """Sign ``record`` and journal it as ``evidence_recorded`` at ``seq``: its ref."""
        record_json = canonical_json(record)
        mac = self.key.mac(record_json)
        ref = "ev_" + mac[:24]
        text = record_json.decode("utf-8")
        # canonical_json({"mac", "record", "ref"}) spelled out: the keys are in order
        payload_json = f'{{"mac":"{mac}","record":{text},"ref":"{ref}"}}'
        got = self.emit(
            "evidence_recorded", {"ref": ref, "record": record, "mac": mac}, payload_json
        )
        if got != seq:  # pragma: no cover - the write lock makes this impossible
            raise StoreError(f"evidence seq raced ({got} != {seq})")
        self.journal.index_evidence(ref, self.session, seq, text, mac)
        return ref

    def record_attested(
        self, oracle: str, outcome: ToolOutcome, attestation: Mapping[str, Any], judged: str
    ) -> Evidence:
        """Record infomark's own sandboxed run of ``oracle`` as ``attested`` evidence.

        No authorized call pairs with it: the agent did not run it, infomark did (the tools
        layer's attested runner, docs/security.md#attested-runs). ``attestation`` says what
        ran: baseline, carried change set, sandbox, limits hit, the runner's report.
        ``judged``: the outcome read from that report (``PASS`` / ``FAIL`` / ``ERROR``),
        which may differ from the exit status (a run that ran no test is no ``PASS``).
        """
        call = ToolCall("infomark.check", {"command": oracle})
        output = self.store_output(outcome)
        with self.transaction():
            seq, record = self._next_record(
                call,
                outcome,
                EvidenceClass.ATTESTED,
                ToolClass.EXECUTE.value,
                output,
            )
            record["cwd"] = self.root_dir
            record["oracle_key"] = shell_text(oracle)
            record["attested"] = dict(attestation)
            record["outcome"] = Outcome(judged).value
            ref = self._sign(record, seq)
        return Evidence.from_record(ref, record)

    def _background_finished(self, call: ToolCall, outcome: ToolOutcome) -> dict[str, Any] | None:
        """The background run a BashOutput/TaskOutput result completes (with an exit status)."""
        if call.tool.lower() not in ("bashoutput", "taskoutput") or outcome.exit_code is None:
            return None
        for key in ("bash_id", "shell_id", "task_id", "id"):
            value = call.input.get(key)
            if isinstance(value, str) and value in self._state.background:
                return self._state.background[value]
        return None

    def _unpaired(self, call: ToolCall, cid: str | None) -> RecordRefused | None:
        """Why this record may not become evidence (None: it pairs with a pending call)."""
        hint = RejectReason.UNPAIRED_RECORD.hint
        if not cid:
            return RecordRefused(f"{call.tool}: the record names no authorized call; {hint}")
        pending = self._state.pending_calls.get(cid)
        if pending is None:
            if cid in self._state.recorded_calls:
                return RecordRefused(
                    f"call {cid} was already recorded; {RejectReason.REPEATED_RECORD.hint}",
                    code=RejectReason.REPEATED_RECORD.value,
                )
            return RecordRefused(f"call {cid} was never authorized (or was denied); {hint}")
        if pending.get("tool") != call.tool or pending.get("input_digest") != call_digest(call):
            return RecordRefused(
                f"call {cid} was authorized for {pending.get('tool')} with another input; {hint}"
            )
        return None

    def verify_ref(self, ref: str) -> tuple[Evidence | None, RejectReason | None]:
        """Look a ref up and check it was issued, untampered, to this session."""
        return self.verify_ref_in(ref, self.session)

    def verify_ref_in(self, ref: str, owner: str) -> tuple[Evidence | None, RejectReason | None]:
        """Was ``ref`` issued, untampered, to ``owner`` or to its fork ancestry (docs/fork.md)?"""
        if not isinstance(ref, str) or not REF_PATTERN.fullmatch(ref):
            return None, RejectReason.UNKNOWN_EVIDENCE
        row = self.journal.evidence_row(ref)
        if row is None:
            return None, RejectReason.UNKNOWN_EVIDENCE
        session, seq, record, mac = row
        if record.get("__garbled__"):
            return None, RejectReason.TAMPERED_EVIDENCE
        expect_ref, expect_mac = ref_for(self.key, record)
        if not (
            compare_digest(expect_mac, mac)
            and compare_digest(expect_ref, ref)
            and record.get("session") == session
            and record.get("seq") == seq
        ):
            return None, RejectReason.TAMPERED_EVIDENCE
        if session != owner and not inherits(self.journal, owner, session, seq, ref):
            return None, RejectReason.FOREIGN_EVIDENCE  # not from this fork's ancestry either
        return Evidence.from_record(ref, record), None

    def output_of(self, ev: Evidence) -> bytes | None:
        """The stored output of a recorded result (None when its blob is missing)."""
        return self.blobs.get(ev.output_digest)

    def evidence(self, ref: str) -> Evidence | None:
        ev, _ = self.verify_ref(ref)
        return ev

    # -- ingest ----------------------------------------------------------------------------
    def preparse(self, text: str, *, dedupe: bool = False) -> Preparsed:
        """``(digest, may hold blocks, parsed)`` of ``text``, before any write lock is taken.

        Other processes wait on the write lock, so the parse happens here; not at all when
        the text is already known to be a duplicate (the check under the lock decides, and
        parses there only in the rare case the two disagree).
        """
        from infomark.ledger.sniff import may_contain_blocks

        digest = sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        blocks = may_contain_blocks(text)
        parsed = None
        if blocks and not (dedupe and digest in self._state.ingested):
            from infomark.ledger.parse.parser import parse_message

            parsed = parse_message(text)
        return digest, blocks, parsed

    def ingest(
        self, text: str, *, pre: Preparsed | None = None, **opts: Unpack[IngestOptions]
    ) -> IngestReport:
        """Parse assistant text and apply every block in order (one transaction).

        ``pre`` is :meth:`preparse`'s answer for ``text``, computed by a caller that takes
        the write lock around this call (the facade), so the parse stays outside the lock.
        The options: :class:`~infomark.ledger.report.IngestOptions`.
        """
        source, cursor = opts.get("source", "assistant"), opts.get("cursor")
        dedupe = opts.get("dedupe", False)
        report = IngestReport()
        digest, blocks, parsed = pre if pre is not None else self.preparse(text, dedupe=dedupe)
        with self.transaction():
            if dedupe and digest in self._state.ingested:
                report.skipped = True
                if cursor is not None:
                    self._cursor(cursor)
                return report
            if blocks and parsed is None:
                from infomark.ledger.parse.parser import parse_message

                parsed = parse_message(text)
            if parsed is not None:
                lines = text.splitlines() if parsed.diagnostics else []
                for d in parsed.diagnostics:
                    found = d.to_dict()
                    line = int(found.get("line") or 0)
                    if found.get("severity", "error") == "error" and 0 < line <= len(lines):
                        found["source"] = lines[line - 1][:240]  # the line, for a caret
                    report.diagnostics.append(found)
                self._apply_blocks(parsed.blocks, report)
            if parsed is not None or cursor is not None or dedupe:
                payload: dict[str, Any] = {
                    "digest": digest,
                    "size": len(text),
                    "source": source,
                    "blocks": len(parsed.blocks) if parsed else 0,
                    "errors": [
                        _journaled_error(d, text)
                        for d in report.diagnostics
                        if d.get("severity", "error") == "error"
                    ][:20],
                }
                if cursor is not None:
                    payload["cursor"] = {"name": cursor[0], "value": cursor[1]}
                self.emit("message_ingested", payload)
        if report.ledger_updated:
            report.claims = [
                {"id": c.id, "text": c.text, "status": c.status, "written": c.written}
                for c in self._state.claims.values()
            ]
        return report

    def _cursor(self, cursor: tuple[str, int]) -> None:
        self.emit(
            "message_ingested",
            {
                "digest": "",
                "size": 0,
                "source": "cursor",
                "blocks": 0,
                "errors": [],
                "cursor": {"name": cursor[0], "value": cursor[1]},
            },
        )

    def move_cursor(self, name: str, value: int) -> None:
        """Remember a read position (e.g. in a host transcript) without ingesting text. No
        fsync: an OS crash that drops it repeats a read or a notice, and grants nothing."""
        with self.transaction(durable=False):
            self._cursor((name, value))

    def _apply_blocks(self, blocks: list[Any], report: IngestReport) -> None:
        # the judges load with the first block (off the hook's hot path, like the parser)
        from infomark.ledger.claims import apply_ledger
        from infomark.ledger.stamps.rules import apply_divergence, apply_stamp

        for block in blocks:
            kind = block.kind
            if kind == "claim_ledger":
                apply_ledger(self, block, report)
            elif kind in ("oracle_stamp", "inference_stamp"):
                from infomark.ledger.stamps.source import guard_web

                if not guard_web(self, block, report):  # web pages: source_stamp only
                    apply_stamp(self, block, report)
            elif kind == "source_stamp":
                from infomark.ledger.stamps.source import apply_source_stamp

                apply_source_stamp(self, block, report)
            elif kind == "divergence_event":
                apply_divergence(self, block, report)
            elif kind == "gate":
                move: dict[str, Any] = {"gate": block.gate, "line": block.span.line}
                reason = getattr(block, "reason", None)
                if reason:
                    move["reason"] = reason
                report.gate_moves.append(move)
            elif kind == "question":  # a question for the user: the agent waits for an answer
                report.gate_moves.append(
                    {
                        "gate": "WAITING_APPROVAL",
                        "line": block.span.line,
                        "question": getattr(block, "text", ""),
                    }
                )

    def check_artifacts(self) -> list[dict[str, Any]]:
        """Re-digest stamped artifacts now; revoke stamps whose artifact changed."""
        self.refresh()
        if not any(c.stamp and c.stamp.artifact for c in self._state.claims.values()):
            return []
        with self.transaction():
            return check_artifacts(self)

    def close(self) -> None:
        self.journal.close()


def _journaled_error(d: Mapping[str, Any], text: str) -> dict[str, Any]:
    """A parse error as ``message_ingested`` journals it: where, what, what was expected and
    the source line (for a caret under it; clipped), so the agent is told exactly what to fix."""
    out: dict[str, Any] = {"line": d["line"], "column": d["column"], "message": d["message"]}
    if d.get("expected"):
        out["expected"] = [str(e) for e in d["expected"][:8]]
    if d.get("block"):
        out["block"] = str(d["block"])
    lines = text.splitlines()
    line = int(d["line"] or 0)
    if 0 < line <= len(lines):
        out["source"] = lines[line - 1][:240]
    return out
