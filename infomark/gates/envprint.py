"""A fingerprint of the project's own Python environments, taken with the project's baseline.

An attested copy links ``.venv`` and ``venv`` (and ``.tox``, ``.nox``) to their real place:
whatever they hold runs in the attested run, before infomark's report plugin (a ``.pth`` that
wraps ``_pytest`` as it is imported, an edited ``_pytest/python.py``, a planted pyc), and the
agent's commands can write them (they are in the project). So the project's baseline records,
for each of them, every entry's ``lstat`` (path, inode, mode, size, modification and change
time in nanoseconds; a change time cannot be set back by the file's owner), and an attested
run whose environment differs from that record does not run (``environment_changed``, naming
the first files that differ) until the user accepts the tree (``infomark approve
--baseline``). ``node_modules`` is not fingerprinted (see docs/security.md).
"""

from __future__ import annotations

import hashlib
import json
import os

__all__ = ["PYTHON_ENVS", "diff", "fingerprint", "listing"]

#: the environment directories (of :data:`infomark.tools.attest.carry.ENVIRONMENTS`) that
#: hold Python environments
PYTHON_ENVS = (".venv", "venv", ".tox", ".nox")


def listing(top: str) -> dict[str, list[int]]:
    """``{relative path: [inode, mode, size, mtime_ns, ctime_ns]}`` of every entry under
    ``top`` (symlinks not followed; ``top``'s own entry as ``.``)."""
    out: dict[str, list[int]] = {}
    st = os.lstat(top)
    out["."] = [st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    todo = [("", top)]
    while todo:
        rel_dir, path = todo.pop()
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue
        for entry in entries:
            rel = rel_dir + entry.name
            try:
                s = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            out[rel] = [s.st_ino, s.st_mode, s.st_size, s.st_mtime_ns, s.st_ctime_ns]
            if entry.is_dir(follow_symlinks=False):
                todo.append((rel + "/", entry.path))
    return out


def _digest(rows: dict[str, list[int]]) -> str:
    raw = json.dumps(rows, sort_keys=True, separators=(",", ":")).encode()
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def fingerprint(root: str) -> dict[str, tuple[str, dict[str, list[int]]]]:
    """``{env dir name: (digest, listing)}`` of the Python environments in ``root`` now
    (a symlinked environment is followed to its real place)."""
    out: dict[str, tuple[str, dict[str, list[int]]]] = {}
    for name in PYTHON_ENVS:
        real = os.path.realpath(os.path.join(root, name))
        if os.path.isdir(real):
            rows = listing(real)
            out[name] = (_digest(rows), rows)
    return out


def diff(before: dict[str, list[int]], after: dict[str, list[int]]) -> list[str]:
    """The paths that were added, removed or changed (sorted)."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
