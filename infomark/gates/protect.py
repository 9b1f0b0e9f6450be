"""Self-protection: tool calls that would let the agent grade itself through a side door.

The agent runs with the user's rights, so it could read the HMAC key, rewrite the journal,
switch the profile to ``observe``, remove the hooks, patch infomark itself, or run
``infomark record`` / ``infomark approve`` to mint evidence or approval. Checked here, in
every profile, never bypassable:

* a call whose classification has the family ``infomark`` (the agent running infomark
  itself) is denied;
* any path that *resolves* (symlinks, ``..``, ``/proc/*/cwd``, ``~``, case) into the ledger
  home is denied, read or write; so is a recursive walk (``grep -r``, ``tar c``, ``cp -r``,
  ``chmod -R`` …, :class:`~infomark.kernel.tools.Walk`) whose root holds the home unless it
  provably skips it, or that follows a symlink into it (:mod:`infomark.gates.reach`);
* a change of the host's transcript (``extra``: Claude Code's ``transcript_path``, which
  witnesses the journal), or of a directory holding it but not the project, is denied;
* a change to a protected file is held for the user (``ask``): every config source infomark
  reads (``infomark.toml``, ``infomark.yaml``/``.yml``, ``$INFOMARK_CONFIG``, the
  ``[tool.infomark]`` section of ``pyproject.toml``), the Claude Code settings files that
  carry the hooks, and infomark's own installation (its package and entry script);
* a shell command whose paths could not be resolved statically (``opaque``) is denied.

Shell paths come from the classifier (``Classification.paths``/``.opaque``/``.walks``:
globs, quotes, escapes, ``cd`` chains and substitutions it can evaluate, resolved against the
file system from the session's cwd when the host gives it); file tools name theirs in the
input. This is a speed bump, not a sandbox:
docs/security.md lists what a same-user process can still do.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping

from infomark.gates.decision import Decision
from infomark.gates.decision import Verdict as DecisionVerdict
from infomark.gates.reach import reaches
from infomark.kernel.decisions import DecisionCode
from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.paths import pure_name, pure_parent_name, pure_parts
from infomark.kernel.records import replace
from infomark.kernel.regular import read_regular
from infomark.kernel.tools import Classification, Walk, normalise_tool_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _typeshed import StrPath

__all__ = [
    "config_sources",
    "guard_decision",
    "installation_paths",
    "protected",
    "resolve_path",
    "session_cwd",
]

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
_COMMAND_KEYS = ("command", "cmd", "script", "shell_command", "commandLine", "command_line")
_CONFIG_NAMES = ("infomark.toml", "infomark.yaml", "infomark.yml")
# the hook settings, and the hook launcher beside them (infomark/tools/launcher.py) that
# every entry runs: swapping it would switch the hooks off as surely as editing them
_SETTINGS_NAMES = ("settings.json", "settings.local.json", "infomark-hook")
_OPENCODE_NAMES = ("infomark.js", "infomark-hook")  # infomark/tools/hosts/opencode_plugin.py
_PROC = lazy_compile(r"^/proc/(self|thread-self|\d+)/(cwd|root)(?=/|$)")
# What a resolved path still names under /proc when its link could not be followed: another
# process's open files, memory, root or cwd.
_PROC_LINK = lazy_compile(
    r"^/proc/(self|thread-self|\d+)(/task/\d+)?/(fd|map_files|root|cwd|mem)(?=/|$)"
)
_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_WALK_HINT = (
    "the gatekeeper's key and journal are off-limits to the agent. Name the directories to "
    "read (`grep -r key src tests`), or exclude the home: `grep -r --exclude-dir=.infomark`, "
    "`rg` without --hidden/-uu, `rsync`/`tar --exclude=.infomark`, `zip -r … -x '.infomark/*'`, "
    "`find . -path ./.infomark -prune -o …`"
)


def _key(path: str) -> str:
    """Compare paths the way a case-insensitive file system would (stricter on Linux)."""
    return os.path.normcase(path).casefold()


def resolve_path(path: str, cwd: StrPath) -> str:
    """What ``path`` names on the real file system, seen from ``cwd``."""
    path = os.path.expanduser(path.replace("$HOME", "~", 1) if path.startswith("$HOME") else path)
    m = _PROC.match(path) if path.startswith("/proc/") else None
    if m and m.group(1) in ("self", "thread-self"):  # the agent's own process: its cwd/root
        path = (os.fspath(cwd) if m.group(2) == "cwd" else "/") + path[m.end() :]
    p = path if os.path.isabs(path) else os.path.join(cwd, path)
    try:
        return os.path.realpath(p)
    except (OSError, ValueError):
        return os.path.normpath(p)


def _within(path: str, base: str) -> bool:
    k, b = _key(path), _key(base)
    return k == b or k.startswith(b.rstrip(os.sep) + os.sep)


def config_sources(root: StrPath) -> list[str]:
    """Every file infomark reads its configuration from (resolved)."""
    names = [os.path.join(root, n) for n in _CONFIG_NAMES]
    explicit = os.environ.get("INFOMARK_CONFIG")
    if explicit:
        names.append(explicit)
    return [resolve_path(p, root) for p in names]


def _which(name: str) -> str | None:
    """``shutil.which(name)`` on POSIX, without shutil (it loads bz2 and lzma: start-up)."""
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(folder or os.curdir, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def installation_paths() -> list[str]:
    """infomark's own code: the package directory and the entry scripts that run it."""
    out = [_PACKAGE]
    beside = os.path.join(os.path.dirname(sys.executable), "infomark")
    for candidate in (_which("infomark"), beside):
        if candidate and os.path.exists(candidate):
            out.append(os.path.realpath(candidate))
    return out


