"""The throwaway copy an attested run happens in: the baseline, plus the agent's source changes.

:func:`build` writes the baseline's files (the bytes of the ones that still match it, read
and hashed in one pass; git objects through ``git cat-file --batch`` for the others; the rest
from the blob store) into a private directory, then carries over exactly the changes the
source rule accepts (:func:`is_source`); every other change is left out and named, so the
finish can say which file did not count. The files pytest reads above the project that the
baseline recorded (``../pytest.ini``, ``../conftest.py``:
:data:`infomark.gates.baseline.ABOVE_NAMES`) are written above the copy, which
:func:`infomark.tools.attest.sandboxed.copy_dir` places deep enough for them; nothing else exists
above it. Directories that hold an environment (``.venv``, ``node_modules`` …) are linked to
their real place, which the sandbox keeps read-only (their caches hidden:
:func:`infomark.gates.envprint.ready_caches`); an environment the project's baseline looked for and
did not find (:mod:`infomark.gates.envprint`: created after it) is not.
"""

from __future__ import annotations

import errno
import importlib.machinery
import os
import shutil
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from infomark.gates.baseline import ENV_DIRS, git, git_blob_id, walk_files
from infomark.gates.envprint import PYTHON_ENVS, CacheMark, cache_mark, hidden, ready_caches
from infomark.gates.grading import CONFIG_NAMES, DEFAULT_TEST_GLOBS
from infomark.gates.surface import GradingSurface, SourceSet, discover, glob_match, source_set
from infomark.kernel.digest import sha256
from infomark.kernel.errors import UserError
from infomark.tools.attest import fileio, pycache
from infomark.tools.attest.shadow import shadowed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.ledger.engine import Ledger

__all__ = ["ENVIRONMENTS", "Carry", "build", "changes", "guard", "is_source", "remove"]

#: names a runner or the interpreter reads as configuration or start-up code: a new one is
#: never carried (the attested copy has the baseline's, or none)
_NEVER_NEW = frozenset(
    {
        *CONFIG_NAMES,
        "__init__.py",
        "conftest.py",
        "sitecustomize.py",
        "usercustomize.py",
        "setup.py",
        "GNUmakefile",
        "makefile",
        "Makefile",
    }
)


@dataclass(slots=True)
class Carry:
    """What went into the copy besides the baseline."""

    carried: dict[str, str] = field(default_factory=dict)  # path -> digest (or "deleted")
    left_out: dict[str, str] = field(default_factory=dict)  # path -> why it was not carried
    environments: list[str] = field(default_factory=list)  # env dirs linked in (real paths)
    #: their caches' paths and what was at each when the copy was built (ready_caches)
    cache_marks: list[tuple[str, CacheMark]] = field(default_factory=list)
    #: the bytes of the regular files written into the copy that its byte-code fill reads
    #: (copy-relative path -> bytes, :func:`infomark.tools.attest.pycache.reads`): the fill
    #: takes them from here instead of walking the copy and reading each file again
    sources: dict[str, bytes] = field(default_factory=dict)

    @property
    def caches(self) -> list[str]:
        """The environments' caches the run hides."""
        return hidden(self.cache_marks)

    def to_dict(self) -> dict[str, Any]:
        return {"carried": dict(self.carried), "left_out": dict(self.left_out)}


