"""The facade: one session's gatekeeper over a ledger home.

``Gatekeeper.open(home, session)`` is all an integration needs: ``ingest`` the
agent's text, ``authorize`` each tool call, ``record`` each result, ask
``can_finish`` before the agent stops, ``audit`` at any time. Every decision is a
journal event. Standard library at import; parser and pydantic load lazily.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infomark.gates import watch
from infomark.gates.authorize import BYPASS_ENV, authorize_call
from infomark.gates.classify import classify_tool
from infomark.gates.config import PROFILES, Config, load_config
from infomark.gates.decision import Decision, FinishDecision, Verdict
from infomark.gates.oracles import OracleJudge, ran_nothing
from infomark.gates.protect import protected
from infomark.kernel.errors import RecordRefused, UserError
from infomark.kernel.graph import TERMINALS
from infomark.kernel.session_id import check_session_id
from infomark.kernel.tools import Classification, ToolClass
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.engine import Ledger, call_digest
from infomark.ledger.evidence import Evidence
from infomark.ledger.home import default_home, ensure_private_dir
from infomark.ledger.journal import EventRow
from infomark.ledger.report import IngestReport
from infomark.ledger.semantics import LedgerRules
from infomark.ledger.state import SessionState
from infomark.ledger.store import pick_store

if TYPE_CHECKING:
    from infomark.gates.policies.runtime import PolicyRuntime
    from infomark.ledger.audit import AuditReport

__all__ = ["GateView", "Gatekeeper", "LedgerView", "default_home"]


@dataclass(frozen=True, slots=True)
class LedgerView:
    """A read-only view of the session's ledger."""

    session: str
    claims: tuple[dict[str, Any], ...]
    premises: tuple[str, ...]
    open_questions: tuple[str, ...]
    ungrounded: tuple[tuple[str, str], ...]
    grounded: bool
    gate: str
    has_ledger: bool

    def claim(self, claim_id: str) -> dict[str, Any] | None:
        return next((c for c in self.claims if c["id"] == claim_id), None)

    def status(self, claim_id: str) -> str | None:
        c = self.claim(claim_id)
        return None if c is None else str(c["status"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "claims": list(self.claims),
            "premises": list(self.premises),
            "open_questions": list(self.open_questions),
            "ungrounded": [{"id": i, "status": s} for i, s in self.ungrounded],
            "grounded": self.grounded,
            "gate": self.gate,
            "has_ledger": self.has_ledger,
        }


@dataclass(frozen=True, slots=True)
class GateView:
    position: str
    allowed_moves: tuple[str, ...]
    loop_budget: int
    budget_used: int
    profile: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "allowed_moves": list(self.allowed_moves),
            "loop_budget": self.loop_budget,
            "budget_used": self.budget_used,
            "profile": self.profile,
        }


