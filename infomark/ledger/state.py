"""The per-session projection of the journal: claims, stamps, premises, gate, metrics.

State changes only by applying events (:func:`apply`); live processes and replays
run the same reducer, so a replay equals the live state by construction. Plain
dataclasses and the standard library only: this is read on every decision.
Upper layers keep their own state under ``policy`` through the generic
``policy_updated`` event, so a replay never depends on which layers are loaded (its nested
updates are deltas: :mod:`infomark.ledger.policy_patch`). The projection's fields and the
reducers that alone write them stay in one module, a little over 500 lines, so that what
each event does to each field reads in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from infomark.kernel.infomark import InfoMark
from infomark.kernel.records import asdict, dataclass, field, fields
from infomark.kernel.tools import ToolClass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

__all__ = [
    "REDUCERS",
    "ClaimState",
    "SessionState",
    "StampState",
    "apply",
    "held_key",
    "state_from_dict",
]

STATE_VERSION = 4  # 3: runs, parse_errors; 4: agent_sandbox, unsandboxed
_HISTORY_CAP = 50
_PENDING_CAP = 256  # authorized calls awaiting their result (oldest dropped first)


@dataclass(slots=True)
class StampState:
    kind: str  # oracle_stamp | inference_stamp
    evidence_ref: str
    result: str  # PASS | FAIL | EXPECTED_FAIL | OBSERVED (inference)
    evidence_seq: int
    seq: int  # the journal seq of the stamp_applied event
    text_hash: str
    artifact: str | None = None
    artifact_digest: str | None = None
    layer: str | None = None
    undeclared_oracle: bool = False
    attested: bool = False  # bound to infomark's own sandboxed run of the oracle


@dataclass(slots=True)
class ClaimState:
    id: str
    text: str
    text_hash: str
    written: str  # the rank the model wrote (label)
    status: str  # the effective rank (label), owned by the runtime
    falsifier: str | None = None
    oracle: str | None = None
    oracle_declared_seq: int | None = None
    declared_seq: int = 0
    stamp: StampState | None = None
    reopened_seq: int = 0  # seq of the last divergence: evidence before it cannot re-stamp
    history: list[dict[str, Any]] = field(default_factory=list)
    expect: str | None = None  # "FAIL" when the claim declares the failure it expects
    observe: str | None = None  # the path or search an inference_stamp must match
    contradicted_seq: int = 0  # seq of a run of its oracle, after the stamp, that contradicts it
    oracle_refused: str | None = None  # reason code when the oracle was refused at declaration
    rejected: dict[str, Any] | None = None  # the last stamp of it refused: reason, message, seq

    @property
    def mark(self) -> InfoMark:
        return InfoMark.parse(self.status)

    @property
    def grounded(self) -> bool:
        return self.mark.grounded


@dataclass(slots=True)
class SessionState:
    session: str
    seq: int = 0
    claims: dict[str, ClaimState] = field(default_factory=dict)
    premises: list[str] = field(default_factory=list)
    open_questions: list[str] = field(default_factory=list)
    has_ledger: bool = False
    ledger_seq: int = 0
    last_modify_seq: int = 0
    last_exec_seq: int = 0
    last_exec_fail_seq: int = 0
    evidence_count: int = 0
    gate: str = "G0"
    gate_seq: int = 0  # seq at which the current gate was entered
    gate_budget_used: dict[str, int] = field(default_factory=dict)
    gate_measure: dict[str, list[int]] = field(default_factory=dict)  # last loop measure per gate
    approved_seq: int = 0
    approval_turn: int = -1
    turn: int = 0
    finish_refusals: int = 0
    cursors: dict[str, int] = field(default_factory=dict)
    ingested: list[str] = field(default_factory=list)  # digests of recent ingested texts
    metrics: dict[str, int] = field(default_factory=dict)
    policy: dict[str, Any] = field(default_factory=dict)  # owned by gates/policies
    first_modify_seq: int = 0
    done_when: list[str] = field(default_factory=list)
    # call id -> {tool, input_digest, seq, grading}: authorized calls whose result is pending
    pending_calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    recorded_calls: list[str] = field(default_factory=list)  # recent call ids already recorded
    background: dict[str, dict[str, Any]] = field(default_factory=dict)  # shell id -> its run
    # the grading surface: path -> baseline digest (None: a config file that did not exist)
    grading_files: dict[str, str | None] = field(default_factory=dict)
    grading_blobs: dict[str, str] = field(default_factory=dict)  # path -> blob of the baseline
    # path -> {since, digest, summary}: grading files changed and not approved
    grading_changed: dict[str, dict[str, Any]] = field(default_factory=dict)
    grading_tainted: list[list[int]] = field(default_factory=list)  # closed [since, until] spans
    finished_unverified: int = 0
    finished_blocked: int = 0
    # the agent's own files (gates/scratch): created this session / written or edited this session
    scratch_paths: list[str] = field(default_factory=list)
    written_paths: list[str] = field(default_factory=list)
    # files an execute-class call changed unannounced while premises were ungrounded
    violation_files: list[str] = field(default_factory=list)
    violation_seq: int = 0
    # A fork (docs/fork.md): rows 2..shift_until are copies whose logical seq is row - 1.
    shift_until: int = 0
    # held calls the operator approved (`infomark approve --call`): "tool\0input digest" →
    # the decision id that held it; each is used once
    approved_calls: dict[str, str] = field(default_factory=dict)
    # the latest run of each command (its oracle key) → {seq, outcome, ref, cwd}: what the
    # verify profile's required checks are judged on (gates/checks.py)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the errors of the last message whose blocks could not be read (line, column, message,
    # expected, source); cleared when a claim_ledger is applied
    parse_errors: list[dict[str, Any]] = field(default_factory=list)
    # what an attested run is made from (docs/security.md#attested-runs): {id, kind, head,
    # manifest (blob), seq}, recorded before the agent's first change
    baseline: dict[str, Any] = field(default_factory=dict)
    # whether the agent's own commands run in an OS sandbox, as the integration last recorded
    # it ({sandboxed, host, detail, fix}; empty: never determined), and the [since, until]
    # spans of seqs when they did not (until 0: still open)
    agent_sandbox: dict[str, Any] = field(default_factory=dict)
    unsandboxed: list[list[int]] = field(default_factory=list)
    v: int = STATE_VERSION

    # -- views -------------------------------------------------------------------
    def ungrounded_premises(self) -> list[tuple[str, str]]:
        """``(id, status)`` for each premise outside G (``missing`` when undeclared)."""
        out: list[tuple[str, str]] = []
        for pid in self.premises:
            claim = self.claims.get(pid)
            if claim is None:
                out.append((pid, "missing"))
            elif not claim.grounded:
                out.append((pid, claim.status))
        return out

    def premises_grounded(self) -> bool:
        return not self.ungrounded_premises()

    def stale_claims(self) -> list[str]:
        """Stamped claims whose evidence predates the last modification."""
        return [
            c.id
            for c in self.claims.values()
            if c.stamp is not None and c.grounded and c.stamp.evidence_seq < self.last_modify_seq
        ]

    def self_graded_at(self, seq: int) -> list[str]:
        """Grading files that were changed (unapproved) when the run at ``seq`` happened."""
        out = [p for p, c in self.grading_changed.items() if seq > int(c["since"])]
        if any(a < seq <= b for a, b in self.grading_tainted):
            out.append("(a grading file that was changed and later restored)")
        return out

    def unsandboxed_at(self, seq: int) -> bool:
        """Whether the agent's commands ran outside an OS sandbox when event ``seq`` happened."""
        return any(a < seq and (not b or seq < b) for a, b in self.unsandboxed)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def snapshot_view(self) -> dict[str, Any]:
        """What :meth:`to_dict` holds, for encoding at once: the claims as dicts, every
        other field the state's own value (no deep copy: a snapshot is encoded before the
        state changes again). ``canonical_json`` of it equals that of :meth:`to_dict`; it
        is a third of the cost of a snapshot, paid every 64 events inside a hook call."""
        out = {f.name: getattr(self, f.name) for f in _STATE_FIELDS}
        out["claims"] = {cid: asdict(c) for cid, c in self.claims.items()}
        return out


