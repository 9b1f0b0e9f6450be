"""The Claude Code hook's launcher: ``infomark hook claude-code`` started by ``python -I -S``.

The console script ``infomark`` starts the interpreter with ``site``: site-packages, every
``.pth`` file in it (setuptools' ``distutils-precedence.pth`` runs an import in every process,
an editable install adds its own) and the user site. That is ~5 M of the hook's instructions
per tool call, and code that anyone who can drop a ``.pth`` file into one of those directories
runs inside the gatekeeper before it decides. ``infomark install claude-code`` therefore
writes this launcher next to the settings file it installs into (``.claude/infomark-hook``,
or ``~/.claude/infomark-hook`` for ``--scope user``; docs/integrations.md says why there) and
points every hook entry at it:

* its shebang is the absolute interpreter with ``-IS`` (isolated: no ``PYTHON*`` variables,
  no user site, no working directory on ``sys.path``; no ``site``);
* it puts exactly the directories the hook imports from on ``sys.path``, recorded at install
  time, after the interpreter's own standard-library entries (so standard-library imports
  never scan them), in the order the installing interpreter had them;
* it runs the same entry as ``infomark hook claude-code``, with the same arguments;
* when the interpreter's version changed, a recorded directory is gone, or infomark does not
  import, it fails **closed** without infomark: PreToolUse is denied and Stop refused with a
  reason that says to re-run ``infomark install claude-code`` (in every profile: the
  configuration cannot be read without infomark).

Rewritten (atomically, mode 0500) by every install whose content would differ; removed by
``--uninstall``. Standard library only.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from importlib.util import find_spec
from pathlib import Path

from infomark.kernel.errors import UserError

__all__ = [
    "FORMAT",
    "NAME",
    "THIRD_PARTY",
    "Launcher",
    "hook_prefix",
    "is_launcher",
    "launcher_for",
    "read_launcher",
    "remove_launcher",
    "render",
    "search_paths",
    "write_launcher",
]

NAME = "infomark-hook"
FORMAT = 1
_MARK = "# infomark hook launcher (format "
MODE = 0o500
# Every third-party top-level module the hook process may import, found at install time:
# tree-sitter for shell tools, psycopg for a home on PostgreSQL, opentelemetry for
# INFOMARK_OTEL=1 (their own dependencies are expected beside them).
THIRD_PARTY = ("tree_sitter", "tree_sitter_bash", "psycopg", "psycopg_pool", "opentelemetry")
_SHEBANG_MAX = 255  # Linux reads at most this much of a #! line (before 5.1: 127)

_HEAD = """#!{python} -IS
{mark}{format}), written by `infomark install claude-code`.
# It runs `infomark hook claude-code` isolated (python -I -S: no PYTHON* variables, no user
# site, no site-packages .pth files, no working directory on sys.path) with exactly the paths
# below. Re-run `infomark install claude-code` after the interpreter or infomark moves;
# `infomark install claude-code --uninstall` removes this file.
import sys

PYTHON = {version!r}
PATHS = {paths!r}
"""
# The rest, the same in every launcher. The refusal is source in a string: a script is
# compiled on every run, and only a hook that cannot start pays for compiling it.
_BODY = r'''
# Run only when the hook cannot start: fail closed without infomark (deny PreToolUse,
# refuse Stop and SubagentStop, exit 2 when not even the event is readable).
REFUSE = r"""
import json

kind, detail = fault
if kind == "usage":
    sys.stderr.write("usage: infomark-hook hook claude-code [--home DIR] [--url URL] "
                     "< payload.json  (infomark's hook launcher; the CLI is `infomark`)\n")
    raise SystemExit(2)
if kind == "python":
    why = (f"it was written for Python {PYTHON[0]}.{PYTHON[1]}, and {sys.executable} is "
           f"Python {sys.version_info[0]}.{sys.version_info[1]}")
elif kind == "gone":
    why = f"{detail} is gone"
else:
    why = f"infomark does not import ({type(detail).__name__}: {str(detail)[:300]})"
host = sys.argv[2] if sys.argv[2:3] in (["gemini"], ["codex"]) else "claude-code"
why = (f"infomark's hook cannot start: {why}. Its interpreter or package moved or changed "
       f"since `infomark install {host}` wrote {sys.argv[0]}; ask the user to re-run "
       f"`infomark install {host}` in the environment infomark is installed in")
raw = sys.stdin.buffer.read()
try:
    event = json.loads(raw).get("hook_event_name")
except Exception:
    import re

    found = re.search(rb'"hook_event_name"\s*:\s*"([A-Za-z]{1,40})"', raw[: 1 << 20])
    event = found.group(1).decode() if found else None
if event == "PreToolUse":
    out = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                  "permissionDecisionReason": why + ", then retry."}}
elif event in ("Stop", "SubagentStop"):
    out = {"decision": "block", "reason": why + "; stopping is refused until it is fixed."}
elif event in ("BeforeTool", "AfterAgent"):  # Gemini CLI (tools/hosts/gemini.py)
    out = {"decision": "deny", "reason": why + ", then retry."}
else:
    sys.stderr.write(why + ("; failing closed\n" if event is None else "\n"))
    raise SystemExit(2 if event is None else 0)
