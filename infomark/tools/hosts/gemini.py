"""Gemini CLI (npm ``@google/gemini-cli``): its hook events and answers, declared.

Verified on Gemini CLI 0.61.0 (its bundled ``docs/hooks/reference.md`` and the hook runner
in its bundle, then the binary against a scripted Gemini API on 127.0.0.1):

* hooks live in ``settings.json`` (``.gemini/settings.json`` for a project) under ``hooks``:
  ``{"BeforeTool": [{"matcher": ".*", "hooks": [{"type": "command", "command": …,
  "timeout": <ms>}]}]}``; a project's hooks run only in a trusted folder;
* the payload is JSON on stdin with ``session_id``, ``transcript_path`` (JSONL), ``cwd``,
  ``hook_event_name``; ``BeforeTool`` / ``AfterTool`` add ``tool_name``, ``tool_input``
  (and ``tool_response`` = ``{llmContent, returnDisplay, error?}``), but no call id;
* ``BeforeTool`` ``{"decision": "deny", "reason": R}`` blocks the call, and the model gets
  ``"Tool execution blocked: R"`` as the tool's error; ``AfterTool``
  ``hookSpecificOutput.additionalContext`` is appended to the tool result in
  ``<hook_context>``; ``AfterAgent`` ``{"decision": "deny", "reason": R}`` sends R to the
  model as a new prompt (the retry carries ``stop_hook_active: true``); ``SessionStart`` and
  ``BeforeAgent`` context is prepended / appended to the prompt;
* exit 0 parses stdout; exit 1 is a warning and the call proceeds; any other non-zero exit
  blocks with stderr as the reason (so a launcher that is missing, exit 127, blocks); a
  timeout (``timeout`` ms, default 60000) lets the call proceed: there is no setting that
  makes a crash or a timeout block, so the hook itself never crashes and answers within
  4 s (:mod:`infomark.tools.hooks.dispatch`);
* ``BeforeTool`` ``hookSpecificOutput.tool_input`` replaces the call's arguments: Gemini
  rebuilds the call from them (the whole input is sent back, not only ``command``), its
  policy checks the rebuilt call, and ``AfterTool`` receives them. infomark answers each
  allowed ``run_shell_command`` so, with the command wrapped in infomark's own sandbox
  (:mod:`infomark.tools.hosts.gemini_sandbox`); ``AfterTool`` unwraps it, and a command that
  ran unwrapped makes the session's own runs ground nothing from there on.
"""

from __future__ import annotations

from infomark.kernel.lazyre import lazy_compile
from infomark.tools.hosts.spec import EVENT, TEXT, HostSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.gatekeeper import Gatekeeper
    from infomark.tools.hooks.answer import HookAnswer

__all__ = ["SPEC"]

_EXIT = lazy_compile(r"(?m)^Exit Code: (-?\d+)\s*$")
_SHELL = ("run_shell_command",)


def _final_message(payload: dict[str, Any]) -> str:
    """The model's last message. ``prompt_response`` joins every text of the turn (a ledger
    written before the tool calls included: ingested again it would re-declare the claims
    after their stamps), so the transcript's last model message is taken; the joined text
    only when the transcript has none."""
    from infomark.tools.hooks.host_transcripts import last_gemini_text

    path = payload.get("transcript_path")
    last = last_gemini_text(path if isinstance(path, str) else None)
    if last is not None:
        return last
    final = payload.get("prompt_response")
    return final if isinstance(final, str) else ""


#: a refused finish's reason, as the Stop answer writes it (``[infomark CODE] …``)
_REFUSAL = lazy_compile(r"\[infomark [a-z_]+\] ")
#: an event name infomark answers with no opinion
_CONTINUED = "InfomarkFinishRetry"