def _settings(path: str) -> str:
    """The host whose hook settings (or launcher) ``path`` is, "" when none."""
    if pure_name(path).casefold() not in _SETTINGS_NAMES:
        return ""
    return {".claude": "Claude Code", ".gemini": "Gemini CLI"}.get(
        pure_parent_name(path).casefold(), ""
    )


def _host_hooks(path: str, root: StrPath) -> str:
    """What of a host's hook wiring ``path`` is ("" when none): editing it switches them off."""
    host = _settings(path)
    if host:
        return f"holds the {host} hook settings"
    if _within(path, os.path.join(resolve_path(str(root), root), ".gemini")) or (
        pure_name(path).casefold() == ".env" and pure_parent_name(path).casefold() == ".gemini"
    ):
        return (
            "is Gemini CLI's configuration (its hooks, the .env it loads into its own "
            "environment, its extensions): a change there reaches past infomark's sandbox"
        )
    if _opencode_plugin(path):
        return "is the OpenCode plugin (or its launcher) that runs infomark's hooks"
    return ""


def _opencode_plugin(path: str) -> bool:
    """OpenCode's infomark plugin or its launcher (``.opencode/plugins/``, or the user's
    ``opencode/plugins/``): editing either switches the hooks off at OpenCode's next start."""
    parts = [p.casefold() for p in pure_parts(path)]
    return (
        len(parts) >= 3
        and parts[-1] in _OPENCODE_NAMES
        and parts[-2] in ("plugins", "plugin")
        and parts[-3] in (".opencode", "opencode")
    )


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
        before: str | None = read_regular(path).decode("utf-8")
    except OSError:
        before = None
    except UnicodeDecodeError:
        return True
    after = _edited(tool, tool_input, before)
    if after is None:
        return True  # not a file tool we can replay: hold it
    return _section(before) != _section(after)


def session_cwd(cwd: object) -> str | None:
    """The host's session cwd when it is usable (an absolute path without NUL), else None."""
    if isinstance(cwd, str) and cwd and "\x00" not in cwd and os.path.isabs(cwd):
        return os.path.normpath(cwd)
    return None