sys.stdout.write(json.dumps(out))
sys.stderr.write(why + "; failing closed\n")
raise SystemExit(0)
"""

fault = None
if sys.argv[1:2] != ["hook"]:
    fault = ("usage", None)
elif sys.version_info[:2] != PYTHON:
    fault = ("python", None)
else:
    import os

    for path in PATHS:
        if not os.path.isdir(path):
            fault = ("gone", path)
            break
    else:
        sys.path += PATHS
        try:
            from infomark.cli.entry import main
        except Exception as exc:
            fault = ("import", exc)
if fault is None:
    raise SystemExit(main())
exec(REFUSE)
'''


def launcher_for(settings: Path) -> Path:
    """Where the launcher of a settings file lives: beside it."""
    return settings.parent / NAME


def search_paths() -> list[str]:
    """The directories the hook imports from: infomark's and each installed
    :data:`THIRD_PARTY` module's, in the order this interpreter's ``sys.path`` has them."""
    found = [str(Path(__file__).resolve().parents[2])]  # the directory holding infomark/
    for name in THIRD_PARTY:
        try:
            spec = find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        if spec.origin and spec.origin not in ("namespace", "built-in", "frozen"):
            where = [os.path.dirname(os.path.realpath(spec.origin))]
            if spec.submodule_search_locations is None:  # a module, not a package
                found.append(where[0])
                continue
        else:
            where = [os.path.realpath(p) for p in spec.submodule_search_locations or ()]
        found += [os.path.dirname(p) for p in where]
    order = {os.path.realpath(p): i for i, p in reversed(list(enumerate(sys.path))) if p}
    unique = list(dict.fromkeys(found))
    return sorted(unique, key=lambda p: order.get(p, len(order)))


def _shebang_ok(python: str) -> bool:
    return not any(c.isspace() for c in python) and len(f"#!{python} -IS") <= _SHEBANG_MAX


def render(python: str | None = None, paths: list[str] | None = None) -> str:
    """The launcher's text for this interpreter and installation."""
    python = python or sys.executable
    if not python or not os.path.isabs(python):
        raise UserError(
            f"cannot tell this interpreter's absolute path ({python!r}); run "
            "`infomark install claude-code` with an interpreter started by its path"
        )
    head = _HEAD.format(
        python=python,
        mark=_MARK,
        format=FORMAT,
        version=tuple(sys.version_info[:2]),
        paths=search_paths() if paths is None else paths,
    )
    return head + _BODY


def hook_prefix(launcher: Path, python: str | None = None) -> str:
    """The start of the hook command: the launcher itself, or, when no ``#!`` line can name
    the interpreter (a space in its path, or too long), ``PYTHON -I -S LAUNCHER``."""
    import shlex

    python = python or sys.executable
    if _shebang_ok(python):
        return shlex.quote(str(launcher))
    return f"{shlex.quote(python)} -I -S {shlex.quote(str(launcher))}"


def write_launcher(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` atomically (mode 0500); False when it is there already."""
    try:
        if path.read_text("utf-8") == text and (path.stat().st_mode & 0o777) == MODE:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, MODE)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return True


def is_launcher(path: Path) -> bool:
    """Whether ``path`` is a launcher infomark wrote (its second line says so)."""
    try:
        with path.open("r", encoding="utf-8", errors="replace") as f:
            f.readline()
            return f.readline().startswith(_MARK)
    except OSError:
        return False


def remove_launcher(path: Path) -> bool:
    """Remove the launcher at ``path`` if infomark wrote it; whether it did."""
    if not is_launcher(path):
        return False
    path.unlink(missing_ok=True)
    return True


class Launcher:
    """What a launcher file says: its interpreter, Python version and search paths."""

    def __init__(self, path: Path, python: str, version: tuple[int, ...], paths: list[str]):
        self.path = path
        self.python = python
        self.version = version
        self.paths = paths

    def problems(self) -> list[str]:
        """What would make it refuse (or fail to start), as phrases; empty when it would run."""
        out = []
        if not (os.path.isfile(self.python) and os.access(self.python, os.X_OK)):
            out.append(f"its interpreter {self.python} does not exist or is not executable")
        out += [f"{p} is gone" for p in self.paths if not os.path.isdir(p)]
        if not any(os.path.isfile(os.path.join(p, "infomark", "__init__.py")) for p in self.paths):
            out.append("no infomark package in " + (", ".join(self.paths) or "(no paths)"))
        return out

    def exposed(self) -> list[Path]:
        """The launcher, or the directory holding it, when others may write it (and swap it)."""
        out = []
        for where in (self.path, self.path.parent):
            try:
                if os.stat(where).st_mode & 0o022:
                    out.append(where)
            except OSError:
                continue
        return out


_LINE = re.compile(r"^(PYTHON|PATHS) = (.+)$", re.MULTILINE)


def read_launcher(path: Path) -> Launcher:
    """Parse a launcher infomark wrote; :class:`UserError` saying why when it is not one."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path} cannot be read ({exc})") from exc
    first, _, rest = text.partition("\n")
    if not first.startswith("#!") or not rest.startswith(_MARK):
        raise UserError(f"{path} is not an infomark hook launcher")
    python = first[2:].strip().rsplit(" -IS", 1)[0]
    values: dict[str, object] = {}
    for key, value in _LINE.findall(text):
        try:
            values[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError) as exc:
            raise UserError(f"{path}: its {key} line does not parse") from exc
    version, paths = values.get("PYTHON"), values.get("PATHS")
    if not isinstance(version, tuple) or not isinstance(paths, list):
        raise UserError(f"{path} lacks its PYTHON or PATHS line")
    return Launcher(path, python, version, [str(p) for p in paths])
