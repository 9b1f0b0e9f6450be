"""A session told as a person reads it: a verdict, a timeline and each claim's history.

Pure functions over the journal's events (no clock, no I/O): :func:`summarize` reads the
events of one session once and returns a :class:`SessionStory` — the one-line verdict
(finished clean, finished through the refusal cap, bypassed, tampered, blocked, refused,
open), the timeline (prompt → claims → denied call → oracle run → stamp → edit → finish),
each claim's rank history with the evidence and the command actually run, the files
changed and the final message. ``infomark audit``, ``infomark report`` and
``infomark sessions`` render it. Standard library only.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from infomark.kernel.records import dataclass, field
from infomark.kernel.tools import ToolClass
from infomark.ledger.audit import verify_session
from infomark.ledger.engine import Ledger
from infomark.ledger.store.base import loads_object
from infomark.ledger.store.journal import EventRow

__all__ = [
    "DEFAULT_FAIL_ON",
    "FAIL_ON",
    "READS",
    "VERDICTS",
    "ClaimStep",
    "Entry",
    "SessionStory",
    "fails_on",
    "finish_story",
    "overview",
    "session_story",
    "story_reader",
    "summarize",
    "verdict_of",
]

#: Verdict codes, most serious first, with the sentence a team lead reads.
VERDICTS: dict[str, str] = {
    "tampered": "the journal does not verify: it was changed outside infomark",
    "finished_unverified": "finished through the refusal cap, without fresh evidence",
    "finished_unchecked": "finished with changes that no fresh passing check backs",
    "bypassed": "finished, but grounding was bypassed for some calls",
    "blocked": "stopped as blocked: the agent said it cannot finish",
    "finished": "finished: the changes are backed by checks that passed on fresh evidence",
    "finished_unchanged": "ended without changes",
    "refused": "not finished: the last finish attempt was refused",
    "open": "open: no finish attempt yet",
}

#: what ``--fail-on`` names (``infomark audit``, ``infomark report``): category → verdicts
FAIL_ON: dict[str, frozenset[str]] = {
    "unverified": frozenset({"finished_unverified", "finished_unchecked"}),
    "bypass": frozenset({"bypassed"}),
    "tamper": frozenset({"tampered"}),
    "unchanged": frozenset({"finished_unchanged"}),
    "refused": frozenset({"refused"}),
    "blocked": frozenset({"blocked"}),
    "open": frozenset({"open"}),
}
DEFAULT_FAIL_ON = ("unverified", "bypass", "tamper")

_EVIDENCE_KEPT = 256  # evidence events a kept-short story remembers for the stamps that name them
_MUTATING = frozenset({ToolClass.MODIFY, ToolClass.DESTRUCTIVE, ToolClass.UNKNOWN})
_PATH_KEYS = ("file_path", "path", "notebook_path", "filePath", "target", "destination")


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of the timeline."""

    seq: int
    timestamp: str
    kind: str  # prompt | ledger | denied | held | edit | run | read | stamp | rejected | …
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "timestamp": self.timestamp, "kind": self.kind, "text": self.text}


@dataclass(frozen=True, slots=True)
class ClaimStep:
    """One change of a claim's rank, with what caused it."""

    seq: int
    status: str
    cause: str
    evidence_ref: str | None = None
    command: str | None = None
    outcome: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "status": self.status,
            "cause": self.cause,
            "evidence_ref": self.evidence_ref,
            "command": self.command,
            "outcome": self.outcome,
        }


