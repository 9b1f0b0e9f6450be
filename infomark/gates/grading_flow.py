"""The grading surface over one session's journal: declare, check, approve, hold.

:mod:`infomark.gates.grading` knows files (what belongs to the surface, what
changed); this module applies that knowledge to a session. Every function runs
against a :class:`~infomark.ledger.engine.Ledger` and journals what it found
(``grading_surface``, ``grading_changed``, ``grading_restored``,
``grading_approved``); callers that change state hold a transaction.
:func:`hold_edit` is pure: it turns a decision about an edit of a grading file
into the decision the configured ``grading_policy`` asks for.
"""

from __future__ import annotations

from infomark.gates.config import Config
from infomark.gates.decision import Decision, Verdict
from infomark.gates.grading import (
    DEFAULT_TEST_GLOBS,
    change_summary,
    grading_path,
    is_grading_config,
    scan_changes,
    surface,
    surface_content,
    whole_file,
)
from infomark.kernel.decisions import DecisionCode
from infomark.kernel.errors import UserError
from infomark.kernel.records import replace
from infomark.kernel.tools import ToolClass
from infomark.ledger.calls import ToolCall
from infomark.ledger.engine import Ledger

__all__ = [
    "approve_file",
    "approve_held",
    "approve_path",
    "check",
    "declare",
    "edit_target",
    "hold_edit",
]

_FILE_KEYS = ("file_path", "notebook_path", "path")


def declare(ledger: Ledger, config: Config, oracle: str | None = None) -> None:
    """Digest the grading surface of newly declared oracles (inside a transaction).

    ``oracle=""`` digests the project's test files and configuration alone: the
    starting state, recorded before the agent acts.
    """
    state = ledger.state
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
    globs = config.grading_files or DEFAULT_TEST_GLOBS
    files: dict[str, str | None] = {}
    blobs: dict[str, str] = {}
    for o in dict.fromkeys(oracles):
        f, b = surface(ledger.root_dir, o, globs=globs, home=ledger.home_dir, put=ledger.blobs.put)
        files.update(f)
        blobs.update(b)
    if not any(d is not None for d in files.values()):
        return  # no test and no test configuration here: nothing grades the oracle yet
    new = {p: d for p, d in files.items() if p not in state.grading_files}
    if new:
        ledger.emit(
            "grading_surface",
            {"files": new, "blobs": {p: blobs[p] for p in new if p in blobs}},
        )


def check(ledger: Ledger, config: Config, *, seed: bool = False) -> None:
    """Re-digest the grading surface; journal what changed (or came back) since.

    ``seed``: with no surface yet and no evidence recorded, digest the starting state. The
    project is scanned first, outside the write lock: a project with no test and no test
    configuration takes no lock and commits nothing (every PreToolUse asks until one exists).
    """
    state = ledger.refresh()
    if not state.grading_files:
        if (
            seed
            and not state.evidence_count
            and (config.oracle_require or _has_surface(ledger, config))
        ):
            with ledger.transaction():
                if not ledger.state.grading_files:
                    declare(ledger, config, oracle="")
                    for required in config.oracle_require:  # a required check's own script too
                        declare(ledger, config, oracle=required)
        return
    changes = scan_changes(ledger.root_dir, state.grading_files, state.grading_changed)
    if not changes:
        return
    with ledger.transaction():
        for rel, now, content in changes:
            if now == ledger.state.grading_files.get(rel):
                ledger.emit("grading_restored", {"path": rel, "digest": now})
                continue
            blob = ledger.state.grading_blobs.get(rel)
            old = ledger.blobs.get(blob) if blob else None
            summary = change_summary(
                rel, old.decode("utf-8", "replace") if old is not None else None, content
            )
            if config.grading_policy == "allow":
                approve_file(ledger, rel, by="grading_policy", note=summary)
            else:
                ledger.emit("grading_changed", {"path": rel, "digest": now, "summary": summary})


def _has_surface(ledger: Ledger, config: Config) -> bool:
    """Whether the project has a test file or a test configuration now (nothing stored)."""
    globs = config.grading_files or DEFAULT_TEST_GLOBS
    files, _ = surface(ledger.root_dir, "", globs=globs, home=ledger.home_dir)
    return any(d is not None for d in files.values())


