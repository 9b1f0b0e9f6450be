"""Coverage around one tool call: scratch, taint, revert, and the fingerprint before/after.

The facade calls :func:`cover` before deciding (what the call's own files make of it),
:func:`after_decision` once the decision is journaled (records the files an allowed write
targets; marks the tree before an execute-class call), and :func:`after_record` once the
result is recorded (compares the tree with the mark; a change is an ``unannounced_mutation``
event, and a violation while the premises are ungrounded). Gates layer: it reads the ledger
and emits events, it never decides.
"""

from __future__ import annotations

import os

from infomark.gates.authorize import grounding_hint, revert_hint
from infomark.gates.config import Config
from infomark.gates.decision import Decision
from infomark.kernel.digest import sha256
from infomark.kernel.paths import relative_under
from infomark.kernel.records import dataclass, replace
from infomark.kernel.tools import Classification, EvidenceClass, ToolClass, lookup_tool
from infomark.ledger.calls import ToolCall
from infomark.ledger.engine import Ledger
from infomark.ledger.home import ensure_private_dir
from infomark.ledger.state import SessionState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Cover",
    "after_decision",
    "after_record",
    "classification_key",
    "cover",
    "decided_class",
    "plan_grounded",
    "refresh",
]

_WATCHED = frozenset({ToolClass.EXECUTE, ToolClass.DELEGATION, ToolClass.UNKNOWN})


@dataclass(frozen=True, slots=True)
class Cover:
    """What the call's own files make of it."""

    classification: Classification  # after taint
    scratch: str | None = None  # the scratch reason, when the call only touches own files
    scratch_paths: tuple[str, ...] = ()
    written: tuple[str, ...] = ()  # path keys an allowed write targets
    revert: bool = False
    watched: bool = False  # fingerprint the tree around it


def plan_grounded(state: SessionState) -> bool:
    """A ledger with premises, every one in G: the only state in which mutation is lawful."""
    return state.has_ledger and bool(state.premises) and state.premises_grounded()


def _watch_dir(ledger: Ledger) -> str:
    d = os.path.join(ledger.home_dir, "watch")
    ensure_private_dir(d)
    return d


def _tracked(ledger: Ledger) -> frozenset[str] | None:
    from infomark.gates.fingerprint import tracked_paths

    listed = tracked_paths(ledger.root_dir, _watch_dir(ledger))
    if listed is None:
        return None
    top, paths = listed
    root = os.path.realpath(ledger.root_dir)
    if os.path.realpath(top) == root:
        return frozenset(paths)
    out = set()
    for p in paths:
        rel = relative_under(os.path.realpath(os.path.join(top, p)), root)
        if rel is not None:
            out.add(rel)
    return frozenset(out)


def _command(call: ToolCall) -> str | None:
    command = call.input.get("command")
    if isinstance(command, list) and all(isinstance(a, str) for a in command):
        import shlex

        return shlex.join(command)
    return command if isinstance(command, str) else None


def _watchable(ledger: Ledger) -> bool:
    from infomark.gates.fingerprint import WALK_LIMIT, tracked_paths

    if tracked_paths(ledger.root_dir, _watch_dir(ledger)) is not None:
        return True
    seen = 0
    for _dirpath, dirs, files in os.walk(ledger.root_dir):
        seen += len(dirs) + len(files)
        if seen > WALK_LIMIT:
            return False
    return True


def _shell_cover(
    ledger: Ledger, config: Config, c: Classification, command: str, *, deciding: bool
) -> Cover | None:
    """A revert, or a run of the agent's own file (taint), for a shell command; else None."""
    from infomark.gates.taint import is_revert, runs_in_background, tainted_by

    state = ledger.state
    files = state.violation_files
    if deciding and files and is_revert(command, files, ledger.root_dir):
        return Cover(c, revert=True)
    if c.tool_class is not ToolClass.EXECUTE or not state.written_paths:
        return None
    own = tainted_by(command, state.written_paths, ledger.root_dir)
    if own is None:
        return None
    c = replace(
        c,
        tool_class=ToolClass.MODIFY,
        reasons=(*c.reasons, f"runs {own}, which the agent wrote in this session (taint)"),
    )
    if (
        deciding
        and config.scratch
        and not plan_grounded(state)
        and not runs_in_background(command)
        and _watchable(ledger)
    ):
        return Cover(
            c,
            scratch=f"scratch run: runs the agent's own {own}; the tree is watched",
            watched=True,
        )
    return Cover(c, watched=True)