@dataclass(slots=True)
class SessionStory:
    """What happened in one session, ready to render."""

    session: str
    host: str = "python"
    started: str = ""
    last_activity: str = ""
    events: int = 0
    verdict: str = "open"
    flags: list[str] = field(default_factory=list)
    timeline: list[Entry] = field(default_factory=list)
    claims: dict[str, dict[str, Any]] = field(default_factory=dict)
    history: dict[str, list[ClaimStep]] = field(default_factory=dict)
    files_changed: list[str] = field(default_factory=list)
    commands_run: list[dict[str, Any]] = field(default_factory=list)
    # how many of the first entries the timeline and the commands run leave out (a story
    # kept to its last entries, ``story_reader(keep=…)``); None: it holds them all
    timeline_omitted: int | None = None
    commands_run_omitted: int | None = None
    denied: int = 0
    bypassed: int = 0
    rejected: int = 0
    final_message: str = ""

    @property
    def verdict_text(self) -> str:
        line = VERDICTS.get(self.verdict, self.verdict)
        return f"{line} ({', '.join(self.flags)})" if self.flags else line

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "session": self.session,
            "host": self.host,
            "started": self.started,
            "last_activity": self.last_activity,
            "events": self.events,
            "verdict": self.verdict,
            "verdict_text": self.verdict_text,
            "flags": list(self.flags),
            "timeline": [e.to_dict() for e in self.timeline],
        }
        if self.timeline_omitted is not None:
            out["timeline_omitted"] = self.timeline_omitted
        out.update(
            claims=dict(self.claims),
            history={k: [s.to_dict() for s in v] for k, v in self.history.items()},
            files_changed=list(self.files_changed),
            commands_run=list(self.commands_run),
        )
        if self.commands_run_omitted is not None:
            out["commands_run_omitted"] = self.commands_run_omitted
        out.update(
            denied=self.denied,
            bypassed=self.bypassed,
            rejected=self.rejected,
            final_message=self.final_message,
        )
        return out


def _clip(text: object, limit: int = 120) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _target(payload: Mapping[str, Any]) -> str:
    """What a call acted on: its path, else its command, else nothing."""
    tool_input = payload.get("input")
    if isinstance(tool_input, Mapping):
        for key in _PATH_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                return value
        command = tool_input.get("command")
        if isinstance(command, str):
            return _clip(command, 80)
    return ""


#: An evidence event as the story remembers it: ``(ref, command, outcome, seq)``.
_Seen = tuple[str, str, str, int]
#: A timeline entry not made yet: ``(seq, timestamp, kind, text, arg)``, its text ``text(arg)``.
_Later = tuple[int, str, str, Callable[[Any], str], Any]


