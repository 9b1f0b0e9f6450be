"""The change feed inside a long-running process (``infomark serve``): a watch, no watcher.

A command hook is a fresh process per tool call, so its change feed lives in a watcher
process of its own (:mod:`infomark.gates.feed`), authenticated by the kernel on every call
(the pin file, ``SO_PEERCRED``, the start time), one socket round trip a call, and used only
from :data:`~infomark.gates.fingerprint.FEED_MIN_TRACKED` files up. A service lives as long
as the watcher would: it holds the same watch (:class:`~infomark.gates.inotify.TreeWatch`)
itself, so nothing needs authenticating and the window costs a barrier (a file created and
removed in a private control directory, the queue drained), no socket, no pin, no boot id.
Measured with ``python -m bench.http_concurrent --files 1000`` (``docs/performance.md``):
the fingerprint after each Bash call ``lstat``ed every tracked file, 1.8 ms of the service's
CPU a call on the loop, which every other session waited for.

The window's start never leaves the process: :meth:`LocalFeeds.token` remembers it in memory
under the marker's key, and :meth:`LocalFeeds.since` answers only for a window this object
opened, on the same watch (a generation drawn when the watch was built). The marker file
says nothing the feed trusts, so an agent that can write it can at most lose the feed (the
compare then walks), never choose the window. Every doubt is a walk, as with the watcher
process: a watch not built yet (it is built in a thread, the calls meanwhile walk), an
overflowed queue, a control directory removed, a barrier that times out, another process
(``serve --workers``: the PostToolUse may reach another worker) or a restart in between.

Watches are kept for at most :data:`KEEP` work trees, the least recently used dropped first,
and a watch unused for :data:`IDLE` seconds is closed at the next call.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict

from infomark.gates import fingerprint
from infomark.gates.feed import index_count
from infomark.gates.inotify import FeedBroken, TreeWatch, available
from infomark.kernel import memtmp
from infomark.kernel.contexts import suppress

__all__ = [
    "IDLE",
    "ISSUED",
    "KEEP",
    "LOCAL_MIN_TRACKED",
    "RETRY",
    "LocalFeeds",
    "acquire",
    "release",
]

LOCAL_MIN_TRACKED = 200  # tracked files from which a service watches a tree
KEEP = 8  # work trees watched at once
IDLE = 1800.0  # seconds a watch is kept without a call
ISSUED = 4096  # windows remembered (a PreToolUse whose PostToolUse never comes is forgotten)
RETRY = 60.0  # seconds before a tree whose watch could not be built (or broke) is tried again


class _Tree:
    """One work tree's watch, with what guards it."""

    __slots__ = ("closed", "ctl", "gen", "lock", "used", "watch")

    def __init__(self, watch: TreeWatch, ctl: str) -> None:
        self.watch = watch
        self.ctl = ctl
        self.gen = os.urandom(8).hex()
        self.lock = threading.Lock()
        self.used = time.monotonic()
        self.closed = False


