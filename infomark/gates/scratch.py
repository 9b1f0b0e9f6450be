"""The agent's own files: scratch writes (tainted runs and reverts: :mod:`infomark.gates.taint`).

*Scratch* (allowed while premises are ungrounded, journaled, shown by audit): a write whose
every target is a new file the agent creates now, a file it created earlier in this session,
or a path in the temp directory outside the project, and none is protected. Editing a tracked
file or one that existed before the session is a mutation. Deleting only paths the agent
created is scratch too; deleting anything else stays what the classifier says.

Which tools write local files, and which of them create one, is the kernel's tool table
(``ToolSpec.file``, ``ToolSpec.creates``). Standard library only (hot path); the precise rules
are in docs/gates.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.records import dataclass
from infomark.kernel.runners import TEST_CONFIG_NAMES
from infomark.kernel.tools import (
    Classification,
    ToolClass,
    lookup_tool,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _typeshed import StrPath

__all__ = [
    "DEFAULT_PROTECTED",
    "Scratch",
    "new_targets",
    "norm_key",
    "scratch_verdict",
    "shell_write_targets",
    "target_paths",
]

#: never scratch, even when new: configuration that changes how code, tests or hooks run
DEFAULT_PROTECTED: tuple[str, ...] = (
    ".git",
    ".github",
    ".gitlab-ci.yml",
    ".claude",
    ".vscode",
    ".idea",
    ".pre-commit-config.yaml",
    ".gitignore",
    ".gitattributes",
    ".envrc",
    "infomark.toml",
    "infomark.yaml",
    "infomark.yml",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "tox.ini",
    "pytest.ini",
    "noxfile.py",
    "conftest.py",
    "sitecustomize.py",
    "usercustomize.py",
    "*.pth",
    "Makefile",
    "package.json",
    "Cargo.toml",
    "go.mod",
)
#: ...and every test configuration a runner reads by name (``pytest.toml``, ``.pytest.ini``,
#: ``GNUmakefile``, ``makefile``, jest/vitest/mocha configs …: :mod:`infomark.kernel.runners`)
DEFAULT_PROTECTED += tuple(n for n in TEST_CONFIG_NAMES if n not in DEFAULT_PROTECTED)
_PATH_KEYS = (
    "file_path",
    "path",
    "notebook_path",
    "filePath",
    "filepath",
    "target_file",
    "TargetFile",
    "file",
    "filename",
    "source",
    "destination",
    "target",
)
_PATCH_PATH = lazy_compile(
    r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$"
)


@dataclass(frozen=True, slots=True)
class Scratch:
    """A call that touches only the agent's own files: its targets and which it creates."""

    paths: tuple[str, ...]
    created: tuple[str, ...]
    reason: str


def _temp_roots() -> tuple[str, ...]:
    # tempfile.gettempdir()'s candidates ($TMPDIR, $TEMP, $TMP) without importing tempfile
    # (it loads shutil, random, bz2 and lzma: hook start-up); an unwritable one is harmless
    env = [os.environ.get(v, "") for v in ("TMPDIR", "TEMP", "TMP")]
    roots = {"/tmp", "/var/tmp", "/dev/shm"}  # noqa: S108 - checked, not used
    roots.update(d for d in env if d and os.path.isdir(d))
    return tuple(sorted({os.path.realpath(r) for r in roots}))


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


def norm_key(path: str, root: StrPath) -> str:
    """A path as the session records it: relative POSIX under the root, else absolute."""
    p = path if os.path.isabs(path) else os.path.join(str(root), path)
    real = os.path.realpath(p)
    base = os.path.realpath(str(root))
    if _under(real, base):
        rel = os.path.relpath(real, base)
        return rel  # relpath's answer is normalised: on POSIX it is its own as_posix()
    return real


_HEREDOC = lazy_compile(
    r"""^\s*cat\s+(?:>\s*(?P<f1>[^\s<>|&;]+)\s+<<-?\s*(?P<q1>['"]?)(?P<d1>\w+)(?P=q1)"""
    r"""|<<-?\s*(?P<q2>['"]?)(?P<d2>\w+)(?P=q2)\s+>\s*(?P<f2>[^\s<>|&;]+))\s*$"""
)
_WORD_META = lazy_compile(r"[;&|<`$(){}\n\\*?\[\]~]")


def shell_write_targets(command: str) -> tuple[tuple[str, ...], bool] | None:
    """``(paths, deleting)`` for the few shell forms whose every path is one they write.

    ``cat > F <<'EOF'`` (a here-doc whose body cannot expand: a quoted delimiter, or no ``$``
    and no backquote), ``echo … > F`` / ``printf … >> F``, ``touch F…``, ``mkdir [-p] D…`` and
    ``rm [-f] [-r] P…``. Anything else — a list, a pipe, a substitution, a glob, any other
    program — is None: the shell classifier's word list names what a command *mentions*, not
    what it writes, so it never makes a call scratch.
    """
    head, _, body = command.partition("\n")
    m = _HEREDOC.match(head)
    if m is not None:
        delim = m["d1"] or m["d2"]
        quoted = bool(m["q1"] or m["q2"])
        lines = body.split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        if not lines or lines[-1].strip() != delim or delim in (ln.strip() for ln in lines[:-1]):
            return None
        if not quoted and any(c in body for c in "$`\\"):
            return None
        target = m["f1"] or m["f2"]
        return ((target,), False) if _plain(target) else None
    if body.strip() or _WORD_META.search(head.replace(">", "")):
        return None
    import shlex  # shlex imports re: only a shell write loads it

    try:
        words = shlex.split(head)
    except ValueError:
        return None
    if not words:
        return None
    if words[0] in ("echo", "printf") and len(words) >= 3 and words[-2] in (">", ">>"):
        if any(">" in w for w in words[1:-2]):
            return None
        return ((words[-1],), False) if _plain(words[-1]) else None
    if ">" in head:
        return None
    args = [w for w in words[1:] if not w.startswith("-")]
    flags = [w for w in words[1:] if w.startswith("-")]
    if not args or not all(_plain(a) for a in args):
        return None
    if words[0] == "touch" and not flags:
        return tuple(args), False
    if words[0] == "mkdir" and set(flags) <= {"-p"}:
        return tuple(args), False
    if words[0] == "rm" and set(flags) <= {"-f", "-r", "-R", "-rf", "-fr", "-Rf", "-fR"}:
        return tuple(args), True
    return None


