"""The facade: one session's gatekeeper over a ledger home.

``Gatekeeper.open(home, session)`` is all an integration needs: ``ingest`` the
agent's text, ``authorize`` each tool call, ``record`` each result, ask
``can_finish`` before the agent stops, ``audit`` at any time. Every decision is a
journal event. Standard library at import; parser and pydantic load lazily.

The facade orchestrates and commits; it does not decide. What a decision is, and the events
that journal it, are the gates' (:mod:`~infomark.gates.authorize`, :mod:`~infomark.gates.finalize`,
:mod:`~infomark.gates.refetch`, :mod:`~infomark.gates.grading_flow`, :mod:`~infomark.gates.watch`).
Why this module is longer than 500 lines: it is the one class of the public API, one method a
command or a view, each a short orchestration with the docstring users read; splitting the
class across modules would put a module more on the hook's hot path for no new job.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping

from infomark.gates import grading_flow, watch
from infomark.gates.authorize import (
    BYPASS_ENV,
    authorize_call,
    bypass_event,
    decision_event,
    deny_unattended,
    name_decision,
    note_stale_sources,
    operator_approved,
)
from infomark.gates.classify import classify_tool, declare_class
from infomark.gates.config import Config, ledger_rules, load_config
from infomark.gates.decision import Decision, FinishDecision, Verdict
from infomark.gates.protect import guard_decision, protected, session_cwd
from infomark.kernel.contexts import Closing
from infomark.kernel.decisions import FinishCode
from infomark.kernel.digest import sha256
from infomark.kernel.errors import RecordRefused, UserError
from infomark.kernel.profiles import PROFILES, Profile
from infomark.kernel.records import replace
from infomark.kernel.session_id import check_session_id
from infomark.kernel.tools import Classification, ToolClass
from infomark.ledger.calls import RECORD_OPTIONS, ToolCall, ToolOutcome, check_options
from infomark.ledger.engine import Ledger, call_digest
from infomark.ledger.evidence import Evidence
from infomark.ledger.home import default_home, default_home_dir, ensure_private_dir
from infomark.ledger.report import INGEST_OPTIONS, IngestReport
from infomark.ledger.state import SessionState, held_key
from infomark.ledger.store.journal import EventRow
from infomark.ledger.store.select import pick_store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Unpack

    from _typeshed import StrPath

    from infomark.gates.checks import CheckStatus
    from infomark.gates.policies.runtime import PolicyRuntime, PolicyStep
    from infomark.gates.views import GateView, LedgerView
    from infomark.gates.weakened import Finding as WeakFinding
    from infomark.ledger.audit import AuditReport
    from infomark.ledger.calls import RecordOptions
    from infomark.ledger.report import IngestOptions
    from infomark.ledger.stamps.source import Refetch

__all__ = ["GateView", "Gatekeeper", "LedgerView", "default_home", "set_default_attester"]

# What gives a new Gatekeeper its attester (None: nothing; the integrations set their own).
# The tools layer's attested runner cannot be imported from here (the layering rule), so the
# public API (``infomark.Gatekeeper``, the package root) installs it: a Python-API session then
# runs, at its finish, the attested checks it needs, as the hook, runner, MCP and HTTP do.
_default_attester: list[Callable[[Gatekeeper], None] | None] = [None]


def set_default_attester(factory: Callable[[Gatekeeper], None] | None) -> None:
    """Give every Gatekeeper made from now on its attester through ``factory`` (None: none)."""
    _default_attester[0] = factory


class Gatekeeper(Closing):
    """The gatekeeper of one agent session."""

    def __init__(self, ledger: Ledger, config: Config) -> None:
        self._ledger = ledger
        self.config = config
        self._runtime: PolicyRuntime | None = None
        self._tool_text: dict[str, str] = {}
        # Why nobody can answer an "ask" in this run (None: someone can); see authorize().
        self.unattended: str | None = None
        # How the host re-runs a web fetch (tool, input) -> output, when it can: before a
        # mutation, the pages its premises rest on are re-fetched and compared (docs/blocks.md).
        self.refetch: Refetch | None = None
        # Files the host keeps that witness the journal (Claude Code's transcript): the
        # agent's tools may not change them; set by the integration, like `unattended`.
        self.host_files: tuple[str, ...] = ()
        # Runs a claim's oracle the way infomark grades it (docs/security.md#attested-runs):
        # claim id -> the text for the agent; set by the integrations that can (the tools
        # layer's attested runner); the finish calls it for the claims it needs.
        self.attester: Callable[[str], str] | None = None
        # Runs one of the project's required checks (a command, no claim) the same way: the
        # verify profile's finish calls it for the checks that have no fresh attested PASS.
        self.check_attester: Callable[[str], str] | None = None
        # What the hook last verified of this session's journal tail (the Claude Code hook's own
        # cache, not API): a pooled session then checks only what is new (hooks/failsafe.py).
        self._tail_memo: object | None = None
        # The hook's steering inbox of this session (hooks/inbox.py), opened on its first use
        # and kept while the session is open: a pooled session does not reconnect per call.
        self._inbox: object | None = None
        if _default_attester[0] is not None:  # the public API's: infomark.Gatekeeper
            _default_attester[0](self)

    @property
    def policy(self) -> PolicyRuntime:
        """The adaptive policy layer (packs, working memory, triggers), loaded on first use."""
        if self._runtime is None or self._runtime.config is not self.config:
            from infomark.gates.policies.runtime import PolicyRuntime

            self._runtime = PolicyRuntime(self.config)
        return self._runtime

    def use_policies(self, runtime: PolicyRuntime) -> None:
        """Run this policy runtime (e.g. with custom policies) instead of the configured one."""
        self.config = runtime.config
        self._runtime = runtime

    @classmethod
    def open(
        cls,
        home: StrPath | None = None,
        session: str = "default",
        *,
        root: StrPath | None = None,
        config: Config | None = None,
        profile: str | None = None,
        store: str | None = None,
    ) -> Gatekeeper:
        """Open (creating if needed) the ledger home and one session in it.

        ``store`` selects the journal's backend (a ``postgresql://`` URL, or ``sqlite``);
        without it: ``$INFOMARK_STORE``, the configuration's ``store``, ``<home>/store``,
        else the home's SQLite file (:mod:`infomark.ledger.store.select`).
        """
        check_session_id(session)  # the rule every entry point shares
        home_p = os.fspath(home) if home is not None else default_home_dir()
        root_p = os.fspath(root) if root is not None else os.getcwd()
        ensure_private_dir(home_p)  # before the config cache is written into it
        cfg = config or load_config(root_p, home_p)
        if profile is not None:
            if profile not in PROFILES:
                raise UserError(f"unknown profile {profile!r}; use one of {', '.join(PROFILES)}")
            cfg = replace(cfg, profile=Profile(profile))
        ledger = Ledger(
            home_p,
            cfg.session_prefix + session,
            rules=ledger_rules(cfg, home_p),
            root=root_p,
            evidence_overrides=cfg.evidence_classes,
            store=pick_store(store, cfg.store),
        )
        return cls(ledger, cfg)

    # -- plumbing -----------------------------------------------------------------------
    @property
    def session(self) -> str:
        return self._ledger.session

    @property
    def home(self) -> Path:
        return self._ledger.home

    @property
    def store(self) -> Ledger:
        """The underlying ledger engine (journal, key, projection)."""
        return self._ledger

    @property
    def state(self) -> SessionState:
        return self._ledger.refresh()

    def close(self) -> None:
        inbox, self._inbox = self._inbox, None
        close = getattr(inbox, "close", None)
        if close is not None:
            close()
        self._ledger.close()

    def _track(self, *, finished: bool = False) -> None:
        from infomark.gates.position import track

        track(self._ledger, self.config, finished=finished)

    # -- the API -------------------------------------------------------------------------
    def ingest(self, text: str, **opts: Unpack[IngestOptions]) -> IngestReport:
        """Parse assistant text; apply claim_ledger, stamps, divergences and gate lines.
        The options: :class:`~infomark.ledger.report.IngestOptions`."""
        check_options("ingest", opts, INGEST_OPTIONS)
        pre = self._ledger.preparse(text, dedupe=opts.get("dedupe", False))  # outside the lock
        # Text that cannot hold a block (no claim_ledger, stamp or gate line) applies nothing:
        # its commit (the digest, a transcript cursor) is read again from the transcript if an
        # OS crash drops it, so it waits for no fsync (a read's PreToolUse then makes none).
        with self._ledger.transaction(durable=pre[1]):
            report = self._ledger.ingest(text, pre=pre, **opts)
            if report.ledger_updated:
                grading_flow.declare(self._ledger, self.config)
            if report.gate_moves:
                from infomark.gates import moves

                moves.apply_gate_moves(self._ledger, self.config, report)
            if not report.skipped:
                self._track()
                if report.changed:
                    report.instructions = self._commit(
                        self.policy.after_ingest(self._ledger, report, text)
                    )
        return report

    def classify(
        self, call: ToolCall, tool_class: str | None = None
    ) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """``(class, families, reasons)`` of a call; a declared class wins."""
        c = self._classification(call, tool_class)
        return c.tool_class.value, tuple(c.families), tuple(c.reasons)

    def _recorded_classification(self, call: ToolCall, tool_class: str | None) -> Classification:
        """The classification a result is recorded with: the class its decision found, when
        that may stand for classifying again (:func:`infomark.gates.watch.decided_class`: a
        shell command whose classification read no file, nothing it depends on changed); a
        record uses only the class. Else the call is classified again."""
        if tool_class is None:
            found = watch.decided_class(self._ledger, self.config, call)
            if found is not None:
                return Classification(found, (), ("the class its decision found",))
        return self._classification(call, tool_class)

    def _classification(self, call: ToolCall, tool_class: str | None = None) -> Classification:
        """The full classification of a call (with the paths it names); a declared class wins."""
        c = classify_tool(
            call.tool,
            call.input,
            overrides=self.config.tools or None,
            mcp_annotations=call.annotations,
            cwd=session_cwd(call.cwd),
        )
        return c if tool_class is None else declare_class(c, tool_class)

    def authorize(
        self,
        call: ToolCall,
        *,
        bypass: bool | None = None,
        tool_class: str | None = None,
    ) -> Decision:
        """allow / deny / ask for one call. Never raises for a denial; journals the decision.

        The decision carries the ``call_id`` its result must be recorded with (the host's
        ``tool_call_id`` when it has one): only a pending authorized call becomes evidence.
        :attr:`unattended` (why nobody can answer, e.g. the host's permission mode, set by
        the integration) or the config's ``unattended = true`` turns an ``ask`` (a held
        destructive call, a held edit of a grading file) into a ``deny`` with the same reason.
        The steps, in order: :data:`BEFORE_DECIDING`, then :data:`DECIDING` in one transaction.
        """
        a = _Authorizing(call, self.unattended, bypass, tool_class)
        for step in BEFORE_DECIDING:
            step(self, a)
        # A call that changes nothing commits its decision without an fsync (Ledger.transaction)
        with self._ledger.transaction(durable=a.c.tool_class not in _CHANGES_NOTHING or a.bypass):
            for step in DECIDING:
                step(self, a)
        return a.decision

    def record(
        self, call: ToolCall, outcome: ToolOutcome, **opts: Unpack[RecordOptions]
    ) -> Evidence:
        """Record the result of an authorized call as signed evidence (ref and tag).

        ``call_id`` (default ``call.tool_call_id``) names the pending call from
        :meth:`authorize`; an unpaired or repeated record is journaled and raises
        :class:`~infomark.kernel.errors.RecordRefused`. A declared ``tool_class`` decides the
        evidence class too (``execute`` → execution, ``read``/``search`` → observation,
        ``web`` → web, others → ineligible); the configuration's ``[evidence_classes]`` entry
        for the tool's name still wins. The options: :class:`~infomark.ledger.calls.RecordOptions`.
        """
        check_options("record", opts, RECORD_OPTIONS)
        tool_class = opts.get("tool_class")
        c = self._recorded_classification(call, tool_class)
        declared = c.tool_class if tool_class is not None else None
        cov = watch.cover(
            self._ledger, self.config, call, c, declared=tool_class is not None, deciding=False
        )
        cls_ = cov.classification.tool_class.value
        cid = opts.get("call_id") or call.tool_call_id
        refused: RecordRefused | None = None
        stored = self._ledger.store_output(outcome)  # before the lock: a big blob takes time
        # One transaction, one durable commit: the evidence and what the policy layer makes
        # of it commit together (or neither does).
        with self._ledger.transaction():
            pending = self._ledger.state.pending_calls.get(cid or "")
            try:  # the engine records what the facade classified, with the caller's options
                evidence = self._ledger.record(
                    call,
                    outcome,
                    **opts | {"tool_class": cls_, "call_id": cid},
                    declared=declared,
                    stored=stored,
                )
            except RecordRefused as exc:  # journaled by the engine: commit that, then raise
                refused = exc
            if refused is None:
                if pending is not None and pending.get("grading"):
                    # The user let a held edit of a grading file run: what it wrote is approved
                    grading_flow.approve_held(self._ledger, str(pending["grading"]), call)
                self._track()
                text = self._commit(self.policy.after_tool(self._ledger, call, outcome, evidence))
        if refused is not None:
            raise refused
        grading_flow.check(self._ledger, self.config)
        notice = watch.after_record(self._ledger, self.config, call, cov)
        text = "\n".join(t for t in (notice, text) if t)
        if text:
            self._tool_text[evidence.ref] = text
        return evidence

    def can_finish(self, final_text: str = "") -> FinishDecision:
        """May the agent stop now? Refusals are capped so an agent is never trapped."""
        from infomark.gates import moves
        from infomark.gates.finalize import decide_finish, finish_events

        if final_text:
            self.ingest(final_text, source="final", dedupe=True)
        self._ledger.check_artifacts()
        grading_flow.check(self._ledger, self.config)
        checks = self.check_status() if self.config.profile.judges_checks else None
        found, weakened = self._weakened(checks)
        attested = ""
        if self.config.attest_required and (
            self.attester is not None or self.check_attester is not None
        ):
            early = decide_finish(self._ledger.refresh(), final_text, self.config, checks, weakened)
            if not early.allow:
                attested = self._attest_for_finish(checks)  # what infomark's own runs show, first
                if attested and checks is not None:
                    checks = self.check_status()
        with self._ledger.transaction():
            if found:
                self._ledger.emit(
                    "weakened_checks",
                    {
                        "findings": [f.to_dict() for f in found[:20]],
                        "counted": len(weakened),
                    },
                )
            result = decide_finish(self._ledger.state, final_text, self.config, checks, weakened)
            if attested and not result.allow:
                result = replace(result, reason=result.reason + "\n\n" + attested)
            step = self.policy.finalize(self._ledger, final_text, result)
            self._commit(step)
            result = step.finish or result
            blocked = result.code == FinishCode.FINISHED_BLOCKED
            why = moves.blocked_reason(self._ledger) if blocked else ""
            for type_, payload in finish_events(result, self.config, why, self._ledger.state.gate):
                self._ledger.emit(type_, payload)
            if result.allow and not blocked:
                self._track(finished=True)
        return result

    def _weakened(
        self, checks: list[CheckStatus] | None
    ) -> tuple[list[WeakFinding], list[WeakFinding]]:
        """What the change does to weaken the checks (empty tests, skips, suppressions,
        loosened configuration), and the part that counts against the checks it touches."""
        state = self._ledger.state
        if not state.last_modify_seq or not self.config.profile.enforcing:
            return [], []
        from infomark.gates.weakened import against_checks, scan

        found = scan(self._ledger.root_dir, base=state.baseline.get("head"))
        if not found:
            return [], []
        names = [c.check for c in checks] if checks is not None else []
        names += [c.oracle for c in state.claims.values() if c.oracle]
        return found, against_checks(found, names)

    def check_status(self) -> list[CheckStatus]:
        """Where each of the project's required checks stands now (``[oracles] require``, else
        the detected ones): a fresh PASS, failed (with the failing tests), stale, not run."""
        from infomark.gates.checks import check_status, required_checks

        ledger = self._ledger
        checks = required_checks(self.config.oracle_require, ledger.root_dir)

        def output_of(ref: str) -> str | None:
            ev = ledger.evidence(ref)
            data = ledger.output_of(ev) if ev is not None else None
            return data.decode("utf-8", "replace") if data is not None else None

        def report_of(ref: str) -> Mapping[str, Any] | None:
            ev = ledger.evidence(ref)
            attested = ev.record.get("attested") if ev is not None else None
            return attested if isinstance(attested, Mapping) else None

        return check_status(
            ledger.refresh(),
            checks,
            root=ledger.root_dir,
            output_of=output_of,
            report_of=report_of,
            attested=self.config.attest_required,
        )

    def _attest_for_finish(self, checks: list[CheckStatus] | None = None) -> str:
        """Run, attested, what the finish needs: the oracles of the claims (the attester) and
        the verify profile's required checks with no fresh attested PASS (the check attester),
        at most ``[attest] at_finish`` runs in all."""
        from infomark.gates.finalize import checks_to_attest, to_attest

        state = self._ledger.refresh()
        budget = int(self.config.attest.get("at_finish", 3))
        texts: list[str] = []
        if self.check_attester is not None and checks is not None:
            for check in checks_to_attest(state, checks, budget):
                texts.append(self.check_attester(check))
        if self.attester is not None:
            for cid in to_attest(state, self.config)[: max(0, budget - len(texts))]:
                texts.append(self.attester(cid))
        return "\n".join(texts)

    def record_attested_check(
        self, check: str, outcome: ToolOutcome, attestation: Mapping[str, Any], judged: str
    ) -> Evidence:
        """Record infomark's own run of one of the project's required checks (no claim binds
        to it: the verify profile's finish reads it through :meth:`check_status`). Called by
        the attested runner (tools layer) only."""
        return self._ledger.record_attested(check, outcome, attestation, judged)

    def record_attested(
        self,
        claim_id: str,
        outcome: ToolOutcome,
        attestation: Mapping[str, Any],
        judged: str,
    ) -> tuple[Evidence, IngestReport]:
        """Record infomark's own run of ``claim_id``'s oracle and bind the claim to it.

        Called by the attested runner (tools layer) only: ``judged`` is the outcome read from
        the runner's report (``PASS``, ``FAIL``, ``ERROR``). The stamp it implies is judged
        like any other: ``PASS`` on a pass claim, ``EXPECTED_FAIL`` on an ``expect: FAIL``
        claim that failed, ``FAIL`` (the claim leaves G) on a pass claim that did not pass.
        """
        claim = self._ledger.state.claims.get(claim_id)
        if claim is None or claim.oracle is None:
            raise UserError(f"claim {claim_id!r} is not declared with an oracle")
        evidence = self._ledger.record_attested(claim.oracle, outcome, attestation, judged)
        ref = evidence.ref
        if judged == "PASS":
            text = f"oracle_stamp: claim_id={claim_id} evidence_ref={ref} result=PASS"
        elif judged == "FAIL":
            result = "EXPECTED_FAIL" if claim.expect == "FAIL" else "FAIL"
            text = f"oracle_stamp: claim_id={claim_id} evidence_ref={ref} result={result}"
        elif claim.stamp is not None:  # the run shows nothing (tampered, no test ran …)
            text = f"divergence_event: claim_id={claim_id} evidence_ref={ref}"
        else:
            return evidence, IngestReport()
        return evidence, self.ingest(text, source="attest")

    def record_sandbox(self, sandboxed: bool, *, host: str, detail: str, fix: str = "") -> bool:
        """Journal whether the agent's own commands run in an OS sandbox (``agent_sandbox``),
        when it differs from what the session last recorded; True when it was written.

        The integration that starts the agent's commands decides (the Claude Code hook from
        the effective settings, the MCP proxy from ``--sandbox``). In an enforcing profile an
        agent's own run made while they did not grounds nothing (``unsandboxed_run``); runs
        infomark makes itself in its sandbox (attested) still do.
        """
        new = {"sandboxed": bool(sandboxed), "host": host, "detail": detail, "fix": fix}
        if self._ledger.state.agent_sandbox == new:
            return False
        with self._ledger.transaction():
            if self._ledger.state.agent_sandbox == new:  # another process wrote it meanwhile
                return False
            self._ledger.emit("agent_sandbox", new)
        return True

    def approve(self, *, by: str = "operator", note: str = "") -> None:
        """Record the G4 approval (the strict profile needs it before G6)."""
        with self._ledger.transaction():
            self._ledger.emit("approval", {"by": by, "note": note, "gate": self._ledger.state.gate})

    def approve_grading(self, path: str, *, by: str = "operator", note: str = "") -> None:
        """The user accepts a changed grading file: its new content becomes the baseline.

        An operator act (``infomark approve --grading FILE`` in a terminal); no route or
        agent-reachable integration exposes it.
        """
        grading_flow.approve_path(self._ledger, self.config, path, by=by, note=note)

    @property
    def baseline_pending(self) -> bool:
        """Whether the session's next action takes its baseline (attested runs are required
        and none is recorded): a copy of the project, which can take seconds."""
        return not self._ledger.state.baseline and self.config.attest_required

    def record_baseline(self) -> None:
        """Record the session's baseline now (the project's, taken now if infomark never saw
        the project) when attested runs are required: the host's session start, the earliest
        point, before any action; the first action does it otherwise."""
        if self.baseline_pending:
            from infomark.gates import baseline

            baseline.ensure(self._ledger, required=True)

    def approve_baseline(self, *, by: str = "operator", note: str = "") -> str:
        """The user accepts the project's tree as it is now as its baseline (the grading
        surface attested runs use, here and in later sessions); returns the baseline id.

        An operator act (``infomark approve --baseline`` in a terminal); no route or
        agent-reachable integration exposes it.
        """
        from infomark.gates import baseline

        return baseline.accept(self._ledger, by=by, note=note)

    def new_turn(self, prompt: str | None = None) -> str:
        """Start a user turn (resets the finish-refusal count); returns context for the model."""
        from infomark.gates import moves

        with self._ledger.transaction():
            d = sha256(prompt.encode("utf-8", "replace")).hexdigest()[:16] if prompt else None
            self._ledger.emit("turn_started", {"prompt_digest": d})
            moves.resume(self._ledger, self.config)  # the user answered: the work resumes
            return self._commit(self.policy.on_prompt(self._ledger, prompt or ""))

    def move(self, gate: str) -> dict[str, Any]:
        """Request a gate move as the agent would with a ``gate:`` line."""
        from infomark.gates import moves

        report = IngestReport(gate_moves=[{"gate": gate, "line": 0}])
        with self._ledger.transaction():
            moves.apply_gate_moves(self._ledger, self.config, report)
        return report.gate_moves[0]

    def ledger(self) -> LedgerView:
        from infomark.gates.views import ledger_view

        return ledger_view(self.session, self._ledger.refresh())

    def gate(self) -> GateView:
        from infomark.gates.views import gate_view

        return gate_view(self._ledger.refresh(), self.config)

    def audit(self, verify: bool = True) -> AuditReport:
        from infomark.ledger.audit import build_audit

        self._ledger.check_artifacts()
        return build_audit(self._ledger, verify=verify)

    def events(self, *, after: int = 0) -> Iterator[EventRow]:
        return self._ledger.journal.events(self.session, after=after)

    def evidence(self, ref: str) -> Evidence | None:
        return self._ledger.evidence(ref)

    # -- the policy layer's channels --------------------------------------------------------
    def store_cursor(self, name: str, value: int) -> None:
        self._ledger.move_cursor(name, value)

    def on_prompt(self, prompt: str) -> str:
        """A new user prompt: start a turn; return context text for the next model call."""
        return self.new_turn(prompt)

    def host_report(
        self,
        *,
        tokens_used: int | None = None,
        context_window: int | None = None,
        compacted: bool = False,
    ) -> str:
        """Usage and compaction as the host reports them; returns packs that fired.

        A compaction also carries the ledger over (:mod:`infomark.ledger.carry`): a claim
        whose evidence is stale, gone or altered drops to Unknown with the reason, and
        ``compaction_carried`` journals what is carried; :meth:`compaction_context` is the
        text to re-inject.
        """
        with self._ledger.transaction():
            if compacted:
                from infomark.ledger.carry import carry_over

                carry_over(self._ledger)
            step = self.policy.host_report(
                self._ledger,
                tokens_used=tokens_used,
                context_window=context_window,
                compacted=compacted,
            )
            return self._commit(step)

    def compaction_context(self) -> str:
        """What to re-inject after the host compacted its context: every claim id with its
        rank and the evidence ref it rests on, the premises, and the live evidence refs,
        verbatim ("" before any ledger or evidence)."""
        from infomark.ledger.carry import carry_block, carry_over_view

        state = self._ledger.refresh()
        return carry_block(state, carry_over_view(self._ledger), self._describe)

    def _describe(self, ref: str) -> str:
        ev = self._ledger.evidence(ref)
        if ev is None:
            return ""
        what = ev.command if len(ev.command) <= 60 else ev.command[:59] + "…"
        return f"{ev.tool} `{what}` {ev.outcome.value} (seq {ev.seq})"

    def context_view(self, budget: int = 1200) -> str:
        """What goes into the next model call: active packs, working memory, ledger summary."""
        self._ledger.refresh()
        return self.policy.context_view(self._ledger, budget)

    def state_document(self) -> dict[str, Any]:
        """The session's state (seed 000's state.json): ledger, gate, metrics, policy state."""
        state = self._ledger.refresh()
        return {
            "session": self.session,
            "seq": state.seq,
            "turn": state.turn,
            "gate": self.gate().to_dict(),
            "ledger": self.ledger().to_dict(),
            "turn_metrics": dict(state.metrics),
            **self.policy.state_document(self._ledger),
        }

    def after_tool_text(self, call: ToolCall, outcome: ToolOutcome, evidence: Evidence) -> str:
        """Instruction packs fired by this recorded result, to deliver with it ("" if none)."""
        return self._tool_text.pop(evidence.ref, "")

    def _after_decision(self, call: ToolCall, decision: Decision) -> str:
        if decision.allowed:
            return ""
        return self._commit(self.policy.after_decision(self._ledger, call, decision))

    def _commit(self, step: PolicyStep) -> str:
        """Emit the policy layer's events in the open transaction; the text it delivers."""
        for type_, payload in step.events:
            self._ledger.emit(type_, payload)
        return step.text

    # -- wrapping executors -----------------------------------------------------------------
    def wrap(
        self, executor: Callable[..., Any], *, tool_class: str | None = None
    ) -> Callable[..., Any]:
        """Gate a ``(ToolCall) -> ToolOutcome`` executor (sync or async).

        The gated executor returns a :class:`~infomark.wrapping.GatedResult` (decision,
        evidence, text for the model); a denial or a hold does not run the executor. A
        declared ``tool_class`` decides the gate's class and the evidence class of its calls.
        """
        from infomark.wrapping import wrap_executor

        return wrap_executor(self, executor, tool_class=tool_class)

    def tool(self, name: str | None = None, *, tool_class: str | None = None) -> Callable[..., Any]:
        """Decorate a plain function as a gated tool with a declared class.

        The function reports its outcome by returning a ``ToolOutcome`` (or a
        ``CompletedProcess``) or by raising; the declared class decides the evidence class.
        """
        from infomark.wrapping import gated_tool

        return gated_tool(self, name=name, tool_class=tool_class)

    # -- fork and merge (docs/fork.md) --------------------------------------------------------
    def fork(self, as_session: str, upto: int | None = None) -> Gatekeeper:
        """Fork this session up to seq ``upto`` (default: the head) into ``as_session``."""
        from infomark.ledger.fork import fork_session

        check_session_id(as_session)
        fork_session(self._ledger, self.config.session_prefix + as_session, upto)
        return Gatekeeper.open(
            self._ledger.home_dir, as_session, root=self._ledger.root_dir, config=self.config
        )

    def merge_from(self, session: str) -> dict[str, Any]:
        """Merge what the fork ``session`` settled after its fork point into this session."""
        from infomark.ledger.fork import merge_session

        check_session_id(session)
        return merge_session(self._ledger, self.config.session_prefix + session)