def _from_root(
    tool: str, tool_input: Mapping[str, object], c: Classification, root: StrPath
) -> Classification:
    """Without the host's cwd, the shell classifier resolved paths against this process's
    cwd; the agent's shell may start in the project instead. When the two differ (the HTTP
    service, the Python API), the command is resolved again from the project root and both
    readings count."""
    command = tool_input.get("command")
    if isinstance(command, list | tuple) and all(isinstance(a, str) for a in command):
        import shlex

        command = shlex.join(command)
    if not isinstance(command, str) or normalise_tool_name(tool) not in _shell_tools():
        return c
    if os.path.realpath(os.getcwd()) == resolve_path(str(root), root):
        return c
    from infomark.gates.shell import classify_shell

    again = classify_shell(command, cwd=str(root))
    families = c.families + tuple(f for f in again.families if f not in c.families)
    paths = c.paths + tuple(p for p in again.paths if p not in c.paths)
    walks = c.walks + tuple(w for w in again.walks if w not in c.walks)
    return replace(c, families=families, paths=paths, opaque=c.opaque or again.opaque, walks=walks)


def _embedded_shell(
    tool: str, tool_input: Mapping[str, object], c: Classification, root: StrPath
) -> Classification:
    """A tool that is not a known shell but takes a command line (an MCP server's
    ``run_command``, ``execute {"cmd": …}``) is read as one too, for self-protection only:
    ``infomark approve`` or ``cat .infomark/key`` through it is refused like through Bash."""
    if normalise_tool_name(tool) in _shell_tools() and isinstance(
        tool_input.get("command"), str | list
    ):
        return c  # the classifier read it as a shell command already
    texts = [v for k in _COMMAND_KEYS if isinstance(v := tool_input.get(k), str) and v.strip()]
    if not texts:
        return c
    from infomark.gates.shell import classify_shell

    families, paths, opaque = list(c.families), list(c.paths), c.opaque
    for text in texts:
        seen = classify_shell(text, cwd=str(root))
        families += [f for f in seen.families if f not in families]
        paths += [p for p in seen.paths if p not in paths]
        opaque = opaque or seen.opaque
    return replace(c, families=tuple(families), paths=tuple(paths), opaque=opaque)


def _shell_tools() -> frozenset[str]:
    from infomark.gates.classify import SHELL_TOOLS

    return SHELL_TOOLS


def _deny(code: DecisionCode, reason: str) -> Verdict:
    return ("deny", code.value, reason)


def _ask(code: str, reason: str) -> Verdict:
    return ("ask", code, reason + ": held for the user's approval (never bypassable)")


def protected(
    tool: str,
    tool_input: Mapping[str, object],
    classification: Classification,
    *,
    home: StrPath,
    root: StrPath,
    extra: Iterable[str] = (),
    cwd: str | None = None,
) -> Verdict | None:
    """``(verdict, code, reason)`` when the call touches infomark's own state, else None.

    ``extra``: files the agent may not change (the host's transcript). ``cwd``: the
    host's session cwd, which ``classification`` was made with (shell paths are then taken
    as they are, and relative file paths resolve from it); without it, shell commands are
    also resolved from ``root`` and relative file paths resolve from ``root``.
    The rules: :data:`PROTECT_STEPS`, in order; the first verdict decides.
    """
    t = _Touch(tool, tool_input, classification, home, root, extra, cwd)
    for step in PROTECT_STEPS:
        verdict = step(t)
        if verdict is not None:
            return verdict
    return None


class _Touch:
    """One call under self-protection: what the steps of :data:`PROTECT_STEPS` read (a step
    that refines it, as :func:`_resolve`, comes before those that read what it sets)."""

    __slots__ = (
        "base",
        "c",
        "cwd",
        "extra",
        "home",
        "home_r",
        "n_file",
        "paths",
        "root",
        "shell",
        "tool",
        "tool_input",
    )
    base: StrPath
    home_r: str
    shell: bool
    paths: list[str]
    n_file: int

    def __init__(
        self,
        tool: str,
        tool_input: Mapping[str, object],
        c: Classification,
        home: StrPath,
        root: StrPath,
        extra: Iterable[str],
        cwd: str | None,
    ) -> None:
        self.tool, self.tool_input, self.c, self.home, self.root = tool, tool_input, c, home, root
        self.extra, self.cwd = extra, cwd


def _no_sandbox_escape(t: _Touch) -> Verdict | None:
    """A call may not ask the host to run it outside its OS sandbox."""
    return _sandbox_escape(t.tool_input)