class Gatekeeper:
    """The gatekeeper of one agent session."""

    def __init__(self, ledger: Ledger, config: Config) -> None:
        self._ledger = ledger
        self.config = config
        self._runtime: PolicyRuntime | None = None
        self._tool_text: dict[str, str] = {}
        # Why nobody can answer an "ask" in this run (None: someone can); see authorize().
        self.unattended: str | None = None

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
        home: Path | str | None = None,
        session: str = "default",
        *,
        root: Path | str | None = None,
        config: Config | None = None,
        profile: str | None = None,
        store: str | None = None,
    ) -> Gatekeeper:
        """Open (creating if needed) the ledger home and one session in it.

        ``store`` selects the journal's backend (a ``postgresql://`` URL, or ``sqlite``);
        without it: ``$INFOMARK_STORE``, the configuration's ``store``, ``<home>/store``,
        else the home's SQLite file (:mod:`infomark.ledger.store`).
        """
        check_session_id(session)  # the rule every entry point shares
        home_p = Path(home) if home is not None else default_home()
        root_p = Path(root) if root is not None else Path.cwd()
        ensure_private_dir(home_p)  # before the config cache is written into it
        cfg = config or load_config(root_p, home_p)
        if profile is not None:
            if profile not in PROFILES:
                raise UserError(f"unknown profile {profile!r}; use ledger, strict or observe")
            cfg = replace(cfg, profile=profile)
        ledger = Ledger(
            home_p,
            cfg.session_prefix + session,
            rules=LedgerRules(
                require_declared_oracle=cfg.require_declared_oracle,
                reject_evidence_predating_claim=cfg.reject_evidence_predating_claim,
                judge_oracle=OracleJudge(cfg.oracle_allow, home=home_p),
                ran_nothing=ran_nothing,
            ),
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
        self._ledger.close()

    def __enter__(self) -> Gatekeeper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _track(self, *, finished: bool = False) -> None:
        """Ledger/observe profiles: move the position to what runtime evidence implies."""
        if self.config.profile == "strict":
            return
        from infomark.gates.machine import derived_position

        state = self._ledger.state
        target = derived_position(state, finished=finished)
        if target != state.gate:
            self._ledger.emit(
                "gate_moved",
                {"from": state.gate, "to": target, "kind": "auto", "by": "runtime", "guard": ""},
            )

    def _apply_gate_moves(self, report: IngestReport) -> None:
        from infomark.gates.machine import plan_move

        moves = report.gate_moves
        report.gate_moves = []
        for move in moves:
            state = self._ledger.state
            if move.get("question") is not None:  # a question for the user: lawful anywhere
                self._ledger.emit(
                    "gate_moved",
                    {
                        "from": state.gate,
                        "to": "WAITING_APPROVAL",
                        "kind": "question",
                        "by": "agent",
                        "guard": "needs_approval",
                        "question": str(move["question"])[:2000],
                    },
                )
                report.gate_moves.append(
                    {"from": state.gate, "to": "WAITING_APPROVAL", "ok": True, "reason": "question"}
                )
                continue
            result = plan_move(state, str(move["gate"]), self.config)
            payload = result.payload("agent")
            if move.get("reason"):
                payload["declared_reason"] = str(move["reason"])[:2000]
            self._ledger.emit("gate_moved" if result.ok else "gate_refused", payload)
            report.gate_moves.append(
                {"from": result.src, "to": result.dst, "ok": result.ok, "reason": result.reason}
            )

    # -- the API -------------------------------------------------------------------------
    def ingest(
        self,
        text: str,
        *,
        source: str = "assistant",
        cursor: tuple[str, int] | None = None,
        dedupe: bool = False,
    ) -> IngestReport:
        """Parse assistant text; apply claim_ledger, stamps, divergences and gate lines."""
        with self._ledger.transaction():
            report = self._ledger.ingest(text, source=source, cursor=cursor, dedupe=dedupe)
            if report.ledger_updated:
                self._grading_surface()
            if report.gate_moves:
                self._apply_gate_moves(report)
            if not report.skipped:
                self._track()
                if report.changed:
                    report.instructions = self.policy.after_ingest(self._ledger, report)
        return report

    def classify(
        self, call: ToolCall, tool_class: str | None = None
    ) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """``(class, families, reasons)`` of a call; a declared class wins."""
        c = self._classification(call, tool_class)
        return c.tool_class.value, tuple(c.families), tuple(c.reasons)

    def _classification(self, call: ToolCall, tool_class: str | None = None) -> Classification:
        """The full classification of a call (with the paths it names); a declared class wins."""
        c = classify_tool(
            call.tool,
            call.input,
            overrides=self.config.tools or None,
            mcp_annotations=call.annotations,
        )
        if tool_class is not None:
            # A declared class replaces the class, never the families or paths the call names.
            try:
                declared = ToolClass(_CLASS_ALIASES.get(tool_class, tool_class))
            except ValueError:
                declared = ToolClass.UNKNOWN
            return replace(c, tool_class=declared, reasons=(f"declared class {tool_class}",))
        return c

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
        """
        unattended = self.unattended
        cov = watch.cover(
            self._ledger,
            self.config,
            call,
            self._classification(call, tool_class),
            declared=tool_class is not None,
        )
        c = cov.classification
        cls_, families, why = c.tool_class.value, tuple(c.families), tuple(c.reasons)
        if bypass is None:
            bypass = os.environ.get(BYPASS_ENV) == "1"
        self._ledger.check_artifacts()
        self._check_grading(seed=True)
        guard = protected(call.tool, call.input, c, home=self.home, root=self._ledger.root)
        with self._ledger.transaction():
            watch.refresh(self._ledger)
            decision = authorize_call(
                self._ledger.state,
                tool=call.tool,
                tool_class=cls_,
                families=families,
                why=why,
                config=self.config,
                bypass=bypass,
                scratch=cov.scratch,
                revert=cov.revert,
            )
            if guard is not None:
                decision = _guarded(decision, *guard)
            grading = self._grading_target(call, cls_)
            if grading is not None:
                decision = self._grading_hold(decision, grading)
            if self.config.unattended and unattended is None:
                unattended = "unattended = true in the config"
            if unattended and decision.decision is Verdict.ASK:
                decision = replace(
                    decision,
                    decision=Verdict.DENY,
                    reason=f"{decision.reason} (unattended run, {unattended}: nobody can "
                    "answer, so it is denied)",
                )
            seq = self._ledger.journal.last_seq(self.session) + 1
            did = "dec_" + hashlib.sha256(f"{self.session}\x00{seq}".encode()).hexdigest()[:16]
            decision = replace(
                decision.with_id(did), call_id=call.tool_call_id or "call_" + did[4:]
            )
            payload = decision.to_dict()
            payload["tool_call_id"] = call.tool_call_id
            payload["input_digest"] = _input_digest(call)
            if grading is not None:
                payload["grading"] = grading
            self._ledger.emit("decision", payload)
            watch.after_decision(self._ledger, call, cov, decision)
            if decision.bypass:
                self._ledger.emit(
                    "bypass",
                    {
                        "decision_id": did,
                        "tool": call.tool,
                        "tool_class": cls_,
                        "ungrounded": payload["ungrounded"],
                        "env": BYPASS_ENV,
                    },
                )
            extra = self._after_decision(call, decision)
            if extra:  # kept apart: the deny reason already says how to ground the premises
                decision = replace(decision, instructions=extra)
        return decision

    def record(
        self,
        call: ToolCall,
        outcome: ToolOutcome,
        *,
        tool_class: str | None = None,
        call_id: str | None = None,
        cwd: str | None = None,
        background_id: str | None = None,
    ) -> Evidence:
        """Record the result of an authorized call as signed evidence (ref and tag).

        ``call_id`` (default ``call.tool_call_id``) names the pending call from
        :meth:`authorize`; an unpaired or repeated record is journaled and raises
        :class:`~infomark.kernel.errors.RecordRefused`. A declared ``tool_class`` decides the
        evidence class too (``execute`` → execution, ``read``/``search`` → observation,
        ``web`` → web, others → ineligible); the configuration's ``[evidence_classes]`` entry
        for the tool's name still wins.
        """
        c = self._classification(call, tool_class)
        declared = c.tool_class if tool_class is not None else None
        cov = watch.cover(
            self._ledger, self.config, call, c, declared=tool_class is not None, deciding=False
        )
        cls_ = cov.classification.tool_class.value
        cid = call_id or call.tool_call_id
        refused: RecordRefused | None = None
        with self._ledger.transaction():
            pending = self._ledger.state.pending_calls.get(cid or "")
            try:
                evidence = self._ledger.record(
                    call,
                    outcome,
                    tool_class=cls_,
                    declared=declared,
                    call_id=cid,
                    cwd=cwd,
                    background_id=background_id,
                )
            except RecordRefused as exc:  # journaled by the engine: commit that, then raise
                refused = exc
        if refused is not None:
            raise refused
        with self._ledger.transaction():
            if pending is not None and pending.get("grading"):
                # The user let a held edit of a grading file run: the new content is approved.
                self._approve_grading(str(pending["grading"]), by="ask_prompt", note="")
            self._track()
            text = self.policy.after_tool(self._ledger, call, outcome, evidence)
        self._check_grading()
        notice = watch.after_record(self._ledger, self.config, call, cov)
        text = "\n".join(t for t in (notice, text) if t)
        if text:
            self._tool_text[evidence.ref] = text
        return evidence

    def can_finish(self, final_text: str = "") -> FinishDecision:
        """May the agent stop now? Refusals are capped so an agent is never trapped."""
        from infomark.gates.finalize import decide_finish

        if final_text:
            self.ingest(final_text, source="final", dedupe=True)
        self._ledger.check_artifacts()
        self._check_grading()
        with self._ledger.transaction():
            result = decide_finish(self._ledger.state, final_text, self.config)
            result = self._before_finalize(final_text, result)
            self._ledger.emit("finish_decision", result.to_dict())
            if result.cap_reached:
                self._ledger.emit("finish_cap_reached", {"cap": self.config.finish_refusal_cap})
                self._ledger.emit(
                    "finished_unverified",
                    {"cap": self.config.finish_refusal_cap, "unresolved": result.reason[:4000]},
                )
            if result.code == "finished_blocked":
                state = self._ledger.state
                self._ledger.emit(
                    "finished_blocked",
                    {"gate": state.gate, "reason": _blocked_reason(self._ledger)},
                )
            elif result.allow:
                self._track(finished=True)
        return result

    def approve(self, *, by: str = "operator", note: str = "") -> None:
        """Record the G4 approval (the strict profile needs it before G6)."""
        with self._ledger.transaction():
            self._ledger.emit("approval", {"by": by, "note": note, "gate": self._ledger.state.gate})

    def approve_grading(self, path: str, *, by: str = "operator", note: str = "") -> None:
        """The user accepts a changed grading file: its new content becomes the baseline.

        An operator act (``infomark approve --grading FILE`` in a terminal); no route or
        agent-reachable integration exposes it.
        """
        from infomark.gates.grading import grading_path

        self._check_grading()
        rel = grading_path(self._ledger.root, path)
        state = self._ledger.refresh()
        if rel is None or rel not in state.grading_files:
            known = ", ".join(sorted(state.grading_changed)) or "none is changed"
            raise UserError(f"{path} is not a grading file of this session (changed: {known})")
        with self._ledger.transaction():
            self._approve_grading(rel, by=by, note=note)

    def new_turn(self, prompt: str | None = None) -> str:
        """Start a user turn (resets the finish-refusal count); returns context for the model."""
        with self._ledger.transaction():
            d = (
                hashlib.sha256(prompt.encode("utf-8", "replace")).hexdigest()[:16]
                if prompt
                else None
            )
            self._ledger.emit("turn_started", {"prompt_digest": d})
            state = self._ledger.state
            if state.gate in TERMINALS:  # the user answered: the work resumes
                back = _resume_gate(self._ledger) if self.config.profile == "strict" else None
                if back is not None:
                    self._ledger.emit(
                        "gate_moved",
                        {
                            "from": state.gate,
                            "to": back,
                            "kind": "resume",
                            "by": "user",
                            "guard": "",
                        },
                    )
                else:
                    self._ledger.emit(
                        "gate_moved",
                        {
                            "from": state.gate,
                            "to": "G0",
                            "kind": "resume",
                            "by": "user",
                            "guard": "",
                        },
                    )
                    self._track()
            return self.policy.on_prompt(self._ledger, prompt or "")

    def move(self, gate: str) -> dict[str, Any]:
        """Request a gate move as the agent would with a ``gate:`` line."""
        report = IngestReport(gate_moves=[{"gate": gate, "line": 0}])
        with self._ledger.transaction():
            self._apply_gate_moves(report)
        return report.gate_moves[0]

    def ledger(self) -> LedgerView:
        from infomark.ledger.audit import claim_rows

        state = self._ledger.refresh()
        return LedgerView(
            session=self.session,
            claims=tuple(claim_rows(state)),
            premises=tuple(state.premises),
            open_questions=tuple(state.open_questions),
            ungrounded=tuple(state.ungrounded_premises()),
            grounded=state.has_ledger and state.premises_grounded(),
            gate=state.gate,
            has_ledger=state.has_ledger,
        )

    def gate(self) -> GateView:
        from infomark.gates.machine import loop_budget
        from infomark.kernel.graph import DEFAULT_GRAPH

        state = self._ledger.refresh()
        pos = state.gate
        is_gate = pos in DEFAULT_GRAPH.gate_ids
        return GateView(
            position=pos,
            allowed_moves=DEFAULT_GRAPH.allowed_moves(pos) if is_gate else (),
            loop_budget=loop_budget(pos, self.config) if is_gate else 0,
            budget_used=state.gate_budget_used.get(pos, 0),
            profile=self.config.profile,
        )

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
        """Usage and compaction as the host reports them; returns packs that fired."""
        with self._ledger.transaction():
            return self.policy.host_report(
                self._ledger,
                tokens_used=tokens_used,
                context_window=context_window,
                compacted=compacted,
            )

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
        return self.policy.after_decision(self._ledger, call, decision)

    def _before_finalize(self, final_text: str, result: FinishDecision) -> FinishDecision:
        verdict = self.policy.before_finalize(self._ledger, final_text, result)
        extra = {**result.extra, "policy": verdict.to_dict()}
        if verdict.allow or result.cap_reached:
            # Packs fired here repeat what a refusal already says; they stay in `policy`.
            return replace(result, extra=extra)
        reasons = [result.reason] if not result.allow else []
        reasons.append(verdict.reason)
        code = result.code if not result.allow else "trigger_fired"
        return replace(result, allow=False, reason="\n\n".join(reasons), code=code, extra=extra)

    # -- the grading surface ---------------------------------------------------------------
    def _grading_surface(self, oracle: str | None = None) -> None:
        """Digest the grading surface of newly declared oracles (inside a transaction)."""
        from infomark.gates.grading import DEFAULT_TEST_GLOBS, surface

        state = self._ledger.state
        oracles = (
            [oracle]
            if oracle is not None
            else [
                c.oracle
                for c in state.claims.values()
                if c.oracle and not c.oracle_refused and c.oracle_declared_seq == state.ledger_seq
            ]
        )
        if not oracles:
            return
        globs = self.config.grading_files or DEFAULT_TEST_GLOBS
        files: dict[str, str | None] = {}
        blobs: dict[str, str] = {}
        for o in dict.fromkeys(oracles):
            f, b = surface(
                self._ledger.root, o, globs=globs, home=self.home, put=self._ledger.blobs.put
            )
            files.update(f)
            blobs.update(b)
        new = {p: d for p, d in files.items() if p not in state.grading_files}
        if not any(d is not None for d in files.values()):
            return  # no test and no test configuration here: nothing grades the oracle yet
        if new:
            self._ledger.emit(
                "grading_surface",
                {"files": new, "blobs": {p: blobs[p] for p in new if p in blobs}},
            )

    def _check_grading(self, *, seed: bool = False) -> None:
        """Re-digest the grading surface; journal what changed (or came back) since."""
        from infomark.gates.grading import change_summary, scan_changes

        state = self._ledger.refresh()
        if not state.grading_files:
            if seed and not state.evidence_count:
                with self._ledger.transaction():  # the starting state, before the agent acts
                    if not self._ledger.state.grading_files:
                        self._grading_surface(oracle="")
            return
        changes = scan_changes(self._ledger.root, state.grading_files, state.grading_changed)
        if not changes:
            return
        with self._ledger.transaction():
            for rel, now, content in changes:
                base = self._ledger.state.grading_files.get(rel)
                if now == base:
                    self._ledger.emit("grading_restored", {"path": rel, "digest": now})
                    continue
                blob = self._ledger.state.grading_blobs.get(rel)
                old = self._ledger.blobs.get(blob) if blob else None
                summary = change_summary(
                    rel, old.decode("utf-8", "replace") if old is not None else None, content
                )
                if self.config.grading_policy == "allow":
                    self._approve_grading(rel, by="grading_policy", note=summary)
                else:
                    self._ledger.emit(
                        "grading_changed", {"path": rel, "digest": now, "summary": summary}
                    )

    def _approve_grading(self, rel: str, *, by: str, note: str) -> None:
        from infomark.gates.grading import surface_content

        content = surface_content(self._ledger.root, rel)
        blob = None
        digest_now = None
        if content is not None:
            data = content.encode("utf-8", "surrogatepass")
            blob = self._ledger.blobs.put(data)
            digest_now = blob
        self._ledger.emit(
            "grading_approved",
            {
                "path": rel,
                "digest": digest_now,
                "blob": blob,
                "by": by,
                "note": note[:500],
                "approved": True,
            },
        )

    def _grading_target(self, call: ToolCall, tool_class: str) -> str | None:
        """The grading file a file-tool write would change (None: not a grading file)."""
        from infomark.gates.grading import grading_path, is_grading_config

        if tool_class not in ("modify", "destructive"):
            return None
        state = self._ledger.state
        for key in ("file_path", "notebook_path", "path"):
            value = call.input.get(key)
            if not isinstance(value, str):
                continue
            rel = grading_path(self._ledger.root, value)
            if rel is None:
                continue
            if rel in state.grading_files and (
                state.grading_files[rel] is not None or is_grading_config(rel)
            ):
                return rel
        return None

    def _grading_hold(self, decision: Decision, rel: str) -> Decision:
        policy = self.config.grading_policy
        if policy == "allow" or decision.decision is Verdict.DENY or decision.dryrun:
            return decision
        what = f"{rel} is a grading file (a test or its configuration) of a declared oracle"
        if policy == "refuse":
            return replace(
                decision,
                decision=Verdict.DENY,
                code="grading_edit",
                reason=f'{what}: the agent may not change it (grading_policy = "refuse"); '
                "add a new test file instead, or ask the user",
            )
        return replace(
            decision,
            decision=Verdict.ASK,
            code="grading_edit",
            reason=f'{what}: held for the user\'s approval (grading_policy = "hold")',
        )

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
        return Gatekeeper.open(self.home, as_session, root=self._ledger.root, config=self.config)

    def merge_from(self, session: str) -> dict[str, Any]:
        """Merge what the fork ``session`` settled after its fork point into this session."""
        from infomark.ledger.fork import merge_session

        check_session_id(session)
        return merge_session(self._ledger, self.config.session_prefix + session)


_CLASS_ALIASES = {"meta": "ledger"}


def _guarded(decision: Decision, verdict: str, code: str, reason: str) -> Decision:
    """Self-protection overrides an allow (and an ask, when it denies); never bypassable,
    and enforced in every profile, observe included."""
    if decision.decision is Verdict.DENY and verdict == "ask":
        return decision
    return replace(
        decision, decision=Verdict(verdict), code=code, reason=reason, bypass=False, dryrun=False
    )


def _input_digest(call: ToolCall) -> str:
    return call_digest(call)


def _resume_gate(ledger: Ledger) -> str | None:
    """The gate the session stood at before it entered the current terminal."""
    for row in reversed(
        list(ledger.journal.events(ledger.session, after=ledger.state.gate_seq - 1))
    ):
        if row.type == "gate_moved" and row.seq == ledger.state.gate_seq:
            src = str(row.payload.get("from", ""))
            return src if src and src not in TERMINALS else None
    return None


def _blocked_reason(ledger: Ledger) -> str:
    for row in ledger.journal.events(ledger.session, after=ledger.state.gate_seq - 1):
        if row.type == "gate_moved" and row.seq == ledger.state.gate_seq:
            p = row.payload
            return str(p.get("declared_reason") or p.get("question") or p.get("reason") or "")[
                :2000
            ]
    return ""