#: Classes whose calls change nothing (a run, a sub-agent or an unknown tool may).
_CHANGES_NOTHING = frozenset({ToolClass.READ, ToolClass.SEARCH, ToolClass.WEB, ToolClass.LEDGER})


def _fails_closed(decision: Decision, c: Classification, approval_of: str, grading: object) -> bool:
    """Whether losing this decision's commit (a power loss before the next fsync) is
    harmless: a deny (nothing ran), or an allow of a call that changes nothing (its
    result is then refused, never evidence). Mutations, approvals spent, bypasses,
    holds and grading edits always wait for the disk."""
    if approval_of or decision.bypass or grading is not None:
        return False
    if decision.verdict is Verdict.DENY:
        return True
    return decision.verdict is Verdict.ALLOW and c.tool_class in _CHANGES_NOTHING


# -- the facade's decision pipeline (Gatekeeper.authorize) -----------------------------------
class _Authorizing:
    """One call under authorization: what the steps of :data:`BEFORE_DECIDING` and
    :data:`DECIDING` read and write, in that order."""

    __slots__ = (
        "approval_of",
        "bypass",
        "c",
        "call",
        "changed",
        "classified",
        "cov",
        "decision",
        "declared",
        "grading",
        "guard",
        "input_digest",
        "unattended",
    )
    cov: watch.Cover
    c: Classification
    classified: tuple[str, str] | None
    bypass: bool
    changed: list[dict[str, Any]]
    guard: tuple[str, str, str] | None
    decision: Decision
    grading: str | None
    input_digest: str

    def __init__(
        self, call: ToolCall, unattended: str | None, bypass: bool | None, declared: str | None
    ) -> None:
        self.call, self.unattended, self.declared = call, unattended, declared
        self.bypass = os.environ.get(BYPASS_ENV) == "1" if bypass is None else bypass
        self.changed = []
        self.approval_of = ""