def cover(
    ledger: Ledger,
    config: Config,
    call: ToolCall,
    c: Classification,
    *,
    declared: bool,
    deciding: bool = True,
) -> Cover:
    """Scratch, taint and revert for one call (``deciding=False``: only class and watch)."""
    state = ledger.state
    spec = lookup_tool(call.tool)
    command = _command(call) if spec is not None and spec.shell else None
    watched = c.tool_class in _WATCHED or (
        spec is not None and spec.evidence_class is EvidenceClass.EXECUTION
    )
    if declared:
        return Cover(c, watched=watched)
    if command is not None:
        shell = _shell_cover(ledger, config, c, command, deciding=deciding)
        if shell is not None:
            return shell
    if c.tool_class not in (ToolClass.MODIFY, ToolClass.DESTRUCTIVE):
        return Cover(c, watched=watched)
    # scratch (and fingerprint, below) load only for a call that needs them: a read or a
    # plain run never does (~6 M instructions of a Read's hook call)
    from infomark.gates.scratch import norm_key, scratch_verdict, target_paths

    paths = target_paths(call.tool, call.input, c)
    written = tuple(norm_key(p, ledger.root_dir) for p in paths) if paths else ()
    if not deciding or not config.scratch or plan_grounded(state):
        return Cover(c, written=written, watched=watched)
    verdict = scratch_verdict(
        call.tool,
        call.input,
        c,
        root=ledger.root_dir,
        home=ledger.home_dir,
        created_before=state.scratch_paths,
        tracked=_tracked(ledger),
        in_project=config.scratch_in_project,
        protected=config.scratch_protected,
    )
    if verdict is None:
        return Cover(c, written=written, watched=watched)
    return Cover(
        c,
        scratch=verdict.reason,
        scratch_paths=verdict.paths,
        written=written,
        watched=watched,
    )


def _key(ledger: Ledger, call: ToolCall) -> str:
    from infomark.ledger.canonical import canonical_json

    ident = call.tool_call_id
    if not ident:
        try:
            ident = sha256(canonical_json(dict(call.input))).hexdigest()
        except (TypeError, ValueError):
            ident = repr(call.input)
    return f"{ledger.session}\x00{call.tool}\x00{ident}"


def classification_key(config: Config, call: ToolCall) -> str | None:
    """A digest of what a shell call's class depends on when its classification read no file
    (:mod:`infomark.gates.shell_fs`): infomark's version, the tool, its input, the session
    cwd, the configuration's tool classes, the MCP annotations and ``HOME``. None for a
    call that is not a shell tool's (or whose input has no canonical form)."""
    spec = lookup_tool(call.tool)
    if spec is None or not spec.shell:
        return None
    from infomark._version import __version__
    from infomark.gates.protect import session_cwd
    from infomark.ledger.canonical import canonical_json

    what = {
        "version": __version__,
        "tool": call.tool,
        "input": call.input,
        "cwd": session_cwd(call.cwd),
        "tools": dict(config.tools or {}),
        "annotations": call.annotations,
        "home": os.environ.get("HOME"),
    }
    try:
        return sha256(canonical_json(what)).hexdigest()
    except (TypeError, ValueError):
        return None


def decided_class(ledger: Ledger, config: Config, call: ToolCall) -> ToolClass | None:
    """The class the decision of ``call`` found, when it may stand for classifying the call
    again as its result is recorded: the decision's classification read no file, and the
    digest of everything else it depends on (:func:`classification_key`) is the same now.
    Taint is not part of it: :func:`cover` applies it to this class afresh. Else None."""
    key = classification_key(config, call)
    if key is None:
        return None
    from infomark.gates.fingerprint import marker_classified

    found = marker_classified(_watch_dir(ledger), _key(ledger, call))
    if found is None or not ledger.key.verify(_sealed(key, found[1]), found[0]):
        return None  # none kept, another call's, or not written with this home's key
    try:
        return ToolClass(found[1])
    except ValueError:
        return None


def _sealed(key: str, cls: str) -> bytes:
    """What the marker's MAC covers: the digest of what the class depends on, and the class.
    The marker sits in the home, which a sandboxed agent cannot reach; an agent whose
    commands are not sandboxed runs as the same user, so a class it wrote there (a mutating
    command kept as a read) must not be taken: only one this home's key signed is."""
    return b"infomark-kept-class\x00" + key.encode() + b"\x00" + cls.encode()


