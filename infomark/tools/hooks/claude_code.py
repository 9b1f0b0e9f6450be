"""Claude Code command/HTTP hook: one JSON object in, at most one JSON object out.

``handle(payload, home=…, root=…) -> HookAnswer`` is shared by the command hook
(``infomark hook claude-code``) and the HTTP service's ``/v1/hooks/claude-code``.
Allow is *no output* (an explicit "allow" would skip the user's own permission
prompt). The hook never crashes and never fails open in an enforcing profile: an
unreadable payload, a broken key, config or store, or an internal error denies
mutating calls and refuses Stop (:mod:`infomark.tools.hooks.failsafe`).

Each PostToolUse evidence tag carries the journal head (``head=SEQ:HASH8``); the host
writes it into its transcript, and every PreToolUse checks the heads witnessed there
against the journal, so a journal rolled back or rewritten behind the hook's back fails
closed.
"""

from __future__ import annotations

import os

from infomark.gates.config import Config
from infomark.kernel import jsonc
from infomark.kernel.contexts import suppress
from infomark.kernel.errors import ConfigError, StoreBusyError
from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.profiles import Profile
from infomark.kernel.records import replace
from infomark.kernel.session_id import is_session_id
from infomark.kernel.tools import ToolClass, lookup_tool
from infomark.tools.hooks.answer import (
    MAX_TEXT,
    HookAnswer,
    block,
    context,
    deny,
    verdict,
    with_text,
)
from infomark.tools.hooks.failsafe import (
    TailMemo,
    WitnessMismatchError,
    check_key,
    check_tail,
    explain,
    failure_answer,
    released,
    unattended_host,
    unreadable_answer,
)
from infomark.tools.hooks.where import hook_paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from _typeshed import StrPath

    from infomark.gatekeeper import Gatekeeper
    from infomark.kernel.spooled import LargeText
    from infomark.ledger.calls import ToolCall, ToolOutcome
    from infomark.tools.hooks.transcript import TranscriptChunk

    HostStep = Callable[[Gatekeeper, str, dict[str, Any]], tuple[str, dict[str, Any], str]]

__all__ = ["LAST_PROFILE", "HookAnswer", "handle", "tool_call_from"]

LAST_PROFILE: list[Profile] = [Profile.LEDGER]  # the profile being judged (read by the watchdog)
_EXIT_CODE = lazy_compile(r"\s*Exit code (-?\d+)")
_BACKGROUND_READERS = ("bashoutput", "taskoutput")  # read a run_in_background shell's result


_INF = float("inf")  # math.isfinite without importing math


def tool_call_from(payload: dict[str, Any]) -> ToolCall:
    """Map a Claude Code tool payload to a ToolCall (``mcp__server__tool`` keeps its name)."""
    from infomark.ledger.calls import ToolCall

    tool_input = payload.get("tool_input")
    use_id = payload.get("tool_use_id")
    cwd = payload.get("cwd")
    return ToolCall(
        tool=str(payload.get("tool_name") or "unknown"),
        input=_finite(tool_input) if isinstance(tool_input, dict) else {},
        tool_call_id=use_id if isinstance(use_id, str) else None,
        cwd=cwd if isinstance(cwd, str) and cwd else None,
    )


