"""The hook of any host in :data:`~infomark.tools.hosts.spec.HOST_MODULES`: translate, judge,
answer.

``handle_host(spec, payload, …)`` renames the host's event and fields into the Claude Code
payload (:mod:`infomark.tools.hooks.claude_code` judges it: the same decisions, evidence,
finish gate, failure answers), then renders the answer in the host's shape. It never raises;
in the enforcing profiles every failure the hook core answers for (a broken key, journal or
config, an unreadable payload) reaches the host as a denial or a refused finish.
"""

from __future__ import annotations

from infomark.tools.hooks.answer import MAX_TEXT, HookAnswer
from infomark.tools.hosts.spec import HOST_MODULES, HostSpec, fill

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

__all__ = ["canonical_payload", "handle_host", "load_spec", "render"]


def load_spec(name: str) -> HostSpec:
    """The spec of host ``name`` (a key of ``HOST_MODULES``)."""
    import importlib

    spec = importlib.import_module(HOST_MODULES[name]).SPEC
    assert isinstance(spec, HostSpec)
    return spec


def canonical_payload(spec: HostSpec, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The Claude Code payload for a host payload; None for an event infomark does not use."""
    event = payload.get("hook_event_name")
    canonical = spec.events.get(event) if isinstance(event, str) else None
    if canonical is None:
        return None
    own = ("transcript_format", "synthesize_call_id", "infomark_host")  # never the host's to set
    out = {k: v for k, v in payload.items() if k not in own}
    out["hook_event_name"] = canonical
    out["infomark_host"] = spec.name  # whose sandbox the agent's commands run in
    if spec.adapt is not None:
        out = spec.adapt(canonical, out)
    if spec.transcript_format:
        out["transcript_format"] = spec.transcript_format
    if spec.synthesize_call_ids:
        out["synthesize_call_id"] = spec.name
    return out


def _kind(stdout: dict[str, Any]) -> tuple[str, str] | None:
    """What a Claude Code answer says: ``(kind, text)``."""
    specific = stdout.get("hookSpecificOutput")
    if isinstance(specific, dict):
        decision = specific.get("permissionDecision")
        if decision in ("deny", "ask"):
            return str(decision), str(specific.get("permissionDecisionReason") or "")
        if "additionalContext" in specific:
            return "context", str(specific.get("additionalContext") or "")
    if stdout.get("decision") == "block":
        return "block", str(stdout.get("reason") or "")
    if "systemMessage" in stdout:
        return "message", str(stdout.get("systemMessage") or "")
    return None


def render(spec: HostSpec, host_event: str | None, answer: HookAnswer) -> HookAnswer:
    """The hook core's (Claude Code shaped) answer in the host's shape."""
    if answer.stdout is None:
        return answer
    found = _kind(answer.stdout)
    if found is None:
        return HookAnswer(None, answer.exit_code, answer.stderr)
    kind, text = found
    template = spec.answers.get(kind)
    if kind == "context" and host_event not in spec.context_events:
        template = None
    if template is None:  # the host cannot take it here: say it on stderr
        extra = f"infomark: {text[:MAX_TEXT]}"
        # exit 2 blocks on every host: a refusal is never turned into an allow by omission
        code = 2 if kind in ("deny", "ask", "block") else answer.exit_code
        return HookAnswer(None, code, "\n".join(s for s in (answer.stderr, extra) if s))
    return HookAnswer(
        fill(template, text[:MAX_TEXT], host_event or ""), answer.exit_code, answer.stderr
    )


def handle_host(
    spec: HostSpec,
    payload: object,
    *,
    home: StrPath | None = None,
    root: StrPath | None = None,
    event_hint: str | None = None,
    detail: str = "",
) -> HookAnswer:
    """Answer one hook payload of ``spec``'s host. Never raises; fails closed when enforcing."""
    from infomark.tools.hooks.claude_code import handle

    hint = spec.events.get(event_hint) if event_hint else None
    if isinstance(payload, dict) and isinstance(payload.get("hook_event_name"), str):
        host_event: str | None = payload["hook_event_name"]
        canonical = canonical_payload(spec, payload)
        if canonical is None:
            return HookAnswer()  # an event infomark does not use: no opinion
        answer = handle(
            canonical, home=home, root=root, event_hint=hint, detail=detail, host_step=spec.step
        )
        if spec.rewrite is not None:
            from infomark.tools.hooks.where import hook_paths

            where = hook_paths(canonical, home, root)
            return spec.rewrite(payload, render(spec, host_event, answer), *where)
    else:  # unreadable: the hook core answers for the event it could still see
        host_event = event_hint
        answer = handle(payload, home=home, root=root, event_hint=hint, detail=detail)
    return render(spec, host_event, answer)