def _cover(gk: Gatekeeper, a: _Authorizing) -> None:
    """Classify the call (a declared class wins) and cover it with what its own files make
    of it. A shell command's class is kept for its result (``classified``) when its
    classification read no file (:mod:`infomark.gates.shell_fs`)."""
    key = watch.classification_key(gk.config, a.call) if a.declared is None else None
    if key is None:
        c = gk._classification(a.call, a.declared)
        a.classified = None
    else:  # a shell tool's: loaded with its classifier
        from infomark.gates import shell_fs

        shell_fs.begin()
        c = gk._classification(a.call, a.declared)
        a.classified = (key, c.tool_class.value) if shell_fs.untouched() else None
    a.cov = watch.cover(gk._ledger, gk.config, a.call, c, declared=a.declared is not None)
    a.c = a.cov.classification


def _recheck_sources(gk: Gatekeeper, a: _Authorizing) -> None:
    """Before a mutation, the artifacts and the web pages premises rest on are checked again."""
    gk._ledger.check_artifacts()
    if a.c.tool_class.mutates and gk.refetch is not None:
        from infomark.gates.refetch import recheck_premises

        a.changed = recheck_premises(gk._ledger, gk.refetch)


def _seed_grading(gk: Gatekeeper, a: _Authorizing) -> None:
    """The grading files are known, and the baseline is taken before the first action."""
    grading_flow.check(gk._ledger, gk.config, seed=True)
    if gk.baseline_pending:
        from infomark.gates import baseline  # once per session: before the first action

        baseline.ensure(gk._ledger, required=True)


