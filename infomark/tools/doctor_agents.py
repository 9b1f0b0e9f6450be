"""``infomark doctor`` for the hosts of :mod:`infomark.tools.hosts` (Gemini CLI, Codex, OpenCode).

Per host, read-only: installed (the project's and the user's hook file), every event
mounted, the launcher beside the file able to start, and what the host itself needs before
it runs a project's hooks (Gemini CLI: a trusted folder; Codex: a trusted project, and each
hook trusted in ``/hooks``, which doctor cannot see). OpenCode's hooks are a plugin file,
not a hook file: doctor checks that it is infomark's, current, and that its launcher starts.
A host that is not installed is one ``info`` line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infomark.tools.doctor import Finding, config_object, read_json
from infomark.tools.hosts import HOST_MODULES
from infomark.tools.hosts.spec import HostSpec

__all__ = ["agent_findings"]


def _ours(spec: HostSpec, data: Any) -> set[str]:
    """The events of ``data`` (a hook file) that run infomark's hook for ``spec``."""
    mark = f" hook {spec.name}"
    hooks = data.get("hooks") if isinstance(data, dict) else None
    found: set[str] = set()
    for event, groups in (hooks or {}).items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            for h in group.get("hooks", []) if isinstance(group, dict) else ():
                command = h.get("command") if isinstance(h, dict) else None
                if isinstance(command, str) and (command.endswith(mark) or mark + " " in command):
                    found.add(str(event))
    return found


def _trust(spec: HostSpec, root: Path, user_home: Path) -> Finding | None:
    """What the host needs before it runs a project's hooks, when it is missing."""
    here = str(root.resolve())
    if spec.name == "gemini":
        data, _ = read_json(user_home / ".gemini" / "trustedFolders.json")
        trusted = isinstance(data, dict) and any(
            (here == k or here.startswith(k.rstrip("/") + "/"))
            and v in ("TRUST_FOLDER", "TRUST_PARENT")
            for k, v in data.items()
            if isinstance(k, str)
        )
        if trusted:
            return None
        return Finding(
            spec.name, "folder_trusted", "warning",
            f"{here} is not in ~/.gemini/trustedFolders.json: Gemini CLI runs no project hook "
            "in an untrusted folder",
            "trust the folder when Gemini CLI asks (or /permissions)",
        )  # fmt: skip
    if spec.name == "codex":
        import tomllib

        try:
            config = tomllib.loads((user_home / ".codex" / "config.toml").read_text("utf-8"))
        except (OSError, ValueError):
            config = {}
        level = (config.get("projects", {}).get(here) or {}).get("trust_level")
        if level == "trusted":
            return None
        return Finding(
            spec.name, "project_trusted", "warning",
            f"{here} is not a trusted project in ~/.codex/config.toml: Codex loads no "
            "project .codex/ layer (hooks included) for it",
            f'trust it when Codex asks, or add [projects."{here}"] trust_level = "trusted"',
        )  # fmt: skip
    return None


def _launcher(spec: HostSpec, path: Path) -> Finding:
    from infomark.kernel.errors import UserError
    from infomark.tools.launcher import launcher_for, read_launcher

    launcher = launcher_for(path)
    try:
        problems = read_launcher(launcher).problems()
    except UserError as exc:
        problems = [str(exc)]
    if problems:
        fix = f"`infomark install {spec.name}` (it rewrites the launcher)"
        why = f"{launcher} cannot start: " + "; ".join(problems)
        return Finding(spec.name, "launcher", "problem", why, fix)
    return Finding(spec.name, "launcher", "ok", f"{launcher} can start the hook")


#: what every plugin infomark writes registers (a plugin without one is stale or edited)
_OPENCODE_HOOKS = ('"tool.execute.before"', '"tool.execute.after"',
                   '"experimental.text.complete"', '"chat.message"',
                   '"experimental.chat.system.transform"')  # fmt: skip


