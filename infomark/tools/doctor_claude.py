"""``infomark doctor`` for Claude Code: its hooks are mounted, they ran, their messages arrived.

Mounted: every event's entry is in a settings file and its command exists. Ran: sessions in
the journal, hook errors. Delivered: Claude Code writes each hook's ``additionalContext`` and
each denial into its transcript, so an evidence tag, an instruction pack or the protocol
missing there never reached the model. Read-only.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from infomark.tools.doctor import (
    Activity,
    Finding,
    config_object,
    option_value,
    runnable,
    service_up,
    settings_env_findings,
)
from infomark.tools.doctor_launcher import CC as _CC
from infomark.tools.doctor_launcher import REINSTALL as _REINSTALL
from infomark.tools.doctor_launcher import launcher_findings
from infomark.tools.install import BLOCK_ON_FAILURE, HOOK_EVENTS, hook_argv, hook_form

__all__ = [
    "claude_code_findings",
    "delivery_findings",
    "find_transcript",
    "transcript_text",
]


_WHY_MISSING = {
    "PreToolUse": "tool calls are not gated",
    "PostToolUse": "results are not recorded and no evidence tag reaches the model",
    "PostToolUseFailure": "failed calls are not recorded as evidence",
    "SessionStart": "the protocol never reaches the model",
    "PreCompact": "a compaction is not carried over before the host summarises",
    "PostCompact": "a compaction is not closed (a host that sends only PostCompact goes uncounted)",
    "UserPromptSubmit": "turns, approvals and instruction packs never reach the ledger or model",
    "Stop": "the finish gate is off: the agent may stop on stale evidence",
    "SubagentStop": "subagents stop without the finish gate",
}


def _ours(handler: object) -> bool:
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    return (isinstance(command, str) and hook_form(command) is not None) or (
        "/v1/hooks/claude-code" in str(handler.get("url", ""))
    )


def _handlers(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    hooks = data.get("hooks")
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            inner = group.get("hooks") if isinstance(group, dict) else None
            for handler in inner if isinstance(inner, list) else ():
                if _ours(handler):
                    yield str(event), handler


def _settings_files(root: Path, user_home: Path) -> list[Path]:
    return [
        root / ".claude" / "settings.json",
        root / ".claude" / "settings.local.json",
        user_home / ".claude" / "settings.json",
    ]


def _handler_findings(event: str, handler: dict[str, Any], path: Path, home: Path) -> list[Finding]:
    out: list[Finding] = []
    if handler.get("type") == "http":
        if event == "SessionStart":
            out.append(
                Finding(
                    _CC,
                    "http_session_start",
                    "problem",
                    f"{path}: an http hook at SessionStart, which Claude Code does not run: the "
                    "protocol never reaches the model",
                    "run `infomark install claude-code --http URL`: it writes command hooks "
                    "that forward to the service",
                )
            )
        headers = json.dumps(handler.get("headers", {}))
        if "INFOMARK_TOKEN" in headers:
            out.append(
                Finding(
                    _CC,
                    "token_in_env",
                    "problem",
                    f"{path}: the {event} http hook reads $INFOMARK_TOKEN from Claude Code's "
                    "environment, which every Bash call of the agent inherits",
                    "run `infomark install claude-code --http URL` (the forwarder reads the token "
                    "from the home)",
                )
            )
        return out
    argv = hook_argv(str(handler.get("command", "")), path)
    if not argv or not runnable(argv[0]):
        out.append(
            Finding(
                _CC,
                "hook_command",
                "problem",
                f"{path}: the {event} hook runs {argv[0] if argv else '(nothing)'}, which does "
                "not exist or is not executable: Claude Code cannot start it",
                _REINSTALL + " from the environment infomark is installed in",
            )
        )
    pinned = option_value(argv, "--home")
    if pinned and Path(pinned).resolve() != home.resolve():
        out.append(
            Finding(
                _CC,
                "home_mismatch",
                "warning",
                f"{path}: the hooks use the home {pinned}, not the one checked here ({home})",
                f"run `infomark doctor --home {shlex.quote(pinned)}`",
            )
        )
    url = option_value(argv, "--url")
    if url and event == "PreToolUse" and not service_up(url):
        out.append(
            Finding(
                "service",
                "service_up",
                "warning",
                f"the hooks forward to {url}, which does not answer: they judge locally "
                "(slower, same verdicts)",
                f"start it: `infomark serve --home {shlex.quote(str(home))}`",
            )
        )
    if event in BLOCK_ON_FAILURE and handler.get("onFailure") != "block":
        out.append(
            Finding(
                _CC,
                "fail_open",
                "warning",
                f'{path}: the {event} hook lacks "onFailure": "block": a crashed or hung hook '
                "lets the call through",
                _REINSTALL,
            )
        )
    return out


def claude_code_findings(
    home: Path, root: Path, user_home: Path, activity: Activity
) -> list[Finding]:
    """Claude Code: mounted (every event, a command that exists), run, delivered."""
    out: list[Finding] = []
    events: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    newest = 0.0
    for path in _settings_files(root, user_home):
        effect = ": Claude Code ignores it, hooks included"
        data = config_object(
            path, out, _CC, "settings_parse", effect, f"fix {path}, then {_REINSTALL}"
        )
        if data is None:
            continue
        out += settings_env_findings(_CC, path, data.get("env"), home)
        found = list(_handlers(data))
        for event, handler in found:
            events.setdefault(event, []).append((path, handler))
        if found:
            newest = max(newest, path.stat().st_mtime)
    if not events:
        out.append(Finding(_CC, "installed", "info", "not installed (no infomark hooks found)"))
        return out
    files = sorted({str(p) for entries in events.values() for p, _ in entries})
    out.append(Finding(_CC, "installed", "ok", "hooks in " + ", ".join(files)))
    for event, _matcher, _timeout in HOOK_EVENTS:
        if event not in events:
            out.append(
                Finding(
                    _CC,
                    "hook_missing",
                    "problem",
                    f"no infomark hook for {event}: {_WHY_MISSING[event]}",
                    _REINSTALL,
                )
            )
    for event, entries in events.items():
        for path, handler in entries:
            out += _handler_findings(event, handler, path, home)
    out += launcher_findings([(p, h) for entries in events.values() for p, h in entries])
    out += _ran(activity, newest, home, root)
    sessions = activity.of_host(_CC)
    if sessions:
        out += delivery_findings(sessions[0].session, activity, user_home)
    return out


def _ran(activity: Activity, installed_at: float, home: Path, root: Path) -> list[Finding]:
    if not activity.readable:
        return [
            Finding(
                _CC,
                "ran",
                "problem",
                f"the journal cannot be read ({activity.why}), so the hooks fail closed",
                "fix the home as the home findings say",
            )
        ]
    sessions = activity.of_host(_CC)
    if not sessions:
        return [
            Finding(
                _CC,
                "ran",
                "warning",
                f"installed, but no Claude Code session in the journal of {home} yet",
                "start (or restart) Claude Code in the project: it reads its hooks when it starts",
            )
        ]
    last = sessions[0]
    out = [
        Finding(
            _CC,
            "ran",
            "ok",
            f"last ran: session {last.session} at {last.last_activity} ({last.events} events)",
        )
    ]
    from datetime import datetime

    try:
        seen = datetime.fromisoformat(last.last_activity).timestamp()
    except (TypeError, ValueError):
        seen = installed_at
    if installed_at > seen:
        out.append(
            Finding(
                _CC,
                "restart",
                "info",
                "the settings changed after the last hook ran: a running Claude Code keeps "
                "its old hooks",
                "restart Claude Code",
            )
        )
    for seq, kind, text in activity.errors.get(last.session, [])[-3:]:
        out.append(
            Finding(
                _CC,
                kind,
                "problem",
                f"session {last.session}, seq {seq}: {text}",
                f"fix what the message names; `infomark audit --session {last.session}` "
                "shows the events around it",
            )
        )
    return out


def find_transcript(session: str, user_home: Path) -> Path | None:
    """Claude Code's transcript of ``session``: ``~/.claude/projects/*/<session>.jsonl``."""
    base = user_home / ".claude" / "projects"
    try:
        found = sorted(base.glob(f"*/{session}.jsonl"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return None
    return found[-1] if found else None


def transcript_text(path: Path) -> str:
    """Every string the transcript holds (decoded from its JSON lines), one per line."""
    out: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    with path.open("r", encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                walk(json.loads(line))
            except ValueError:
                out.append(line)  # a torn line still counts as text
    return "\n".join(out)


def delivery_findings(session: str, activity: Activity, user_home: Path) -> list[Finding]:
    """Did the evidence tags, instruction packs and the protocol reach the model?

    Claude Code writes every ``additionalContext`` and every denial into the session's
    transcript; what the journal says was sent but the transcript lacks never reached
    the model.
    """
    path = find_transcript(session, user_home)
    if path is None:
        return [
            Finding(
                _CC,
                "delivery",
                "info",
                f"no transcript for session {session} under {user_home / '.claude' / 'projects'}: "
                "delivery not checked",
            )
        ]
    try:
        text = transcript_text(path)
    except OSError as exc:
        return [Finding(_CC, "delivery", "info", f"cannot read {path}: {exc.strerror}")]
    out: list[Finding] = []
    refs = activity.refs.get(session, [])
    missing = [r for r in refs if r not in text]
    if refs and len(missing) == len(refs):
        out.append(
            Finding(
                _CC,
                "tags_delivered",
                "problem",
                f"none of the {len(refs)} evidence tags of session {session} is in its "
                f"transcript ({path}): the model cannot stamp anything",
                "check that PostToolUse runs infomark's hook and that nothing else replaces "
                "its additionalContext; " + _REINSTALL,
            )
        )
    elif missing:
        out.append(
            Finding(
                _CC,
                "tags_delivered",
                "warning",
                f"{len(missing)} of {len(refs)} evidence tags are not in the transcript "
                f"(first: {missing[0]})",
                "check that PostToolUse / PostToolUseFailure run infomark's hook",
            )
        )
    elif refs:
        out.append(Finding(_CC, "tags_delivered", "ok", f"{len(refs)} evidence tags delivered"))
    lost = [
        (seq, name)
        for seq, name in activity.packs.get(session, [])
        if f"[infomark:pack {name}]" not in text
    ]
    for seq, name in lost[:5]:
        out.append(
            Finding(
                _CC,
                "pack_delivered",
                "problem",
                f"instruction pack {name} (seq {seq}), fired by a denial, never reached the model",
                "upgrade infomark (its hook delivers packs with the answer they belong to)",
            )
        )
    from infomark.kernel.protocol import VERIFY_BRIEF_HEAD, render_protocol

    if render_protocol().splitlines()[0] not in text and VERIFY_BRIEF_HEAD not in text:
        out.append(
            Finding(
                _CC,
                "protocol_delivered",
                "problem",
                f"the protocol is not in the transcript of {session}: SessionStart did not "
                "deliver it",
                "make sure SessionStart runs infomark's command hook; " + _REINSTALL,
            )
        )
    return out
