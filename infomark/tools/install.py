"""``infomark install claude-code``: merge our hook entries into Claude Code settings.

Never clobbers other hooks; idempotent; ``uninstall`` removes only ours. The file
is rewritten atomically, and an unreadable file is an error, not an overwrite.

Failing closed: Claude Code lets a tool call through when its hook crashes, times out
or cannot be started, unless the entry says ``"onFailure": "block"``; the PreToolUse
and Stop entries say so. ``--http URL`` forwards to a running ``infomark serve``
through the command hook (``infomark hook claude-code --url URL``), which reads the
service token from ``<home>/token``: an http-type entry would need the token in
Claude Code's environment, which every Bash call of the agent inherits. The service is
checked before anything is written; when it is down later, the hook judges locally.

Compaction: ``PreCompact`` carries the ledger over before the host summarises,
``SessionStart`` (``source: compact``) re-injects the claim ids, ranks and live evidence
refs, and ``PostCompact`` closes the compaction (and reports it when neither of the others
did, on a host that sends only it); all three are installed (docs/integrations.md).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infomark.kernel.errors import UserError
from infomark.tools.hooks.deadline import HOST_TIMEOUT_S
from infomark.tools.launcher import NAME as LAUNCHER_NAME
from infomark.tools.launcher import (
    hook_prefix,
    launcher_for,
    remove_launcher,
    render,
    write_launcher,
)
from infomark.tools.textfile import write_record, write_text_atomic

__all__ = [
    "BLOCK_ON_FAILURE",
    "HOOK_EVENTS",
    "PROJECT_DIR",
    "Installed",
    "allow_entries",
    "check_service",
    "hook_argv",
    "hook_form",
    "install_claude_code",
    "local_settings",
    "settings_path",
    "uninstall_claude_code",
    "write_project_config",
]

#: how a project-scope hook names its launcher: relative to the project Claude Code opened
#: (``$CLAUDE_PROJECT_DIR``; the working directory when it is unset), so a teammate's clone
#: of a committed ``.claude/settings.json`` runs its own launcher
PROJECT_DIR = '"${CLAUDE_PROJECT_DIR:-.}"'
_PROJECT_WORDS = ("${CLAUDE_PROJECT_DIR:-.}", "${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR")
_ALLOWED_FILE = "infomark-allowed.json"  # the permissions.allow entries install added

BLOCK_ON_FAILURE = frozenset({"PreToolUse", "Stop", "SubagentStop"})
HOOK_EVENTS: tuple[tuple[str, str | None, int], ...] = (
    ("SessionStart", None, 30),
    ("PreCompact", None, 30),
    ("PostCompact", None, 30),
    ("UserPromptSubmit", None, 30),
    ("PreToolUse", "*", HOST_TIMEOUT_S),  # `infomark check C1` runs the oracle in the hook
    ("PostToolUse", "*", 30),
    ("PostToolUseFailure", "*", 30),
    ("Stop", None, HOST_TIMEOUT_S),  # the finish runs the oracles it needs attested
    ("SubagentStop", None, HOST_TIMEOUT_S),
)
_MARK_CMD = " hook claude-code"
_MARK_URL = "/v1/hooks/claude-code"


@dataclass(frozen=True)
class Installed:
    """What ``install`` / ``uninstall`` did: the settings file, and whether it changed."""

    path: Path
    changed: bool


def settings_path(scope: str, root: Path) -> Path:
    if scope == "user":
        return Path.home() / ".claude" / "settings.json"
    if scope == "project":
        return root / ".claude" / "settings.json"
    raise UserError(f"unknown scope {scope!r}; use project or user")


def hook_form(command: str) -> str | None:
    """Which of our hook commands ``command`` is: ``"launcher"`` (the isolated launcher,
    directly or as ``PYTHON -I -S LAUNCHER``), ``"console"`` (the older form: the console
    script or ``python -m infomark``, with ``site``), or None when it is not ours."""
    if _MARK_CMD not in command:
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return "console"
    head = argv[3] if argv[1:3] == ["-I", "-S"] and len(argv) > 3 else argv[0] if argv else ""
    return "launcher" if Path(head).name == LAUNCHER_NAME else "console"


def hook_argv(command: str, settings: Path) -> list[str]:
    """The words of a hook command as Claude Code runs it: ``$CLAUDE_PROJECT_DIR`` is the
    project a project-scope settings file belongs to ([] when it cannot be split)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return []
    project = str(settings.parent.parent)
    out = []
    for word in argv:
        for token in _PROJECT_WORDS:
            if word.startswith(token):
                word = project + word[len(token) :]
                break
        out.append(word)
    return out


