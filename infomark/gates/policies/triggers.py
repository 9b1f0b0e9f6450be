"""Post-turn triggers: declarative follow-up prompts the runtime enforces at finish.

A trigger names a condition over what changed since the last evaluation (a file
written or edited, a tool used, a claim reaching a status, another trigger
completed) and a prompt. At ``before_finalize`` a trigger whose condition holds
fires: the finish is refused and its prompt becomes the reason. Each trigger
fires at most once per user prompt. With ``requires_read`` the next finish
checks that the agent read those files since the trigger fired: if not, the
prompt is repeated once, then the miss is recorded and the finish allowed. A
trigger with ``after = "other"`` fires once ``other`` completed (its obligation
met or, with no obligation, the agent came back to finish after the follow-up).

A trigger with ``at = "tool"`` is a *tool-level* trigger (seed 001's "fire triggers
immediately after specific tool calls"): it is evaluated right after each tool batch against
that batch's calls, and its prompt is delivered with the tool result instead of refusing a
finish; its ``requires_read`` obligation is settled at the next finish like any other.

**The "would have been skipped" baseline** (seed 001's trigger metrics): when a trigger with
``requires_read`` fires, the runtime looks at whether the agent had already read the files
*after* the change that matched (it did the step unasked: ``already_done``) or not
(``would_have_skipped``); a tool-level trigger asks before the agent could, so its firings are
``unobservable``. The counts per trigger, and ``skip_rate`` = would_have_skipped /
(would_have_skipped + already_done), measure how often the model would have skipped the
step without the runtime. A trigger without ``requires_read`` has no observable step
(``unobservable``).

The state lives in ``state.policy["triggers"]`` as plain JSON. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from infomark.gates.policies.paths import any_match, glob_match
from infomark.kernel.errors import ConfigError
from infomark.kernel.infomark import InfoMark
from infomark.kernel.records import dataclass, field
from infomark.ledger.state import SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

__all__ = [
    "WHEN_KEYS",
    "TriggerOutcome",
    "TriggerSpec",
    "empty_trigger_state",
    "evaluate_tool_triggers",
    "evaluate_triggers",
    "parse_triggers",
    "record_activity",
    "start_prompt",
    "trigger_metrics",
]

WHEN_KEYS = ("file_written", "file_edited", "tool_used", "claim_status", "after")
_DELTA_CAP = 64
_PROMPT_MAX = 4000

Event: TypeAlias = "tuple[str, dict[str, Any]]"


@dataclass(frozen=True, slots=True)
class TriggerSpec:
    """One ``[[triggers]]`` entry. Every ``when`` condition given must hold (AND)."""

    name: str
    prompt: str
    file_written: str | None = None
    file_edited: str | None = None
    tool_used: str | None = None
    claim_id: str | None = None
    claim_status: str | None = None
    after: str | None = None
    requires_read: tuple[str, ...] = ()
    at: str = "finish"  # or "tool": evaluated right after each tool batch

    def when(self) -> dict[str, Any]:
        """The condition as configured (for documents and events)."""
        out: dict[str, Any] = {}
        for key in ("file_written", "file_edited", "tool_used", "after"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.claim_id is not None:
            out["claim_status"] = {"id": self.claim_id, "status": self.claim_status}
        return out


@dataclass(slots=True)
class TriggerOutcome:
    """What one evaluation decided: the prompts to return (refusing the finish) and events."""

    prompts: list[tuple[str, str]] = field(default_factory=list)
    fired: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    @property
    def refuse(self) -> bool:
        return bool(self.prompts)

    @property
    def reason(self) -> str:
        return "\n\n".join(f"[infomark:trigger {n}]\n{p}" for n, p in self.prompts)


# -- configuration ---------------------------------------------------------------------


def _where(i: int, name: str | None) -> str:
    return f"policies.triggers[{i}]" + (f" ({name!r})" if name else "")


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{what}: expected a non-empty string, got {value!r}")
    return value.strip()


def _claim_condition(value: Any, where: str) -> tuple[str, str]:
    if not isinstance(value, Mapping) or set(value) != {"id", "status"}:
        raise ConfigError(
            f'{where}.when.claim_status: expected {{id = "C1", status = "Exact"}}, got {value!r}'
        )
    status = _str(value["status"], f"{where}.when.claim_status.status").capitalize()
    labels = [m.label for m in InfoMark]
    if status not in labels:
        raise ConfigError(
            f"{where}.when.claim_status.status: {value['status']!r} is not one of "
            + ", ".join(labels)
        )
    return _str(value["id"], f"{where}.when.claim_status.id"), status


def _parse_one(i: int, raw: Any) -> TriggerSpec:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{_where(i, None)}: expected a table with name, when and prompt")
    unknown = set(raw) - {"name", "when", "prompt", "requires_read", "at"}
    if unknown:
        raise ConfigError(
            f"{_where(i, None)}: unknown key(s) {sorted(unknown)}; "
            "a trigger has name, when, prompt and optionally requires_read and at"
        )
    name = _str(raw.get("name"), f"{_where(i, None)}.name")
    where = _where(i, name)
    prompt = _str(raw.get("prompt"), f"{where}.prompt")
    if len(prompt) > _PROMPT_MAX:
        raise ConfigError(f"{where}.prompt: {len(prompt)} characters; the limit is {_PROMPT_MAX}")
    when = raw.get("when")
    if not isinstance(when, Mapping) or not when:
        raise ConfigError(
            f"{where}.when: expected a table with one or more of {', '.join(WHEN_KEYS)}, "
            'e.g. when = {file_written = "writing/*.md"}'
        )
    bad = set(when) - set(WHEN_KEYS)
    if bad:
        raise ConfigError(
            f"{where}.when: unknown condition(s) {sorted(bad)}; use {', '.join(WHEN_KEYS)}"
        )
    kw: dict[str, Any] = {}
    for key in ("file_written", "file_edited", "tool_used", "after"):
        if key in when:
            kw[key] = _str(when[key], f"{where}.when.{key}")
    if "claim_status" in when:
        kw["claim_id"], kw["claim_status"] = _claim_condition(when["claim_status"], where)
    reads = raw.get("requires_read", [])
    if isinstance(reads, (str, bytes)) or not isinstance(reads, Sequence):
        raise ConfigError(
            f'{where}.requires_read: expected a list of file globs, e.g. ["voice.md"]'
        )
    requires = tuple(_str(r, f"{where}.requires_read") for r in reads)
    at = raw.get("at", "finish")
    if at not in ("finish", "tool"):
        raise ConfigError(
            f'{where}.at: expected "finish" (at the turn boundary) or "tool" (right after a '
            f"matching tool call), got {at!r}"
        )
    if at == "tool" and ("after" in kw or "claim_id" in kw):
        raise ConfigError(
            f'{where}: at = "tool" fires on a tool call; use file_written, file_edited or '
            "tool_used (after and claim_status are judged at the finish)"
        )
    return TriggerSpec(name=name, prompt=prompt, requires_read=requires, at=at, **kw)


def parse_triggers(raw: Any) -> tuple[TriggerSpec, ...]:
    """Validate ``policies.triggers``; raise ConfigError naming the bad entry and the fix."""
    if raw is None:
        return ()
    if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
        raise ConfigError("policies.triggers: expected a list of [[triggers]] tables")
    specs = tuple(_parse_one(i, r) for i, r in enumerate(raw))
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"policies.triggers: duplicate trigger name(s) {dupes}")
    by_name = {s.name: s for s in specs}
    for s in specs:
        chain = [s.name]
        cur = s
        while cur.after is not None:
            if cur.after not in by_name:
                raise ConfigError(
                    f"trigger {cur.name!r}: after = {cur.after!r} names no trigger; "
                    f"known: {', '.join(names)}"
                )
            if cur.after in chain:
                raise ConfigError(
                    f"trigger {s.name!r}: the after-chain loops "
                    f"({' -> '.join([*chain, cur.after])}); no trigger in it could ever fire"
                )
            chain.append(cur.after)
            cur = by_name[cur.after]
    return specs


# -- state ---------------------------------------------------------------------------------


def _empty_delta() -> dict[str, list[Any]]:
    # "order": [kind, path] of changes and reads in the order they happened (the baseline)
    return {"written": [], "edited": [], "read": [], "tools": [], "order": []}


def empty_trigger_state() -> dict[str, Any]:
    return {
        "delta": _empty_delta(),
        "claims_seen": {},
        "fired": [],
        "completed": [],
        "pending": {},
        "metrics": {},
        "evaluations": 0,
    }


def _push(items: list[Any], value: Any) -> None:
    if value in items:
        items.remove(value)
    items.append(value)
    if len(items) > _DELTA_CAP:
        del items[: len(items) - _DELTA_CAP]


_COUNTS = (
    "fired",
    "repeated",
    "met",
    "missed",
    "would_have_skipped",
    "already_done",
    "unobservable",
)


def _count(ts: dict[str, Any], name: str, key: str) -> None:
    m = ts["metrics"].setdefault(name, {})
    for k in _COUNTS:
        m.setdefault(k, 0)
    m[key] += 1


def _baseline(spec: TriggerSpec, delta: Mapping[str, Any], matched: Mapping[str, Any]) -> str:
    """Had the agent already done the step (read each required file after the change)?"""
    if not spec.requires_read:
        return "unobservable"
    changed = {p for key in ("file_written", "file_edited") for p in matched.get(key, [])}
    order = [tuple(e) for e in delta.get("order", [])]
    last = max(
        (i for i, (kind, p) in enumerate(order) if kind != "read" and p in changed), default=-1
    )
    after = [p for kind, p in order[last + 1 :] if kind == "read"]
    done = all(any(glob_match(pat, p) for p in after) for pat in spec.requires_read)
    return "already_done" if done else "would_have_skipped"


def _missing(pending: Mapping[str, Any]) -> list[str]:
    return [p for p in pending["requires_read"] if p not in pending["satisfied"]]


def record_activity(
    ts: dict[str, Any],
    *,
    tool: str,
    written: Sequence[str] = (),
    edited: Sequence[str] = (),
    read: Sequence[str] = (),
) -> None:
    """Add one executed call to the delta, and tick off pending ``requires_read`` globs."""
    delta = ts["delta"]
    delta.setdefault("order", [])
    _push(delta["tools"], tool)
    for p in written:
        _push(delta["written"], p)
        _push(delta["order"], ["written", p])
    for p in edited:
        _push(delta["edited"], p)
        _push(delta["order"], ["edited", p])
    for p in read:
        _push(delta["read"], p)
        _push(delta["order"], ["read", p])
        for pending in ts["pending"].values():
            for pattern in pending["requires_read"]:
                if pattern not in pending["satisfied"] and glob_match(pattern, p):
                    pending["satisfied"].append(pattern)
                    _push(pending["paths"], p)


def _settle(ts: dict[str, Any], name: str, why: str) -> Event | None:
    """Close a pending obligation as met or missed; None when the trigger had none."""
    pending = ts["pending"].pop(name)
    required = list(pending["requires_read"])
    if not required:
        return None
    missing = _missing(pending)
    if missing:
        _count(ts, name, "missed")
        return (
            "trigger_obligation_missed",
            {"name": name, "requires_read": required, "missing": missing, "why": why},
        )
    _count(ts, name, "met")
    return (
        "trigger_obligation_met",
        {"name": name, "requires_read": required, "read": list(pending["paths"])},
    )


def start_prompt(ts: dict[str, Any]) -> list[Event]:
    """A new user prompt: settle what the last one left open, reset the per-prompt sets."""
    events = [ev for name in list(ts["pending"]) if (ev := _settle(ts, name, "new_prompt"))]
    ts["fired"] = []
    ts["completed"] = []
    return events


def _matches(spec: TriggerSpec, ts: dict[str, Any], state: SessionState) -> dict[str, Any] | None:
    """What in the delta satisfies every condition of ``spec``; None when one fails."""
    delta = ts["delta"]
    matched: dict[str, Any] = {}
    for key, pattern, values in (
        ("file_written", spec.file_written, delta["written"]),
        ("file_edited", spec.file_edited, delta["edited"]),
        ("tool_used", spec.tool_used, delta["tools"]),
    ):
        if pattern is None:
            continue
        hit = any_match(pattern, values)
        if not hit:
            return None
        matched[key] = hit[:8]
    if spec.claim_id is not None:
        claim = state.claims.get(spec.claim_id)
        now = claim.status if claim is not None else None
        if now != spec.claim_status or ts["claims_seen"].get(spec.claim_id) == now:
            return None
        matched["claim_status"] = {"id": spec.claim_id, "status": now}
    if spec.after is not None:
        if spec.after not in ts["completed"]:
            return None
        matched["after"] = spec.after
    return matched


def _obligations(
    ts: dict[str, Any], by_name: Mapping[str, TriggerSpec], turn: int
) -> TriggerOutcome:
    out = TriggerOutcome()
    for name in list(ts["pending"]):
        pending = ts["pending"][name]
        missing = _missing(pending)
        spec = by_name.get(name)
        if spec is not None and missing and pending["repeats"] == 0:
            pending["repeats"] = 1
            _count(ts, name, "repeated")
            text = f"You have not read {', '.join(missing)} since this was asked.\n{spec.prompt}"
            out.prompts.append((name, text))
            out.fired.append(name)
            out.events.append(
                ("trigger_fired", {"name": name, "repeat": True, "missing": missing, "turn": turn})
            )
            continue
        ev = _settle(ts, name, "finished_without_read")
        if ev is not None:
            out.events.append(ev)
        if not missing:
            _push(ts["completed"], name)
    return out


def _fire(
    ts: dict[str, Any],
    spec: TriggerSpec,
    matched: dict[str, Any],
    baseline: str,
    out: TriggerOutcome,
    turn: int,
) -> None:
    _push(ts["fired"], spec.name)
    _count(ts, spec.name, "fired")
    _count(ts, spec.name, baseline)
    ts["pending"][spec.name] = {
        "requires_read": list(spec.requires_read),
        "satisfied": [],
        "paths": [],
        "repeats": 0,
        "turn": turn,
    }
    out.prompts.append((spec.name, spec.prompt))
    out.fired.append(spec.name)
    out.events.append(
        (
            "trigger_fired",
            {
                "name": spec.name,
                "repeat": False,
                "prompt": spec.prompt,
                "matched": matched,
                "requires_read": list(spec.requires_read),
                "turn": turn,
                "at": spec.at,
                "baseline": baseline,
            },
        )
    )


def evaluate_tool_triggers(
    ts: dict[str, Any],
    specs: Sequence[TriggerSpec],
    batch: Mapping[str, Sequence[str]],
    state: SessionState,
    turn: int,
) -> TriggerOutcome:
    """Right after a tool batch: fire each ``at = "tool"`` trigger the batch's calls match.

    ``batch`` holds this batch's ``written``, ``edited``, ``read`` paths and ``tools``. The
    prompt is delivered with the tool result; nothing is refused.
    """
    out = TriggerOutcome()
    view = {
        "delta": {**_empty_delta(), **{k: list(v) for k, v in batch.items()}},
        "claims_seen": ts["claims_seen"],
        "completed": ts["completed"],
    }
    for spec in specs:
        if spec.at != "tool" or spec.name in ts["fired"]:
            continue
        matched = _matches(spec, view, state)
        if matched is not None:  # asked before the agent could do the step unasked
            _fire(ts, spec, matched, "unobservable", out, turn)
    return out


def evaluate_triggers(
    ts: dict[str, Any], specs: Sequence[TriggerSpec], state: SessionState, turn: int
) -> TriggerOutcome:
    """At ``before_finalize``: settle obligations, fire what the delta matches, consume it."""
    by_name = {s.name: s for s in specs}
    ts["evaluations"] += 1
    out = _obligations(ts, by_name, turn)
    for spec in specs:
        if spec.at == "tool" or spec.name in ts["fired"]:
            continue
        matched = _matches(spec, ts, state)
        if matched is None:
            continue
        _fire(ts, spec, matched, _baseline(spec, ts["delta"], matched), out, turn)
    # The delta is consumed: one change fires a trigger at one evaluation at most.
    ts["delta"] = _empty_delta()
    ts["claims_seen"] = {
        s.claim_id: c.status
        for s in specs
        if s.claim_id is not None and (c := state.claims.get(s.claim_id)) is not None
    }
    return out


def trigger_metrics(ts: Mapping[str, Any] | None) -> dict[str, Any]:
    """Per-trigger counts (fired, repeated, met, missed, the baseline) and what is open now.

    ``skip_rate``: of the firings whose step could be observed, the share where the agent had
    not done it before the runtime asked (None before any).
    """
    if not ts:
        return {"triggers": {}, "fired_this_prompt": [], "pending": [], "evaluations": 0}
    counts: dict[str, dict[str, Any]] = {}
    for name, raw in ts.get("metrics", {}).items():
        m: dict[str, Any] = {k: int(raw.get(k, 0)) for k in _COUNTS}
        seen = m["would_have_skipped"] + m["already_done"]
        m["skip_rate"] = round(m["would_have_skipped"] / seen, 3) if seen else None
        counts[name] = m
    return {
        "triggers": counts,
        "fired_this_prompt": list(ts.get("fired", [])),
        "pending": [
            {
                "name": n,
                "requires_read": list(p["requires_read"]),
                "satisfied": list(p["satisfied"]),
                "repeats": int(p["repeats"]),
            }
            for n, p in ts.get("pending", {}).items()
        ],
        "evaluations": int(ts.get("evaluations", 0)),
    }