def _opencode(spec: HostSpec, root: Path, user_home: Path) -> list[Finding]:
    from infomark.tools.hosts.opencode_plugin import MARK

    out: list[Finding] = []
    from infomark.tools.hosts.install import opencode_config_home

    files = [root / spec.config_dir / spec.config_file,
             opencode_config_home(user_home) / spec.config_file]  # fmt: skip
    found = False
    for path in files:
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not text.startswith(MARK):
            out.append(Finding(spec.name, "installed", "warning",
                               f"{path} is not infomark's plugin (another file has its name)",
                               f"move it away, then `infomark install {spec.name}`"))  # fmt: skip
            continue
        found = True
        out.append(Finding(spec.name, "installed", "ok", f"plugin {path}"))
        missing = [h.strip('"') for h in _OPENCODE_HOOKS if h not in text]
        if missing:
            fix = f"`infomark install {spec.name}` (it rewrites the plugin)"
            why = f"{path} does not register {', '.join(missing)}"
            out.append(Finding(spec.name, "hook_missing", "problem", why, fix))
        out.append(_launcher(spec, path))
    if not found and not out:
        return [Finding(spec.name, "installed", "info", "not installed (no infomark plugin found)")]
    if found:
        out.append(Finding(
            spec.name, "fails_closed", "info",
            "the plugin refuses a tool call when the hook crashes, times out or answers "
            "nothing readable; a finish is refused when a text of the answer ends, and an "
            "answer with no text only at session.idle, which `opencode run` never reaches",
        ))  # fmt: skip
    return out


def _host(spec: HostSpec, root: Path, user_home: Path) -> list[Finding]:
    if spec.name == "opencode":
        return _opencode(spec, root, user_home)
    out: list[Finding] = []
    files = [
        root / spec.config_dir / spec.config_file,
        user_home / spec.config_dir / spec.config_file,
    ]
    installed: dict[Path, set[str]] = {}
    for path in files:
        fix = f"fix {path}, then `infomark install {spec.name}`"
        data = config_object(path, out, spec.name, "settings_parse", "", fix)
        if data is None:
            continue
        events = _ours(spec, data)
        if events:
            installed[path] = events
    if not installed:
        return [Finding(spec.name, "installed", "info", "not installed (no infomark hooks found)")]
    for path, events in installed.items():
        out.append(Finding(spec.name, "installed", "ok", f"hooks in {path}"))
        missing = [e for e, _ in spec.install if e not in events]
        if missing:
            out.append(Finding(spec.name, "hook_missing", "problem",
                               f"{path} lacks infomark's {', '.join(missing)} hook",
                               f"`infomark install {spec.name}`"))  # fmt: skip
        out.append(_launcher(spec, path))
    if root / spec.config_dir / spec.config_file in installed:
        trust = _trust(spec, root, user_home)
        if trust is not None:
            out.append(trust)
    out.append(Finding(
        spec.name, "fails_open", "info",
        f"{spec.title} lets a call through when its hook crashes or times out (nothing "
        "configures it to block): the hook answers within 4 s and fails closed itself",
    ))  # fmt: skip
    if spec.name == "codex" and root / spec.config_dir / spec.config_file in installed:
        out += _codex_sandbox(root, user_home)
    if spec.name == "gemini":
        out += _gemini_sandbox(spec, installed, root, user_home)
    if spec.name == "codex":
        out.append(Finding(
            spec.name, "hooks_trusted", "info",
            "Codex runs a non-managed hook only once trusted in /hooks (recorded by its hash; "
            "a reinstall that changes the command needs trusting again): doctor cannot see it",
        ))  # fmt: skip
    return out


def _others_rewriting(spec: HostSpec, path: Path) -> list[str]:
    """Commands of other ``BeforeTool`` hooks in ``path`` that see ``run_shell_command``."""
    import re

    data, _error = read_json(path)
    groups = data.get("hooks", {}).get("BeforeTool") if isinstance(data, dict) else None
    out = []
    for group in groups if isinstance(groups, list) else []:
        if not isinstance(group, dict):
            continue
        matcher = group.get("matcher")
        try:
            sees = not matcher or re.search(str(matcher), "run_shell_command") is not None
        except re.error:
            sees = True
        for hook in (group.get("hooks") or []) if sees else []:
            command = hook.get("command") if isinstance(hook, dict) else None
            if isinstance(command, str) and f" hook {spec.name}" not in command:
                out.append(command)
    return out


