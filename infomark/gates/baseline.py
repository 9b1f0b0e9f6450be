"""The session's baseline: the project tree as it was before the agent's first action.

An attested run (docs/security.md#attested-runs) is made from it: the grading surface comes
from the baseline, only the agent's source changes are carried over. What is recorded:

- in a git work tree, ``HEAD`` and the files of the tree that differ from it (changed
  tracked files and untracked, non-ignored ones), each stored in the home's blob store;
  the unchanged ones are named by their git object id (read back with ``git cat-file``,
  no attributes, filters or hooks involved);
- elsewhere, a content-addressed copy: every file under the root (environment and cache
  directories left out) in the blob store.

The manifest (``{path: [ref, mode]}``, ``ref`` = ``git:<oid>`` or ``sha256:<hex>``, ``mode``
``f``/``x``/``l``; under ``above``, the files pytest reads in the directories above the root,
:data:`ABOVE_NAMES`, as ``../name`` paths) is itself a blob; its digest is the baseline id,
journaled as ``baseline_recorded``. git runs with the repository's configured programs switched off
(``core.fsmonitor``, hooks) since the repository's configuration is the agent's to write.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
from collections.abc import Callable, Iterator, Mapping

from infomark.gates import envprint, project_baseline
from infomark.gates.fingerprint import _SKIP_DIRS
from infomark.kernel.errors import UserError
from infomark.kernel.regular import NotRegular, read_regular
from infomark.kernel.runners import PYTEST_CONFIG_NAMES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from _typeshed import StrPath

    from infomark.ledger.engine import Ledger

__all__ = [
    "ABOVE_NAMES",
    "ENV_DIRS",
    "Manifest",
    "above",
    "accept",
    "capture",
    "current_digest",
    "ensure",
    "environment_changes",
    "environments",
    "git",
    "git_blob_id",
    "load",
    "walk_files",
]

Manifest = dict[str, list[str]]  # path -> [ref, mode]

#: directories that hold an environment or caches, not the project: never part of the
#: baseline (an attested copy reaches them read-only at their real place); the working-tree
#: fingerprint skips the same ones
ENV_DIRS = _SKIP_DIRS
_MAX_FILES = 50_000
_MAX_BYTES = 512 << 20
_GIT_SAFE = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "status.showUntrackedFiles=all",
)
_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG", "GIT_EXTERNAL_DIFF")


def git(root: StrPath, *args: str, stdin: bytes | None = None) -> bytes | None:
    """Run git in ``root`` with the repository's programs off; None when it fails."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_TERMINAL_PROMPT"] = "0"
    try:
        done = subprocess.run(
            ["git", *_GIT_SAFE, *args],
            cwd=os.fspath(root),
            input=stdin,
            capture_output=True,
            env=env,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def git_blob_id(data: bytes) -> str:
    """git's object id of a blob with ``data`` (SHA-1 repositories)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _mode(st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "l"
    return "x" if st.st_mode & 0o111 else "f"


def _read(path: str, mode: str) -> bytes:
    return os.readlink(path).encode("utf-8", "surrogateescape") if mode == "l" else _bytes(path)


def _bytes(path: str) -> bytes:
    """The content of the regular file ``path``; nothing for anything else. A FIFO the agent
    leaves in the project would block an ordinary open for ever (the first action's baseline
    never ends: in the HTTP service its session's calls queue behind it), and has no content
    a check could read from a copy."""
    try:
        return read_regular(path)
    except NotRegular:
        return b""


def walk_files(root: str, skip: tuple[str, ...] = ()) -> Iterator[str]:
    """Every file and symlink under ``root`` (relative, ``/``-separated), environment and
    cache directories and the ``skip`` paths (absolute) left out."""
    skipped = {os.path.realpath(s) for s in skip}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in ENV_DIRS
            and os.path.realpath(os.path.join(dirpath, d)) not in skipped
            and not os.path.islink(os.path.join(dirpath, d))
        )
        rel_dir = os.path.relpath(dirpath, root)
        for name in sorted(filenames):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
            yield rel
        for d in os.listdir(dirpath):
            full = os.path.join(dirpath, d)
            if os.path.islink(full) and os.path.isdir(full) and d not in ENV_DIRS:
                yield d if rel_dir == "." else f"{rel_dir}/{d}".replace(os.sep, "/")


def _git_head(root: str) -> tuple[str | None, Manifest] | None:
    """``(HEAD, {path: [git:oid, mode]})`` of the root's part of HEAD; None outside git."""
    inside = git(root, "rev-parse", "--is-inside-work-tree")
    if inside is None or inside.strip() != b"true":
        return None
    head = git(root, "rev-parse", "--verify", "-q", "HEAD")
    if head is None:
        return None, {}  # a repository without a commit: everything is untracked
    listing = git(root, "ls-tree", "-r", "-z", "HEAD", ".")
    if listing is None:
        return None
    files: Manifest = {}
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        mode, kind, oid = meta.decode().split()
        if kind != "blob":
            continue  # a submodule: not carried
        rel = path.decode("utf-8", "surrogateescape")
        files[rel] = [f"git:{oid}", {"100755": "x", "120000": "l"}.get(mode, "f")]
    return head.decode().strip(), files


def _current_git(root: str) -> list[str]:
    """Tracked and untracked non-ignored files under ``root`` now (relative to it)."""
    out = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", ".")
    if out is None:
        raise UserError(f"git cannot list the files of {root}")
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def current_digest(path: str, ref: str) -> str | None:
    """The digest of the file at ``path`` now, in the same form as ``ref``; None if absent."""
    try:
        st = os.lstat(path)
        data = _read(path, _mode(st))
    except OSError:
        return None
    if ref.startswith("git:"):
        return "git:" + git_blob_id(data)
    return "sha256:" + hashlib.sha256(data).hexdigest()


#: what pytest reads in the directories **above** its rootdir candidates: its configuration
#: files in its precedence order (a parent's one can become the rootdir) and ``conftest.py``
#: (loaded from the rootdir down to each test); recorded at baseline time so an attested copy
#: has the same above it, and nothing the agent writes there later
ABOVE_NAMES = (*PYTEST_CONFIG_NAMES, "conftest.py")
_ABOVE_MAX_BYTES = 1 << 20


def above(root: str, put: Callable[[bytes], str]) -> Manifest:
    """The :data:`ABOVE_NAMES` files in every directory above ``root`` (``../pytest.ini``,
    ``../../conftest.py`` …: relative to ``root``), stored through ``put``."""
    out: Manifest = {}
    here, up = os.path.realpath(root), ""
    while (parent := os.path.dirname(here)) != here:
        here, up = parent, up + "../"
        for name in ABOVE_NAMES:
            full = os.path.join(here, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or st.st_size > _ABOVE_MAX_BYTES:
                continue
            try:
                out[up + name] = [put(_bytes(full)), _mode(st)]
            except OSError:
                continue
    return out


def capture(
    root: StrPath, home: StrPath, put: Callable[[bytes], str]
) -> tuple[dict[str, Any], bytes]:
    """Record the tree at ``root``: ``(event payload, manifest JSON)``; the blobs are stored
    through ``put``. Raises :class:`UserError` when the tree is too large to copy."""
    root_s = os.path.realpath(root)
    skip = (os.fspath(home),)
    head = _git_head(root_s)
    files: Manifest = {}
    total = 0
    if head is not None:
        commit, files = head
        kind = "git"
        for rel in _current_git(root_s):
            full = os.path.join(root_s, rel)
            if any(os.path.realpath(full).startswith(os.path.realpath(s) + os.sep) for s in skip):
                continue
            entry = files.get(rel)
            try:
                st = os.lstat(full)
            except OSError:
                files.pop(rel, None)  # deleted from the work tree
                continue
            mode = _mode(st)
            data = _read(full, mode)
            if entry is not None and entry[0] == "git:" + git_blob_id(data) and entry[1] == mode:
                continue
            total += len(data)
            files[rel] = [put(data), mode]
        for rel in [r for r in files if not os.path.lexists(os.path.join(root_s, r))]:
            del files[rel]
    else:
        commit, kind = None, "tree"
        for rel in walk_files(root_s, skip):
            full = os.path.join(root_s, rel)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if len(files) >= _MAX_FILES or total + st.st_size > _MAX_BYTES:
                raise UserError(
                    f"{root_s} has more than {_MAX_FILES} files or {_MAX_BYTES >> 20} MiB outside "
                    "git: too large to copy for attested runs; make it a git repository"
                )
            mode = _mode(st)
            data = _read(full, mode)
            total += len(data)
            files[rel] = [put(data), mode]
    manifest = {"v": 1, "kind": kind, "head": commit, "files": files}
    outside = above(root_s, put)
    if outside:
        manifest["above"] = outside
    raw = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    blob = put(raw)
    payload = {"id": blob, "kind": kind, "head": commit, "files": len(files), "bytes": total}
    return payload, raw


def ensure(ledger: Ledger, *, required: bool = False) -> None:
    """Record the baseline if this session has none yet (before the agent's first action).

    The project's baseline (:mod:`infomark.gates.project_baseline`) is the session's: the
    first session infomark sees in a project records it, later sessions take it from there
    (not from the tree as they find it, which holds what earlier sessions left). A tree that
    cannot be recorded, or a project record that fails its MAC, journals
    ``baseline_recorded`` with an ``error``: attested runs then say why they cannot run.
    ``required``: attested runs are required, so the baseline should exist before any call
    infomark recorded; one taken later is ``late`` like one taken after a change.
    """
    if ledger.state.baseline:
        return
    try:
        payload = _project_payload(ledger, required)
    except UserError as exc:
        payload = {"id": "", "error": str(exc)}
    with ledger.transaction():
        if not ledger.state.baseline:
            ledger.emit("baseline_recorded", payload)


def _project_payload(ledger: Ledger, required: bool) -> dict[str, Any]:
    """The project's baseline as this session's ``baseline_recorded`` payload (recorded
    first when the project has none: ``late`` after this session's first recorded change,
    or, when ``required``, after any call it recorded)."""
    found = project_baseline.load(ledger)
    if found is None:
        payload, _ = capture(ledger.root_dir, ledger.home_dir, ledger.blobs.put)
        payload |= _environment_fields(ledger)
        state = ledger.state
        late = bool(state.first_modify_seq or (required and state.recorded_calls))
        found = project_baseline.record(ledger, payload, late=late)
    return {**found.baseline, "project": True, "late": found.late, "origin": found.session}


def accept(ledger: Ledger, *, by: str, note: str) -> str:
    """The user accepts the tree as it is now as the project's baseline (this session's
    too); returns its id. Raises :class:`UserError` when the tree cannot be recorded."""
    payload, _ = capture(ledger.root_dir, ledger.home_dir, ledger.blobs.put)
    payload |= _environment_fields(ledger)
    with ledger.transaction():
        project_baseline.accept(ledger, payload)
        ledger.emit(
            "baseline_recorded",
            {**payload, "project": True, "late": False, "origin": by, "note": note[:500]},
        )
    return str(payload["id"])


def _environment_fields(ledger: Ledger) -> dict[str, Any]:
    """A baseline's environment fields: the fingerprints, and the names it looked for."""
    return {"environments": environments(ledger),
            "environments_checked": list(envprint.FINGERPRINTED)}  # fmt: skip


def environments(ledger: Ledger) -> dict[str, list[str]]:
    """The fingerprints of the project's environments now (:mod:`.envprint`, the names of
    :data:`~infomark.gates.envprint.FINGERPRINTED`): ``{name: [digest, blob of the
    listing]}``. The baseline records which names it looked for (``environments_checked``):
    one recorded before ``node_modules`` was fingerprinted did not look for it."""
    out: dict[str, list[str]] = {}
    for name, (digest, text) in envprint.fingerprint(ledger.root_dir).items():
        out[name] = [digest, ledger.blobs.put(text.encode("utf-8", "surrogateescape"))]
    return out


def environment_changes(ledger: Ledger, recorded: Mapping[str, Any]) -> list[str]:
    """What differs between the project's environments now and the fingerprints of the
    baseline ``recorded`` (``.venv/lib/…/x.pth``, ``node_modules/jest-circus/…`` …); empty
    when nothing does. An
    environment the baseline did not have, or that is gone, is not linked into an attested
    copy (:func:`infomark.tools.attest.carry.build`): nothing of it runs, nothing to compare."""
    before = dict(recorded.get("environments") or {})
    now = envprint.fingerprint(ledger.root_dir, tuple(before))
    out: list[str] = []
    for name in sorted(before.keys() & now.keys()):
        digest, blob = before[name]
        if now[name][0] == digest:
            continue
        raw = ledger.blobs.get(str(blob))
        text = raw.decode("utf-8", "surrogateescape") if raw is not None else ""
        top = os.path.realpath(os.path.join(ledger.root_dir, name))
        found = envprint.diff(text, now[name][1], top)
        out += [f"{name}/{p}" if p != "." else name for p in found]
    return out


def load(ledger: Ledger, baseline: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest of a recorded baseline (checked against its id)."""
    bid = str(baseline.get("id") or "")
    if not bid:
        why = baseline.get("error") or "no baseline was recorded"
        raise UserError(f"this session has no usable baseline: {why}")
    raw = ledger.blobs.get(bid)
    if raw is None or "sha256:" + hashlib.sha256(raw).hexdigest() != bid:
        raise UserError(f"the baseline {bid} is missing or damaged in the blob store")
    doc: dict[str, Any] = json.loads(raw)
    return doc