def after_decision(
    ledger: Ledger,
    call: ToolCall,
    cov: Cover,
    decision: Decision,
    *,
    classified: tuple[str, str] | None = None,
) -> None:
    """Journal the files an allowed write targets; mark the tree before a watched call (with
    ``classified``: the digest and class :func:`decided_class` may reuse)."""
    if not decision.allowed:
        return
    if cov.written:
        from infomark.gates.scratch import new_targets

        created = new_targets(cov.written, ledger.root_dir, _tracked(ledger))
        ledger.emit(
            "files_written",
            {
                "tool": call.tool,
                "decision_id": decision.decision_id,
                "paths": list(cov.written),
                "created": created,
                "scratch": cov.scratch is not None,
            },
        )
    if cov.watched:
        from infomark.gates.fingerprint import mark

        if classified is not None:  # the class kept for the result, signed (decided_class)
            classified = (ledger.key.mac(_sealed(*classified)), classified[1])
        mark(
            _watch_dir(ledger),
            _key(ledger, call),
            seq=ledger.state.seq,
            root=ledger.root_dir,
            classified=classified,
        )


def _announced_since(ledger: Ledger, seq: int) -> set[str]:
    out: set[str] = set()
    for ev in ledger.journal.events(ledger.session, after=seq):
        if ev.type == "files_written":
            paths = ev.payload.get("paths")
            if isinstance(paths, list):
                out.update(p for p in paths if isinstance(p, str))
    return out


def after_record(ledger: Ledger, config: Config, call: ToolCall, cov: Cover) -> str:
    """Compare the tree with the mark; journal a change; return what the model must be told."""
    if ledger.state.violation_files:
        with ledger.transaction():
            _maybe_clear(ledger)
    if not cov.watched:
        return ""
    from infomark.gates.fingerprint import changes_since, clear_mark, marker_seq

    wd = _watch_dir(ledger)
    key = _key(ledger, call)
    since = marker_seq(wd, key)
    if since is None:
        return ""
    change = changes_since(wd, key, ledger.root_dir, skip=(ledger.home_dir,))
    clear_mark(wd, key)
    if change is None:
        return ""
    announced = _announced_since(ledger, since)
    home = os.path.realpath(ledger.home_dir)
    files = [
        f
        for f in change.files
        if f not in announced and not _inside(os.path.join(ledger.root_dir, f), home)
    ]
    if not files and change.complete:
        return ""
    state = ledger.state
    violation = not plan_grounded(state) and config.profile.asks_protocol
    payload: dict[str, Any] = {
        "tool": call.tool,
        "tool_call_id": call.tool_call_id,
        "files": files,
        "deleted": [f for f in change.deleted if f in files],
        "violation": violation,
        "complete": change.complete,
        "method": change.method,
        "elapsed_ms": round(change.elapsed_ms, 2),
        "stale": list(_stale(state)),
    }
    with ledger.transaction():
        ledger.emit("unannounced_mutation" if files else "fingerprint_incomplete", payload)
    if not files:
        return ""
    if not config.profile.enforcing:
        return ""
    shown = ", ".join(files[:20]) + (" …" if len(files) > 20 else "")
    if violation:
        ungrounded = state.ungrounded_premises()
        why = grounding_hint(ungrounded, state) if ungrounded else "no premises_for_plan"
        return (
            f"[infomark] unannounced_mutation: this call changed tracked files: {shown}. "
            "Your premises are not grounded, so this is a violation: every further mutation "
            f"is denied until the tree is back or the premises are grounded. To undo it, "
            f"{revert_hint(files)}; or ground the premises ({why})."
        )
    return (
        f"[infomark] unannounced_mutation: this call changed tracked files: {shown}. It counts "
        "as the last modification: stamps on older evidence are stale; re-run the oracles."
        if config.profile.asks_protocol or state.has_ledger
        else f"[infomark] this call changed tracked files: {shown}. It counts as a change: "
        "run the project's checks again before you finish."
    )


def _inside(path: str, base: str) -> bool:
    return relative_under(os.path.realpath(path), base) is not None


def _stale(state: SessionState) -> list[str]:
    return [c.id for c in state.claims.values() if c.stamp is not None and c.grounded]


def _maybe_clear(ledger: Ledger) -> None:
    """Lift a violation once the premises are grounded or the files match git's index."""
    state = ledger.state
    if plan_grounded(state):
        ledger.emit("violation_cleared", {"cause": "grounded", "files": None})
        return
    from infomark.gates.fingerprint import still_modified

    left = still_modified(ledger.root_dir, list(state.violation_files))
    if left is None:
        return
    restored = [f for f in state.violation_files if f not in left]
    if restored:
        ledger.emit("violation_cleared", {"cause": "restored", "files": restored})


def refresh(ledger: Ledger) -> None:
    """Before a decision: lift a violation that no longer stands."""
    if ledger.state.violation_files:
        _maybe_clear(ledger)
