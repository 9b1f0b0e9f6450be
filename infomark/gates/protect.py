"""Self-protection: tool calls that would let the agent grade itself through a side door.

The agent runs with the user's rights, so it could read the HMAC key, rewrite the journal,
switch the profile to ``observe``, remove the hooks, patch infomark itself, or run
``infomark record`` / ``infomark approve`` to mint evidence or approval. Checked here, in
every profile, never bypassable:

* a call whose classification has the family ``infomark`` (the agent running infomark
  itself) is denied;
* any path that *resolves* (symlinks, ``..``, ``/proc/*/cwd``, ``~``, case) into the ledger
  home is denied, read or write;
* a change to a protected file is held for the user (``ask``): every config source infomark
  reads (``infomark.toml``, ``infomark.yaml``/``.yml``, ``$INFOMARK_CONFIG``, the
  ``[tool.infomark]`` section of ``pyproject.toml``), the Claude Code settings files that
  carry the hooks, and infomark's own installation (its package and entry script);
* a shell command whose paths could not be resolved statically (``opaque``) is denied.

Shell paths come from the classifier (``Classification.paths``/``.opaque``: globs,
quotes, escapes, ``cd`` chains and substitutions it can evaluate, resolved against the
file system); file tools name theirs in the input. This is a speed bump, not a sandbox:
docs/security.md lists what a same-user process can still do.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from infomark.gates.decision import Decision
from infomark.gates.decision import Verdict as DecisionVerdict
from infomark.kernel.tools import Classification, normalise_tool_name

__all__ = ["config_sources", "guard_decision", "installation_paths", "protected", "resolve_path"]

Verdict = tuple[str, str, str]
_PATH_KEYS = (
    "file_path",
    "path",
    "notebook_path",
    "filePath",
    "target",
    "destination",
    "dir",
    "source",
    "file",
    "filename",
)
_CONFIG_NAMES = ("infomark.toml", "infomark.yaml", "infomark.yml")
_SETTINGS_NAMES = ("settings.json", "settings.local.json")
_PROC = re.compile(r"^/proc/(self|thread-self|\d+)/(cwd|root)(?=/|$)")
_PACKAGE = Path(__file__).resolve().parents[1]


def _key(path: str) -> str:
    """Compare paths the way a case-insensitive file system would (stricter on Linux)."""
    return os.path.normcase(path).casefold()


def resolve_path(path: str, cwd: Path) -> str:
    """What ``path`` names on the real file system, seen from ``cwd``."""
    path = os.path.expanduser(path.replace("$HOME", "~", 1) if path.startswith("$HOME") else path)
    m = _PROC.match(path)
    if m and m.group(1) in ("self", "thread-self"):  # the agent's own process: its cwd/root
        path = (str(cwd) if m.group(2) == "cwd" else "/") + path[m.end() :]
    p = Path(path)
    if not p.is_absolute():
        p = cwd / p
    try:
        return os.path.realpath(p)
    except (OSError, ValueError):
        return os.path.normpath(p)


def _within(path: str, base: str) -> bool:
    k, b = _key(path), _key(base)
    return k == b or k.startswith(b.rstrip(os.sep) + os.sep)


def config_sources(root: Path) -> list[str]:
    """Every file infomark reads its configuration from (resolved)."""
    names = [root / n for n in _CONFIG_NAMES]
    explicit = os.environ.get("INFOMARK_CONFIG")
    if explicit:
        names.append(Path(explicit))
    return [resolve_path(str(p), root) for p in names]


def installation_paths() -> list[str]:
    """infomark's own code: the package directory and the entry scripts that run it."""
    out = [str(_PACKAGE)]
    for candidate in (shutil.which("infomark"), str(Path(sys.executable).with_name("infomark"))):
        if candidate and os.path.exists(candidate):
            out.append(os.path.realpath(candidate))
    return out


def _settings(path: str) -> bool:
    p = Path(path)
    return p.name.casefold() in _SETTINGS_NAMES and p.parent.name.casefold() == ".claude"


def _file_paths(tool_input: Mapping[str, object]) -> list[str]:
    out = [v for k in _PATH_KEYS if isinstance(v := tool_input.get(k), str) and v]
    for key in ("paths", "files", "edits", "sources"):
        items = tool_input.get(key)
        for item in items if isinstance(items, list) else ():
            if isinstance(item, str) and item:
                out.append(item)
            elif isinstance(item, Mapping):
                out.extend(v for k in _PATH_KEYS if isinstance(v := item.get(k), str) and v)
    return out


def _section(text: str | None) -> object:
    """pyproject's ``[tool.infomark]`` as data; a marker when the text is not TOML."""
    if text is None:
        return None
    import tomllib

    try:
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return ("unparseable",)
    tool = doc.get("tool")
    return tool.get("infomark") if isinstance(tool, dict) else None


