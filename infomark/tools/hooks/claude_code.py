"""Claude Code command/HTTP hook: one JSON object in, at most one JSON object out.

``handle(payload, home=…, root=…) -> HookAnswer`` is shared by the command hook
(``infomark hook claude-code``) and the HTTP service's ``/v1/hooks/claude-code``.
Allow is *no output* (an explicit "allow" would skip the user's own permission
prompt). The hook never crashes: an internal error allows and journals it in the
``ledger`` profile, and fails closed (exit 2) on PreToolUse in ``strict``.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infomark.gates.config import Config
from infomark.kernel.errors import ConfigError
from infomark.kernel.tools import ToolClass, lookup_tool

if TYPE_CHECKING:
    from infomark.gatekeeper import Gatekeeper
    from infomark.ledger.calls import ToolCall, ToolOutcome

__all__ = ["HookAnswer", "handle", "tool_call_from"]

_MAX_CONTEXT = 9_500  # Claude Code caps hook strings at 10,000 characters
_EXIT_CODE = re.compile(r"\s*Exit code (-?\d+)")


@dataclass(frozen=True, slots=True)
class HookAnswer:
    stdout: dict[str, Any] | None = None
    exit_code: int = 0
    stderr: str = ""


def _context(event: str, text: str) -> HookAnswer:
    if not text:
        return HookAnswer()
    return HookAnswer(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text[:_MAX_CONTEXT]}}
    )


def tool_call_from(payload: dict[str, Any]) -> ToolCall:
    """Map a Claude Code tool payload to a ToolCall (``mcp__server__tool`` keeps its name)."""
    from infomark.ledger.calls import ToolCall

    tool_input = payload.get("tool_input")
    use_id = payload.get("tool_use_id")
    return ToolCall(
        tool=str(payload.get("tool_name") or "unknown"),
        input=_finite(tool_input) if isinstance(tool_input, dict) else {},
        tool_call_id=use_id if isinstance(use_id, str) else None,
    )


def _finite(value: Any) -> Any:
    """``Infinity`` / ``NaN`` (which json.loads accepts) as strings: evidence is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
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
    if isinstance(response, dict):
        if is_shell:
            out = str(response.get("stdout") or "") + str(response.get("stderr") or "")
            if response.get("interrupted"):
                return ToolOutcome(
                    output=out, error="interrupted", is_error=True, duration_ms=duration_ms
                )
            return ToolOutcome(output=out, exit_code=0, duration_ms=duration_ms)
        text = json.dumps(response, sort_keys=True, ensure_ascii=False)
        return ToolOutcome(output=text, duration_ms=duration_ms)
    return ToolOutcome(
        output="" if response is None else str(response),
        exit_code=0 if is_shell else None,
        duration_ms=duration_ms,
    )


def _ingest_transcript(gk: Gatekeeper, payload: dict[str, Any]) -> None:
    """Ingest assistant text written before this tool call (each block once)."""
    from infomark.tools.hooks.transcript import read_new_text

    path = payload.get("transcript_path")
    if not isinstance(path, str):
        return
    offset = gk.state.cursors.get("transcript", 0)
    use_id = payload.get("tool_use_id")
    chunk = read_new_text(path, offset, tool_use_id=use_id if isinstance(use_id, str) else None)
    if chunk.offset == offset:
        return
    if not chunk.texts:
        gk.store_cursor("transcript", chunk.offset)
    for i, text in enumerate(chunk.texts):
        last = i == len(chunk.texts) - 1
        cursor = ("transcript", chunk.offset) if last else None
        gk.ingest(text, source="transcript", dedupe=True, cursor=cursor)


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


def _on_event(gk: Gatekeeper, event: str, payload: dict[str, Any]) -> HookAnswer:
    if event == "SessionStart":
        from infomark.kernel.protocol import render_protocol

        if payload.get("source") == "compact":
            gk.host_report(compacted=True)
        text = render_protocol()
        summary = _summary(gk)
        if summary:
            view = gk.context_view()
            text += "\n\n" + summary + ("\n" + view if view else "")
        return _context("SessionStart", text)
    if event == "UserPromptSubmit":
        prompt = str(payload.get("prompt") or "")
        phrase = re.escape(gk.config.approval_phrase.strip())
        if phrase and re.match(rf"\s*{phrase}\b", prompt, re.IGNORECASE):
            gk.approve(by="user", note=prompt[:200])
        return _context("UserPromptSubmit", gk.on_prompt(prompt))
    if event == "PreToolUse":
        _ingest_transcript(gk, payload)
        decision = gk.authorize(tool_call_from(payload))
        if decision.allowed:
            return HookAnswer()  # allow = no output: the user's own permission flow continues
        return HookAnswer(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": decision.decision.value,
                    "permissionDecisionReason": decision.reason[:_MAX_CONTEXT],
                }
            }
        )
    if event in ("PostToolUse", "PostToolUseFailure"):
        call = tool_call_from(payload)
        outcome = _outcome_from(payload, failed=event == "PostToolUseFailure")
        evidence = gk.record(call, outcome)
        extra = gk.after_tool_text(call, outcome, evidence)
        return _context(event, evidence.tag + ("\n" + extra if extra else ""))
    if event in ("Stop", "SubagentStop"):
        final = payload.get("last_assistant_message")
        result = gk.can_finish(final if isinstance(final, str) else "")
        if result.allow:
            return HookAnswer()
        return HookAnswer({"decision": "block", "reason": result.reason[:_MAX_CONTEXT]})
    return HookAnswer()  # events we do not use: no opinion