class _Reader:
    """Folds events into a story; one method per event type it understands.

    With ``keep``, the timeline and the commands run hold only their last ``keep`` entries
    (and count the rest), and the evidence a stamp may name is remembered for the last
    :data:`_EVIDENCE_KEPT` evidence events; a stamp that names an older one has this
    session's earlier rows read again (``earlier``) once, after which every one is kept.
    So a story of 10⁵ events holds what one of 10³ holds.

    An evidence event's timeline entry and command run are held unformatted (a :data:`_Later`
    tuple, a :data:`_Seen` tuple) and made into an :class:`Entry` and a mapping by
    :func:`finish_story`, only for the entries kept: ``audit`` of the bench's 10⁵-event
    session (a third of them command runs) formatted 33,333 entries to keep 100; the
    evidence a stamp may name is a bounded deque of the same :data:`_Seen` tuples, not a
    dict kept in order by a pop, an insert and an eviction per event. Together: 3.1 → 1.4 µs
    per evidence event fed (``take`` of that session's 33,333 evidence rows alone, CPU)."""

    def __init__(
        self,
        session: str,
        keep: int | None = None,
        earlier: Callable[[int], Iterable[tuple[str, Mapping[str, Any]]]] | None = None,
    ) -> None:
        self.story = SessionStory(session=session)
        self.keep = keep
        # the timeline and the commands run, as finish_story() makes them (kept or not)
        self.entries: list[Entry | _Later] | deque[Entry | _Later] = (
            [] if keep is None else deque(maxlen=keep)
        )
        self.runs: list[_Seen] | deque[_Seen] = [] if keep is None else deque(maxlen=keep)
        self.added = 0  # timeline entries, kept or not
        self.runs_seen = 0  # commands run, kept or not
        # the last evidence events (remember()), for the stamps that name them; None: every
        # one is in ``evidence``, by ref
        self.recent: deque[_Seen] | None = (
            deque(maxlen=_EVIDENCE_KEPT) if keep is not None else None
        )
        self.evidence: dict[str, _Seen] = {}
        self.earlier = earlier  # (type, payload) of this session's rows before a seq
        self.files: set[str] = set()  # what files_changed holds
        self.last_finish: str | None = None
        self.capped = False
        self.basis: str | None = None  # what the last allowed finish rested on
        self.checks: list[Mapping[str, Any]] = []  # the required checks at the last finish
        self.changed = False  # an edit or a command's change was recorded
        self.ran = False  # a command run was recorded
        self.stamped = False  # a stamp was applied
        self.weakened: list[str] = []  # what the last finish found weakening the checks
        self.pending: list[str] = []  # found at the finish attempt being read
        self.host_hints: set[str] = set()

    def add(self, kind: str, seq: int, ts: str, text: str) -> None:
        self.added += 1
        self.entries.append(Entry(seq, ts, kind, text))

    def later(self, kind: str, seq: int, ts: str, text: Callable[[Any], str], arg: Any) -> None:
        """An entry whose text, ``text(arg)``, is made only if it is kept."""
        self.added += 1
        self.entries.append((seq, ts, kind, text, arg))

    def step(self, cid: str, step: ClaimStep) -> None:
        self.story.history.setdefault(cid, []).append(step)

    def changed_file(self, target: str) -> None:
        if target not in self.files:
            self.files.add(target)
            self.story.files_changed.append(target)

    def remember(self, ref: str, record: Mapping[str, Any], seq: int = 0) -> _Seen:
        """What a stamp naming ``ref`` shows of its evidence: the command and its outcome
        (``(ref, command, outcome, seq)``: the one tuple a command run keeps too)."""
        seen = (ref, str(record.get("command") or ""), _outcome(record), seq)
        recent = self.recent
        if recent is not None:
            recent.append(seen)  # the oldest is dropped first
        else:
            self.evidence[ref] = seen
        return seen

    def recall(self, ref: str, seq: int) -> tuple[str, str] | None:
        """The evidence ``ref`` as of the row ``seq``: remembered, or (once dropped) every
        evidence event before ``seq`` read again, all kept from then on."""
        recent = self.recent
        if recent is None:
            return self._seen(ref)
        for known, command, outcome, _seq in reversed(recent):  # the newest first
            if known == ref:
                return command, outcome
        if self.earlier is None or len(recent) < (recent.maxlen or 0):
            return None  # none was dropped: ``ref`` names no evidence event before ``seq``
        self.recent = None
        for type_, p in self.earlier(seq):
            record = p.get("record")
            if type_ == "evidence_recorded" and isinstance(record, Mapping):
                self.remember(str(p.get("ref") or ""), record)
        return self._seen(ref)

    def _seen(self, ref: str) -> tuple[str, str] | None:
        found = self.evidence.get(ref)
        return None if found is None else (found[1], found[2])

    def feed(self, row: EventRow) -> None:
        self.take(row.seq, row.type, row.payload, row.timestamp)

    def take(self, seq: int, type_: str, payload: Mapping[str, Any], ts: str) -> None:
        """One row, in seq order (the audit's verification pass calls this directly; the
        payload of a type not in :data:`READS` may come unparsed, as an empty mapping)."""
        st = self.story
        if seq > st.events:
            st.events = seq
        if ts:
            st.last_activity = ts
            if not st.started:
                st.started = ts
        handler = _HANDLERS.get(type_)  # one dict lookup a row (audit: 10⁵ rows)
        if handler is not None:
            handler(self, seq, ts, payload)

    # -- the events ------------------------------------------------------------------------
    def on_turn_started(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        self.add("prompt", seq, ts, "user prompt")

    def on_message_ingested(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        source = str(p.get("source") or "")
        if source:
            self.host_hints.add(source)
        errors = p.get("errors") or []
        if errors:
            self.add("syntax", seq, ts, f"ledger text with {len(errors)} syntax error(s) ignored")

    def on_ledger_replaced(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        ids = []
        for c in p.get("claims") or []:
            if not isinstance(c, Mapping) or not isinstance(c.get("id"), str):
                continue
            cid = str(c["id"])
            ids.append(f"{cid} ({c.get('status')})")
            self.story.claims[cid] = {
                "id": cid,
                "text": c.get("text"),
                "oracle": c.get("oracle"),
                "falsifier": c.get("falsifier"),
            }
            self.step(cid, ClaimStep(seq, str(c.get("status")), str(c.get("cause") or "ledger")))
        premises = p.get("premises") or p.get("premises_for_plan") or []
        tail = f"; premises {', '.join(map(str, premises))}" if premises else ""
        self.add("ledger", seq, ts, f"declared {', '.join(ids) or 'no claims'}{tail}")

    def on_statement_changed(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        cid = str(p.get("claim_id") or p.get("id") or "?")
        self.step(cid, ClaimStep(seq, str(p.get("status") or "Hypothetical"), "restated"))
        self.add("ledger", seq, ts, f"{cid} restated: its stamp was dropped")

    def on_decision(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        verdict = p.get("decision")
        tool = p.get("tool")
        if verdict in ("deny", "ask"):
            self.story.denied += 1
            kind = "denied" if verdict == "deny" else "held"
            reason = _clip(p.get("reason"), 100)
            self.add(kind, seq, ts, f"{kind} {tool}: {p.get('code')} — {reason}")

    def on_bypass(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        self.story.bypassed += 1
        self.add("bypass", seq, ts, f"grounding bypassed for {p.get('tool')} ({p.get('env')})")

    def on_evidence_recorded(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        record = p.get("record")
        if type(record) is not dict and not isinstance(record, Mapping):
            return
        seen = self.remember(str(p.get("ref") or ""), record, seq)
        _ref, command, outcome, _seq = seen
        cls = str(record.get("tool_class") or "")
        ev_cls = str(record.get("evidence_class") or "")
        if cls in _MUTATING:
            tool = str(record.get("tool") or "")
            target = _target(record) or command
            if outcome == "ERROR" and ev_cls != "execution":
                # a file tool that failed (an Edit whose old_string was not found) changed
                # nothing; a command that errored (a time-out) may have, so it still counts
                self.later("edit", seq, ts, _failed_edit, (tool, target))
                return
            self.changed = True
            if target:
                self.changed_file(target)
            self.later("edit", seq, ts, _edit, (tool, target))
        elif ev_cls == "execution":
            self.ran = True
            self.runs_seen += 1
            self.runs.append(seen)
            self.added += 1
            self.entries.append((seq, ts, "run", _ran, seen))
        elif ev_cls == "observation":
            tool = str(record.get("tool") or "")
            self.later("read", seq, ts, _edit, (tool, _target(record) or command))

    def on_unannounced_mutation(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        files = [str(f) for f in p.get("files") or []]
        self.changed = self.changed or bool(files)
        for f in files:
            self.changed_file(f)
        self.add("edit", seq, ts, f"files changed by a command: {', '.join(files[:5]) or '?'}")

    def on_stamp_applied(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        self.stamped = True
        cid = str(p.get("claim_id"))
        ref = p.get("evidence_ref")
        command, outcome = self.recall(str(ref), seq) or (None, None)
        status, kind = str(p.get("status")), str(p.get("kind"))
        self.step(cid, ClaimStep(seq, status, kind, str(ref) if ref else None, command, outcome))
        self.add("stamp", seq, ts, f"{cid} → {p.get('status')} ({p.get('kind')} {ref})")

    def on_forked_from(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        self.add("fork", seq, ts, f"forked from {p.get('session')} at seq {p.get('seq')}")

    def on_merged_from(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        """Each merged claim's step names where its grade came from (docs/fork.md)."""
        provenance = p.get("provenance") or {}
        for c in p.get("claims") or []:
            cid = str(c.get("id"))
            prov = provenance.get(cid) or {}
            origin = f"merged from {prov.get('from_session')}"
            if prov.get("evidence_session"):
                origin += f" seq {prov.get('from_seq')}, evidence of {prov['evidence_session']}"
            elif prov.get("conflict"):
                origin += f": changed {prov['conflict']}, both stamps dropped"
            elif prov.get("revoked"):
                origin += ": revoked there"
            ref = prov.get("evidence_ref")
            self.step(cid, ClaimStep(seq, str(c.get("status")), origin, ref))
        self.add("merge", seq, ts, f"merged {p.get('session')} up to seq {p.get('upto')}")

    def on_stamp_rejected(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        self.story.rejected += 1
        self.add("rejected", seq, ts, f"stamp of {p.get('claim_id')} rejected: {p.get('reason')}")

    def on_divergence(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        cid = str(p.get("claim_id"))
        ref = p.get("evidence_ref")
        self.step(cid, ClaimStep(seq, str(p.get("status") or "Unknown"), "divergence", ref))
        self.add(
            "revoked", seq, ts, f"{cid} revoked → {p.get('status') or 'Unknown'} ({p.get('cause')})"
        )

    def on_gate_refused(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        self.add("gate", seq, ts, f"gate move {p.get('from')} → {p.get('to')} refused")

    def on_approval(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        self.add("approval", seq, ts, f"approved by {p.get('by')}")

    def on_finish_decision(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        allow = bool(p.get("allow"))
        final = p.get("final_text")
        if isinstance(final, str) and final:
            self.story.final_message = final
        if p.get("cap_reached"):
            self.capped = True
        self.last_finish = "finished" if allow else "refused"
        self.weakened, self.pending = self.pending, []
        checks = p.get("checks")
        if isinstance(checks, list):
            self.checks = [c for c in checks if isinstance(c, Mapping)]
        if allow and not p.get("cap_reached"):
            basis = p.get("basis")
            # a journal written before finishes named their basis: read it from the events
            self.basis = str(basis) if isinstance(basis, str) else self._basis()
        verb = "finish allowed" if allow else f"finish refused: {p.get('code')}"
        self.add("finish", seq, ts, verb)

    def _basis(self) -> str:
        if not self.changed:
            return "unchanged"
        return "verified" if self.stamped else "unchecked"

    def on_finish_cap_reached(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        self.capped = True
        self.add("finish", seq, ts, f"refusal cap reached ({p.get('cap')}): finished unverified")

    def on_finished_unverified(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        self.on_finish_cap_reached(seq, ts, p)

    def on_finished_blocked(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        self.last_finish = "blocked"
        self.add("finish", seq, ts, f"stopped as blocked: {_clip(p.get('reason') or '', 100)}")

    def on_weakened_checks(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        found = [f for f in p.get("findings") or [] if isinstance(f, Mapping)]
        self.pending = [f"{f.get('kind')} {f.get('path')}:{f.get('line')}" for f in found]
        shown = "; ".join(
            f"{f.get('kind')}: {f.get('path')}:{f.get('line')} {_clip(f.get('text'), 60)}"
            for f in found[:5]
        )
        self.add("weakened", seq, ts, f"the change weakens the checks: {shown}")

    def on_hook_error(self, seq: int, ts: str, p: Mapping[str, Any]) -> None:
        self.add("error", seq, ts, f"hook error: {_clip(p.get('error') or p, 100)}")
        if p.get("finished_unverified"):  # a stop the hook let through unjudged
            self.capped = True
            self.add("finish", seq, ts, "the hook could not judge the stop: finished unverified")


def _ran(arg: _Seen) -> str:
    ref, command, outcome, _seq = arg
    return f"ran `{_clip(command, 80)}` → {outcome} ({ref})"


def _edit(arg: tuple[str, str]) -> str:  # an edit, a read: the tool and what it acted on
    return f"{arg[0]} {_clip(arg[1], 80)}"


def _failed_edit(arg: tuple[str, str]) -> str:
    return f"{arg[0]} {_clip(arg[1], 80)} failed: nothing changed"


def _made(e: Entry | _Later) -> Entry:
    return e if isinstance(e, Entry) else Entry(e[0], e[1], e[2], e[3](e[4]))


#: event type -> its ``_Reader.on_<type>`` handler
_HANDLERS: dict[str, Callable[[_Reader, int, str, Mapping[str, Any]], None]] = {
    name[3:]: fn for name, fn in vars(_Reader).items() if name.startswith("on_")
}


#: The event types whose payload the story reads (every other one only counts and dates).
READS = frozenset(_HANDLERS)


def _outcome(record: Mapping[str, Any]) -> str:
    code = record.get("exit_code")
    if record.get("outcome"):
        return str(record["outcome"])
    if code is None:
        return "ERROR" if record.get("error") else "OBSERVED"
    return "PASS" if code == 0 else "FAIL"


def _host(hints: set[str]) -> str:
    if "transcript" in hints:
        return "claude-code"
    if "mcp" in hints:
        return "mcp"
    return "python"


def verdict_of(
    *,
    tampered: bool,
    capped: bool,
    bypassed: int,
    last_finish: str | None,
    basis: str | None = None,
    evidence: bool = True,
    checks: Sequence[Mapping[str, Any]] | None = None,
) -> tuple[str, list[str]]:
    """The verdict code and its flags, most serious first. ``basis``: what the last allowed
    finish rested on (``verified``, ``unchanged``, ``unchecked``); ``evidence``: whether any
    command ran or claim was stamped; ``checks``: the required checks at the last finish.
    The verdict never says more than the evidence."""
    flags = []
    if bypassed:
        flags.append(f"{bypassed} bypassed call{'s' if bypassed != 1 else ''}")
    not_passing = [str(c.get("check")) for c in checks or () if c.get("state") != "pass"]
    if not_passing:
        flags.append("checks not passing: " + ", ".join(f"`{c}`" for c in not_passing))
    if tampered:
        return "tampered", flags
    if capped:
        return "finished_unverified", flags
    if last_finish == "finished" and bypassed:
        return "bypassed", [f for f in flags if "bypassed" not in f]
    if last_finish is None:
        return "open", flags
    if last_finish == "finished" and basis == "unchanged":
        flags.append("checks ran" if evidence else "no check was run, no claim proven")
        return "finished_unchanged", flags
    if last_finish == "finished" and basis == "unchecked":
        return "finished_unchecked", flags
    return last_finish, flags


def fails_on(verdict: str, categories: Iterable[str]) -> bool:
    """Whether ``verdict`` is in one of the ``--fail-on`` categories (:data:`FAIL_ON`)."""
    return any(verdict in FAIL_ON.get(c, frozenset()) for c in categories)


def summarize(session: str, events: Iterable[EventRow], *, tampered: bool = False) -> SessionStory:
    """Read one session's events (in seq order) into a :class:`SessionStory`."""
    reader = story_reader(session)
    for row in events:
        reader.feed(row)
    return finish_story(reader, tampered=tampered)


def story_reader(session: str, *, keep: int | None = None, ledger: Ledger | None = None) -> _Reader:
    """A reader to :meth:`feed <_Reader.feed>` rows to (in seq order), or to :meth:`take
    <_Reader.take>` them from the audit's own verification pass, so the story costs no second
    read of the journal.

    ``keep``: the timeline and the commands run keep only their last ``keep`` entries, and
    the story says how many it left out (``timeline_omitted``, ``commands_run_omitted``):
    memory flat in the number of events. A stamp that names evidence older than the reader
    remembers has ``ledger``'s journal read again for it (in the caller's snapshot)."""
    earlier = None
    if ledger is not None:
        journal = ledger.journal

        def earlier(before: int) -> Iterator[tuple[str, Mapping[str, Any]]]:
            for row in journal.stream_rows(session):
                if row[2] >= before:
                    return
                if row[3] == "evidence_recorded":
                    yield row[3], loads_object(row[4])

    return _Reader(session, keep, earlier)


def finish_story(reader: _Reader, *, tampered: bool = False) -> SessionStory:
    """The story of the rows ``reader`` was fed."""
    story = reader.story
    story.timeline = [_made(e) for e in reader.entries]
    story.commands_run = [
        {"seq": seq, "command": command, "outcome": outcome}
        for _ref, command, outcome, seq in reader.runs
    ]
    if reader.keep is not None:
        story.timeline_omitted = reader.added - len(story.timeline)
        story.commands_run_omitted = reader.runs_seen - len(story.commands_run)
    story.host = _host(reader.host_hints)
    story.verdict, story.flags = verdict_of(
        tampered=tampered,
        capped=reader.capped,
        bypassed=story.bypassed,
        last_finish=reader.last_finish,
        basis=reader.basis,
        evidence=reader.ran or reader.stamped,
        checks=reader.checks,
    )
    if reader.weakened:
        story.flags.append("weakened checks: " + ", ".join(reader.weakened[:5]))
    return story


def session_story(
    ledger: Ledger, session: str | None = None, *, verify: bool = True
) -> SessionStory:
    """The story of one session of ``ledger``'s home (verified unless ``verify`` is False)."""
    name = session or ledger.session
    tampered = bool(verify_session(ledger, name)) if verify else False
    return summarize(name, ledger.journal.events(name), tampered=tampered)


def overview(ledger: Ledger) -> list[SessionStory]:
    """Every session of the home, newest activity first (not verified: that is per session)."""
    stories = [summarize(s, ledger.journal.events(s)) for s in ledger.journal.known_sessions()]
    stories.sort(key=lambda s: (s.last_activity, s.session), reverse=True)
    return stories