def _not_infomark_itself(t: _Touch) -> Verdict | None:
    """The agent may not run infomark itself (a shell embedded in a tool's input counts)."""
    t.c = _embedded_shell(t.tool, t.tool_input, t.c, t.root)
    if "infomark" not in t.c.families:
        return None
    return _deny(
        DecisionCode.PROTECTED_CLI,
        "the agent may not run infomark itself (it would mint evidence or approval); "
        "only the runtime records evidence, and only the user approves",
    )


def _resolve(t: _Touch) -> None:
    """(no rule) The home and every path the call names, resolved from the session's cwd,
    else from the root (shell commands then re-classified from the root)."""
    t.home_r = resolve_path(str(t.home), t.root)
    t.shell = isinstance(t.tool_input.get("command"), str | list)
    cwd = session_cwd(t.cwd)
    t.base = base = cwd if cwd is not None else t.root
    if cwd is None:
        t.c = _from_root(t.tool, t.tool_input, t.c, t.root)
    file_paths = _file_paths(t.tool_input)
    t.n_file = len(file_paths)
    t.paths = [resolve_path(p, base) for p in file_paths]
    t.paths += [resolve_path(p, base) for p in t.c.paths]


def _no_proc_link(t: _Touch) -> Verdict | None:
    """A file tool may not name a process's open file, memory or root under /proc."""
    for path in t.paths[: t.n_file]:  # a file tool's own path (a shell is sandboxed)
        if path.startswith("/proc/") and _PROC_LINK.match(path):  # no compile otherwise
            return _deny(
                DecisionCode.PROTECTED_HOME,
                f"{path} is a process's open file, memory or root under /proc, which could "
                "lead into the ledger home and cannot be checked; name the file itself",
            )
    return None


def _outside_home(t: _Touch) -> Verdict | None:
    """No path the call names resolves into the ledger home, read or write."""
    home_r = t.home_r
    for path in t.paths:
        if _within(path, home_r):
            return _deny(
                DecisionCode.PROTECTED_HOME,
                f"{path} is inside the ledger home ({home_r}): the gatekeeper's key and journal "
                "are off-limits to the agent",
            )
    return None


def _no_walk_into_home(t: _Touch) -> Verdict | None:
    """No recursive walk reaches the ledger home (unless it provably skips it)."""
    home_r = t.home_r
    for walk in (*t.c.walks, *_search_walks(t.tool, t.tool_input, t.shell, t.base)):
        why = reaches(walk, home_r)
        if why is not None:
            return _deny(DecisionCode.PROTECTED_HOME, f"{why} ({home_r}): {_WALK_HINT}")
    return None


def _not_opaque(t: _Touch) -> Verdict | None:
    """A shell command whose paths cannot be resolved statically is denied."""
    c = t.c
    if not c.opaque:  # set by the shell classifier only
        return None
    why = next((r for r in c.reasons if "opaque" in r), "")
    return _deny(
        DecisionCode.PROTECTED_OPAQUE,
        "infomark cannot tell statically which files this command names "
        + (
            f"({why})"
            if why
            else "(a variable, a command substitution, changed glob "
            "options, or a path computed at run time)"
        )
        + ", so it cannot rule out its own home or config; spell the paths out literally, "
        "or write the code to a file you can read first and run that file",
    )


def _transcript_unchanged(t: _Touch) -> Verdict | None:
    """A mutation may not change the host's transcript, nor a directory holding it."""
    if not t.c.tool_class.mutates:
        return None
    root = t.root
    witness = _host_files(t.extra, t.base, root)
    for path in t.paths:
        hit = next((w for w in witness if _within(w, path) and _may_hold(path, w, root)), None)
        if hit is not None:
            return _deny(
                DecisionCode.PROTECTED_TRANSCRIPT,
                f"{path} is (or holds) the host's transcript {hit}, which witnesses the "
                "journal: the agent's tools may not change, move or delete it",
            )
    return None