def _edited(tool: str, tool_input: Mapping[str, object], before: str | None) -> str | None:
    """The file text after a Write / Edit / MultiEdit, or None when it cannot be known."""
    name = tool.lower()
    if name in ("write", "writefile", "createfile", "create"):
        content = tool_input.get("content")
        return content if isinstance(content, str) else None
    if before is None:
        return None
    edits: list[object] = []
    if name in ("edit", "editfile", "strreplace", "strreplacebasededittool"):
        edits = [tool_input]
    elif name == "multiedit" and isinstance(listed := tool_input.get("edits"), list):
        edits = list(listed)
    else:
        return None
    text = before
    for edit in edits:
        if not isinstance(edit, Mapping):
            return None
        old, new = edit.get("old_string"), edit.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        text = text.replace(old, new) if edit.get("replace_all") else text.replace(old, new, 1)
    return text


def _pyproject_changed(tool: str, tool_input: Mapping[str, object], path: str) -> bool:
    try:
        before: str | None = Path(path).read_text("utf-8")
    except OSError:
        before = None
    except UnicodeDecodeError:
        return True
    after = _edited(tool, tool_input, before)
    if after is None:
        return True  # not a file tool we can replay: hold it
    return _section(before) != _section(after)


def _from_root(
    tool: str, tool_input: Mapping[str, object], c: Classification, root: Path
) -> Classification:
    """The shell classifier resolves paths against this process's cwd; the agent's shell
    starts in the project. When the two differ (the HTTP service, the Python API), the
    command is resolved again from the project root."""
    command = tool_input.get("command")
    if not isinstance(command, str) or normalise_tool_name(tool) not in _shell_tools():
        return c
    if os.path.realpath(os.getcwd()) == resolve_path(str(root), root):
        return c
    from infomark.gates.shell import classify_shell

    again = classify_shell(command, cwd=str(root))
    families = c.families + tuple(f for f in again.families if f not in c.families)
    paths = c.paths + tuple(p for p in again.paths if p not in c.paths)
    return replace(c, families=families, paths=paths, opaque=c.opaque or again.opaque)


def _shell_tools() -> frozenset[str]:
    from infomark.gates.classify import SHELL_TOOLS

    return SHELL_TOOLS


def _ask(code: str, reason: str) -> Verdict:
    return ("ask", code, reason + ": held for the user's approval (never bypassable)")


def protected(
    tool: str,
    tool_input: Mapping[str, object],
    classification: Classification,
    *,
    home: Path,
    root: Path,
    extra: Iterable[str] = (),
) -> Verdict | None:
    """``(verdict, code, reason)`` when the call touches infomark's own state, else None.

    ``extra``: more files whose changes are held (e.g. the host's transcript).
    """
    if "infomark" in classification.families:
        return (
            "deny",
            "protected_cli",
            "the agent may not run infomark itself (it would mint evidence or approval); "
            "only the runtime records evidence, and only the user approves",
        )
    home_r = resolve_path(str(home), root)
    shell = isinstance(tool_input.get("command"), str | list)
    classification = _from_root(tool, tool_input, classification, root)
    paths = [resolve_path(p, root) for p in _file_paths(tool_input)]
    paths += [resolve_path(p, root) for p in classification.paths]
    opaque = classification.opaque  # set by the shell classifier only
    for path in paths:
        if _within(path, home_r):
            return (
                "deny",
                "protected_home",
                f"{path} is inside the ledger home ({home_r}): the gatekeeper's key and journal "
                "are off-limits to the agent",
            )
    if opaque:
        return (
            "deny",
            "protected_opaque",
            "infomark cannot tell statically which files this command names (a variable or a "
            "command substitution), so it cannot rule out its own home or config; spell the "
            "paths out literally",
        )
    if not classification.tool_class.mutates:
        return None
    configs = {_key(p) for p in config_sources(root)}
    install = installation_paths()
    held = {_key(resolve_path(p, root)) for p in extra}
    for path in paths:
        k = _key(path)
        if k in configs:
            return _ask("protected_config", f"{path} configures infomark")
        if Path(path).name.casefold() == "pyproject.toml" and (
            shell or _pyproject_changed(tool, tool_input, path)
        ):
            return _ask(
                "protected_config",
                f"{path} may change [tool.infomark], infomark's configuration",
            )
        if _settings(path):
            return _ask("protected_config", f"{path} holds the Claude Code hook settings")
        if any(_within(path, base) for base in install):
            return _ask("protected_install", f"{path} is part of infomark's own installation")
        if k in held:
            return _ask("protected_transcript", f"{path} is the host's transcript")
    return None


def guard_decision(decision: Decision, verdict: str, code: str, reason: str) -> Decision:
    """Apply a :func:`protected` finding to a decision.

    Self-protection overrides an allow (and an ask, when it denies); it is never
    bypassable and holds in every profile, observe included.
    """
    if decision.decision is DecisionVerdict.DENY and verdict == "ask":
        return decision
    return replace(
        decision,
        decision=DecisionVerdict(verdict),
        code=code,
        reason=reason,
        bypass=False,
        dryrun=False,
    )