_STATE_FIELDS = fields(SessionState)


def state_from_dict(data: Mapping[str, Any]) -> SessionState:
    raw = dict(data)
    for name in _SEQ_ORDERED:
        if isinstance(raw.get(name), dict):
            raw[name] = _by_seq(raw[name])
    claims = {}
    for cid, c in dict(raw.pop("claims", {})).items():
        c = dict(c)
        stamp = c.pop("stamp", None)
        claims[cid] = ClaimState(**c, stamp=StampState(**stamp) if stamp else None)
    return SessionState(**raw, claims=claims)


# -- reducer -----------------------------------------------------------------------

Reducer: TypeAlias = "Callable[[SessionState, int, Mapping[str, Any]], None]"
_REDUCERS: dict[str, Reducer] = {}
#: event type -> its reducer, as :func:`apply` picks it (the audit's replay reduces a page
#: of rows at a time with it, :class:`infomark.ledger.verify._Replay`)
REDUCERS: Mapping[str, Reducer] = _REDUCERS


def _reducer(*types: str) -> Callable[[Reducer], Reducer]:
    def deco(fn: Reducer) -> Reducer:
        for t in types:
            _REDUCERS[t] = fn
        return fn

    return deco


def apply(state: SessionState, seq: int, type_: str, payload: Mapping[str, Any]) -> None:
    """Apply one event. Unknown types only advance ``seq`` (forward compatible).

    ``seq`` is the journal row; in a fork the copied prefix (rows ``2..shift_until``) is
    reduced at its logical seq ``row - 1``, the seq it had in the origin (docs/fork.md).
    """
    fn = _REDUCERS.get(type_)
    if fn is not None:
        fn(state, seq - 1 if 1 < seq <= state.shift_until else seq, payload)
    state.seq = seq