def _config_and_install_held(t: _Touch) -> Verdict | None:
    """A mutation of infomark's config, the host's hooks or infomark's installation is held
    for the user."""
    if not t.c.tool_class.mutates:
        return None
    configs = {_key(p) for p in config_sources(t.root)}
    install = installation_paths()
    for path in t.paths:
        k = _key(path)
        if k in configs:
            return _ask(DecisionCode.PROTECTED_CONFIG.value, f"{path} configures infomark")
        if pure_name(path).casefold() == "pyproject.toml" and (
            t.shell or _pyproject_changed(t.tool, t.tool_input, path)
        ):
            return _ask(
                DecisionCode.PROTECTED_CONFIG.value,
                f"{path} may change [tool.infomark], infomark's configuration",
            )
        hooks = _host_hooks(path, t.root)
        if hooks:
            return _ask(DecisionCode.PROTECTED_CONFIG.value, f"{path} {hooks}")
        if any(_within(path, where) for where in install):
            return _ask(
                DecisionCode.PROTECTED_INSTALL.value,
                f"{path} is part of infomark's own installation",
            )
    return None


#: The rules of self-protection, in the order they are applied: the first verdict decides
#: (a deny before an ask); a read passes once the home, walk and opaque rules did.
PROTECT_STEPS: tuple[Callable[[_Touch], Verdict | None], ...] = (
    _no_sandbox_escape,
    _not_infomark_itself,
    _resolve,
    _no_proc_link,
    _outside_home,
    _no_walk_into_home,
    _not_opaque,
    _transcript_unchanged,
    _config_and_install_held,
)


#: Tool-input switches that ask the host to run a command outside its OS sandbox (Claude
#: Code's Bash ``dangerouslyDisableSandbox``); the sandbox is what keeps the key from a
#: program the agent runs, so no call may ask to leave it.
_SANDBOX_SWITCHES = ("dangerouslyDisableSandbox", "dangerously_disable_sandbox")


def _sandbox_escape(tool_input: Mapping[str, object]) -> Verdict | None:
    for name in _SANDBOX_SWITCHES:
        value = tool_input.get(name)
        if (
            value is None
            or value is False
            or (isinstance(value, str) and value.strip().lower() in ("", "false", "0"))
        ):
            continue
        return _deny(
            DecisionCode.PROTECTED_SANDBOX,
            f"{name} asks to run this command outside the OS sandbox, which keeps infomark's "
            "key and code out of the agent's reach; run the same command without "
            f"{name} (a command that cannot work in the sandbox is the user's to run)",
        )
    return None


def _search_walks(
    tool: str, tool_input: Mapping[str, object], shell: bool, base: StrPath
) -> tuple[Walk, ...]:
    """Claude Code's (and OpenCode's) Grep tool runs ripgrep over ``path`` (default: the cwd):
    a walk that honours ripgrep's ignore files, which every home carries."""
    if shell or normalise_tool_name(tool) != "grep":
        return ()
    path = tool_input.get("path")
    root = resolve_path(path, base) if isinstance(path, str) and path else str(base)
    return (
        Walk(root=root, command=tool, what="searches", honours_ignore=(".ignore", ".rgignore")),
    )


def _host_files(extra: Iterable[str], base: StrPath, root: StrPath) -> list[str]:
    out = []
    for p in extra:
        if isinstance(p, str) and p and "\x00" not in p:
            out.append(resolve_path(p, base))
    return out


def _may_hold(path: str, witness: str, root: StrPath) -> bool:
    """``path`` is the witness file, or a directory above it that is not also above the
    project (``rm -rf ~/.claude/projects/p`` is caught; ``cd ~`` in a command is not)."""
    if _key(path) == _key(witness):
        return True
    return not _within(resolve_path(str(root), root), path)


def guard_decision(decision: Decision, verdict: str, code: str, reason: str) -> Decision:
    """Apply a :func:`protected` finding to a decision.

    Self-protection overrides an allow (and an ask, when it denies); it is never
    bypassable and holds in every profile, observe included.
    """
    if decision.verdict is DecisionVerdict.DENY and verdict == "ask":
        return decision
    return replace(
        decision,
        verdict=DecisionVerdict(verdict),
        code=code,
        reason=reason,
        bypass=False,
        dryrun=False,
    )