def _gemini_sandbox(
    spec: HostSpec, installed: dict[Path, set[str]], root: Path, user_home: Path
) -> list[Finding]:
    """infomark's BeforeTool hook wraps Gemini CLI's shell commands in bubblewrap, and Gemini
    loads no project ``.env`` (one would run code in its shell, outside the sandbox)."""
    import os

    from infomark.tools import sandbox
    from infomark.tools.hosts.gemini_sandbox import env_stop_present, env_switch_on

    if not any("BeforeTool" in events for events in installed.values()):
        return []
    out = []
    env = {k: v for k, v in os.environ.items() if k.startswith("GEMINI_CLI_SYSTEM_")}
    if not env_switch_on(str(root), {**env, "HOME": str(user_home)}):
        out.append(Finding(
            spec.name, "local_env", "problem",
            "Gemini CLI's settings do not set advanced.ignoreLocalEnv: a .env the agent "
            "writes in the project is loaded into Gemini's environment at its next start "
            "(BASH_ENV runs code in its shell, outside infomark's sandbox), so the agent's "
            "own runs ground nothing (unsandboxed_run)",
            f"`infomark install {spec.name}` (and no advanced.ignoreLocalEnv: false in a "
            "settings file that overrides the project's)",
        ))  # fmt: skip
    elif not env_stop_present(str(root)):
        out.append(Finding(
            spec.name, "local_env", "problem",
            "the project has no .gemini/.env, so Gemini CLI goes on looking for one in the "
            "folders above the project, which the agent's commands may write (under /tmp or "
            "~/.cache): its BASH_ENV would run code outside infomark's sandbox, so the "
            "agent's own runs ground nothing (unsandboxed_run)",
            f"`infomark install {spec.name}` (it writes a comment-only .gemini/.env)",
        ))  # fmt: skip
    for path in installed:
        for command in _others_rewriting(spec, path):
            out.append(Finding(
                spec.name, "shell_rewrite", "warning",
                f"{path}: another BeforeTool hook sees run_shell_command ({command[:80]}): if it "
                "rewrites the command infomark wrapped, that run leaves infomark's sandbox and "
                "the session's own runs ground nothing from then on",
                "keep infomark's the only hook that rewrites run_shell_command",
            ))  # fmt: skip
    if sandbox.probe().backend is sandbox.SandboxBackend.BWRAP:
        out.append(Finding(spec.name, "shell_sandbox", "ok",
                           "infomark's BeforeTool hook runs Gemini CLI's shell commands in "
                           "bubblewrap (the ledger home hidden)"))  # fmt: skip
    else:
        out.append(Finding(
            spec.name, "shell_sandbox", "problem",
            "bubblewrap cannot run here: Gemini CLI's shell commands run unsandboxed, so in "
            "the enforcing profiles the agent's own runs ground nothing (unsandboxed_run)",
            "apt-get install -y bubblewrap (and allow unprivileged user namespaces)",
        ))  # fmt: skip
    return out


def _codex_sandbox(root: Path, user_home: Path) -> list[Finding]:
    """Codex's sandbox hides the ledger home only under infomark's permission profile."""
    import tomllib

    from infomark.tools.hosts.codex_sandbox import policy_state

    area, fix = "codex", "`infomark install codex` (with no sandbox_mode in any Codex config)"
    try:
        text = (root / ".codex" / "config.toml").read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    if policy_state(text) != "ours":
        return [Finding(area, "sandbox_profile", "warning",
                        "the project's .codex/config.toml does not select infomark's "
                        "permission profile: Codex's sandbox does not hide the ledger home",
                        fix)]  # fmt: skip
    try:
        user = tomllib.loads((user_home / ".codex" / "config.toml").read_text("utf-8"))
    except (OSError, ValueError):
        user = {}
    if "sandbox_mode" in user:
        return [Finding(area, "sandbox_profile", "warning",
                        "~/.codex/config.toml sets sandbox_mode, so Codex ignores every "
                        "permission profile, infomark's included", fix)]  # fmt: skip
    if (root / ".infomark").is_file():
        return [Finding(area, "sandbox_profile", "problem",
                        f"{root / '.infomark'} is a file (Codex's placeholder for a hidden "
                        "path that was missing): the hook has no home", fix)]  # fmt: skip
    return [
        Finding(
            area,
            "sandbox_profile",
            "ok",
            "Codex's sandbox hides the ledger home from the agent's commands",
        )
    ]


def agent_findings(root: Path, user_home: Path) -> list[Finding]:
    """Every host of :data:`~infomark.tools.hosts.HOST_MODULES`, in order."""
    from infomark.tools.hosts.core import load_spec

    out: list[Finding] = []
    for name in HOST_MODULES:
        out += _host(load_spec(name), root, user_home)
    return out