def _find_protected(gk: Gatekeeper, a: _Authorizing) -> None:
    """What self-protection says of the call's paths (infomark's state, the host's files)."""
    call, ledger = a.call, gk._ledger
    a.guard = protected(
        call.tool,
        call.input,
        a.c,
        home=ledger.home_dir,
        root=ledger.root_dir,
        extra=gk.host_files,
        cwd=call.cwd,
    )


def _grounding_gate(gk: Gatekeeper, a: _Authorizing) -> None:
    """The grounding gate decides on the session state as it is now."""
    watch.refresh(gk._ledger)
    cov = a.cov
    a.decision = authorize_call(
        gk._ledger.state,
        tool=a.call.tool,
        classified=a.c,
        config=gk.config,
        bypass=a.bypass,
        scratch=cov.scratch,
        revert=cov.revert,
    )


def _protect(gk: Gatekeeper, a: _Authorizing) -> None:
    """Self-protection overrides the gate (never bypassable, in every profile)."""
    if a.guard is not None:
        a.decision = guard_decision(a.decision, *a.guard)


def _stale_sources(gk: Gatekeeper, a: _Authorizing) -> None:
    """A refusal names the web pages premises rest on that changed."""
    a.decision = note_stale_sources(a.decision, a.changed)


def _hold_grading_edit(gk: Gatekeeper, a: _Authorizing) -> None:
    """An edit of a grading file is held (or allowed, denied) by ``grading_policy``."""
    a.grading = grading_flow.edit_target(gk._ledger, a.call, a.c.tool_class)
    if a.grading is not None:
        a.decision = grading_flow.hold_edit(a.decision, a.grading, gk.config.grading_policy)


