"""The change feed's watcher state: inotify (Linux, via ctypes) on every tracked file of a tree.

:class:`TreeWatch` holds one inotify instance that watches, for the git work tree ``top``,
every directory that is an ancestor of a tracked path (names created, deleted, moved) and
every tracked file's own inode (writes, truncation, attribute and link-count changes, also
when they come through a hard link elsewhere, which a directory watch alone would not
report). Every event becomes a *candidate*: a path that **may** have changed, stamped with the
``CLOCK_MONOTONIC`` time at which the watcher *read* it (never earlier than the event itself,
so a window "since time T" misses no event that happened after T); a directory event names
the directory (``"dir/"``: everything tracked under it).
The feed never says a path is unchanged: the compare still ``lstat``s each candidate against
the marker's change time (:mod:`infomark.gates.fingerprint`), so a spurious candidate costs
one ``lstat`` and a missing one is the only failure, which is why every doubt ends the
watcher instead (:attr:`TreeWatch.broken`: queue overflow, a watch that cannot be added, the
tree's top moved or deleted, a tracked directory on another filesystem). A dead watcher means
the full walk.

:meth:`TreeWatch.barrier` makes a compare see every event the call caused: it creates a file
with a fresh random name in the control directory (watched by the same instance) and drains
the queue until that file's event comes out. inotify queues one instance's events in order,
so every event of a command that has returned is consumed by then. Standard library only.
"""

from __future__ import annotations

import ctypes
import errno
import os
import select
import struct
import time
from pathlib import Path

from infomark.gates.fingerprint import tracked_paths
from infomark.kernel.regular import read_regular

__all__ = ["FeedBroken", "TreeWatch", "available"]

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000

_SELF = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_DONT_FOLLOW
_NAMES = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
_DIR = _SELF | _NAMES | IN_ONLYDIR
_CTL = IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW
_EVENT = struct.Struct("iIII")
CANDIDATE_LIMIT = 200_000  # more remembered paths than this: older windows become incomplete
# Filesystems whose every change goes through this kernel's VFS (so inotify hears it). A
# network or FUSE filesystem can change under us without an event: the full walk there.
LOCAL_FS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs", "bcachefs"}
)


class FeedBroken(Exception):
    """The watcher can no longer promise that it saw every change (it must stop)."""


def available() -> bool:
    return os.uname().sysname == "Linux"


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.inotify_init1.argtypes = [ctypes.c_int]
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    return libc


def _fs_type(path: str) -> str:
    """The filesystem type of the mount holding ``path`` (from /proc/self/mountinfo)."""
    real = os.path.realpath(path)
    best, kind = "", ""
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            left, _, right = line.partition(" - ")
            fields = left.split()
            if len(fields) < 5 or not right:
                continue
            point = fields[4].replace("\\040", " ")
            inside = real == point or real.startswith(point.rstrip("/") + "/")
            if inside and len(point) >= len(best):
                best, kind = point, right.split()[0]
    return kind


