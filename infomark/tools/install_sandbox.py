"""Claude Code's own Bash sandbox, configured by ``infomark install claude-code`` (issue 27).

Claude Code 2.1.328 runs every Bash command in bubblewrap (Linux) or Seatbelt (macOS) when its
settings say so. The keys, read from the pinned binary's settings schema:

* ``sandbox.enabled`` — run Bash commands inside the sandbox;
* ``sandbox.failIfUnavailable`` — exit at start-up when the sandbox cannot start (instead of a
  warning and unsandboxed commands);
* ``sandbox.allowUnsandboxedCommands: false`` — "the dangerouslyDisableSandbox parameter is
  completely ignored and all commands must run sandboxed";
* ``sandbox.filesystem.denyRead`` / ``denyWrite`` / ``allowWrite`` — absolute paths, ``~``
  expanded, or relative to the project root for project settings. The project (the working
  directory) is writable by default and everything else read-only.

infomark writes the policy of :func:`infomark.tools.agent_sandbox.agent_paths` there: the
private paths in ``denyRead``, the hook launcher, the hook settings, infomark's configuration
and the hook's whole Python environment in ``denyWrite``. The user's own values are kept:
list entries are added, and a switch infomark sets remembers its previous value. What was
added is recorded beside the settings (``.claude/infomark-sandbox.json``) so that
``--uninstall`` removes exactly that and puts the switches back.

Claude Code's file tools (Read, Edit, Write) are not in its OS sandbox: the hook's path checks
(:mod:`infomark.gates.protect`) cover them.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infomark.kernel.errors import UserError

__all__ = [
    "RECORD_NAME",
    "SWITCHES",
    "add_sandbox",
    "check_root",
    "missing_tools",
    "remove_sandbox",
    "sandbox_settings",
    "sandbox_warning",
    "save_record",
]

RECORD_NAME = "infomark-sandbox.json"
#: The switches infomark sets, and the value it needs.
SWITCHES: Mapping[str, bool] = {
    "enabled": True,
    "failIfUnavailable": True,
    "allowUnsandboxedCommands": False,
}
_LISTS = ("denyRead", "denyWrite", "allowWrite")
_ABSENT = "<absent>"


def sandbox_settings(root: Path, home: Path) -> dict[str, Any]:
    """The ``sandbox`` object infomark needs for ``root`` with the ledger in ``home``."""
    from infomark.tools.agent_sandbox import agent_paths  # not on the hook's start-up path

    paths = agent_paths(home, root)
    root_r = os.path.realpath(root)
    claude = os.path.join(root_r, ".claude")  # what the installer itself writes there
    installed = {os.path.join(claude, "infomark-hook"), os.path.join(claude, "settings.json")}
    return {
        **SWITCHES,
        "filesystem": {
            "denyRead": list(paths.hidden),
            # inside the project only what exists (or the installer writes): for a path that is
            # not there Claude Code's bubblewrap makes a mount point around every command
            "denyWrite": [
                p
                for p in paths.read_only
                if os.path.lexists(p) or not _inside(p, root_r) or p in installed
            ],
            # the user's caches, as in `infomark run` (pip, npm); the project is writable
            # already, and the scratch directories Claude Code manages itself
            "allowWrite": [p for p in paths.writable if p != root_r and p.startswith(_user())],
        },
    }


def check_root(root: Path) -> None:
    """Refuse a project Claude Code's sandbox cannot run commands in: one under ``/dev``
    (its bubblewrap mounts a fresh ``/dev``, so the project would not be there)."""
    real = os.path.realpath(root)
    if real == "/dev" or real.startswith("/dev/"):
        raise UserError(
            f"the project {real} is under /dev, which Claude Code's Bash sandbox replaces with "
            "its own: no command could run there. Move the project elsewhere, or install with "
            "--no-sandbox (the agent's programs can then read the key); nothing was changed"
        )


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _user() -> str:
    return os.path.expanduser("~")


def missing_tools() -> list[str]:
    """What Claude Code's Linux sandbox needs and this machine lacks (bwrap, socat)."""
    if not sys.platform.startswith("linux"):
        return []
    return [name for name in ("bwrap", "socat") if shutil.which(name) is None]


