"""``infomark install gemini|codex|opencode``: merge infomark's hooks into the host's hook file.

The same rules as ``infomark install claude-code`` (:mod:`infomark.tools.install`): other
hooks and settings are kept, a second install changes nothing, ``--uninstall`` removes only
infomark's entries and the launcher, an unreadable file is an error and is left as it was.
The hook command runs the isolated launcher written beside the file
(:mod:`infomark.tools.launcher`). For a project install the command names it through the
variable the host expands to the project directory (Gemini CLI: ``$GEMINI_PROJECT_DIR``), so
the file holds no absolute path of this clone: a teammate who runs ``infomark install`` in
their own clone gets their own launcher, and the committed file works for both.

OpenCode has no hook file: its hooks are a plugin, which OpenCode finds by itself in
``.opencode/plugins/`` (``~/.config/opencode/plugins/`` for the user), so the user's
``opencode.json`` is never touched. The plugin (:mod:`infomark.tools.hosts.opencode_plugin`)
finds the launcher beside its own file.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from infomark.kernel.errors import UserError
from infomark.tools.hosts.spec import HostSpec
from infomark.tools.install import Installed, _load, _save, _strip
from infomark.tools.launcher import (
    hook_prefix,
    launcher_for,
    remove_launcher,
    render,
    write_launcher,
)

__all__ = ["host_settings_path", "install_host", "opencode_config_home", "uninstall_host"]


def opencode_config_home(user_home: Path) -> Path:
    """OpenCode's global config directory: ``$XDG_CONFIG_HOME/opencode`` (xdg-basedir),
    else ``~/.config/opencode``."""
    import os

    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else user_home / ".config"
    return base / "opencode"


def host_settings_path(spec: HostSpec, scope: str, root: Path) -> Path:
    if scope == "user" and spec.name == "opencode":
        return opencode_config_home(Path.home()) / spec.config_file
    if scope == "user":
        return Path.home() / spec.config_dir / spec.config_file
    if scope == "project":
        return root / spec.config_dir / spec.config_file
    raise UserError(f"unknown scope {scope!r}; use project or user")


def _marker(spec: HostSpec) -> str:
    return f" hook {spec.name}"


def _ours(spec: HostSpec) -> Any:
    mark = _marker(spec)

    def ours(handler: Any) -> bool:
        command = handler.get("command") if isinstance(handler, dict) else None
        return isinstance(command, str) and (command.endswith(mark) or mark + " " in command)

    return ours


def hook_command(spec: HostSpec, path: Path, scope: str, home: Path | None) -> str:
    """The command the host runs: the launcher beside ``path``, then ``hook <host>``."""
    launcher = launcher_for(path)
    prefix = hook_prefix(launcher.absolute())
    if (
        scope == "project"
        and spec.project_dir_var
        and prefix == shlex.quote(str(launcher.absolute()))
    ):
        prefix = f"{spec.project_dir_var}/{spec.config_dir}/{launcher.name}"
    command = prefix + _marker(spec)
    if home is not None:
        command += " --home " + shlex.quote(str(home.resolve()))
    return command


def install_host(
    spec: HostSpec, *, scope: str = "project", root: Path, home: Path | None = None
) -> Installed:
    """Add infomark's hooks for ``spec``'s host; idempotent (``changed`` False the 2nd time)."""
    path = host_settings_path(spec, scope, root)
    if spec.name == "opencode":
        return _install_plugin(spec, path, home)
    before = _load(path)
    data = _strip(json.loads(json.dumps(before)), _ours(spec))
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UserError(f"{path}: 'hooks' must be an object; nothing was changed")
    text = render()  # before anything is written: an interpreter it cannot name is an error
    entry = {"type": "command", "command": hook_command(spec, path, scope, home),
             "timeout": spec.timeout}  # fmt: skip
    if spec.name == "gemini":
        entry["name"] = "infomark"
    for event, matcher in spec.install:
        group: dict[str, Any] = {"hooks": [dict(entry)]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise UserError(f"{path}: hooks.{event} must be a list; nothing was changed")
        groups.append(group)
    recorded = False
    if spec.name == "gemini":  # no project .env in Gemini's environment (gemini_sandbox.py)
        from infomark.tools.hosts.gemini_sandbox import add_env_switch

        recorded = add_env_switch(data, path)
    wrote = write_launcher(launcher_for(path), text) or recorded
    if spec.name == "codex" and scope == "project":  # Codex's own sandbox hides the home
        from infomark.tools.hosts.codex_sandbox import write_policy

        wrote = write_policy(root, home)[0] or wrote
    if path.exists() and data == before:
        return Installed(path, changed=wrote)
    _save(path, data)
    return Installed(path, changed=True)


def uninstall_host(spec: HostSpec, *, scope: str = "project", root: Path) -> Installed:
    """Remove only infomark's entries for ``spec``'s host, then its launcher."""
    path = host_settings_path(spec, scope, root)
    removed = False
    if spec.name == "opencode":
        removed = _remove_plugin(path)
        return Installed(path, changed=remove_launcher(launcher_for(path)) or removed)
    if path.exists():
        before = _load(path)
        data = _strip(json.loads(json.dumps(before)), _ours(spec))
        if spec.name == "gemini":
            from infomark.tools.hosts.gemini_sandbox import remove_env_switch

            removed = remove_env_switch(data, path)
        if data != before:
            _save(path, data)
            removed = True
    if spec.name == "codex" and scope == "project":
        from infomark.tools.hosts.codex_sandbox import remove_policy

        removed = remove_policy(root) or removed
    return Installed(path, changed=remove_launcher(launcher_for(path)) or removed)


def _install_plugin(spec: HostSpec, path: Path, home: Path | None) -> Installed:
    """Write the OpenCode plugin and its launcher; a file of the user's at ``path`` is an error."""
    from infomark.tools.hosts.opencode_plugin import MARK, render_plugin
    from infomark.tools.launcher import _shebang_ok

    try:
        before: str | None = path.read_text("utf-8")
    except FileNotFoundError:
        before = None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read it ({exc}); nothing was changed") from exc
    if before is not None and not before.startswith(MARK):
        raise UserError(f"{path} is not infomark's plugin; move it away, nothing was changed")
    text = render()  # before anything is written: an interpreter it cannot name is an error
    import sys

    python = None if _shebang_ok(sys.executable) else sys.executable
    extra = ["--home", str(home.resolve())] if home is not None else []
    plugin = render_plugin(python=python, extra=extra, timeout=spec.timeout)
    wrote = write_launcher(launcher_for(path), text)
    if before == plugin:
        return Installed(path, changed=wrote)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(plugin, encoding="utf-8")
    tmp.replace(path)
    return Installed(path, changed=True)


def _remove_plugin(path: Path) -> bool:
    """Remove the plugin at ``path`` if infomark wrote it; whether it did."""
    from infomark.tools.hosts.opencode_plugin import MARK

    try:
        if not path.read_text("utf-8").startswith(MARK):
            return False
    except (OSError, UnicodeDecodeError):
        return False
    path.unlink(missing_ok=True)
    return True