class LocalFeeds:
    """The watches of one process, by work tree; thread-safe."""

    def __init__(self, *, min_tracked: int | None = None, ctl_parent: str | None = None) -> None:
        self.min_tracked = LOCAL_MIN_TRACKED if min_tracked is None else min_tracked
        self.ctl_parent = ctl_parent  # None: a tmpfs if there is one, else the home's watch/
        self._lock = threading.Lock()
        self._trees: OrderedDict[str, _Tree] = OrderedDict()
        self._building: dict[str, threading.Event] = {}
        self._failed: dict[str, float] = {}  # tree -> when its watch failed (monotonic s)
        self._issued: OrderedDict[tuple[str, str], tuple[str, str, int]] = OrderedDict()
        self._closed = False

    # -- the window --------------------------------------------------------------------------

    def token(self, watch_dir: str, key: str, top: str, git_dir: str) -> bool:
        """Open the window of the call ``key`` (before it runs). False: no watch of ``top``
        is ready (one is started when the tree is big enough), so the compare walks."""
        tree = self._ready(watch_dir, top, git_dir)
        if tree is None:
            return False
        with tree.lock:
            try:
                tree.watch.drain()  # what came before the call: not stamped inside its window
                t = time.monotonic_ns()
            except (FeedBroken, OSError):
                t = -1
        if t < 0:
            self._drop(top, tree)
            return False
        with self._lock:
            self._issued[(watch_dir, key)] = (top, tree.gen, t)
            while len(self._issued) > ISSUED:
                self._issued.popitem(last=False)
        return True

    def issued(self, watch_dir: str, key: str) -> bool:
        """A window is open for ``key`` (tests)."""
        with self._lock:
            return (watch_dir, key) in self._issued

    def forget(self, watch_dir: str, key: str) -> None:
        """Close the window of ``key`` unanswered (its marker was cleared)."""
        with self._lock:
            self._issued.pop((watch_dir, key), None)

    def since(self, watch_dir: str, key: str, top: str) -> list[str] | None:
        """What may have changed under ``top`` in the window of ``key`` (paths relative to
        ``top``, ``dir/`` for everything under a directory); None: walk the whole tree."""
        with self._lock:
            opened = self._issued.pop((watch_dir, key), None)
            tree = self._trees.get(top)
        if opened is None or tree is None or opened[:2] != (top, tree.gen):
            return None  # not a window this watch opened: another process, or rebuilt since
        with tree.lock:
            try:
                if not tree.watch.barrier():
                    raise FeedBroken("the barrier timed out")
                tree.watch.rescan()
                paths = tree.watch.since(opened[2])
            except (FeedBroken, OSError):
                paths = None
        if paths is None:
            self._drop(top, tree)
        return paths

    # -- the watches -------------------------------------------------------------------------

    def _ready(self, watch_dir: str, top: str, git_dir: str) -> _Tree | None:
        now = time.monotonic()
        with self._lock:
            if self._closed:
                return None
            for other, old in list(self._trees.items()):
                if now - old.used > IDLE:
                    self._close(other, old)
            tree = self._trees.get(top)
            if tree is not None:
                tree.used = now
                self._trees.move_to_end(top)
                return tree
            if top in self._building or now - self._failed.get(top, -RETRY) < RETRY:
                return None
        if not available() or index_count(git_dir) < self.min_tracked:
            return None
        with self._lock:
            if top in self._building or top in self._trees or self._closed:
                return None
            self._building[top] = threading.Event()
        threading.Thread(target=self._build, args=(watch_dir, top), daemon=True).start()
        return None

    def _build(self, watch_dir: str, top: str) -> None:
        tree: _Tree | None = None
        ctl = ""
        try:
            ctl = tempfile.mkdtemp(prefix="infomark-feed-", dir=self._ctl_parent(watch_dir))
            tree = _Tree(TreeWatch(top, ctl), ctl)
        except (FeedBroken, OSError):
            if ctl:
                shutil.rmtree(ctl, ignore_errors=True)
        with self._lock:
            done = self._building.pop(top)
            if tree is not None and self._closed:
                self._close(top, tree)
            elif tree is not None:
                self._trees[top] = tree
                self._failed.pop(top, None)
                while len(self._trees) > KEEP:
                    self._close(*self._trees.popitem(last=False))
            else:
                self._failed[top] = time.monotonic()
        done.set()

    def _ctl_parent(self, watch_dir: str) -> str:
        """Where the control directory goes: ``/dev/shm`` when
        :mod:`~infomark.kernel.memtmp` would use it, else the home's ``watch/``. The barrier
        creates a file in it on every call, and on a journaling filesystem a create waits for
        the journal's commit, which the ledger's own fsyncs keep starting: 1.3 ms a barrier
        on the service's loop in the home (ext4), against ~10 µs on tmpfs
        (``bench.http_concurrent --files 1000 --profile``)."""
        if self.ctl_parent is not None:
            return self.ctl_parent
        return memtmp.SHM if memtmp.in_memory() else watch_dir

    def wait_built(self, top: str, timeout: float) -> bool:
        """Wait (bounded) for a watch of ``top`` being built; True when one is ready."""
        with self._lock:
            building = self._building.get(top)
        if building is not None:
            building.wait(timeout)
        with self._lock:
            return top in self._trees

    def _drop(self, top: str, tree: _Tree) -> None:
        """A watch that broke (overflow, its control directory gone, a barrier that timed
        out): closed, and the tree walked for :data:`RETRY` seconds (an agent that floods
        the queue on every call would otherwise have the watch rebuilt on every call)."""
        with self._lock:
            self._close(top, tree)
            self._failed[top] = time.monotonic()

    def _close(self, top: str, tree: _Tree) -> None:
        """Close ``tree`` once (the caller holds ``self._lock``; then ``tree.lock``)."""
        if self._trees.get(top) is tree:
            del self._trees[top]
        with tree.lock:
            if tree.closed:
                return
            tree.closed = True
            with suppress(OSError):
                tree.watch.close()
        shutil.rmtree(tree.ctl, ignore_errors=True)

    def close(self, wait: float = 5.0) -> None:
        """Close every watch; later windows walk. A watch being built is closed by its
        thread when it is done, which this waits for (at most ``wait`` seconds)."""
        with self._lock:
            self._closed = True
            for top, tree in list(self._trees.items()):
                self._close(top, tree)
            self._issued.clear()
            building = list(self._building.values())
        deadline = time.monotonic() + wait
        for done in building:
            done.wait(max(0.0, deadline - time.monotonic()))


_SHARED: list[LocalFeeds] = []  # the process's instance, while someone uses it
_USERS = [0]
_SHARED_LOCK = threading.Lock()


def acquire() -> LocalFeeds:
    """The process's watches, installed for :mod:`~infomark.gates.fingerprint` (one per
    process, shared by every app it serves; :func:`release` once for each call)."""
    with _SHARED_LOCK:
        if not _SHARED:
            _SHARED.append(LocalFeeds())
            fingerprint.use_local_feed(_SHARED[0])
        _USERS[0] += 1
        return _SHARED[0]


def release() -> None:
    """One user less; the last one uninstalls the watches and closes them."""
    with _SHARED_LOCK:
        _USERS[0] -= 1
        if _USERS[0] > 0 or not _SHARED:
            return
        feeds = _SHARED.pop()
        fingerprint.use_local_feed(None)
    feeds.close()
