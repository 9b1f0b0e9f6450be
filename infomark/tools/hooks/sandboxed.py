"""Do the agent's own commands run in an OS sandbox? Asked by the hook at a session's start.

infomark cannot see inside the host; it reads what decides it (issue 27):

* **Claude Code**: the effective ``sandbox`` settings (managed, then the project's
  ``settings.local.json`` and ``settings.json``, then the user's) carry infomark's three
  switches (``enabled``, ``failIfUnavailable``, ``allowUnsandboxedCommands: false``), and on
  Linux bubblewrap and socat are there and bubblewrap really starts (probed once, the answer
  kept in the home: ``sandbox-probe.json``, keyed by the binary, the kernel and the user
  namespace switches). A ``--settings`` file given on Claude Code's command line is not seen.
* **Codex**: the project's ``.codex/config.toml`` selects infomark's permission profile, no
  user configuration picks another sandbox, and the home is inside the project (the profile
  hides ``<project>/.infomark``); on Linux bubblewrap starts.
* **Gemini CLI**: on Linux, when bubblewrap starts and the settings set
  ``advanced.ignoreLocalEnv`` (no project ``.env`` in Gemini's environment). infomark's own
  ``BeforeTool`` hook wraps every shell command in infomark's sandbox
  (:mod:`infomark.tools.hosts.gemini_sandbox`); a command that ran unwrapped turns the
  session's answer to "no" (checked at ``AfterTool``).
* **OpenCode** (and any other host): never. infomark configures no sandbox of theirs, so
  nothing hides the home from the agent's commands.

The answer goes into the journal (``Gatekeeper.record_sandbox``); in an enforcing profile an
agent's own run made while the answer is "no" grounds nothing (``unsandboxed_run``).
Standard library only: read at SessionStart and at a session's first decision.
"""

from __future__ import annotations

import os
import sys

from infomark.kernel import jsonc
from infomark.kernel.records import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from _typeshed import StrPath

__all__ = [
    "PROBE_FILE",
    "WARNED_CURSOR",
    "AgentSandbox",
    "agent_sandbox",
    "bwrap_usable",
    "warning",
]

PROBE_FILE = "sandbox-probe.json"
#: the session cursor holding the unsandboxed span the first decision in it named (said once)
WARNED_CURSOR = "sandbox_warned"
_PROBE_TTL = 24 * 3600.0
#: the switches infomark sets in Claude Code's settings, and the value it needs
#: (:data:`infomark.tools.install_sandbox.SWITCHES`, held equal by a test)
CLAUDE_SWITCHES: Mapping[str, bool] = {
    "enabled": True,
    "failIfUnavailable": True,
    "allowUnsandboxedCommands": False,
}
_USERNS = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
)
_MANAGED = {
    "linux": "/etc/claude-code/managed-settings.json",
    "darwin": "/Library/Application Support/ClaudeCode/managed-settings.json",
}


@dataclass(frozen=True, slots=True)
class AgentSandbox:
    """Whether the agent's commands run sandboxed on ``host``; if not, why and the fix."""

    sandboxed: bool
    host: str
    detail: str
    fix: str = ""