def _operator_approval(gk: Gatekeeper, a: _Authorizing) -> None:
    """A held call the operator approved exactly runs, once (a held grading edit is approved
    with ``--grading`` instead)."""
    a.input_digest = call_digest(a.call)
    if a.grading is None:
        key = held_key(a.call.tool, a.input_digest)
        a.decision, a.approval_of = operator_approved(
            a.decision, gk._ledger.state.approved_calls, key
        )


def _unattended(gk: Gatekeeper, a: _Authorizing) -> None:
    """In an unattended run nobody can answer a hold: it becomes a denial."""
    a.decision = deny_unattended(a.decision, a.unattended, gk.config)


def _journal(gk: Gatekeeper, a: _Authorizing) -> None:
    """Name the decision by the seq it is journaled at, journal it, and wait for the disk
    unless losing it is harmless."""
    ledger, call = gk._ledger, a.call
    seq = ledger.journal.last_seq(gk.session) + 1
    a.decision = name_decision(a.decision, gk.session, seq, call.tool_call_id)
    payload = decision_event(
        a.decision, call, input_digest=a.input_digest, approval_of=a.approval_of, grading=a.grading
    )
    ledger.emit("decision", payload)
    if not _fails_closed(a.decision, a.c, a.approval_of, a.grading):
        ledger.require_sync()