def _hist(claim: ClaimState, seq: int, cause: str, **extra: Any) -> None:
    claim.history.append({"seq": seq, "status": claim.status, "cause": cause, **extra})
    if len(claim.history) > _HISTORY_CAP:
        del claim.history[: len(claim.history) - _HISTORY_CAP]


@_reducer("ledger_replaced")
def _ledger(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    state.parse_errors = []
    new: dict[str, ClaimState] = {}
    for c in p["claims"]:
        old = state.claims.get(c["id"])
        claim = ClaimState(
            id=c["id"],
            text=c["text"],
            text_hash=c["text_hash"],
            written=c["written"],
            status=c["status"],
            falsifier=c.get("falsifier"),
            oracle=c.get("oracle"),
            oracle_declared_seq=seq if c.get("oracle_new") else c.get("oracle_declared_seq"),
            declared_seq=old.declared_seq if old else seq,
            stamp=old.stamp if (old and c.get("keep_stamp")) else None,
            reopened_seq=seq if c.get("reopen") else (old.reopened_seq if old else 0),
            history=list(old.history) if old else [],
            expect=c.get("expect"),
            observe=c.get("observe"),
            oracle_refused=c.get("oracle_refused"),
            contradicted_seq=old.contradicted_seq if (old and c.get("keep_stamp")) else 0,
        )
        if old is None or old.status != claim.status or not claim.history:
            _hist(claim, seq, c.get("cause", "ledger"))
        new[claim.id] = claim
    for cid in p.get("carried", []):
        if cid in state.claims:
            new[cid] = state.claims[cid]
    state.claims = new
    state.premises = list(p["premises"])
    state.open_questions = list(p["open_questions"])
    state.done_when = list(p.get("done_when", []))
    state.has_ledger = True
    state.ledger_seq = seq


@_reducer("stamp_applied")
def _stamp(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    claim = state.claims.get(p["claim_id"])
    if claim is None:
        return
    claim.stamp = StampState(
        kind=p["kind"],
        evidence_ref=p["evidence_ref"],
        result=p["result"],
        evidence_seq=p["evidence_seq"],
        seq=seq,
        text_hash=claim.text_hash,
        artifact=p.get("artifact"),
        artifact_digest=p.get("artifact_digest"),
        layer=p.get("layer"),
        undeclared_oracle=bool(p.get("undeclared_oracle")),
        attested=bool(p.get("attested")),
    )
    claim.status = p["status"]
    claim.contradicted_seq = 0
    claim.rejected = None
    _hist(claim, seq, p["kind"], evidence_ref=p["evidence_ref"])


@_reducer("divergence", "statement_changed")
def _revoke(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    claim = state.claims.get(p["claim_id"])
    if claim is None:
        return
    claim.stamp = None
    claim.status = p["status"]
    claim.contradicted_seq = 0
    if p.get("reopen", True):
        claim.reopened_seq = seq
    _hist(claim, seq, p.get("cause", "divergence"), revoked_ref=p.get("revoked_ref"))


@_reducer("stamp_rejected")
def _rejected(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    state.metrics["stamps_rejected"] = state.metrics.get("stamps_rejected", 0) + 1
    claim = state.claims.get(str(p.get("claim_id") or ""))
    if claim is not None and p.get("kind") != "divergence_event":  # a refusal names it later
        message = str(p.get("message") or "")
        claim.rejected = {"reason": p.get("reason"), "message": message[:300], "seq": seq}


@_reducer("agent_sandbox")
def _agent_sandbox(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    state.agent_sandbox = dict(p)
    open_span = bool(state.unsandboxed) and not state.unsandboxed[-1][1]
    if not p.get("sandboxed") and not open_span:
        state.unsandboxed.append([seq, 0])  # one a change of status: never trimmed
    elif p.get("sandboxed") and open_span:
        state.unsandboxed[-1][1] = seq


@_reducer("evidence_recorded")
def _evidence(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    state.evidence_count += 1
    record = p["record"]
    call_id = record.get("call_id")
    if call_id:
        state.pending_calls.pop(str(call_id), None)
        state.recorded_calls.append(str(call_id))
        if len(state.recorded_calls) > _PENDING_CAP:
            del state.recorded_calls[: len(state.recorded_calls) - _PENDING_CAP]
    if record.get("background_id"):
        state.background.pop(str(record["background_id"]), None)  # newest last
        state.background[str(record["background_id"])] = {
            "ref": p["ref"],
            "command": record.get("command"),
            "seq": seq,
        }
        _evict_oldest(state.background)
    if record.get("tool_class") in (ToolClass.MODIFY, ToolClass.DESTRUCTIVE):
        state.last_modify_seq = seq
        if not state.first_modify_seq:
            state.first_modify_seq = seq
    ev_class = record.get("evidence_class")
    if ev_class in ("execution", "attested"):
        state.last_exec_seq = seq
        outcome = record.get("outcome")
        if outcome != "PASS":
            state.last_exec_fail_seq = seq
        if state.claims:  # only a stamped claim can be contradicted
            _contradictions(state, seq, record)
        key = record.get("oracle_key") or record.get("command")
        if key and not record.get("background"):
            runs, key = state.runs, str(key)
            runs.pop(key, None)
            runs[key] = {
                "seq": seq,
                "outcome": outcome,
                "ref": p["ref"],
                "cwd": record.get("cwd"),
                "class": ev_class,
            }
            _evict_oldest(runs)


def _contradictions(state: SessionState, seq: int, record: Mapping[str, Any]) -> None:
    """A later run of a stamped claim's oracle whose outcome contradicts the stamp."""
    command = record.get("oracle_key") or record.get("command")
    outcome = record.get("outcome")
    for claim in state.claims.values():
        st = claim.stamp
        if st is None or st.kind != "oracle_stamp" or claim.oracle != command:
            continue
        expected = "PASS" if st.result == "PASS" else "FAIL"
        got = "PASS" if outcome == "PASS" else "FAIL"
        if seq > st.evidence_seq and got != expected and not claim.contradicted_seq:
            claim.contradicted_seq = seq


@_reducer("decision")
def _decision(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    if p.get("approval_of"):  # an approved held call ran: its approval is spent
        state.approved_calls.pop(held_key(str(p.get("tool")), str(p.get("input_digest"))), None)
    call_id = p.get("call_id")
    if not call_id or (p.get("decision") == "deny" and not p.get("dryrun")):
        return  # a denied call never runs: nothing may be recorded for it
    state.pending_calls.pop(str(call_id), None)
    state.pending_calls[str(call_id)] = {
        "tool": p.get("tool"),
        "input_digest": p.get("input_digest"),
        "seq": seq,
        "grading": p.get("grading"),
    }
    _evict_oldest(state.pending_calls)


def _evict_oldest(table: dict[str, dict[str, Any]]) -> None:
    """Drop the oldest entries past the cap: the first ones, since every entry is inserted
    last (popped first when it is replaced) as the events come in seq order, and a state
    loaded from a snapshot puts them back in that order (:func:`state_from_dict`). One step
    per eviction, not a scan of the table for its oldest seq."""
    while len(table) > _PENDING_CAP:
        del table[next(iter(table))]


_SEQ_ORDERED = ("pending_calls", "background", "runs")
"""The tables :func:`_evict_oldest` trims, kept in seq order."""


def _by_seq(table: Mapping[str, Any]) -> dict[str, Any]:
    """``table`` in the order its entries were inserted: by seq, then key (a snapshot's JSON
    has its keys sorted by name)."""
    return dict(sorted(table.items(), key=lambda kv: (int(kv[1].get("seq", 0)), kv[0])))


@_reducer("record_refused")
def _record_refused(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    state.metrics["records_refused"] = state.metrics.get("records_refused", 0) + 1


@_reducer("grading_surface")
def _grading_surface(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    for path, d in dict(p["files"]).items():
        if path not in state.grading_files:
            state.grading_files[path] = d
    for path, blob in dict(p.get("blobs", {})).items():
        state.grading_blobs.setdefault(path, blob)


@_reducer("grading_changed")
def _grading_changed(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    path = str(p["path"])
    prev = state.grading_changed.get(path)
    state.grading_changed[path] = {
        "since": prev["since"] if prev else seq,
        "digest": p.get("digest"),
        "summary": p.get("summary", ""),
    }


@_reducer("grading_restored", "grading_approved")
def _grading_settled(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    path = str(p["path"])
    prev = state.grading_changed.pop(path, None)
    if p.get("approved"):  # the user accepted the new content: it is the baseline now
        state.grading_files[path] = p.get("digest")
        if p.get("blob"):
            state.grading_blobs[path] = str(p["blob"])
    elif prev is not None:  # restored: runs made while it was changed stay tainted
        state.grading_tainted.append([int(prev["since"]), seq])
        del state.grading_tainted[:-_HISTORY_CAP]


@_reducer("baseline_recorded")
def _baseline(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    state.baseline = {**dict(p), "seq": seq}


@_reducer("finished_unverified")
def _unverified(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    state.finished_unverified += 1


@_reducer("finished_blocked")
def _blocked(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    state.finished_blocked += 1


@_reducer("message_ingested")
def _ingested(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    if p.get("digest"):
        state.ingested.append(p["digest"])
    if len(state.ingested) > 32:
        del state.ingested[:-32]
    cursor = p.get("cursor")
    if cursor:
        state.cursors[str(cursor["name"])] = int(cursor["value"])
    errors = p.get("errors")
    if errors:
        state.parse_errors = [dict(e) for e in errors[:5]]


@_reducer("gate_moved")
def _gate(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    src = state.gate
    state.gate = str(p["to"])
    state.gate_seq = seq
    if p.get("kind") == "back":
        state.gate_budget_used[src] = state.gate_budget_used.get(src, 0) + int(p.get("burned", 0))
        if p.get("measure") is not None:
            state.gate_measure[src] = list(p["measure"])


@_reducer("approval")
def _approval(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    state.approved_seq = seq
    state.approval_turn = state.turn


@_reducer("call_approved")
def _call_approved(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    state.approved_calls[held_key(str(p["tool"]), str(p["input_digest"]))] = str(p["decision_id"])


def held_key(tool: str, input_digest: str) -> str:
    """The key of an approved held call: the same tool with the same input, exactly."""
    return f"{tool}\x00{input_digest}"


@_reducer("turn_started")
def _turn(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    state.turn += 1
    state.finish_refusals = 0


@_reducer("finish_decision")
def _finish(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    if p.get("allow"):
        state.finish_refusals = 0
    else:
        state.finish_refusals += 1


@_reducer("forked_from")
def _forked(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    if seq == 1:  # only a session's first event makes it a fork
        state.shift_until = int(p["shift_until"])


@_reducer("merged_from")
def _merged(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    for c in p["claims"]:
        c = dict(c)
        stamp = c.pop("stamp", None)
        old = state.claims.get(c["id"])
        claim = ClaimState(**c, stamp=StampState(**stamp) if stamp else None)
        claim.history = list(old.history) if old else []
        _hist(claim, seq, "merged", **dict(p["provenance"].get(claim.id, {})))
        state.claims[claim.id] = claim
    if p.get("approval"):
        state.approved_seq = seq
        state.approval_turn = state.turn


@_reducer("policy_updated")
def _policy(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    for k, v in dict(p.get("set") or {}).items():
        if v is None:
            state.policy.pop(k, None)
        else:
            state.policy[k] = v
    ops = p.get("patch")
    if ops:
        from infomark.ledger.policy_patch import apply_patch  # only for nested updates

        apply_patch(state.policy, list(ops))


_PATHS_CAP = 2000


def _add_paths(into: list[str], paths: object) -> None:
    if not isinstance(paths, list):
        return
    for p in paths:
        if isinstance(p, str) and p not in into:
            into.append(p)
    if len(into) > _PATHS_CAP:
        del into[: len(into) - _PATHS_CAP]


@_reducer("files_written")
def _written(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    _add_paths(state.scratch_paths, p.get("created"))
    _add_paths(state.written_paths, p.get("paths"))


@_reducer("unannounced_mutation")
def _unannounced(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    state.last_modify_seq = seq  # counts as the last mutation: stamps go stale, finish re-checks
    state.metrics["unannounced_mutations"] = state.metrics.get("unannounced_mutations", 0) + 1
    if p.get("violation"):
        _add_paths(state.violation_files, p.get("files"))
        state.violation_seq = seq


@_reducer("violation_cleared")
def _cleared(state: SessionState, seq: int, p: Mapping[str, Any]) -> None:
    files = p.get("files")
    if isinstance(files, list):
        state.violation_files = [f for f in state.violation_files if f not in files]
    else:
        state.violation_files = []