def _claude_box(root: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """The effective ``sandbox`` switches: the highest-precedence file that sets each."""
    user_dir = environ.get("CLAUDE_CONFIG_DIR") or os.path.join(
        environ.get("HOME") or os.path.expanduser("~"), ".claude"
    )
    files = [  # lowest precedence first
        os.path.join(user_dir, "settings.json"),
        os.path.join(root, ".claude", "settings.json"),
        os.path.join(root, ".claude", "settings.local.json"),
    ]
    managed = _MANAGED.get(sys.platform)
    if managed:
        files.append(managed)
    box: dict[str, Any] = {}
    for path in files:
        data = jsonc.load_path(path)
        if isinstance(data, dict) and isinstance(data.get("sandbox"), dict):
            box.update({k: v for k, v in data["sandbox"].items() if k in CLAUDE_SWITCHES})
    return box


def _probe_key(exe: str) -> list[Any]:
    st = os.stat(exe)
    switches: list[str | None] = []
    for path in _USERNS:
        try:
            with open(path, encoding="ascii") as f:
                switches.append(f.read().strip())
        except OSError:
            switches.append(None)
    return [os.path.realpath(exe), st.st_mtime_ns, st.st_size, os.uname().release,
            os.getuid(), switches]  # fmt: skip


def bwrap_usable(home: StrPath, *, now: float | None = None) -> tuple[bool, str, str]:
    """``(usable, detail, fix)`` for bubblewrap here: the answer kept in ``home`` while the
    binary, the kernel and the user-namespace switches are the same (and for a day), else
    probed again (one ``bwrap … true``: :func:`infomark.tools.sandbox.probe_bwrap`)."""
    import shutil
    import time

    exe = shutil.which("bwrap")
    if exe is None:
        return False, "bubblewrap (bwrap) is not installed", "apt-get install -y bubblewrap"
    at = time.time() if now is None else now
    path = os.path.join(home, PROBE_FILE)
    try:
        key = _probe_key(exe)
    except OSError as exc:
        return False, f"bwrap cannot be read: {exc.strerror}", "reinstall bubblewrap"
    kept = jsonc.load_path(path)
    if (
        isinstance(kept, dict)
        and kept.get("key") == key
        and isinstance(kept.get("at"), float)
        and 0 <= at - kept["at"] < _PROBE_TTL
    ):
        return bool(kept.get("usable")), str(kept.get("detail")), str(kept.get("fix"))
    from infomark.tools.sandbox import probe_bwrap

    status = probe_bwrap()
    record = {"key": key, "at": at, "usable": status.available, "detail": status.detail,
              "fix": status.fix}  # fmt: skip
    try:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(jsonc.dumps(record))
        os.replace(tmp, path)
    except OSError:
        pass  # a home that cannot be written: probed again next time
    return status.available, status.detail, status.fix


def _linux_bwrap(host: str, home: StrPath, *, socat: bool) -> AgentSandbox | None:
    if not sys.platform.startswith("linux"):
        return None
    import shutil

    if socat and shutil.which("socat") is None:
        return AgentSandbox(
            False, host, "socat, which Claude Code's Linux sandbox needs, is not installed",
            "apt-get install -y bubblewrap socat, then restart the agent",
        )  # fmt: skip
    usable, detail, fix = bwrap_usable(home)
    if not usable:
        return AgentSandbox(False, host, detail, f"{fix}, then restart the agent")
    return None


def _claude(root: str, home: StrPath, environ: Mapping[str, str]) -> AgentSandbox:
    box = _claude_box(root, environ)
    wrong = [k for k, v in CLAUDE_SWITCHES.items() if box.get(k) is not v]
    if wrong:
        return AgentSandbox(
            False,
            "claude-code",
            "Claude Code's settings do not turn its Bash sandbox on as infomark needs it ("
            + ", ".join(f"sandbox.{k}" for k in wrong)
            + ")",
            "run `infomark install claude-code` in the project (without --no-sandbox) and "
            "restart Claude Code",
        )
    found = _linux_bwrap("claude-code", home, socat=True)
    if found is not None:
        return found
    return AgentSandbox(True, "claude-code", "Claude Code's Bash sandbox is on")


def _codex(root: str, home: StrPath, environ: Mapping[str, str]) -> AgentSandbox:
    import tomllib

    from infomark.tools.hosts.codex_sandbox import policy_state

    fix = "run `infomark install codex` in the project, with the home inside it, and restart Codex"
    try:
        with open(os.path.join(root, ".codex", "config.toml"), encoding="utf-8") as f:
            state = policy_state(f.read())
    except (OSError, UnicodeDecodeError):
        state = "absent"
    if state != "ours":
        why = "another sandbox" if state == "theirs" else "no sandbox profile"
        return AgentSandbox(
            False, "codex", f"the project's .codex/config.toml selects {why}, not infomark's", fix
        )
    user = os.path.join(
        environ.get("CODEX_HOME")
        or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".codex"),
        "config.toml",
    )
    try:
        with open(user, "rb") as fb:
            data = tomllib.load(fb)
    except (OSError, ValueError):
        data = {}
    if "sandbox_mode" in data:
        return AgentSandbox(
            False, "codex", f"{user} sets sandbox_mode, so Codex ignores infomark's profile",
            f"remove sandbox_mode from {user} and restart Codex",
        )  # fmt: skip
    real_home, real_root = os.path.realpath(home), os.path.realpath(root)
    if not real_home.startswith(real_root.rstrip("/") + "/"):
        return AgentSandbox(
            False, "codex", f"the ledger home {real_home} is outside the project, which "
            "infomark's Codex profile cannot hide", "keep the home in the project (.infomark)",
        )  # fmt: skip
    found = _linux_bwrap("codex", home, socat=False)
    if found is not None:
        return found
    return AgentSandbox(True, "codex", "Codex's sandbox runs with infomark's permission profile")