def _dir(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


#: compiled extension modules (``calc.cpython-311-x86_64-linux-gnu.so``, ``.abi3.so``,
#: ``.pyd``): the import system tries them before a ``.py`` of the same name, so one beside a
#: test module or a conftest would be imported in its place; a build makes them, not a change
_EXTENSIONS = tuple(sorted({*importlib.machinery.EXTENSION_SUFFIXES, ".so", ".pyd"}))


def guard(
    rel: str, baseline: Mapping[str, list[str]], packages: Collection[str] = ()
) -> str | None:
    """Why a change of ``rel`` is never carried, whatever the runner's surface says: a hidden
    file or directory (configuration), byte code (a ``.pyc``, anything in ``__pycache__``:
    CPython runs an unchecked hash-based pyc without reading its source, so a pyc beside a
    grading file would replace it), a compiled extension module (imported before a source of
    the same name), a ``.pth`` file, a *new* file under a name a runner
    or the interpreter reads as configuration or start-up code (a new ``__init__.py`` only in
    a new directory: a new package), or a *new* top-level module named like one the runner,
    the standard library or an installed package provides (:mod:`.shadow`; ``packages``: the
    directories that hold an ``__init__.py`` in the copy)."""
    name = rel.rsplit("/", 1)[-1]
    parts = rel.split("/")
    if any(p.startswith(".") for p in parts):
        return "a hidden file (configuration, not source)"
    if "__pycache__" in parts or name.endswith((".pyc", ".pyo")):
        return "byte code: the interpreter can run it in place of its source"
    if name.endswith(_EXTENSIONS):
        return "a compiled extension: the interpreter imports it before a module's source"
    if name.endswith(".pth"):
        return "a .pth file runs at interpreter start-up"
    if rel in baseline:
        return None
    module = shadowed(rel, packages)
    if module is not None:
        return f"a new module that would be imported in place of `{module}`"
    if name not in _NEVER_NEW:
        return None
    if name == "__init__.py" and not _held_files(baseline, _dir(rel)):
        return None  # a new package in a new directory
    return f"a new {name}: read by the test runner or the interpreter"


def is_source(
    rel: str,
    baseline: Mapping[str, list[str]],
    rule: SourceSet,
    packages: Collection[str] = (),
) -> tuple[bool, str]:
    """Is a change of ``rel`` carried into the attested copy, and why (or why not)?

    The runner's surface and the source rule (:func:`infomark.gates.surface.source_set`:
    ``[grading] source`` globs, else files of the baseline outside the surface and new files
    beside them, and new tests) decide; :func:`guard` can only take more out.
    """
    why_not = guard(rel, baseline, packages)
    if why_not is not None:
        return False, why_not
    if rel not in baseline and _new_test(rel, rule.surface):
        return True, "a new test (run under the runner's integrity check)"
    if rule.carried(rel):
        if rel in baseline:
            return True, "source of the baseline"
        if rule.surface.is_new_test(rel):
            return True, "a new test (run under the runner's integrity check)"
        return True, "a new file beside the baseline's source"
    if rule.surface.covers(rel):
        kinds = ", ".join(k.value for k in rule.surface.kinds or (rule.surface.kind,))
        return False, f"grading surface of {kinds} (the baseline's version is used)"
    if rule.globs:
        return False, "outside [grading] source"
    return False, "not source: a new file where the baseline held no source beside it"


def _new_test(rel: str, surface: GradingSurface) -> bool:
    """A test file by the runner's own patterns, new since the baseline: also one the oracle
    names (a reproduction written first, TDD), which the surface lists as a named file."""
    globs = surface.test_globs or DEFAULT_TEST_GLOBS  # a named file: the usual test names
    return surface.is_new_test(rel) or any(glob_match(rel, g) for g in globs)


def _held_files(baseline: Mapping[str, list[str]], d: str) -> bool:
    prefix = d + "/" if d else ""
    return any(p.startswith(prefix) and "/" not in p[len(prefix) :] for p in baseline)


def changes(
    root: str,
    baseline: Mapping[str, list[str]],
    home: str,
    *,
    kind: str,
    unchanged: dict[str, bytes] | None = None,
) -> dict[str, str | None]:
    """Files that differ from the baseline now: path -> current digest (None: deleted).

    ``unchanged``, when given, receives the bytes of every file that still matches the
    baseline (read and hashed here: the very bytes the baseline recorded)."""
    now: set[str]
    if kind == "git":
        listed = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", ".")
        if listed is None:
            raise UserError(f"git cannot list the files of {root}")
        now = {p.decode("utf-8", "surrogateescape") for p in listed.split(b"\0") if p}
    else:
        now = set(walk_files(root, (home,)))
    inside = os.path.relpath(os.path.realpath(home), os.path.realpath(root))
    if not inside.startswith(".."):  # the ledger home in the project: never the agent's change
        now = {p for p in now if p != inside and not p.startswith(inside + "/")}
    # a new file in an environment or cache directory (``__pycache__``, ``venv`` …) is never
    # carried (:func:`guard`, the linked environments): not read, not named, as the walk of
    # a tree without git skips them
    now = {p for p in now if p in baseline or not ENV_DIRS.intersection(p.split("/")[:-1])}
    out: dict[str, str | None] = {}
    top = root.rstrip("/") + "/"
    for rel in sorted(now | set(baseline)):
        entry = baseline.get(rel)
        got, data = _digest(top + rel, entry[0] if entry else "sha256:")
        if entry is None:
            if got is not None:
                out[rel] = got
        elif got != entry[0]:
            out[rel] = got
        elif unchanged is not None and data is not None:
            unchanged[rel] = data
    return out


def _digest(path: str, ref: str) -> tuple[str | None, bytes | None]:
    """:func:`infomark.gates.baseline.current_digest` and the bytes it hashed (a symlink: its
    target)."""
    try:
        data = fileio.read_path(path, os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno != errno.ELOOP:  # ELOOP: a symlink (not followed)
            return None, None
        try:
            data = os.readlink(path).encode("utf-8", "surrogateescape")
        except OSError:
            return None, None
    if ref.startswith("git:"):
        return "git:" + git_blob_id(data), data
    return "sha256:" + sha256(data).hexdigest(), data


def _keep(sources: dict[str, bytes], rel: str, data: bytes | None, mode: str = "f") -> None:
    """Note in ``sources`` what the copy now holds at ``rel`` (``data`` None: nothing)."""
    if data is not None and mode != "l" and pycache.reads(rel):
        sources[rel] = data
    else:
        sources.pop(rel, None)


def _write(path: str, data: bytes, mode: str, made: set[str] | None = None) -> None:
    parent = os.path.dirname(path) or "."
    if made is None or parent not in made:
        os.makedirs(parent, exist_ok=True)
        if made is not None:
            made.add(parent)
    if mode == "l":
        os.symlink(data.decode("utf-8", "surrogateescape"), path)
        return
    fileio.write_path(path, data)
    if mode == "x":
        os.chmod(path, 0o700)  # the copy is private: its owner runs it


def _git_objects(root: str, oids: list[str]) -> dict[str, bytes]:
    if not oids:
        return {}
    out = git(root, "cat-file", "--batch", stdin=("\n".join(oids) + "\n").encode())
    if out is None:
        raise UserError("git cannot read the baseline's objects (was HEAD's history rewritten?)")
    objects: dict[str, bytes] = {}
    pos = 0
    for oid in oids:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].split()
        if len(header) != 3:
            raise UserError(f"git object {oid} of the baseline is missing")
        size = int(header[2])
        data = out[nl + 1 : nl + 1 + size]
        if git_blob_id(data) != oid:
            raise UserError(f"git object {oid} does not hold what the baseline recorded")
        objects[oid] = data
        pos = nl + 1 + size + 1
    return objects


def build(
    ledger: Ledger,
    manifest: Mapping[str, Any],
    dest: str,
    oracle: str,
    *,
    source_globs: Sequence[str] = (),
    approved: Mapping[str, str] | None = None,
    carry_changes: bool = True,
) -> tuple[Carry, GradingSurface]:
    """Write the copy under ``dest``: the baseline, the approved grading files
    (``approved``: path -> blob, the operator accepted them), then the source changes;
    the runner's grading surface is discovered on the baseline's files, not the agent's.
    ``carry_changes=False``: the pristine baseline (the oracle's baseline run)."""
    root = ledger.root_dir
    files: dict[str, list[str]] = {k: list(v) for k, v in dict(manifest["files"]).items()}
    kind = str(manifest.get("kind"))
    # one pass over the tree: a file that still matches the baseline is written from the
    # bytes just hashed; git objects are read only for the files that changed since
    unchanged: dict[str, bytes] = {}
    changed = changes(root, files, ledger.home_dir, kind=kind, unchanged=unchanged)
    oids = sorted({r[4:] for p, (r, _) in files.items() if p not in unchanged and r[:4] == "git:"})
    objects = _git_objects(root, oids)
    made: set[str] = set()
    carry = Carry()
    top = dest.rstrip("/") + "/"
    for rel, (ref, mode) in files.items():
        data = unchanged.get(rel)
        if data is None and ref.startswith("git:"):
            data = objects[ref[4:]]
        elif data is None:
            blob = ledger.blobs.get(ref)
            if blob is None or "sha256:" + sha256(blob).hexdigest() != ref:
                raise UserError(f"the baseline's copy of {rel} is missing from the blob store")
            data = blob
        _write(top + rel, data, mode, made)
        _keep(carry.sources, rel, data, mode)
    for rel, blob_ref in (approved or {}).items():
        approved_data = ledger.blobs.get(blob_ref)
        if approved_data is not None:
            target = os.path.join(dest, rel)
            if os.path.lexists(target):
                os.unlink(target)
            _write(target, approved_data, "f", made)
            _keep(carry.sources, rel, approved_data)
            files[rel] = [blob_ref, "f"]
            changed.pop(rel, None)  # compared with the approved content, not the baseline's
            now, _ = _digest(os.path.join(root, rel), blob_ref)
            if now != blob_ref:
                changed[rel] = now
    for rel, (ref, mode) in dict(manifest.get("above") or {}).items():
        blob = ledger.blobs.get(ref)
        if blob is None or "sha256:" + sha256(blob).hexdigest() != ref:
            raise UserError(f"the baseline's copy of {rel} is missing from the blob store")
        _write(os.path.normpath(os.path.join(dest, rel)), blob, mode, made)
    grading = discover(dest, oracle)
    rule = source_set(grading, files, source_globs)
    # environments first: a carried symlink into one leads out of the copy (:func:`_link_out`)
    recorded = ledger.state.baseline.get("environments")
    checked = ledger.state.baseline.get("environments_checked") or PYTHON_ENVS  # an older one
    for name in ENVIRONMENTS:
        real = os.path.join(root, name)
        if os.path.isdir(real) and not os.path.lexists(os.path.join(dest, name)):
            if isinstance(recorded, dict) and name in checked and name not in recorded:
                carry.left_out[name] = _NEW_ENV if name in PYTHON_ENVS else _NEW_NODE
                continue
            os.symlink(os.path.realpath(real), os.path.join(dest, name))
            carry.environments.append(os.path.realpath(real))
            carry.cache_marks += ready_caches(name, os.path.realpath(real))
    _carry(root, dest, changed if carry_changes else {}, files, rule, carry)
    return carry, grading


def _carry(
    root: str,
    dest: str,
    todo: Mapping[str, str | None],
    files: Mapping[str, list[str]],
    rule: SourceSet,
    carry: Carry,
) -> None:
    """Write into ``dest`` the changes of ``todo`` (path -> digest, None: deleted) that are
    carried; record in ``carry`` what was and what was left out, and why."""
    packages = _packages(files, todo)
    for rel, digest in todo.items():
        ok, why = is_source(rel, files, rule, packages)
        out = _link_out(dest, rel, os.path.join(root, rel)) if ok and digest else None
        if out is not None:
            ok, why = False, out
        if not ok:
            carry.left_out[rel] = why
            continue
        target = os.path.join(dest, rel)
        if os.path.lexists(target):
            os.unlink(target)
        _keep(carry.sources, rel, None)
        if digest is None:
            carry.carried[rel] = "deleted"
            continue
        full = os.path.join(root, rel)
        mode = "l" if os.path.islink(full) else ("x" if os.access(full, os.X_OK) else "f")
        try:
            data = os.readlink(full).encode() if mode == "l" else _read_file(full)
        except OSError:
            continue
        _write(target, data, mode)
        _keep(carry.sources, rel, data, mode)
        carry.carried[rel] = "sha256:" + sha256(data).hexdigest()


class CachesMoved(UserError):
    """An environment's cache moved while a run ran (:func:`infomark.gates.envprint.
    ready_caches`): what the run read is not vouched for."""

    def __init__(self, moved: list[str]) -> None:
        super().__init__(
            f"an environment's cache changed while the check ran: {', '.join(moved)} was "
            "made, removed, renamed or replaced, so the run could have read what was put "
            "there; next step: leave the caches alone while an attested check runs, and "
            "check again"
        )
        self.moved = moved


def check_caches(carried: Carry) -> None:
    """Raise :class:`CachesMoved` when a cache path of the environments linked into the run
    is not what it was when the copy was built (:func:`infomark.gates.envprint.ready_caches`)."""
    moved = [p for p, mark in carried.cache_marks if cache_mark(p) != mark]
    if moved:
        raise CachesMoved(moved)


_NEW_ENV = (
    "a Python environment the project's baseline did not have: not linked, nothing of it runs "
    "(the user accepts it with `infomark approve --baseline`)"
)
_NEW_NODE = (
    "a node_modules the project's baseline did not have: not linked, nothing of it runs "
    "(the user accepts it with `infomark approve --baseline`)"
)

#: the directories linked into the copy from their real place (read-only there): installed
#: environments. Caches (``.pytest_cache``, ``.mypy_cache``, ``.ruff_cache``, ``.hypothesis``)
#: are not: they are state the agent can write, and a runner reads them to decide what to run
#: (``pytest --lf`` runs the tests ``.pytest_cache`` lists) or what to report (a cached
#: "clean" result); the run starts with none
ENVIRONMENTS = ("node_modules", ".venv", "venv", ".tox", ".nox")


def _packages(files: Mapping[str, list[str]], changed: Mapping[str, str | None]) -> set[str]:
    """Directories that hold an ``__init__.py`` in the copy: the baseline's, and a new
    directory's new one (the only new ``__init__.py`` :func:`guard` carries)."""
    out = {_dir(rel) for rel in files if rel.rsplit("/", 1)[-1] == "__init__.py"}
    for rel, digest in changed.items():
        d = _dir(rel)
        if digest and rel.rsplit("/", 1)[-1] == "__init__.py" and not _held_files(files, d):
            out.add(d)
    return out


def _link_out(dest: str, rel: str, full: str) -> str | None:
    """Why ``rel`` (the agent's ``full``) is not carried when it is a symlink (None: it is
    not one, or it is carried): one that leads out of the copy reads a file the change set
    does not hold, and that file can change after the run. Resolved in the copy as built so
    far, so a chain through another carried link is judged by that link's own verdict."""
    try:
        link = os.readlink(full)
    except OSError:
        return None  # not a symlink
    where = os.path.realpath(os.path.join(dest, os.path.dirname(rel), link))
    top = os.path.realpath(dest)
    if where == top or where.startswith(top + "/"):
        return None
    return "a symlink that leads out of the copy: what it reads is not part of the change"


def _read_file(path: str) -> bytes:
    return fileio.read_path(path)


def remove(dest: str) -> None:
    shutil.rmtree(dest, ignore_errors=True)