def _ours(handler: Any) -> bool:
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    return (isinstance(command, str) and hook_form(command) is not None) or _MARK_URL in str(
        handler.get("url", "")
    )


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text("utf-8") or "{}")
    except (OSError, ValueError) as exc:
        raise UserError(
            f"{path} is not valid JSON ({exc}); fix it first, nothing was changed"
        ) from exc
    if not isinstance(data, dict):
        raise UserError(f"{path} must hold a JSON object; nothing was changed")
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def _strip(data: dict[str, Any], ours: Callable[[Any], bool] = _ours) -> dict[str, Any]:
    """``data`` without the hook handlers ``ours`` claims (empty groups and events go too)."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return data
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                group = {**group, "hooks": [h for h in group["hooks"] if not ours(h)]}
                if not group["hooks"]:
                    continue
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        data.pop("hooks")
    return data


def install_claude_code(
    *,
    scope: str = "project",
    root: Path,
    home: Path | None = None,
    http_url: str | None = None,
    sandbox: bool = True,
    checks: Sequence[str] | None = None,
) -> Installed:
    """Add infomark's hooks (command, forwarding to a service with ``http_url``), unless
    ``sandbox`` is False Claude Code's own Bash sandbox with infomark's policy
    (:mod:`infomark.tools.install_sandbox`), and ``Bash(<check>)`` permission rules for the
    project's ``checks``.

    Writes the launcher beside the settings file first, then the settings. Each file is
    written only when its content changes: installing twice leaves both as they were
    (``changed`` is False the second time).
    """
    path = settings_path(scope, root)
    before = _load(path)
    data = _strip(json.loads(json.dumps(before)))
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UserError(f"{path}: 'hooks' must be an object; nothing was changed")
    if http_url:
        check_service(http_url, home if home is not None else root / ".infomark")
    launcher = launcher_for(path)
    text = render()  # before anything is written: an interpreter it cannot name is an error
    prefix = hook_prefix(launcher.absolute())
    if scope == "project":  # relative to the project: a teammate's clone runs its own
        prefix = prefix.replace(
            shlex.quote(str(launcher.absolute())), f"{PROJECT_DIR}/.claude/{launcher.name}"
        )
    command = prefix + _MARK_CMD
    if home is not None:
        command += " --home " + shlex.quote(str(home.resolve()))
    if http_url:
        command += " --url " + shlex.quote(http_url.rstrip("/"))
    handler: dict[str, Any] = {"type": "command", "command": command}
    for event, matcher, timeout in HOOK_EVENTS:
        entry = {**handler, "timeout": timeout}
        if event in BLOCK_ON_FAILURE:
            entry["onFailure"] = "block"  # a crash or timeout must not let the call through
        group: dict[str, Any] = {"hooks": [entry]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        hooks.setdefault(event, []).append(group)
    record = None
    if sandbox:
        from infomark.tools.install_sandbox import add_sandbox, check_root, sandbox_settings

        check_root(root)

        ours = sandbox_settings(root, home if home is not None else root / ".infomark")
        record = add_sandbox(data, path, ours)
    wrote = write_launcher(launcher, text)
    if record is not None:
        from infomark.tools.install_sandbox import save_record

        path.parent.mkdir(parents=True, exist_ok=True)
        wrote = save_record(path, record) or wrote
        if scope == "project":  # Claude Code's sandbox stages writes here; made now, a first
            # sandboxed command does not change .claude/ under the session's feet
            (path.parent / ".cc-writes").mkdir(mode=0o700, exist_ok=True)
    if scope == "project":  # Claude Code honours these in -p without the workspace trust prompt
        wrote = _allow_local(path, checks) or wrote
    else:
        wrote = _allow_checks(data, path, checks) or wrote
    if path.exists() and data == before:
        return Installed(path, changed=wrote)
    _save(path, data)
    return Installed(path, changed=True)


def allow_entries(checks: Sequence[str]) -> list[str]:
    """Claude Code permission rules that let the project's checks run unprompted (so
    ``claude -p`` can run them): ``Bash(pytest -q)``; a check written as a glob keeps its
    prefix (``Bash(pytest:*)``)."""
    out = []
    for check in checks:
        text = check.strip()
        if not text:
            continue
        if any(ch in text for ch in "*?["):
            head = text.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0].strip()
            if not head:
                continue
            text = head + ":*"
        out.append(f"Bash({text})")
    return out


def local_settings(settings: Path) -> Path:
    """``settings.local.json`` beside a project's ``settings.json``: the project's permission
    rules go there (Claude Code 2.1 ignores a project ``settings.json``'s ``permissions`` in
    ``claude -p`` until the workspace is trusted; the local file it always reads)."""
    return settings.with_name("settings.local.json")


def _allow_local(settings: Path, checks: Sequence[str] | None) -> bool:
    if not checks:
        return False
    local = local_settings(settings)
    before = _load(local)
    data = json.loads(json.dumps(before))
    changed = _allow_checks(data, settings, checks)
    if data != before or not local.exists():
        _save(local, data)
        return True
    return changed


def _allow_checks(data: dict[str, Any], settings: Path, checks: Sequence[str] | None) -> bool:
    """Merge ``Bash(<check>)`` rules into ``permissions.allow``; remember the ones added
    (beside the settings) so ``uninstall`` removes exactly those. True when that file changed."""
    if not checks:
        return False
    perms = data.setdefault("permissions", {})
    if not isinstance(perms, dict):
        raise UserError(f"{settings}: 'permissions' must be an object; nothing was changed")
    allow = perms.setdefault("allow", [])
    if not isinstance(allow, list):
        raise UserError(f"{settings}: 'permissions.allow' must be a list; nothing was changed")
    record = settings.parent / _ALLOWED_FILE
    added: list[str] = _read_added(record)
    for rule in allow_entries(checks):
        if rule not in allow:
            allow.append(rule)
            if rule not in added:
                added.append(rule)
    return write_record(record, json.dumps(sorted(added), indent=2) + "\n")


def _read_added(record: Path) -> list[str]:
    try:
        got = json.loads(record.read_text("utf-8"))
    except (OSError, ValueError):
        return []
    return [str(r) for r in got] if isinstance(got, list) else []


def _drop_allowed(data: dict[str, Any], settings: Path) -> bool:
    """Remove the permission rules install added (and its record of them)."""
    record = settings.parent / _ALLOWED_FILE
    added = set(_read_added(record))
    perms = data.get("permissions")
    if added and isinstance(perms, dict) and isinstance(perms.get("allow"), list):
        perms["allow"] = [r for r in perms["allow"] if r not in added]
        if not perms["allow"]:
            del perms["allow"]
        if not perms:
            del data["permissions"]
    try:
        record.unlink()
    except OSError:
        return False
    return True


def write_project_config(root: Path, profile: str, checks: Sequence[str]) -> Path | None:
    """Write ``infomark.toml`` with the profile and the required checks when the project has
    no infomark configuration yet; None (nothing written) when it has one."""
    from infomark.gates.config import find_config_file

    if find_config_file(root) is not None:
        return None
    lines = [
        "# infomark's configuration (docs/configuration.md), written by",
        "# `infomark install claude-code`. profile: verify asks no protocol of the agent;",
        '# a finish after changes needs a fresh PASS of each check below. "ledger" is the',
        "# full claim-ledger profile (docs/gates.md#profiles).",
        f'profile = "{profile}"',
        "",
        "[oracles]",
        "require = [" + ", ".join(json.dumps(c) for c in checks) + "]",
        "",
    ]
    path = root / "infomark.toml"
    path.write_text("\n".join(lines), "utf-8")
    return path


def check_service(url: str, home: Path) -> None:
    """Refuse to install an --http hook unless the service answers, with this home's token."""
    import urllib.error
    import urllib.request

    from infomark.tools.hooks.forward import hook_url

    base = url.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise UserError(f"--http needs an http:// URL, not {url!r}")
    try:
        token = (home / "token").read_text("utf-8").strip()
    except OSError as exc:
        raise UserError(
            f"no service token in {home / 'token'}: start `infomark serve` for this home first "
            "(or pass --home); nothing was changed"
        ) from exc
    probe = urllib.request.Request(  # noqa: S310 (the scheme is checked above)
        hook_url(base),
        data=b'{"hook_event_name": "Notification", "session_id": "infomark-install-probe"}',
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(probe, timeout=5) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        raise UserError(
            f"the service at {base} refused the hook probe (HTTP {exc.code}); is it serving "
            f"the home {home}? Nothing was changed"
        ) from exc
    except (OSError, urllib.error.URLError) as exc:
        raise UserError(
            f"nothing answers at {base} ({exc}); start `infomark serve` first. Nothing was changed"
        ) from exc


def uninstall_claude_code(*, scope: str = "project", root: Path) -> Installed:
    """Remove only infomark's hook entries, then the launcher beside the settings; the file
    is untouched when it has none."""
    path = settings_path(scope, root)
    removed = False
    if path.exists():
        from infomark.tools.install_sandbox import remove_sandbox

        before = _load(path)
        data, had_record = remove_sandbox(_strip(json.loads(json.dumps(before))), path)
        removed = had_record
        local = local_settings(path)
        if scope == "project" and local.exists():
            local_before = _load(local)
            local_data = json.loads(json.dumps(local_before))
            if _drop_allowed(local_data, path):
                removed = True
            if local_data != local_before:
                if local_data:
                    _save(local, local_data)
                else:
                    local.unlink()
        elif _drop_allowed(data, path):
            removed = True
        if data != before:
            _save(path, data)
            removed = True
    return Installed(path, changed=remove_launcher(launcher_for(path)) or removed)