def _adapt(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    if event == "UserPromptSubmit":
        prompt = payload.get("prompt")
        if isinstance(prompt, str) and _REFUSAL.match(prompt):
            # Gemini sends a refused finish's reason back as the next prompt: the same turn
            # goes on. As a new turn it would reset the count of refused finishes, so a
            # session refused again and again never reached the refusal cap.
            return {**payload, "hook_event_name": _CONTINUED}
        return payload
    if event == "Stop":
        return {**payload, "last_assistant_message": _final_message(payload)}
    if event != "PostToolUse":
        return payload
    response = payload.get("tool_response")
    response = response if isinstance(response, dict) else {}
    content = response.get("llmContent")
    text = content if isinstance(content, str) else "" if content is None else str(content)
    error = response.get("error")
    if payload.get("tool_name") in _SHELL:
        found = _EXIT.search(text)
        code = int(found.group(1)) if found else (1 if error else 0)
        if code != 0:
            return {**payload, "hook_event_name": "PostToolUseFailure",
                    "error": f"Exit code {code}\n{text}"}  # fmt: skip
        return {**payload, "tool_response": {"stdout": text}}
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        return {**payload, "hook_event_name": "PostToolUseFailure", "error": str(message)}
    return payload


def _denied(answer: HookAnswer) -> bool:
    out = answer.stdout
    return answer.exit_code == 2 or (
        isinstance(out, dict)
        and (out.get("decision") in ("deny", "block") or out.get("continue") is False)
    )


def _rewrite(payload: dict[str, Any], answer: HookAnswer, home: str, root: str) -> HookAnswer:
    """An allowed ``run_shell_command``: its command wrapped in infomark's sandbox (when the
    sandbox runs here; else the session is journaled unsandboxed and the command runs as is)."""
    tool_input = payload.get("tool_input")
    if (
        payload.get("hook_event_name") != "BeforeTool"
        or payload.get("tool_name") not in _SHELL
        or not isinstance(tool_input, dict)
        or not isinstance(tool_input.get("command"), str)
        or _denied(answer)
    ):
        return answer
    from infomark.tools.hooks.answer import HookAnswer
    from infomark.tools.hooks.sandboxed import agent_sandbox
    from infomark.tools.hosts.gemini_sandbox import exec_prefix, wrap

    if not agent_sandbox("gemini", root, home).sandboxed:
        return answer
    command = wrap(tool_input["command"], exec_prefix(home, root))
    out = dict(answer.stdout or {})
    out["hookSpecificOutput"] = {
        "hookEventName": "BeforeTool",
        "tool_input": {**tool_input, "command": command},
    }
    return HookAnswer(out, answer.exit_code, answer.stderr)


_UNWRAPPED = (
    "a shell command ran outside infomark's sandbox: the command Gemini CLI ran is not the one "
    "infomark's BeforeTool hook wrapped (the hook timed out, or another hook rewrote it)"
)


def _step(gk: Gatekeeper, event: str, payload: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    """A shell result: the command as the model wrote it (the wrapper taken off). One that
    did not run wrapped journals the session unsandboxed: its runs ground nothing."""
    tool_input = payload.get("tool_input")
    if (
        event not in ("PostToolUse", "PostToolUseFailure")
        or payload.get("tool_name") not in _SHELL
        or not isinstance(tool_input, dict)
    ):
        return event, payload, ""
    from infomark.tools.hosts.gemini_sandbox import exec_prefix, unwrap

    ledger = gk._ledger
    original = unwrap(tool_input.get("command"), exec_prefix(ledger.home_dir, ledger.root_dir))
    if original is not None:
        return event, {**payload, "tool_input": {**tool_input, "command": original}}, ""
    if gk.state.agent_sandbox.get("sandboxed") is not False:
        gk.record_sandbox(
            False, host="gemini", detail=_UNWRAPPED,
            fix="restart Gemini CLI, and keep infomark's the only hook that rewrites "
            "run_shell_command",
        )  # fmt: skip
    return event, payload, ""


SPEC = HostSpec(
    name="gemini",
    title="Gemini CLI",
    version="0.61.0",
    events={
        "SessionStart": "SessionStart",
        "BeforeAgent": "UserPromptSubmit",
        "BeforeTool": "PreToolUse",
        "AfterTool": "PostToolUse",
        "AfterAgent": "Stop",
        # Fired before every model request in 0.61, whether or not the history is then
        # compressed (seen on the binary): not a compaction, so not reported as one.
        "PreCompress": None,
        "SessionEnd": None,
        "Notification": None,
        "BeforeModel": None,
        "AfterModel": None,
        "BeforeToolSelection": None,
    },
    answers={
        "deny": {"decision": "deny", "reason": TEXT},
        "ask": {"decision": "deny", "reason": TEXT},  # no ask in Gemini CLI's BeforeTool
        "block": {"decision": "deny", "reason": TEXT},  # AfterAgent: TEXT is the next prompt
        "context": {"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": TEXT}},
        "message": {"systemMessage": TEXT},
    },
    context_events=frozenset({"SessionStart", "BeforeAgent", "AfterTool"}),
    transcript_format="gemini",
    synthesize_call_ids=True,
    adapt=_adapt,
    step=_step,
    rewrite=_rewrite,
    config_dir=".gemini",
    config_file="settings.json",
    tool_matcher=".*",
    timeout=30_000,  # ms; the hook answers within 4 s
    project_dir_var="$GEMINI_PROJECT_DIR",  # expanded (quoted) by Gemini CLI itself
)