def _finite(value: Any) -> Any:
    """``Infinity`` / ``NaN`` (which json.loads accepts) as strings: evidence is strict JSON."""
    if isinstance(value, float) and (value != value or value in (_INF, -_INF)):  # not finite
        return repr(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _outcome_from(payload: dict[str, Any], failed: bool) -> ToolOutcome:
    from infomark.ledger.calls import ToolOutcome

    tool = str(payload.get("tool_name") or "").lower()
    response = payload.get("tool_response")
    duration = payload.get("duration_ms")
    duration_ms = float(duration) if isinstance(duration, int | float) else None
    spec = lookup_tool(tool)
    is_shell = spec is not None and spec.shell
    if failed:
        error = str(payload.get("error") or "tool failed")
        m = _EXIT_CODE.match(error)
        if is_shell and m and not payload.get("is_interrupt"):
            return ToolOutcome(output=error, exit_code=int(m.group(1)), duration_ms=duration_ms)
        return ToolOutcome(output=error, error=error, is_error=True, duration_ms=duration_ms)
    if isinstance(response, dict) and tool in _BACKGROUND_READERS:
        code = response.get("exitCode", response.get("exit_code"))
        if isinstance(code, int) and not isinstance(code, bool):  # the background run ended
            out = _joined(response.get("stdout"), response.get("stderr"))
            return ToolOutcome(output=out, exit_code=code, duration_ms=duration_ms)
    if isinstance(response, dict):
        if is_shell:
            out = _joined(response.get("stdout"), response.get("stderr"))
            if response.get("interrupted"):
                return ToolOutcome(
                    output=out, error="interrupted", is_error=True, duration_ms=duration_ms
                )
            return ToolOutcome(output=out, exit_code=0, duration_ms=duration_ms)
        from infomark.kernel.spooled import dumps_sorted  # a streamed payload's strings too

        return ToolOutcome(output=dumps_sorted(response), duration_ms=duration_ms)
    return ToolOutcome(
        output=_text_of(response),
        exit_code=0 if is_shell else None,
        duration_ms=duration_ms,
    )


def _joined(stdout: object, stderr: object) -> str | LargeText:
    """``str(stdout or "") + str(stderr or "")``; a :class:`LargeText` when either is a
    string spooled from a streamed payload (``tools/hooks/stdin_json.py``)."""
    from infomark.kernel.spooled import LargeText, Spooled

    parts = [v if isinstance(v, Spooled) else str(v or "") for v in (stdout, stderr)]
    if not any(isinstance(p, Spooled) for p in parts):
        return "".join(str(p) for p in parts)
    return LargeText(tuple(p for p in parts if p))


def _text_of(response: object) -> str | LargeText:
    """``"" if response is None else str(response)``, for a response that is not a dict."""
    if response is None:
        return ""
    from infomark.kernel.spooled import LargeText, Spooled, has_spooled, materialized

    if isinstance(response, Spooled):
        return LargeText((response,))
    if has_spooled(response):  # str() of a list: its repr, from the whole strings
        return str(materialized(response))
    return str(response)


def _background_id(payload: dict[str, Any]) -> str | None:
    """The shell id Claude Code gave a ``run_in_background`` command, when it did."""
    from infomark.kernel.spooled import Spooled

    response = payload.get("tool_response")
    if not isinstance(response, dict):
        return None
    for key in ("backgroundTaskId", "shellId", "bash_id", "task_id"):
        value = response.get(key)
        if isinstance(value, Spooled):  # a streamed payload's long string (never, in practice)
            value = value.text()
        if isinstance(value, str) and value:
            return value
    return None


def _read_transcript(
    gk: Gatekeeper, payload: dict[str, Any], wait: float | None
) -> tuple[TranscriptChunk, int] | None:
    """What the transcript holds after the session's cursor, and that cursor (it may wait
    for the call's line: never inside a write transaction); None without a transcript."""
    from infomark.tools.hooks.transcript import WAIT_SECONDS, read_new_text

    path = payload.get("transcript_path")
    if not isinstance(path, str):
        return None
    offset = gk.state.cursors.get("transcript", 0)
    use_id = payload.get("tool_use_id")
    read = read_new_text
    if payload.get("transcript_format"):  # another host's transcript (tools/hosts)
        from infomark.tools.hooks.host_transcripts import READERS

        read = READERS.get(str(payload["transcript_format"]), read_new_text)
    use = use_id if isinstance(use_id, str) else None  # other hosts' readers never wait
    chunk = read(path, offset, tool_use_id=use, wait=WAIT_SECONDS if wait is None else wait)
    return chunk, offset


def _apply_transcript(gk: Gatekeeper, chunk: TranscriptChunk, offset: int) -> None:
    """Check the heads the host witnessed, then ingest the text after ``offset``."""
    _check_witness(gk, chunk.heads)
    if chunk.offset == offset:
        return
    if not chunk.texts:
        gk.store_cursor("transcript", chunk.offset)
    for i, text in enumerate(chunk.texts):
        last = i == len(chunk.texts) - 1
        cursor = ("transcript", chunk.offset) if last else None
        gk.ingest(text, source="transcript", dedupe=True, cursor=cursor)


def _check_witness(gk: Gatekeeper, heads: tuple[tuple[int, str], ...]) -> None:
    """Every head the host's transcript witnessed must still be in the journal, unchanged."""
    journal = gk.store.journal
    for seq, h8 in heads:
        row = next(iter(journal.events(gk.session, after=seq - 1)), None)
        if row is None or row.seq != seq or not row.hash.startswith(h8):
            now, _ = journal.head(gk.session)
            found = f"ends at seq {now}" if row is None or row.seq != seq else "has another row"
            raise WitnessMismatchError(
                f"the transcript witnessed journal head {seq}:{h8} of session {gk.session}, "
                f"but the journal {found}: "
                "the ledger was rolled back, replaced or rewritten. Run `infomark audit --verify` "
                "and restore the ledger home from the latest copy; until then mutations are denied"
            )


def _head_tag(gk: Gatekeeper, tag: str) -> str:
    """The evidence tag with the journal head the host will witness in its transcript."""
    seq, hash_ = gk.store.journal.head(gk.session)
    if not tag.endswith("]") or not seq:
        return tag
    return f"{tag[:-1]} head={seq}:{hash_[:8]}]"


def _start_text(gk: Gatekeeper) -> str:
    """The protocol, or in the verify profile (which asks none) what the agent needs to know:
    work as usual, and which checks its finish will be judged on."""
    from infomark.kernel.protocol import VERIFY_BRIEF_HEAD, render_protocol

    if gk.config.profile.asks_protocol:
        return render_protocol()
    checks = ", ".join(f"`{c.check}`" for c in gk.check_status()) or "(none found)"
    how = (
        "infomark runs them itself, in a clean copy, when you finish"
        if gk.config.attest_required
        else "run them after your last change, before you finish"
    )
    return (
        f"{VERIFY_BRIEF_HEAD}: work as you usually do; no special format is needed. "
        "Destructive commands are held for the operator. A finish after you change files "
        f"needs a passing run of the project's checks: {checks}; {how}. Fix the code, not the "
        "tests."
    )


def _summary(gk: Gatekeeper) -> str:
    state = gk.state
    if not state.has_ledger:
        return ""
    ungrounded = state.ungrounded_premises()
    where = "grounded" if not ungrounded else "outside G: " + ", ".join(i for i, _ in ungrounded)
    return (
        f"[infomark] resuming session {gk.session}: {len(state.claims)} claims, "
        f"premises {where}, gate {state.gate}."
    )


# cursor: the unsandboxed span the first decision named (sandboxed.WARNED_CURSOR, not imported
# here: that module loads only when the status is judged)
_SANDBOX_WARNED = "sandbox_warned"


def _sandbox_check(gk: Gatekeeper, payload: dict[str, Any], *, start: bool) -> str:
    """Journal whether the agent's commands run sandboxed (at SessionStart, and at the first
    decision of a session that had none); the loud warning when they do not: every
    SessionStart, and the first decision after the status turned to "no"."""
    state = gk.state
    if start or not state.agent_sandbox:
        from infomark.tools.hooks.sandboxed import agent_sandbox

        host = str(payload.get("infomark_host") or "claude-code")
        found = agent_sandbox(host, gk._ledger.root_dir, gk._ledger.home_dir)
        gk.record_sandbox(found.sandboxed, host=host, detail=found.detail, fix=found.fix)
        state = gk.state
    if state.agent_sandbox.get("sandboxed") is not False:
        return ""
    since = state.unsandboxed[-1][0] if state.unsandboxed else 0
    if not start:
        if state.cursors.get(_SANDBOX_WARNED) == since:
            return ""
        gk.store_cursor(_SANDBOX_WARNED, since)
    from infomark.tools.hooks.sandboxed import AgentSandbox, warning

    box = state.agent_sandbox
    status = AgentSandbox(False, str(box.get("host")), str(box.get("detail")), str(box.get("fix")))
    return warning(status, enforcing=gk.config.profile.enforcing)


_PENDING = "compaction_pending"  # cursor: 0 idle, 1 reported (PreCompact), 2 re-injected


def _compaction(gk: Gatekeeper, event: str) -> None:
    """Report one compaction once, whichever of its hook events arrive (docs/integrations.md).

    Claude Code 2.1 sends PreCompact, then SessionStart(compact), then PostCompact. PreCompact
    always reports (the ledger is carried over before the host summarises); SessionStart
    (compact) reports unless PreCompact just did (an older host sends only SessionStart);
    PostCompact reports only when neither did, and closes the compaction.
    """
    state = gk.state.cursors.get(_PENDING, 0)
    report = {"PreCompact": True, "SessionStart": state != 1, "PostCompact": state == 0}
    if report[event]:
        gk.host_report(compacted=True)
    after = {"PreCompact": 1, "SessionStart": 2, "PostCompact": 0}[event]
    if after != state or event == "PreCompact":
        gk.store_cursor(_PENDING, after)


def _decide(gk: Gatekeeper, payload: dict[str, Any], warning: str) -> HookAnswer:
    """A PreToolUse's decision; ``warning`` (the session's first decision while the agent's
    commands are unsandboxed) joins a denial's reason, or goes to the user on an allow."""
    decision = gk.authorize(tool_call_from(payload))
    if decision.allowed:
        if warning:  # allow stays silent to the model: the user's permission flow continues
            return HookAnswer({"systemMessage": warning[:MAX_TEXT]})
        return HookAnswer()  # allow = no output: the user's own permission flow continues
    reason = f"[infomark {decision.code}] {decision.reason}"
    if decision.instructions:  # the pack this denial fired reaches the model with it
        reason += "\n\n" + decision.instructions
    if warning:
        reason += "\n\n" + warning
    return verdict(decision.verdict.value, reason)


def _on_compaction(gk: Gatekeeper, event: str, payload: dict[str, Any]) -> HookAnswer:
    """PreCompact / PostCompact: the compaction is reported; the model sees nothing here
    (SessionStart(compact) re-injects)."""
    _compaction(gk, event)
    return HookAnswer()


def _on_session_start(gk: Gatekeeper, event: str, payload: dict[str, Any]) -> HookAnswer:
    """SessionStart: the protocol (or the verify brief), what a compaction carried over, the
    resumed ledger's summary, and the sandbox warning first. The baseline is recorded here,
    before the agent can act."""
    gk.record_baseline()
    text = _start_text(gk)
    if payload.get("source") == "compact":
        _compaction(gk, event)
        carried = gk.compaction_context()  # ids, ranks and live refs, verbatim
        if carried:
            text += "\n\n" + carried
    summary = _summary(gk)
    if summary:
        view = gk.context_view()
        text += "\n\n" + summary + ("\n" + view if view else "")
    warning = _sandbox_check(gk, payload, start=True)
    if warning:
        text = warning + "\n\n" + text
    return context("SessionStart", text)


def _on_prompt(gk: Gatekeeper, event: str, payload: dict[str, Any]) -> HookAnswer:
    """UserPromptSubmit: a prompt opening with the approval phrase approves; the prompt's
    context goes to the model."""
    prompt = str(payload.get("prompt") or "")
    import re

    phrase = re.escape(gk.config.approval_phrase.strip())
    if phrase and re.match(rf"\s*{phrase}\b", prompt, re.IGNORECASE):
        gk.approve(by="user", note=prompt[:200])
    return context("UserPromptSubmit", gk.on_prompt(prompt))


def _on_pre_tool_use(
    gk: Gatekeeper, event: str, payload: dict[str, Any], transcript_wait: float | None = None
) -> HookAnswer:
    """PreToolUse: ingest the transcript (``transcript_wait``: see :func:`handle`), then
    `infomark check` runs here, every other call is decided."""
    from infomark.tools.hooks.check_call import check_target, run_check

    target = check_target(str(payload["tool_name"]), payload["tool_input"])
    with gk.store.steady():  # one view of the session for the decision (one catch-up, not four)
        read = _read_transcript(gk, payload, transcript_wait)  # may wait: outside the lock
        if target is None and _one_commit(gk, read):
            # New prose and the decision: one transaction, relaxed unless the decision needs
            # the disk (an allow that may change something asks for it when it is journaled,
            # and a deny's loss fails closed: docs/reliability.md). A block (a ledger, a
            # stamp) is parsed outside the lock instead, by its own durable ingest.
            with gk.store.transaction(durable=False):
                _take_in(gk, payload, read)
                return _decide(gk, payload, _sandbox_check(gk, payload, start=False))
        _take_in(gk, payload, read)
        if target is None:
            return _decide(gk, payload, _sandbox_check(gk, payload, start=False))
    # `infomark check C1`: run by infomark, not by the shell (following the journal again:
    # the run's evidence may come from another process)
    return deny(run_check(gk, target))


def _one_commit(gk: Gatekeeper, read: tuple[TranscriptChunk, int] | None) -> bool:
    """Whether the transcript's new text and the decision commit together: there is new
    text, none of it may hold a block, and the call takes no baseline (a copy of the
    project, not to be made under the write lock)."""
    if read is None or read[0].offset == read[1] or gk.baseline_pending:
        return False
    from infomark.ledger.sniff import may_contain_blocks

    return not any(may_contain_blocks(text) for text in read[0].texts)


def _take_in(
    gk: Gatekeeper, payload: dict[str, Any], read: tuple[TranscriptChunk, int] | None
) -> None:
    """Before a PreToolUse is judged: ingest the transcript read, note the host's facts."""
    if read is not None:
        _apply_transcript(gk, *read)
    gk.unattended = unattended_host(payload)
    transcript = payload.get("transcript_path")
    gk.host_files = (transcript,) if isinstance(transcript, str) and transcript else ()


def _on_post_tool_use(gk: Gatekeeper, event: str, payload: dict[str, Any]) -> HookAnswer:
    """PostToolUse / PostToolUseFailure: the result is recorded as evidence; its tag (with the
    journal head) goes to the model."""
    from infomark.kernel.errors import RecordRefused

    call = tool_call_from(payload)
    outcome = _outcome_from(payload, failed=event == "PostToolUseFailure")
    cwd = payload.get("cwd")
    with gk.store.steady():  # one view of the session for the record and what follows it
        try:  # paired with its PreToolUse by tool_use_id
            evidence = gk.record(
                call,
                outcome,
                cwd=cwd if isinstance(cwd, str) and cwd else None,
                background_id=_background_id(payload),
            )
        except RecordRefused as exc:  # journaled by record(); no evidence exists for it
            return context(event, f"[infomark: no evidence for this result ({exc.code}): {exc}]")
        extra = gk.after_tool_text(call, outcome, evidence)
        return context(event, _head_tag(gk, evidence.tag) + ("\n" + extra if extra else ""))


def _on_stop(gk: Gatekeeper, event: str, payload: dict[str, Any]) -> HookAnswer:
    """Stop / SubagentStop: the finish is judged; a refusal blocks it, a forced allow tells
    the user it is not verified."""
    transcript = payload.get("transcript_path")  # out of an attested run's sight too
    gk.host_files = (transcript,) if isinstance(transcript, str) and transcript else ()
    final = payload.get("last_assistant_message")
    result = gk.can_finish(final if isinstance(final, str) else "")
    if result.allow and result.cap_reached:  # forced: tell the user, it is not verified
        return HookAnswer({"systemMessage": ("infomark: " + result.reason)[:MAX_TEXT]})
    if result.allow:
        return HookAnswer()
    return block(f"[infomark {result.code}] {result.reason}")


#: hook event → its handler; an event not named here gets no opinion (no output)
_EVENTS: dict[str, Callable[[Gatekeeper, str, dict[str, Any]], HookAnswer]] = {
    "PreCompact": _on_compaction,
    "PostCompact": _on_compaction,
    "SessionStart": _on_session_start,
    "UserPromptSubmit": _on_prompt,
    "PreToolUse": _on_pre_tool_use,
    "PostToolUse": _on_post_tool_use,
    "PostToolUseFailure": _on_post_tool_use,
    "Stop": _on_stop,
    "SubagentStop": _on_stop,
}


def _on_event(
    gk: Gatekeeper, event: str, payload: dict[str, Any], transcript_wait: float | None = None
) -> HookAnswer:
    """Answer ``event`` by its handler in :data:`_EVENTS` (``transcript_wait``: see
    :func:`handle`)."""
    if payload.get("synthesize_call_id"):  # a host without tool call ids (tools/hosts)
        from infomark.tools.hooks.call_ids import with_call_id

        payload = with_call_id(gk, event, payload, tool_call_from)
    handler = _EVENTS.get(event)
    if handler is _on_pre_tool_use:
        return _on_pre_tool_use(gk, event, payload, transcript_wait)
    return HookAnswer() if handler is None else handler(gk, event, payload)


def _config_broken(
    gk: Gatekeeper,
    event: str,
    payload: dict[str, Any],
    exc: Exception,
    transcript_wait: float | None = None,
) -> HookAnswer:
    with gk.store.transaction():
        gk.store.emit("config_error", {"event": event, "error": str(exc)[:2000]})
    if event == "PreToolUse":
        tool_class, _, _ = gk.classify(tool_call_from(payload))
        if ToolClass(tool_class).mutates:
            return deny(
                "infomark's configuration is invalid, so mutating tools are denied until it is "
                f"fixed (ask the user to fix it):\n{exc}"
            )
    answer = _on_event(gk, event, payload, transcript_wait)
    return HookAnswer(answer.stdout, answer.exit_code, f"infomark: invalid configuration: {exc}")


def _profile(root: StrPath, home: StrPath) -> Profile:
    """The configured profile; an enforcing one when the config cannot be read."""
    try:
        from infomark.gates.config import load_config

        return load_config(root, home).profile
    except Exception:  # a broken config must not switch the gatekeeper off
        return Profile.LEDGER


_where = hook_paths  # the forwarding hook shares it (tools/hooks/where.py)


def _malformed(payload: dict[str, Any]) -> str | None:
    event = payload["hook_event_name"]
    session = payload.get("session_id")
    if session is not None and not isinstance(session, str):
        return "session_id must be a string"
    if isinstance(session, str) and session and not is_session_id(session):
        return f"session_id {session[:80]!r} is not a valid session id"
    for key in ("tool_input", "tool_response"):
        try:  # a string spooled from a streamed payload stands in as one
            jsonc.dumps(payload.get(key), allow_nan=False, default=_spooled_as_str)
        except (ValueError, TypeError, RecursionError):
            return f"{key} holds values that are not JSON (NaN, Infinity, or nested too deep)"
    if event == "PreToolUse":
        if not isinstance(payload.get("tool_name"), str) or not payload["tool_name"]:
            return "tool_name must be a non-empty string"
        if not isinstance(payload.get("tool_input"), dict):
            return "tool_input must be an object"
    return None


def _spooled_as_str(value: object) -> str:
    from infomark.kernel.spooled import Spooled

    if isinstance(value, Spooled):
        return ""
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _quick_verify(gk: Gatekeeper, home: StrPath) -> None:
    """At a session's start: the journal's quick integrity check (docs/reliability.md); a
    failure marks the home, so every hook after this fails closed too."""
    from infomark.tools.integrity import (
        PRAGMA_MAX_BYTES,
        IntegrityFailedError,
        quick_verify,
        recovery,
        write_mark,
    )

    try:
        size = os.path.getsize(os.path.join(home, "ledger.db"))
    except OSError:
        size = 0
    problems = quick_verify(gk.store.journal, pages=size <= PRAGMA_MAX_BYTES)
    if problems:
        write_mark(home, problems)
        raise IntegrityFailedError(
            f"the ledger in {home} failed its integrity check ({problems[0]}), so nothing is "
            "written into it: " + recovery(home)
        )


def _journal_failure(
    gk: Gatekeeper | None, event: str, why: str, failed_closed: bool, unverified: bool
) -> None:
    if gk is None:
        return
    payload: dict[str, Any] = {"event": event, "error": why[:500], "failed_closed": failed_closed}
    if unverified:  # a stop let through unjudged (failsafe.released): the audit's verdict
        payload["finished_unverified"] = True
    try:
        with gk.store.transaction():
            gk.store.emit("hook_error", payload)
    except Exception:  # the journal itself is what broke: the answer still goes out
        return


def _failed(
    exc: Exception,
    gk: Gatekeeper | None,
    event: str,
    payload: dict[str, Any],
    profile: Profile,
    *,
    home: StrPath,
    root: StrPath,
) -> HookAnswer:
    """The answer when judging raised ``exc``: fail closed as the profile says, and journal
    the failure where the store can still take it."""
    why = explain(exc, home)
    answer = failure_answer(event, payload, profile, why, home=home, root=root)
    if not isinstance(exc, StoreBusyError) and getattr(exc, "code", "") != "integrity_failed":
        # a busy store would only make us wait again; a failing one is not written into
        unverified = released(event, payload)
        closed = (
            event not in ("PostToolUse", "PostToolUseFailure")
            and not unverified
            and (answer.stdout is not None or answer.exit_code == 2)
        )  # a result's answer only says it is not evidence: nothing was held
        _journal_failure(gk, event, why, closed, unverified)
    return answer


def handle(
    payload: object,
    *,
    home: StrPath | None = None,
    root: StrPath | None = None,
    gatekeeper: Gatekeeper | None = None,
    config_error: ConfigError | None = None,
    event_hint: str | None = None,
    detail: str = "",
    profile: Profile | None = None,
    host_step: HostStep | None = None,
    transcript_wait: float | None = None,
) -> HookAnswer:
    """Answer one Claude Code hook payload. Never raises; fails closed when enforcing.

    ``gatekeeper``: an already open session of ``home`` to answer with (the HTTP service's
    pool); it is not closed here. ``config_error``: the project's configuration is broken
    and ``gatekeeper`` runs on the defaults (mutations are denied, as below).
    ``event_hint``/``detail``: what the caller could still see of a payload it could not
    parse (the event name, and why parsing failed). ``profile``: the configured profile when
    the caller has loaded the configuration already (the pool's, ``ledger`` when it is
    broken); else it is read here. ``host_step``: another host's step before the event
    (:mod:`infomark.tools.hosts`): it may change the event and payload, and returns text
    that goes to the model with the answer. ``transcript_wait``: how long a PreToolUse waits
    for its ``tool_use`` line in the transcript (default: ``transcript.WAIT_SECONDS``; the
    HTTP service waits on its event loop first, then passes what is left, or 0).
    """
    home, root = _where(payload, home, root)
    profile = profile or _profile(root, home)
    LAST_PROFILE[0] = profile
    if not isinstance(payload, dict) or not isinstance(payload.get("hook_event_name"), str):
        why = detail or "expected a JSON object with a string hook_event_name"
        return unreadable_answer(event_hint, profile, why, home=home, root=root)
    event = payload["hook_event_name"]
    bad = _malformed(payload)
    if bad is not None:
        return unreadable_answer(event, profile, bad, home=home, root=root)
    session = payload.get("session_id")
    gk: Gatekeeper | None = None
    try:
        if os.path.lexists(os.path.join(home, "integrity-failed")):  # one stat when healthy
            from infomark.tools.integrity import check_mark

            check_mark(home)  # raises: the hook fails closed with the reason and the recovery
        if gatekeeper is not None:
            gk = gatekeeper
            _check_pooled(gk)
        else:
            sid = session if isinstance(session, str) and session else "claude"
            gk, config_error = _open(home, sid, root)
            if config_error is None:
                profile = LAST_PROFILE[0] = gk.config.profile
            check_key(gk.store.journal)
            check_tail(gk.store.journal, gk.session)
        if config_error is not None:
            return _config_broken(gk, event, payload, config_error, transcript_wait)
        profile = LAST_PROFILE[0] = gk.config.profile
        return _answer(gk, event, payload, home, host_step, transcript_wait)
    except Exception as exc:
        return _failed(exc, gk, event, payload, profile, home=home, root=root)
    finally:
        if gk is not None and gk is not gatekeeper:
            with suppress(Exception):  # a broken store must not undo the answer
                gk.close()


def _open(home: StrPath, sid: str, root: StrPath) -> tuple[Gatekeeper, ConfigError | None]:
    """A session of ``home`` to judge with, and the configuration error it runs despite: a
    broken config must not switch the gatekeeper off, so it judges with the defaults (and
    :func:`_config_broken` denies every mutation until the file is fixed)."""
    from infomark.gatekeeper import Gatekeeper

    try:
        return Gatekeeper.open(home, sid, root=root), None
    except ConfigError as exc:
        return Gatekeeper.open(home, sid, root=root, config=Config()), exc


def _check_pooled(gk: Gatekeeper) -> None:
    """A pooled session's key and journal tail (the tail's memo kept for the next hook, and
    kept as it was if the check raises)."""
    check_key(gk.store.journal)
    memo = gk._tail_memo if isinstance(gk._tail_memo, TailMemo) else None
    gk._tail_memo = check_tail(gk.store.journal, gk.session, memo)


def _answer(
    gk: Gatekeeper,
    event: str,
    payload: dict[str, Any],
    home: StrPath,
    host_step: HostStep | None,
    transcript_wait: float | None = None,
) -> HookAnswer:
    """The answer of an open, checked session: the start's integrity check, the attester,
    another host's step, the event's handler, then the operator's messages."""
    if event == "SessionStart" and payload.get("source") != "compact":
        _quick_verify(gk, home)
    from infomark.tools.hooks.check_call import lazy_attester

    lazy_attester(gk)  # the finish, and the baseline before the first action
    extra = ""
    if host_step is not None:
        event, payload, extra = host_step(gk, event, payload)
    answer = _on_event(gk, event, payload, transcript_wait)
    if extra:
        answer = with_text(answer, event, extra)
    from infomark.tools.hooks.inbox import steer  # messages from `infomark send`

    return replace(answer, stdout=steer(gk, event, answer.stdout))