def _record_path(settings: Path) -> Path:
    return settings.parent / RECORD_NAME


def add_sandbox(data: dict[str, Any], settings: Path, ours: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``ours`` into ``data["sandbox"]``; return the record of what was added (to be
    saved with :func:`save_record`). The user's list entries and other keys stay."""
    box = data.setdefault("sandbox", {})
    if not isinstance(box, dict):
        raise UserError(f"{settings}: 'sandbox' must be an object; nothing was changed")
    fs = box.setdefault("filesystem", {})
    if not isinstance(fs, dict):
        raise UserError(f"{settings}: 'sandbox.filesystem' must be an object; nothing was changed")
    previous = _read_record(settings).get("previous", {})
    switches: dict[str, Any] = {}
    for key, value in SWITCHES.items():
        before = previous.get(key, box.get(key, _ABSENT))
        switches[key] = before
        box[key] = value
    added: dict[str, list[str]] = {}
    for key in _LISTS:
        have = fs.get(key, [])
        if not isinstance(have, list):
            raise UserError(
                f"{settings}: 'sandbox.filesystem.{key}' must be a list; nothing was changed"
            )
        new = [p for p in ours["filesystem"][key] if p not in have]
        kept = [p for p in _read_record(settings).get("added", {}).get(key, []) if p in have]
        fs[key] = have + new
        if new or kept:
            added[key] = kept + new
        if not fs[key]:
            del fs[key]
    if not fs:
        del box["filesystem"]
    return {"format": 1, "previous": switches, "added": added}


def _read_record(settings: Path) -> dict[str, Any]:
    try:
        data = json.loads(_record_path(settings).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_record(settings: Path, record: Mapping[str, Any]) -> bool:
    """Write the record beside ``settings``; False when it was there already."""
    path = _record_path(settings)
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    try:
        if path.read_text("utf-8") == text:
            return False
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, path)
    return True


def remove_sandbox(data: dict[str, Any], settings: Path) -> tuple[dict[str, Any], bool]:
    """Take out what the record says infomark added; put the switches back. Returns the
    settings and whether a record was there (it is deleted)."""
    record = _read_record(settings)
    path = _record_path(settings)
    if not record:
        return data, False
    box = data.get("sandbox")
    if isinstance(box, dict):
        for key, before in record.get("previous", {}).items():
            if box.get(key) != SWITCHES.get(key):
                continue  # the user changed it since: theirs now
            if before == _ABSENT:
                box.pop(key, None)
            else:
                box[key] = before
        fs = box.get("filesystem")
        if isinstance(fs, dict):
            for key, entries in record.get("added", {}).items():
                have = fs.get(key)
                if isinstance(have, list):
                    fs[key] = [p for p in have if p not in entries]
                    if not fs[key]:
                        del fs[key]
            if not fs:
                del box["filesystem"]
        if not box:
            del data["sandbox"]
    path.unlink(missing_ok=True)
    return data, True


def sandbox_warning(root: str | os.PathLike[str]) -> str:
    """A warning for the SessionStart context when the project's Claude Code settings do not
    turn on the Bash sandbox as infomark needs it (empty when they do)."""
    box: Any = None
    for name in ("settings.local.json", "settings.json"):
        try:
            data = json.loads((Path(root) / ".claude" / name).read_text("utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("sandbox"), dict):
            box = {**data["sandbox"], **(box or {})}
    wrong = [k for k, v in SWITCHES.items() if not isinstance(box, dict) or box.get(k) != v]
    if not wrong:
        return ""
    return (
        "infomark WARNING: Claude Code's Bash sandbox is not on as infomark needs it ("
        + ", ".join(f"sandbox.{k}" for k in wrong)
        + "): a program run from Bash could read infomark's key and forge its evidence. Ask the "
        "user to run `infomark install claude-code` (and `apt-get install -y bubblewrap socat`)."
    )
