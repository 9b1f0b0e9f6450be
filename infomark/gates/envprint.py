"""A fingerprint of the project's own environments, taken with the project's baseline.

An attested copy links ``.venv`` and ``venv`` (and ``.tox``, ``.nox``) to their real place:
whatever they hold runs in the attested run, before infomark's report plugin (a ``.pth`` that
wraps ``_pytest`` as it is imported, an edited ``_pytest/python.py``, a planted pyc), and the
agent's commands can write them (they are in the project). So the project's baseline records,
for each of them, every entry's ``lstat`` (path, inode, mode, size, modification and change
time in nanoseconds; a change time cannot be set back by the file's owner), and an attested
run whose environment differs from that record does not run (``environment_changed``, naming
the first files that differ) until the user accepts the tree (``infomark approve
--baseline``). ``node_modules`` is fingerprinted the same way (:data:`FINGERPRINTED`): the
test runner itself lives there (jest, vitest, mocha and their reporters), so an edit there
could grade itself like a ``.pth`` could. Its caches (:data:`CACHES`: ``.cache``, where
babel-loader and others keep transformed code, and ``.vite``, vite's pre-bundled
dependencies and vitest's results) are written by the agent's honest runs of its own tests:
they are not listed, and the attested run does not see them (made empty where missing, then
hidden in the sandbox, as ``.pytest_cache`` is left out of the copy; :func:`ready_caches` tells
when one was swapped while the run ran), so what they hold cannot reach the run.

**What an honest run changes is not a change.** Running the project's own tests writes byte
code into an environment whose installer compiled none (``uv`` by default, ``pip
--no-compile``): ``__pycache__/<module>.<tag>.pyc`` beside modules that did not change. Named as
changes, they would trap an agent that only ran its tests. So :func:`diff`, given the
environment's directory, passes over (:data:`SETTLED`, in order):

- a directory's own row, when it is a directory before and after, and a new ``__pycache__``
  directory (their entries are compared one by one: a file added, removed or changed in them
  is still named);
- a byte-code file that is gone (the interpreter compiles the source again);
- a byte-code file that is new or changed, only when it is for **this** interpreter (its cache
  tag), its source module is listed unchanged, the file is the one listed (same inode, size and
  times, opened without following links), and the code it holds is equal to what ``compile()``
  makes of that source (code objects compare their byte code, constants, names and line table,
  nested functions included). A planted pyc whose header matches the source but whose code does
  not is still named; so is one for another interpreter, which infomark cannot compile. The
  comparison runs in one child ``python -I -S`` for all of them (``marshal`` is not safe against
  crafted bytes): about 20 ms, paid only when the environment holds such files.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable, Sequence

from infomark.kernel.contexts import suppress

__all__ = [
    "CACHES",
    "FINGERPRINTED",
    "PYTHON_ENVS",
    "SETTLED",
    "CacheMark",
    "cache_mark",
    "diff",
    "faithful",
    "fingerprint",
    "hidden",
    "listing",
    "ready_caches",
]

#: the environment directories (of :data:`infomark.tools.attest.carry.ENVIRONMENTS`) that
#: hold Python environments
PYTHON_ENVS = (".venv", "venv", ".tox", ".nox")

#: every environment directory a project's baseline fingerprints
FINGERPRINTED = ("node_modules", *PYTHON_ENVS)

#: directories at the top of an environment that are caches its tools write on every run:
#: not fingerprinted, and hidden from the attested run (:func:`ready_caches`)
CACHES: dict[str, tuple[str, ...]] = {"node_modules": (".cache", ".vite")}


#: what is at a cache path: ``(inode, mode, change time in ns)``, or None for nothing
CacheMark = tuple[int, int, int] | None


def ready_caches(name: str, real: str) -> tuple[tuple[str, CacheMark], ...]:
    """The cache paths of the environment ``name`` (at its real path ``real``) and what is at
    each (:func:`cache_mark`), once the missing ones are made (empty directories), so that
    the attested run can hide every one (bubblewrap mounts an empty directory over each: it
    cannot make one inside the read-only environment). An empty cache directory is what a
    tool finds before its first run.

    A background process that removes or renames a hidden cache while the run runs
    detaches what hid it, and one put in its place reaches the run unhidden (the
    fingerprint leaves caches out). Each of those moves the inode or the change time, which
    its owner cannot set back, so the run compares the marks again when it is over."""
    out = []
    for path in (os.path.join(real, c) for c in CACHES.get(name, ())):
        with suppress(OSError):  # a read-only environment: nobody makes one there either
            os.mkdir(path, 0o755)
        out.append((path, cache_mark(path)))
    return tuple(out)


def cache_mark(path: str) -> CacheMark:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mode, st.st_ctime_ns


def hidden(marks: Sequence[tuple[str, CacheMark]]) -> list[str]:
    """The cache paths of ``marks`` that were directories (not links): what the run hides."""
    return [p for p, mark in marks if mark is not None and stat.S_ISDIR(mark[1])]


def listing(top: str, skip: tuple[str, ...] = ()) -> str:
    """One sorted line per entry under ``top`` (``top`` itself as ``.``; symlinks not
    followed): ``path NUL inode mode size mtime_ns ctime_ns``. ``skip``: names at the top
    that are left out with everything under them (an environment's caches); a symlink of
    such a name is listed, as any entry is."""
    lines = [".\0" + _row(os.lstat(top))]
    todo = [("", top)]
    while todo:
        rel_dir, path = todo.pop()
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    rel = rel_dir + entry.name
                    if not rel_dir and rel in skip and entry.is_dir(follow_symlinks=False):
                        continue
                    try:
                        s = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    lines.append(rel + "\0" + _row(s))
                    if entry.is_dir(follow_symlinks=False):
                        todo.append((rel + "/", entry.path))
        except OSError:
            continue
    lines.sort()
    return "\n".join(lines)


def _row(s: os.stat_result) -> str:
    """An entry's line after its path (the judge of :func:`faithful` writes it the same way)."""
    return f"{s.st_ino} {s.st_mode} {s.st_size} {s.st_mtime_ns} {s.st_ctime_ns}"


def fingerprint(root: str, names: tuple[str, ...] = FINGERPRINTED) -> dict[str, tuple[str, str]]:
    """``{env dir name: (digest, listing)}`` of the environments ``names`` in ``root`` now (a
    symlinked environment is followed to its real place; its :data:`CACHES` left out)."""
    out: dict[str, tuple[str, str]] = {}
    for name in names:
        real = os.path.realpath(os.path.join(root, name))
        if os.path.isdir(real):
            text = listing(real, CACHES.get(name, ()))
            digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
            out[name] = ("sha256:" + digest, text)
    return out


def _rows(text: str) -> dict[str, str]:
    return dict(line.split("\0", 1) for line in text.split("\n") if "\0" in line)


def diff(before: str, after: str, top: str | None = None) -> list[str]:
    """The paths that were added, removed or changed between two listings (sorted); with
    ``top`` (the environment's directory now), those an honest run makes are left out
    (:data:`SETTLED`, then the byte code :func:`faithful` vouches for)."""
    old, new = _rows(before), _rows(after)
    changed = sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p))
    if top is None:
        return changed
    left = [p for p in changed if not any(rule(p, old, new) for rule in SETTLED)]
    asks = {p: ask for p in left if (ask := _pyc_question(top, p, old, new)) is not None}
    vouched = {p for p, ok in zip(asks, faithful(list(asks.values())), strict=True) if ok}
    return [p for p in left if p not in vouched]