def _gemini(root: str, home: StrPath, environ: Mapping[str, str]) -> AgentSandbox:
    from infomark.tools.hosts.gemini_sandbox import env_stop_present, env_switch_on

    if not env_switch_on(root, environ) or not env_stop_present(root):
        return AgentSandbox(
            False, "gemini", "Gemini CLI's settings do not set advanced.ignoreLocalEnv, or the "
            "project has no .gemini/.env, so a .env the agent's commands write in the project "
            "or a folder above it (BASH_ENV=…) runs code in the shell Gemini starts, outside "
            "infomark's sandbox",
            "run `infomark install gemini` in the project and restart Gemini CLI",
        )  # fmt: skip
    if not sys.platform.startswith("linux"):
        return AgentSandbox(
            False, "gemini", "infomark wraps Gemini CLI's shell commands in bubblewrap, which "
            "runs on Linux only", "run the agent under `infomark run` (its shell is sandboxed)",
        )  # fmt: skip
    found = _linux_bwrap("gemini", home, socat=False)
    if found is not None:
        return found
    return AgentSandbox(
        True, "gemini", "infomark's BeforeTool hook runs each shell command in infomark's sandbox"
    )


def agent_sandbox(
    host: str, root: StrPath, home: StrPath, environ: Mapping[str, str] | None = None
) -> AgentSandbox:
    """Whether ``host`` runs the agent's commands in an OS sandbox for project ``root``."""
    env = os.environ if environ is None else environ
    root_s = os.fspath(root)
    if host == "claude-code":
        return _claude(root_s, home, env)
    if host == "codex":
        return _codex(root_s, home, env)
    if host == "gemini":
        return _gemini(root_s, home, env)
    return AgentSandbox(
        False,
        host,
        f"infomark does not configure {host}'s own sandbox, so the agent's commands can "
        "reach the ledger home",
        "run the agent under `infomark run` (its shell is sandboxed), or use Claude Code, "
        "Codex or Gemini CLI as installed by `infomark install`",
    )


def warning(status: AgentSandbox, *, enforcing: bool) -> str:
    """The loud text for the model and the user when the agent's commands are unsandboxed."""
    if status.sandboxed:
        return ""
    effect = (
        "so in this profile your own runs (Bash, scripts, tests) ground nothing: a stamp on "
        "their evidence is refused (unsandboxed_run); `infomark check <claim>` still runs an "
        "oracle in infomark's own sandbox"
        if enforcing
        else "(the observe profile refuses nothing)"
    )
    return (
        f"infomark WARNING: the agent's commands are NOT sandboxed ({status.detail}): a program "
        f"run from the shell could read infomark's key and forge its evidence, {effect}. "
        f"Fix (ask the user): {status.fix}."
    )