class TreeWatch:
    """One inotify instance over the tracked files of the work tree ``top``."""

    def __init__(self, top: str, ctl: str) -> None:
        if _fs_type(top) not in LOCAL_FS:
            raise FeedBroken(f"{top} is not on a local filesystem")
        self.top = top.rstrip("/")
        self.ctl = ctl
        self._libc = _libc()
        self.fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self.fd < 0:
            raise FeedBroken(f"inotify_init1: {os.strerror(ctypes.get_errno())}")
        self.dev = os.lstat(self.top).st_dev
        self.floor = 0  # windows starting before this (ns) are incomplete: candidates dropped
        self.candidates: dict[str, int] = {}  # path -> when it was read (monotonic ns)
        self._now = 0  # the stamp of the batch being parsed
        self.paths: dict[int, set[str]] = {}  # wd -> the tree paths it watches ("" = top)
        self.dirs: set[int] = set()
        self.tracked: frozenset[str] = frozenset()
        self.ancestors: frozenset[str] = frozenset()
        self.index_ident: tuple[int, int, int] | None = None
        self.ctl_wd = self._add(ctl, _CTL)
        self._sentinels: set[str] = set()
        self.rescan(initial=True)
        self.ready = time.monotonic_ns()  # every watch is in place: windows may start now

    # -- watches -----------------------------------------------------------------------------

    def _add(self, path: str, mask: int) -> int:
        wd: int = self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            err = ctypes.get_errno()
            if err in (errno.ENOENT, errno.ENOTDIR):
                return -1  # gone already: its parent's event names it
            raise FeedBroken(f"inotify_add_watch {path}: {os.strerror(err)}")
        return wd

    def _abs(self, rel: str) -> str:
        return self.top + "/" + rel if rel else self.top

    def _watch(self, rel: str, *, is_dir: bool) -> None:
        path = self._abs(rel)
        if is_dir:
            try:
                if os.lstat(path).st_dev != self.dev:
                    raise FeedBroken(f"{path} is on another filesystem")
            except FileNotFoundError:
                return
            except OSError as exc:
                raise FeedBroken(f"{path}: {exc.strerror}") from exc
        mask = _DIR if is_dir else _SELF
        if not is_dir and os.path.isdir(path) and not os.path.islink(path):
            mask = _SELF | _NAMES  # a tracked directory (a submodule): its entries change it
        wd = self._add(path, mask)
        if wd < 0:
            return
        self.paths.setdefault(wd, set()).add(rel)
        if is_dir:
            self.dirs.add(wd)

    def rescan(self, *, initial: bool = False) -> None:
        """Read git's index again when it changed; watch what it newly tracks.

        Paths tracked only since the last scan are candidates: they may have changed before
        their watch existed.
        """
        index = self._index_path()
        try:
            st = os.stat(index)
            ident = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            ident = (0, 0, 0)
        if ident == self.index_ident:
            return
        listed = tracked_paths(Path(self.top), None)
        if listed is None:
            raise FeedBroken(f"{self.top} is no longer a git work tree")
        paths = frozenset(listed[1])
        ancestors = {""}
        for p in paths:
            parts = p.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                ancestors.add("/".join(parts[:i]))
        new_dirs = sorted(ancestors - self.ancestors, key=lambda d: d.count("/"))
        new_files = paths - self.tracked
        for d in new_dirs:
            self._watch(d, is_dir=True)
        for p in new_files:
            self._watch(p, is_dir=False)
        self.tracked, self.ancestors, self.index_ident = paths, frozenset(ancestors), ident
        if not initial:
            self._now = time.monotonic_ns()
            self._note(*new_files, *(d + "/" for d in new_dirs if d))

    def _index_path(self) -> str:
        dot = self.top + "/.git"
        if os.path.isfile(dot):
            text = read_regular(dot, 4096).decode("utf-8", "replace")
            gd = text.strip()[len("gitdir:") :].strip()
            return os.path.join(gd if os.path.isabs(gd) else os.path.join(self.top, gd), "index")
        return dot + "/index"

    # -- events ------------------------------------------------------------------------------

    def _note(self, *paths: str) -> None:
        for p in paths:
            self.candidates[p] = self._now
        if len(self.candidates) > CANDIDATE_LIMIT:
            self.candidates.clear()
            self.floor = self._now + 1

    def drain(self) -> None:
        """Consume every queued event (non-blocking)."""
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            self._now = time.monotonic_ns()  # after the read: not earlier than any event in it
            self._parse(data)

    def _parse(self, data: bytes) -> None:
        off = 0
        size = _EVENT.size
        while off + size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, off)
            name = data[off + size : off + size + length].rstrip(b"\0")
            off += size + length
            self._event(wd, mask, os.fsdecode(name))

    def _event(self, wd: int, mask: int, name: str) -> None:
        if mask & IN_Q_OVERFLOW:
            raise FeedBroken("the inotify queue overflowed")
        if wd == self.ctl_wd:
            if mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT):
                raise FeedBroken("the control directory is gone")
            self._sentinels.discard(name)
            return
        bases = self.paths.get(wd)
        if bases is None:
            return
        if mask & IN_IGNORED:
            self._note(*(b + "/" if wd in self.dirs else b for b in bases))
            del self.paths[wd]
            self.dirs.discard(wd)
            return
        if mask & IN_UNMOUNT or (mask & (IN_DELETE_SELF | IN_MOVE_SELF) and "" in bases):
            raise FeedBroken("the work tree's top was moved, deleted or unmounted")
        if not name:
            self._note(*(b + "/" if wd in self.dirs else b for b in bases))
            return
        for base in bases:
            if base in self.tracked:
                self._note(base)  # a tracked directory (a submodule) whose entries changed
            rel = base + "/" + name if base else name
            is_dir = bool(mask & IN_ISDIR)
            self._note(rel + "/" if is_dir else rel)
            if mask & (IN_CREATE | IN_MOVED_TO):
                if is_dir and rel in self.ancestors:
                    self._watch_subtree(rel)
                elif not is_dir and rel in self.tracked:
                    self._watch(rel, is_dir=False)

    def _watch_subtree(self, rel: str) -> None:
        """A tracked directory (re)appeared: watch it and every tracked path under it."""
        prefix = rel + "/"
        for d in sorted(
            (a for a in self.ancestors if a == rel or a.startswith(prefix)),
            key=lambda d: d.count("/"),
        ):
            self._watch(d, is_dir=True)
        for p in self.tracked:
            if p.startswith(prefix):
                self._watch(p, is_dir=False)

    # -- queries -----------------------------------------------------------------------------

    def barrier(self, timeout: float = 2.0) -> bool:
        """Drain until an event created now comes out of the queue; False on timeout."""
        name = os.urandom(12).hex()
        path = os.path.join(self.ctl, name)
        self._sentinels.add(name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        deadline = time.monotonic() + timeout
        try:
            poller = select.poll()
            poller.register(self.fd, select.POLLIN)
            while name in self._sentinels:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                if poller.poll(left * 1000):
                    self.drain()
            return True
        finally:
            self._sentinels.discard(name)
            os.unlink(path)

    def since(self, t: int) -> list[str] | None:
        """Candidates read at or after ``t`` (monotonic ns); None when this watcher cannot
        vouch for that window (not ready by then, or candidates since dropped)."""
        if t < self.ready or t < self.floor:
            return None
        return sorted(p for p, s in self.candidates.items() if s >= t)

    def close(self) -> None:
        os.close(self.fd)