def _config_broken(
    gk: Gatekeeper, event: str, payload: dict[str, Any], exc: Exception
) -> HookAnswer:
    with gk.store.transaction():
        gk.store.emit("config_error", {"event": event, "error": str(exc)[:2000]})
    if event == "PreToolUse":
        call = tool_call_from(payload)
        tool_class, _, _ = gk.classify(call)
        if ToolClass(tool_class).mutates:
            reason = (
                f"infomark's configuration is invalid, so mutating tools are denied until it is "
                f"fixed (ask the user to fix it):\n{exc}"
            )
            return HookAnswer(
                {
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "deny",
                        "permissionDecisionReason": reason[:_MAX_CONTEXT],
                    }
                }
            )
    answer = _on_event(gk, event, payload)
    return HookAnswer(answer.stdout, answer.exit_code, f"infomark: invalid configuration: {exc}")


def _profile(root: Path, home: Path) -> str:
    try:
        from infomark.gates.config import load_config

        return load_config(root, home).profile
    except Exception:  # a broken config must not crash the hook
        return "ledger"


def handle(
    payload: object,
    *,
    home: Path | None = None,
    root: Path | None = None,
    gatekeeper: Gatekeeper | None = None,
    config_error: ConfigError | None = None,
) -> HookAnswer:
    """Answer one Claude Code hook payload. Never raises.

    ``gatekeeper``: an already open session of ``home`` to answer with (the HTTP service's
    pool); it is not closed here. ``config_error``: the project's configuration is broken
    and ``gatekeeper`` runs on the defaults (mutations are denied, as below).
    """
    from infomark.gatekeeper import Gatekeeper

    if root is None:
        project_dir = os.environ.get("CLAUDE_PROJECT_DIR")
        cwd = payload.get("cwd") if isinstance(payload, dict) else None
        if project_dir:
            root = Path(project_dir)
        elif isinstance(cwd, str) and cwd:
            root = Path(cwd)
        else:
            root = Path.cwd()
    home = home or Path(os.environ.get("INFOMARK_HOME") or root / ".infomark")
    if not isinstance(payload, dict) or not isinstance(payload.get("hook_event_name"), str):
        strict = _profile(root, home) == "strict"
        msg = "infomark hook: expected a JSON object with hook_event_name; ignoring this event"
        if strict:
            msg = "infomark (strict): unreadable hook input, failing closed"
        return HookAnswer(exit_code=2 if strict else 0, stderr=msg)
    event = payload["hook_event_name"]
    session = payload.get("session_id")
    gk: Gatekeeper | None = None
    try:
        sid = session if isinstance(session, str) and session else "claude"
        if gatekeeper is not None:
            gk = gatekeeper
            if config_error is not None:
                return _config_broken(gk, event, payload, config_error)
        else:
            try:
                gk = Gatekeeper.open(home, sid, root=root)
            except ConfigError as exc:
                # A broken config must not switch the gatekeeper off: judge with the
                # defaults, and deny every mutation until the file is fixed.
                gk = Gatekeeper.open(home, sid, root=root, config=Config())
                return _config_broken(gk, event, payload, exc)
        answer = _on_event(gk, event, payload)
        from infomark.tools.hooks.inbox import steer  # messages from `infomark send`

        return replace(answer, stdout=steer(gk, event, answer.stdout))
    except Exception as exc:
        strict = (gk.config.profile if gk is not None else _profile(root, home)) == "strict"
        detail = f"{type(exc).__name__}: {exc}"
        if gk is not None:
            try:
                with gk.store.transaction():
                    gk.store.emit(
                        "hook_error",
                        {
                            "event": event,
                            "error": detail[:500],
                            "failed_closed": strict and event == "PreToolUse",
                        },
                    )
            except Exception as journal_exc:  # the journal itself is broken
                print(f"infomark: cannot journal the error: {journal_exc}", file=sys.stderr)
        print(traceback.format_exc(limit=3), file=sys.stderr)
        if strict and event == "PreToolUse":
            return HookAnswer(
                exit_code=2, stderr=f"infomark (strict): internal error, denying: {detail}"
            )
        return HookAnswer(stderr=f"infomark: internal error, allowing: {detail}")
    finally:
        if gk is not None and gk is not gatekeeper:
            gk.close()
