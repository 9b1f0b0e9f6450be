"""Replay: re-run today's rules over recorded steps and report every decision that differs.

A recorded session becomes a list of :class:`Step` (sources: :mod:`infomark.tools.eval.sources`)
that is fed, in order, to a fresh gatekeeper in a temporary home and project: texts are
ingested (the stamps' evidence refs rewritten to the refs this replay issued), each tool call
is authorized and, if it is allowed and its result was recorded, recorded with that result,
and each finish is asked. Every step that carried a recorded decision (``expect``: allow /
deny / ask for a call, allow / refuse for a finish; ``code``; ``rejected`` for a text's stamp
rejection reasons) is compared with today's.
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config
from infomark.kernel.errors import UserError
from infomark.ledger.calls import ToolCall, ToolOutcome

__all__ = ["ReplayResult", "Step", "StepResult", "replay_steps"]

_PLACEHOLDER = re.compile(r"\{ref(?::(\d+))?\}")
_OLD_REF = re.compile(r"ev_[0-9a-f]{24}")
KINDS = ("prompt", "text", "call", "finish", "approve", "tamper_evidence", "change", "sandbox")


@dataclass(frozen=True, slots=True)
class Step:
    kind: str
    where: str
    text: str = ""
    tool: str = ""
    input: Mapping[str, Any] = field(default_factory=dict)
    output: str | None = None  # None: no result was recorded (the call did not run)
    exit_code: int | None = None
    is_error: bool = False
    recorded_ref: str | None = None  # the evidence ref the original session issued
    session: str | None = None  # record this call in another session (foreign evidence)
    expect: str | None = None
    code: str | None = None
    rejected: tuple[str, ...] | None = None
    target: int | None = None  # tamper_evidence: the step whose evidence to corrupt
    authorize: bool = True  # False: record without authorizing (an unpaired record)
    record_twice: bool = False  # record the same call a second time
    cwd: str | None = None  # the directory the call ran in, as the host reported it
    background_id: str | None = None  # the call started a background run with this id
    path: str = ""  # change: the file to write (outside any call)
    sandboxed: bool = True  # sandbox: are the agent's commands in an OS sandbox from here on


@dataclass(slots=True)
class StepResult:
    index: int
    where: str
    kind: str
    what: str
    expected: str | None
    got: str
    code: str = ""
    expected_code: str | None = None
    ok: bool | None = None  # None: nothing recorded to compare with
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # every field, in order


@dataclass(slots=True)
class ReplayResult:
    name: str
    source: str
    steps: list[StepResult] = field(default_factory=list)

    @property
    def differences(self) -> list[StepResult]:
        return [s for s in self.steps if s.ok is False]

    @property
    def compared(self) -> int:
        return sum(1 for s in self.steps if s.ok is not None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "compared": self.compared,
            "differences": len(self.differences),
            "steps": [s.to_dict() for s in self.steps],
        }


def _what(step: Step) -> str:
    if step.kind == "call":
        arg = step.input.get("command") or step.input.get("file_path") or ""
        return f"{step.tool} {str(arg)[:80]}".strip()
    return (step.text.strip().splitlines() or [""])[0][:80]


class _Refs:
    """Old refs (recorded) and step numbers → the refs this replay issued."""

    def __init__(self) -> None:
        self.by_old: dict[str, str] = {}
        self.by_step: dict[int, str] = {}
        self.last: str | None = None

    def add(self, index: int, new: str, old: str | None) -> None:
        self.by_step[index] = new
        self.last = new
        if old:
            self.by_old[old] = new

    def rewrite(self, text: str, where: str) -> str:
        def placeholder(m: re.Match[str]) -> str:
            if m.group(1) is None:
                if self.last is None:
                    raise UserError(f"{where}: {{ref}} before any recorded call")
                return self.last
            n = int(m.group(1))
            if n not in self.by_step:
                raise UserError(f"{where}: {{ref:{n}}} names step {n}, which recorded no evidence")
            return self.by_step[n]

        text = _PLACEHOLDER.sub(placeholder, text)
        return _OLD_REF.sub(lambda m: self.by_old.get(m.group(0), m.group(0)), text)


def _tamper(home: Path, ref: str) -> None:
    """Corrupt one stored evidence record (what TAMPERED_EVIDENCE is about)."""
    db = sqlite3.connect(home / "ledger.db")
    try:
        db.execute(
            "UPDATE evidence SET record = replace(record, 'PASS', 'FAIL') WHERE ref = ?", (ref,)
        )
        db.commit()
    finally:
        db.close()


def replay_steps(
    steps: Sequence[Step],
    *,
    name: str,
    source: str,
    config: Config | None = None,
    profile: str | None = None,
    files: Mapping[str, str] | None = None,
) -> ReplayResult:
    """Feed ``steps`` to a fresh gatekeeper (temporary home and project) and compare."""
    out = ReplayResult(name, source)
    with tempfile.TemporaryDirectory(prefix="infomark-replay-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        for rel, text in (files or {}).items():
            p = (root / rel).resolve()
            if not p.is_relative_to(root.resolve()):
                raise UserError(f"{source}: files: {rel!r} is outside the project")
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        home = Path(tmp) / "home"
        cfg = config or Config()
        gks: dict[str, Gatekeeper] = {}

        def gk_for(session: str) -> Gatekeeper:
            if session not in gks:
                gks[session] = Gatekeeper.open(
                    home, session, root=root, config=cfg, profile=profile
                )
            return gks[session]

        refs = _Refs()
        try:
            for i, step in enumerate(steps, 1):
                out.steps.append(_one(i, step, gk_for, refs, home))
        finally:
            for g in gks.values():
                g.close()
    return out


def _session_step(
    step: Step, gk: Gatekeeper, refs: _Refs, home: Path, res: StepResult
) -> StepResult | None:
    """A step that is no call, text or finish (a prompt, the sandbox, an approval, a tamper,
    a change of the tree): done, or None when ``step`` is another kind."""
    if step.kind == "prompt":
        gk.new_turn(step.text)
        res.got = "turn"
        return res
    if step.kind == "sandbox":
        detail = "the replay says so"
        gk.record_sandbox(step.sandboxed, host="replay", detail=detail, fix="replay sandbox = true")
        res.got = "sandboxed" if step.sandboxed else "unsandboxed"
        return res
    if step.kind == "approve":
        gk.approve(by="replay")
        res.got = "approved"
        return res
    if step.kind == "tamper_evidence":
        ref = refs.by_step.get(step.target or 0)
        if ref is None:
            raise UserError(
                f"{step.where}: tamper_evidence names step {step.target}, which has no evidence"
            )
        _tamper(home, ref)
        res.got = "tampered"
        return res
    if step.kind == "change":  # the tree changes outside any recorded call
        target = (Path(gk.store.root) / step.path).resolve()
        if not target.is_relative_to(Path(gk.store.root).resolve()):
            raise UserError(f"{step.where}: change: {step.path!r} is outside the project")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(step.text)
        res.got = "changed"
        return res
    return None


def _one(i: int, step: Step, gk_for: Any, refs: _Refs, home: Path) -> StepResult:
    gk: Gatekeeper = gk_for("replay")
    res = StepResult(
        i, step.where, step.kind, _what(step), step.expect, "", expected_code=step.code
    )
    done = _session_step(step, gk, refs, home, res)
    if done is not None:
        return done
    if step.kind == "text":
        report = gk.ingest(refs.rewrite(step.text, step.where))
        got = tuple(sorted(r["reason"] for r in report.stamps_rejected))
        res.got = "rejected: " + ", ".join(got) if got else "accepted"
        res.detail = "; ".join(r["message"] for r in report.stamps_rejected)[:500]
        if step.rejected is not None:
            res.expected = (
                "rejected: " + ", ".join(sorted(step.rejected)) if step.rejected else "accepted"
            )
            res.ok = got == tuple(sorted(step.rejected))
        return res
    if step.kind == "finish":
        fin = gk.can_finish(refs.rewrite(step.text, step.where))
        res.got = "allow" if fin.allow else "refuse"
        res.code = fin.code
        res.detail = fin.reason[:500]
        if step.expect is not None:
            res.ok = res.got == step.expect and (step.code is None or step.code == fin.code)
        return res
    # a tool call; {home} and {root} in its input are the replay's home and project
    root = str(gk.store.root)
    inp = {
        k: v.replace("{home}", str(home)).replace("{root}", root) if isinstance(v, str) else v
        for k, v in step.input.items()
    }
    call = ToolCall(step.tool, inp, tool_call_id=f"replay_{i}")
    owner: Gatekeeper = gk_for(step.session) if step.session else gk
    outcome = ToolOutcome(
        output=step.output or "", exit_code=step.exit_code, is_error=step.is_error
    )
    if not step.authorize:
        res.got = _record(owner, call, outcome, step, refs, i)
        if step.rejected is not None:
            res.expected = (
                "rejected: " + ", ".join(sorted(step.rejected)) if step.rejected else "recorded"
            )
            res.ok = res.got == res.expected
        return res
    decision = owner.authorize(call)
    res.got = decision.verdict.value
    res.code = decision.code
    res.detail = decision.reason[:500]
    if step.expect is not None:
        res.ok = res.got == step.expect and (step.code is None or step.code == decision.code)
    if decision.allowed and step.output is not None:
        rec = _record(owner, call, outcome, step, refs, i)
        if step.record_twice:
            rec = _record(owner, call, outcome, step, refs, i)
        if step.rejected is not None:
            want = "rejected: " + ", ".join(sorted(step.rejected)) if step.rejected else "recorded"
            res.expected, res.got = want, rec
            res.ok = rec == want and (step.expect is None or decision.verdict.value == step.expect)
    elif decision.allowed:
        res.detail = (res.detail + "; no result recorded: nothing to replay").strip("; ")
    return res


def _record(
    gk: Gatekeeper, call: ToolCall, outcome: ToolOutcome, step: Step, refs: _Refs, i: int
) -> str:
    """Record a result; "recorded", or the refusal's reason code."""
    from infomark.kernel.errors import RecordRefused

    try:
        ev = gk.record(call, outcome, cwd=step.cwd, background_id=step.background_id)
    except RecordRefused as exc:
        return f"rejected: {getattr(exc, 'code', 'unpaired_record')}"
    refs.add(i, ev.ref, step.recorded_ref)
    return "recorded"