_Rows = dict[str, str]
_PYC = re.compile(r"(?:(.*)/)?__pycache__/([^/.]+)\.([^/.]+)(?:\.opt-([12]))?\.pyc")


def _mode(row: str | None) -> int:
    return int(row.split(" ")[1]) if row else 0


def _a_directory_row(path: str, old: _Rows, new: _Rows) -> bool:
    return stat.S_ISDIR(_mode(old.get(path))) and stat.S_ISDIR(_mode(new.get(path)))


def _a_new_pycache_dir(path: str, old: _Rows, new: _Rows) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name == "__pycache__" and path not in old and stat.S_ISDIR(_mode(new.get(path)))


def _a_removed_pyc(path: str, old: _Rows, new: _Rows) -> bool:
    return path not in new and _PYC.fullmatch(path) is not None


#: what :func:`diff` passes over by the listings alone, in order
SETTLED: tuple[Callable[[str, _Rows, _Rows], bool], ...] = (
    _a_directory_row,
    _a_new_pycache_dir,
    _a_removed_pyc,
)


def _pyc_question(top: str, path: str, old: _Rows, new: _Rows) -> list[object] | None:
    """``[pyc, its row, source, its row, optimize]`` for a new or changed byte-code file of this
    interpreter beside an unchanged source; None for anything else (it stays named)."""
    found = _PYC.fullmatch(path)
    row = new.get(path)
    if found is None or row is None or not stat.S_ISREG(_mode(row)):
        return None
    folder, name, tag, level = found.groups()
    if tag != sys.implementation.cache_tag:
        return None  # another interpreter's: infomark cannot compile it to compare
    source = f"{folder}/{name}.py" if folder else f"{name}.py"
    if source not in old or old.get(source) != new.get(source):
        return None  # the source is new or changed: named on its own account
    return [os.path.join(top, path), row, os.path.join(top, source), new[source], int(level or 0)]


#: The judge of :func:`faithful`, run in a child ``python -I -S``: it reads the files the
#: listing names (not through a link, only the very file listed), compiles the source and
#: compares the code objects. ``marshal`` is not safe against crafted data, so the agent's
#: bytes are unmarshalled only there: a crash there vouches for nothing.
_JUDGE = """
import json, marshal, os, sys
from importlib.util import MAGIC_NUMBER
def read(path, row):
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        s = os.fstat(fd)
        if row != f"{s.st_ino} {s.st_mode} {s.st_size} {s.st_mtime_ns} {s.st_ctime_ns}":
            raise ValueError(path)
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read()
    finally:
        os.close(fd)
def judge(pyc, pyc_row, src, src_row, level):
    try:
        data, text = read(pyc, pyc_row), read(src, src_row)
        made = compile(text, src, "exec", dont_inherit=True, optimize=level)
        return data[:4] == MAGIC_NUMBER and marshal.loads(data[16:]) == made
    except Exception:
        return False
print(json.dumps([judge(*ask) for ask in json.load(sys.stdin)]))
"""


def faithful(asks: list[list[object]]) -> list[bool]:
    """For each question of :func:`_pyc_question`: whether that byte-code file holds exactly
    the code ``compile()`` makes of its source (all False when the judge fails)."""
    if not asks:
        return []
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _JUDGE],
            input=json.dumps(asks),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        answers = json.loads(done.stdout) if done.returncode == 0 else []
    except (OSError, ValueError, subprocess.TimeoutExpired):
        answers = []
    if not isinstance(answers, list) or len(answers) != len(asks):
        return [False] * len(asks)
    return [answer is True for answer in answers]
