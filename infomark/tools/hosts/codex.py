"""OpenAI Codex CLI (npm ``@openai/codex``): its hook events and answers, declared.

Verified on Codex 0.171.0 (the JSON schemas of its hook input and output, embedded in the
binary, then the binary against a scripted Responses API on 127.0.0.1):

* hooks live in ``hooks.json`` beside a config layer (``<project>/.codex/hooks.json``,
  ``~/.codex/hooks.json``) or inline in ``config.toml``, in Claude Code's shape
  (``{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": …,
  "timeout": <s>}]}]}}``); a project's ``.codex/`` layer loads only for a trusted project,
  and a non-managed hook runs only after the user trusted it in ``/hooks`` (its hash is
  recorded: a changed command needs trusting again) or under
  ``--dangerously-bypass-hook-trust``. The hook runs with the session's working directory as
  its own, and no variable names the project;
* the events and payloads are Claude Code's (``session_id``, ``transcript_path`` = the
  rollout JSONL, ``cwd``, ``hook_event_name``, ``tool_name``, ``tool_input``,
  ``tool_use_id``, ``permission_mode``, ``turn_id``); the shell tool is reported as
  ``Bash`` with ``{"command": …}``, ``apply_patch`` with the patch as ``command``;
* the answers are Claude Code's, except that ``permissionDecision`` ``ask`` and ``allow``
  are refused as unsupported: infomark's hold becomes a denial here. A PreToolUse
  ``additionalContext`` reaches the model (a developer message before the tool output);
* **a PostToolUse of ``Bash`` carries the command's output only, never its exit status**,
  and the rollout gets the status (``Process exited with code N``) only after the hook has
  answered. So a shell run's evidence is recorded at the next hook of the session (the
  next tool call, or the finish), from the rollout, and its tag reaches the model then;
* a hook that crashes, exits non-zero (2 blocks, with stderr as the reason), times out or
  prints no JSON lets the call run (``hook: PreToolUse Failed``): nothing can make it block,
  so the hook itself never crashes and answers within 4 s.
"""

from __future__ import annotations

from infomark.kernel import jsonc
from infomark.kernel.lazyre import lazy_compile
from infomark.tools.hosts.spec import EVENT, TEXT, HostSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.gatekeeper import Gatekeeper

__all__ = ["SPEC"]

_EXITED = lazy_compile(r"(?m)^Process exited with code (-?\d+)\s*$")
_OUTPUT = "\nOutput:\n"
_SHELL = "Bash"
_PENDING_NOTE = (
    "[infomark: Codex does not tell hooks a command's exit status, so the evidence tag of "
    "this run ({call}) comes with your next tool call, or with the answer to your finish]"
)


def _adapt(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    tool_input = payload.get("tool_input")
    if payload.get("tool_name") == "apply_patch" and isinstance(tool_input, dict):
        patch = tool_input.get("command")  # the patch text, where infomark reads "input"
        if isinstance(patch, str) and "input" not in tool_input:
            rest = {k: v for k, v in tool_input.items() if k != "command"}
            return {**payload, "tool_input": {**rest, "input": patch}}
    return payload


def _rollout(path: object) -> tuple[dict[str, str], dict[str, str]]:
    """``(call_id → the shell command, call_id → its output text)`` from the rollout's last
    4 MiB (a run is settled at the next hook, so its lines are recent)."""
    commands: dict[str, str] = {}
    outputs: dict[str, str] = {}
    from infomark.tools.hooks.host_transcripts import tail_entries

    for entry in tail_entries(path if isinstance(path, str) else None):
        item = entry.get("payload") if isinstance(entry, dict) else None
        if not isinstance(item, dict) or entry.get("type") != "response_item":
            continue
        cid = item.get("call_id")
        if not isinstance(cid, str):
            continue
        if item.get("type") == "function_call" and item.get("name") == "exec_command":
            try:
                args = jsonc.loads(str(item.get("arguments") or "{}"))
            except (ValueError, RecursionError):
                continue
            if isinstance(args, dict) and isinstance(args.get("cmd"), str):
                commands[cid] = args["cmd"]
        elif item.get("type") == "function_call_output" and isinstance(item.get("output"), str):
            outputs[cid] = item["output"]
    return commands, outputs


def _settle(gk: Gatekeeper, payload: dict[str, Any], skip: str | None) -> list[str]:
    """Record every authorized shell run whose exit status the rollout now shows."""
    from infomark.kernel.errors import RecordRefused
    from infomark.ledger.calls import ToolCall, ToolOutcome

    waiting = [cid for cid, p in gk.state.pending_calls.items()
               if p.get("tool") == _SHELL and cid != skip]  # fmt: skip
    if not waiting:
        return []
    commands, outputs = _rollout(payload.get("transcript_path"))
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    tags: list[str] = []
    for cid in waiting:
        output, command = outputs.get(cid), commands.get(cid)
        found = _EXITED.search(output or "")
        if output is None or command is None or found is None:
            continue  # still running, or not written yet
        text = output.split(_OUTPUT, 1)[1] if _OUTPUT in output else ""
        call = ToolCall(tool=_SHELL, input={"command": command}, tool_call_id=cid, cwd=cwd)
        outcome = ToolOutcome(output=text, exit_code=int(found.group(1)))
        try:
            evidence = gk.record(call, outcome, cwd=cwd)
        except RecordRefused as exc:
            tags.append(f"[infomark: no evidence for {cid} ({exc.code}): {exc}]")
            continue
        extra = gk.after_tool_text(call, outcome, evidence)
        tags.append(f"{evidence.tag} (call {cid})" + ("\n" + extra if extra else ""))
    return tags


def _step(gk: Gatekeeper, event: str, payload: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    deferred = event == "PostToolUse" and payload.get("tool_name") == _SHELL
    cid = payload.get("tool_use_id") if deferred else None
    tags = _settle(gk, payload, skip=cid if isinstance(cid, str) else None)
    if deferred:  # recorded later, from the rollout: nothing to judge now
        tags.append(_PENDING_NOTE.format(call=cid))
        return "", payload, "\n".join(tags)
    return event, payload, "\n".join(tags)


_DENY = {
    "hookSpecificOutput": {
        "hookEventName": EVENT,
        "permissionDecision": "deny",
        "permissionDecisionReason": TEXT,
    }
}

SPEC = HostSpec(
    name="codex",
    title="OpenAI Codex CLI",
    version="0.171.0",
    events={
        "SessionStart": "SessionStart",
        "UserPromptSubmit": "UserPromptSubmit",
        "PreToolUse": "PreToolUse",
        "PostToolUse": "PostToolUse",
        "PreCompact": "PreCompact",
        "PostCompact": "PostCompact",
        "Stop": "Stop",
        "SubagentStop": "SubagentStop",
        "PermissionRequest": None,
        "SessionEnd": None,
        "SubagentStart": None,
        "Interrupt": None,
    },
    answers={
        "deny": _DENY,
        "ask": _DENY,  # Codex refuses "ask": a hold is a denial here
        "block": {"decision": "block", "reason": TEXT},
        "context": {"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": TEXT}},
        "message": {"systemMessage": TEXT},
    },
    context_events=frozenset({"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"}),
    transcript_format="codex",
    adapt=_adapt,
    step=_step,
    config_dir=".codex",
    config_file="hooks.json",
    tool_matcher="*",
    timeout=30,  # s; the hook answers within 4 s
    project_dir_var=".",  # the hook runs in the session's working directory
)