def _plain(word: str) -> bool:
    return bool(word) and not word.startswith("-") and not _WORD_META.search(word)


def target_paths(
    tool: str, tool_input: Mapping[str, object], classification: Classification
) -> tuple[str, ...] | None:
    """The paths a write-class call targets, or None when they are not all known."""
    spec = lookup_tool(tool)
    if spec is not None and spec.shell:
        command = tool_input.get("command")
        if classification.opaque or not isinstance(command, str):
            return None
        targets = shell_write_targets(command)
        return targets[0] if targets is not None else None
    if spec is None or not spec.file:
        return None
    found: list[str] = []
    for key in _PATH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            found.append(value)
    for key in ("input", "patch"):
        value = tool_input.get(key)
        if isinstance(value, str) and "*** " in value:
            for line in value.splitlines():
                m = _PATCH_PATH.match(line)
                if m:
                    found.append(m.group(1) or m.group(2))
    edits = tool_input.get("edits")
    if isinstance(edits, list):
        for e in edits:
            if isinstance(e, Mapping):
                for key in ("file_path", "path"):
                    v = e.get(key)
                    if isinstance(v, str) and v:
                        found.append(v)
    return tuple(dict.fromkeys(found)) or None


def _protected(key: str, patterns: Iterable[str]) -> bool:
    import fnmatch  # it imports re: only a write judged for scratch loads it

    parts = key.split("/")
    for pat in patterns:
        pat = pat.rstrip("/")
        if fnmatch.fnmatchcase(key, pat) or any(fnmatch.fnmatchcase(part, pat) for part in parts):
            return True
    return False


def scratch_verdict(
    tool: str,
    tool_input: Mapping[str, object],
    classification: Classification,
    *,
    root: StrPath,
    home: StrPath,
    created_before: Iterable[str],
    tracked: frozenset[str] | None,
    in_project: bool = True,
    protected: Iterable[str] = (),
) -> Scratch | None:
    """A :class:`Scratch` when the call writes only the agent's own files, else None.

    ``tracked``: the git index's paths relative to the root (None outside a repository).
    """
    cls = classification.tool_class
    deleting = cls is ToolClass.DESTRUCTIVE
    if deleting and not set(classification.families) <= {"file"}:
        return None
    if cls not in (ToolClass.MODIFY, ToolClass.DESTRUCTIVE) or classification.opaque:
        return None
    if cls is ToolClass.MODIFY and classification.families:
        return None
    paths = target_paths(tool, tool_input, classification)
    if not paths:
        return None
    own = set(created_before)
    spec = lookup_tool(tool)
    creating = spec is not None and (spec.shell or spec.creates)
    if spec is not None and spec.editor and tool_input.get("command") == "create":
        creating = True
    patterns = (*DEFAULT_PROTECTED, *protected)
    home_real = os.path.realpath(os.path.join(root, home))  # an absolute home stays itself
    root_real = os.path.realpath(str(root))
    temps = _temp_roots()
    keys: list[str] = []
    created: list[str] = []
    for raw in paths:
        key = norm_key(raw, root)
        full = key if os.path.isabs(key) else os.path.join(root_real, key)
        if _under(full, home_real) or key == ".":
            return None
        inside = _under(full, root_real)
        if inside and _protected(key, patterns):
            return None
        if not inside and any(_under(full, t) for t in temps):
            keys.append(key)
            continue
        if key in own or any(_under(key, o) for o in own if not os.path.isabs(o)):
            keys.append(key)
            continue
        if deleting or not creating:
            return None  # only a creating tool makes a new file; deleting others' is no scratch
        if not inside or not in_project:
            return None
        if os.path.lexists(full) or (tracked is not None and key in tracked):
            return None
        keys.append(key)
        created.append(_first_new(key, root_real))
    what = "deletes" if deleting else "writes"
    listed = ", ".join(keys)
    return Scratch(
        paths=tuple(keys),
        created=tuple(dict.fromkeys(created)),
        reason=f"scratch: {what} only the agent's own new files or the temp dir ({listed})",
    )


def _first_new(key: str, root_real: str) -> str:
    """The outermost path component that does not exist yet (a new directory is own too)."""
    parts = key.split("/")
    for i in range(1, len(parts)):
        prefix = "/".join(parts[:i])
        if not os.path.lexists(os.path.join(root_real, prefix)):
            return prefix
    return key


def new_targets(keys: Iterable[str], root: StrPath, tracked: frozenset[str] | None) -> list[str]:
    """Of recorded path keys, those a write would create (absent and not tracked)."""
    root_real = os.path.realpath(str(root))
    out = []
    for key in keys:
        full = key if os.path.isabs(key) else os.path.join(root_real, key)
        if not os.path.lexists(full) and not (tracked is not None and key in tracked):
            out.append(_first_new(key, root_real) if not os.path.isabs(key) else key)
    return out