def approve_file(ledger: Ledger, rel: str, *, by: str, note: str) -> None:
    """Journal that ``rel``'s current content is the new baseline (inside a transaction)."""
    content = surface_content(ledger.root_dir, rel)
    blob = None
    if content is not None:
        blob = ledger.blobs.put(content.encode("utf-8", "surrogatepass"))
    ledger.emit(
        "grading_approved",
        {"path": rel, "digest": blob, "blob": blob, "by": by, "note": note[:500], "approved": True},
    )
    from infomark.gates import project_baseline  # an approval is rare: off the hook's path

    project_baseline.approve(ledger, rel, blob)  # later sessions grade with it too


def approve_held(ledger: Ledger, rel: str, call: ToolCall) -> bool:
    """The user let the held edit ``call`` of the grading file ``rel`` run: approve what that
    edit writes (inside a transaction). The file as it is now is approved only when it is that
    content (a ``Write``'s content; an ``Edit`` / ``MultiEdit`` applied to the content infomark
    last knew): a file that differs was changed after the user said yes (another process, or
    the agent racing the hook) and stays a changed grading file, which the finish names. An
    edit whose result cannot be known beforehand (a shell command, a section of a shared
    configuration file) is approved as found."""
    want = _written(ledger, rel, call)
    if want is not _UNKNOWN and want != surface_content(ledger.root_dir, rel):
        return False
    approve_file(ledger, rel, by="ask_prompt", note="")
    return True


_UNKNOWN = object()
_UNSEEN = object()  # never equal to a file's content: not approved


def _written(ledger: Ledger, rel: str, call: ToolCall) -> object:
    """The content ``call`` leaves in the test file ``rel`` (``_UNKNOWN``: not predictable;
    ``_UNSEEN``: an edit of text the file did not hold when infomark last saw it)."""
    if not whole_file(rel):
        return _UNKNOWN
    args = call.input
    if call.tool == "Write" and isinstance(args.get("content"), str):
        return args["content"]
    edits = {"Edit": [args], "MultiEdit": args.get("edits")}.get(call.tool)
    blob = ledger.state.grading_blobs.get(rel)
    before = ledger.blobs.get(blob) if blob else None
    if not isinstance(edits, list) or before is None:
        return _UNKNOWN
    text = before.decode("utf-8", "surrogatepass")
    for edit in edits:
        old, new = edit.get("old_string"), edit.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str) or old not in text:
            return _UNSEEN  # the file was not what infomark last knew: more changed than this
        text = text.replace(old, new) if edit.get("replace_all") else text.replace(old, new, 1)
    return text


def approve_path(ledger: Ledger, config: Config, path: str, *, by: str, note: str) -> None:
    """An operator accepts a changed grading file named by ``path`` (a UserError if it is not)."""
    check(ledger, config)
    rel = grading_path(ledger.root_dir, path)
    state = ledger.refresh()
    if rel is None or rel not in state.grading_files:
        known = ", ".join(sorted(state.grading_changed)) or "none is changed"
        raise UserError(f"{path} is not a grading file of this session (changed: {known})")
    with ledger.transaction():
        approve_file(ledger, rel, by=by, note=note)


def edit_target(ledger: Ledger, call: ToolCall, tool_class: ToolClass) -> str | None:
    """The grading file a file-tool write would change (None: not a grading file)."""
    if tool_class not in (ToolClass.MODIFY, ToolClass.DESTRUCTIVE):
        return None
    files = ledger.state.grading_files
    for key in _FILE_KEYS:
        value = call.input.get(key)
        if not isinstance(value, str):
            continue
        rel = grading_path(ledger.root_dir, value)
        if rel is not None and rel in files and (files[rel] is not None or is_grading_config(rel)):
            return rel
    return None


def hold_edit(decision: Decision, rel: str, policy: str) -> Decision:
    """The decision for an edit of grading file ``rel`` under ``grading_policy``."""
    if policy == "allow" or decision.verdict is Verdict.DENY or decision.dryrun:
        return decision
    what = f"{rel} is a grading file (a test or its configuration) of a declared oracle"
    if policy == "refuse":
        return replace(
            decision,
            verdict=Verdict.DENY,
            code=DecisionCode.GRADING_EDIT.value,
            reason=f'{what}: the agent may not change it (grading_policy = "refuse"); '
            "add a new test file instead, or ask the user",
        )
    return replace(
        decision,
        verdict=Verdict.ASK,
        code=DecisionCode.GRADING_EDIT.value,
        reason=f'{what}: held for the user\'s approval (grading_policy = "hold"): the user '
        "answers the host's prompt, and the new content is then approved; or add a new test "
        "file instead",
    )