def _after(gk: Gatekeeper, a: _Authorizing) -> None:
    """What follows a journaled decision: the watch's fingerprint, a bypass event, and the
    policy layer's instructions (kept apart: a deny reason already says how to ground)."""
    watch.after_decision(gk._ledger, a.call, a.cov, a.decision, classified=a.classified)
    if a.decision.bypass:
        gk._ledger.emit("bypass", bypass_event(a.decision, a.call))
    extra = gk._after_decision(a.call, a.decision)
    if extra:
        a.decision = replace(a.decision, instructions=extra)


#: The facade's steps before its write transaction: classify and cover the call, re-check what
#: premises rest on, seed the grading files and the baseline, find what self-protection says.
BEFORE_DECIDING: tuple[Callable[[Gatekeeper, _Authorizing], None], ...] = (
    _cover,
    _recheck_sources,
    _seed_grading,
    _find_protected,
)
#: ... and in it, in order: each later step has the last word on the decision.
DECIDING: tuple[Callable[[Gatekeeper, _Authorizing], None], ...] = (
    _grounding_gate,
    _protect,
    _stale_sources,
    _hold_grading_edit,
    _operator_approval,
    _unattended,
    _journal,
    _after,
)


def __getattr__(name: str) -> object:
    """``GateView`` and ``LedgerView`` live in :mod:`infomark.gates.views` (loaded on use)."""
    if name in ("GateView", "LedgerView"):
        from infomark.gates import views

        return getattr(views, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
