"""``infomark doctor``: is the agent's OS sandbox there, and is any secret in the agent's view?

* ``sandbox``: whether a sandbox runs here (bubblewrap, or Landlock in its place), and if not
  why and how to fix it — without one, ``infomark run`` refuses the agent's shell commands in
  the ``ledger`` and ``strict`` profiles;
* ``claude_sandbox``: where infomark's hooks are installed for Claude Code, that its Bash
  sandbox is on with infomark's switches, and that its Linux helpers (bwrap, socat) exist;
* ``operator_token_visible``: an operator token the agent could see — an
  ``--operator-token-file`` path on a running command line (``/proc/*/cmdline``, what ``ps``
  shows), such a file outside the places the sandbox hides, or ``$INFOMARK_OPERATOR_TOKEN`` in
  the environment the agent inherits.

Read-only.
"""

from __future__ import annotations

import os
from pathlib import Path

from infomark.tools.agent_sandbox import private_paths
from infomark.tools.doctor import Finding, read_json
from infomark.tools.install_sandbox import SWITCHES, missing_tools
from infomark.tools.operator_token import OPERATOR_TOKEN_ENV

__all__ = ["sandbox_findings", "token_command_lines"]

_FLAG = "--operator-token-file"


def _status_finding() -> Finding:
    from infomark.tools import sandbox

    status = sandbox.probe()
    if status.backend is sandbox.SandboxBackend.BWRAP:
        return Finding("sandbox", "sandbox", "ok", "the agent's commands run in bubblewrap")
    if status.available:  # Landlock in bubblewrap's place: say what it does not do
        return Finding("sandbox", "sandbox", "warning", status.detail, status.fix)
    return Finding(
        "sandbox",
        "sandbox",
        "problem",
        f"no OS sandbox can run here ({status.detail}): a program the agent writes could read "
        "the key and mint evidence; `infomark run` refuses the agent's shell commands in the "
        "ledger and strict profiles, and under a host's hook the agent's own runs ground "
        "nothing in the enforcing profiles (unsandboxed_run)",
        status.fix,
    )


def _claude_findings(root: Path) -> list[Finding]:
    settings = root / ".claude" / "settings.json"
    data, _err = read_json(settings)
    if not isinstance(data, dict) or "infomark" not in str(data.get("hooks", "")):
        return []
    box = data.get("sandbox")
    box = box if isinstance(box, dict) else {}
    wrong = [k for k, v in SWITCHES.items() if box.get(k) != v]
    out = []
    if wrong:
        out.append(
            Finding(
                "claude-code",
                "claude_sandbox",
                "problem",
                f"{settings}: Claude Code's Bash sandbox is not set as infomark needs it "
                f"({', '.join(f'sandbox.{k}' for k in wrong)}): the agent's commands can read "
                "the ledger home, so in the enforcing profiles its own runs ground nothing "
                "(unsandboxed_run)",
                "re-run `infomark install claude-code`",
            )
        )
    else:
        out.append(
            Finding("claude-code", "claude_sandbox", "ok", "Claude Code's Bash sandbox is on")
        )
    missing = missing_tools()
    if missing and not wrong:
        out.append(
            Finding(
                "claude-code",
                "claude_sandbox_tools",
                "problem",
                f"Claude Code's Linux sandbox needs {' and '.join(missing)}: it will refuse to "
                "start (sandbox.failIfUnavailable)",
                "apt-get install -y bubblewrap socat",
            )
        )
    return out


def token_command_lines(proc: Path = Path("/proc")) -> list[tuple[int, str]]:
    """``(pid, file)`` for every running process whose command line names an operator token
    file (``--operator-token-file FILE`` or ``--operator-token-file=FILE``)."""
    found = []
    try:
        entries = [e for e in os.listdir(proc) if e.isdigit()]
    except OSError:
        return []
    for pid in entries:
        try:
            argv = (proc / pid / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode("utf-8", "replace") for a in argv]
        for i, word in enumerate(words):
            if word == _FLAG and i + 1 < len(words):
                found.append((int(pid), words[i + 1]))
            elif word.startswith(_FLAG + "="):
                found.append((int(pid), word.split("=", 1)[1]))
    return found


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _token_findings(home: Path, env: dict[str, str]) -> list[Finding]:
    out = []
    hidden = private_paths(home, environ=env)
    for pid, name in token_command_lines():
        real = os.path.realpath(name)
        exposed = "" if _under(real, hidden) else ", and the agent's sandbox does not hide it"
        out.append(
            Finding(
                "service",
                "operator_token_visible",
                "problem" if exposed else "warning",
                f"process {pid} names the operator token file {name} on its command line "
                f"(`ps` shows it to every process of this user){exposed}",
                "restart the service with `infomark serve --operator-token-fd 3 "
                "3<~/.config/infomark/operator-token`, or move the token to "
                "~/.config/infomark/operator-token (read by default, hidden by the sandbox)",
            )
        )
    if env.get(OPERATOR_TOKEN_ENV):
        out.append(
            Finding(
                "service",
                "operator_token_visible",
                "problem",
                f"${OPERATOR_TOKEN_ENV} is set in this environment: every program started from "
                "it, the agent's tools included, can read it",
                f"unset {OPERATOR_TOKEN_ENV} here; set it only on the `infomark serve` command, "
                "which removes it once read",
            )
        )
    return out


def sandbox_findings(home: Path, root: Path, env: dict[str, str] | None = None) -> list[Finding]:
    """The sandbox's status, Claude Code's sandbox settings, and operator tokens in view."""
    environ = dict(os.environ) if env is None else env
    return [_status_finding(), *_claude_findings(root), *_token_findings(home, environ)]
