"""OpenCode (npm ``opencode-ai``): its plugin's events and answers, declared.

Verified on OpenCode 1.18.33 (the ``Hooks`` type of ``@opencode-ai/plugin`` 1.18.33, the
plugin runner in the binary, then the binary against a scripted OpenAI-compatible provider
on 127.0.0.1):

* OpenCode has no hook command: a plugin (a JS/TS module in ``.opencode/plugins/`` or
  ``~/.config/opencode/plugins/``, found without any config entry) registers callbacks.
  ``infomark install opencode`` writes one (:mod:`infomark.tools.hosts.opencode_plugin`)
  that runs ``infomark hook opencode`` once per callback with a JSON payload on stdin, named
  by the callback: ``session.start`` (synthesized, first sight of a session),
  ``chat.message``, ``tool.execute.before``, ``tool.execute.after``, ``text.complete``;
* every callback is awaited, in order (``Plugin.trigger``). An error thrown in
  ``tool.execute.before`` stops the call: the tool never runs and the model gets the error's
  message as the tool result. So a denial, and every failure of the hook (a crash, a
  non-zero exit other than 2, a timeout, unreadable output), is a thrown error: fail closed;
* ``tool.execute.after`` may rewrite the tool's output (the evidence tag is appended). The
  shell tool (``bash``) reports its exit status in ``metadata.exit``; a tool that throws
  (a failed ``edit``) fires no ``after``;
* a finish cannot be refused by any callback: the loop ends when the model's last message
  stopped without tool calls, and ``session.idle`` comes after (``opencode run`` exits on
  it). ``experimental.text.complete`` is awaited when a text part ends, before the loop
  checks for the end; when the message has no tool part then, the plugin asks infomark
  (``Stop``), and on a refusal adds the reason as a user message (``noReply``): the loop
  sees a user message newer than the answer and calls the model again. An answer that ended
  with no text is judged at ``session.idle`` and a refusal is sent as a new prompt, which
  the TUI and ``opencode serve`` run but ``opencode run`` (exited) does not. A provider that
  streams a message's text before its tool calls makes that text look final (the model then
  reads a refusal it did not need);
* context goes into the system prompt (``experimental.chat.system.transform``, every model
  request of the session) and into tool outputs; OpenCode keeps no transcript file, so the
  plugin sends the text of the current assistant message with each tool callback
  (``assistant_texts``), ingested here before the call is judged.
"""

from __future__ import annotations

from infomark.kernel.lazyre import lazy_compile
from infomark.tools.hosts.spec import TEXT, HostSpec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.gatekeeper import Gatekeeper

__all__ = ["SPEC"]

_SHELL = "bash"
_RENAMES = {
    "filePath": "file_path",
    "oldString": "old_string",
    "newString": "new_string",
    "replaceAll": "replace_all",
}
_TEXTS_LIMIT = 64
_EXIT = lazy_compile(r"^-?\d+$")


def _tool_input(payload: dict[str, Any]) -> dict[str, Any]:
    raw = payload.get("tool_input")
    if not isinstance(raw, dict):
        return payload
    tool_input = {_RENAMES.get(k, k): v for k, v in raw.items()}
    if "patchText" in tool_input and "input" not in tool_input:  # apply_patch: infomark's key
        tool_input["input"] = tool_input.pop("patchText")
    return {**payload, "tool_input": tool_input}


def _exit_code(response: dict[str, Any]) -> int | None:
    metadata = response.get("metadata")
    code = metadata.get("exit") if isinstance(metadata, dict) else None
    if isinstance(code, bool):
        return None
    if isinstance(code, int):
        return code
    if isinstance(code, str) and _EXIT.match(code):
        return int(code)
    return None


def _adapt(event: str, payload: dict[str, Any]) -> dict[str, Any]:
    payload = _tool_input(payload)
    if event != "PostToolUse":
        return payload
    response = payload.get("tool_response")
    response = response if isinstance(response, dict) else {}
    output = response.get("output")
    text = output if isinstance(output, str) else "" if output is None else str(output)
    if payload.get("tool_name") == _SHELL:
        code = _exit_code(response)
        if code is None:  # no exit status: not evidence of a pass
            code = 1
        if code != 0:
            return {**payload, "hook_event_name": "PostToolUseFailure",
                    "error": f"Exit code {code}\n{text}"}  # fmt: skip
        return {**payload, "tool_response": {"stdout": text}}
    return {**payload, "tool_response": {"output": text}}


def _step(gk: Gatekeeper, event: str, payload: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    """Ingest the assistant text the plugin sent (OpenCode keeps no transcript file)."""
    texts = payload.get("assistant_texts")
    if event in ("PreToolUse", "PostToolUse", "PostToolUseFailure") and isinstance(texts, list):
        for text in texts[-_TEXTS_LIMIT:]:
            if isinstance(text, str) and text.strip():
                gk.ingest(text, source="transcript", dedupe=True)
    return event, payload, ""


SPEC = HostSpec(
    name="opencode",
    title="OpenCode",
    version="1.18.33",
    events={
        "session.start": "SessionStart",
        "chat.message": "UserPromptSubmit",
        "tool.execute.before": "PreToolUse",
        "tool.execute.after": "PostToolUse",
        "text.complete": "Stop",
        "session.idle": None,
    },
    answers={
        "deny": {"decision": "deny", "reason": TEXT},
        "ask": {"decision": "deny", "reason": TEXT},  # no ask from a plugin: a hold is a denial
        "block": {"decision": "block", "reason": TEXT},  # text.complete: TEXT is the next prompt
        "context": {"context": TEXT},
        "message": {"message": TEXT},
    },
    context_events=frozenset(
        {"session.start", "chat.message", "tool.execute.before", "tool.execute.after"}
    ),
    adapt=_adapt,
    step=_step,
    config_dir=".opencode",
    config_file="plugins/infomark.js",
    timeout=30,  # s: the plugin kills the hook after this and fails closed
)
