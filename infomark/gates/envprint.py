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
import os

__all__ = ["PYTHON_ENVS", "diff", "fingerprint", "listing"]

#: the environment directories (of :data:`infomark.tools.attest.carry.ENVIRONMENTS`) that
#: hold Python environments
PYTHON_ENVS = (".venv", "venv", ".tox", ".nox")


def listing(top: str) -> str:
    """One sorted line per entry under ``top`` (``top`` itself as ``.``; symlinks not
    followed): ``path NUL inode mode size mtime_ns ctime_ns``."""
    st = os.lstat(top)
    lines = [f".\0{st.st_ino} {st.st_mode} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}"]
    todo = [("", top)]
    while todo:
        rel_dir, path = todo.pop()
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    rel = rel_dir + entry.name
                    try:
                        s = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    lines.append(
                        f"{rel}\0{s.st_ino} {s.st_mode} {s.st_size} {s.st_mtime_ns} {s.st_ctime_ns}"
                    )
                    if entry.is_dir(follow_symlinks=False):
                        todo.append((rel + "/", entry.path))
        except OSError:
            continue
    lines.sort()
    return "\n".join(lines)


def fingerprint(root: str, names: tuple[str, ...] = PYTHON_ENVS) -> dict[str, tuple[str, str]]:
    """``{env dir name: (digest, listing)}`` of the Python environments ``names`` in ``root``
    now (a symlinked environment is followed to its real place)."""
    out: dict[str, tuple[str, str]] = {}
    for name in names:
        real = os.path.realpath(os.path.join(root, name))
        if os.path.isdir(real):
            text = listing(real)
            digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
            out[name] = ("sha256:" + digest, text)
    return out


def _rows(text: str) -> dict[str, str]:
    return dict(line.split("\0", 1) for line in text.split("\n") if "\0" in line)


def diff(before: str, after: str) -> list[str]:
    """The paths that were added, removed or changed between two listings (sorted)."""
    old, new = _rows(before), _rows(after)
    return sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p))
