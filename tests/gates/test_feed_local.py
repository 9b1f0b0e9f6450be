"""A service's own change feed (``gates/feed_local.py``), as an agent with a shell meets it.

The sessions every feed must get right run in ``test_feed.py`` on both kinds (``any_fed``);
here, what is particular to watches held in the process: the window's start lives in memory
(a marker the agent rewrites cannot choose it), a window another process or an earlier
instance opened is walked, and every doubt (a flood, the control directory removed, a tree
that cannot be watched, a watch dropped to bound memory, the feeds closed) means the walk,
which still finds the change. Real git repositories, real bash for the calls.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from feed_support import Fed, local_fed, make_repo, start_local, stop_all

from infomark.gates import feed_local, inotify
from infomark.gates import fingerprint as fp
from infomark.gates.feed_local import LocalFeeds
from infomark.kernel import memtmp

__all__ = ["local_fed"]  # the fixture, imported


def _feeds(f: Fed) -> LocalFeeds:
    assert f.feeds is not None
    return f.feeds


def _found(f: Fed, key: str, rel: str, method: str) -> None:
    """``rel`` changed after the mark of ``key``: the compare names it, found by ``method``."""
    (f.root / rel).write_text("changed\n")
    change = fp.changes_since(f.watch, key, f.root)
    assert change is not None and change.method == method and change.files == (rel,)


def test_a_rewritten_marker_cannot_choose_the_window(local_fed: Fed) -> None:
    """The marker file holds no window the in-process feed believes: a token claiming a
    window that starts after the change (a watcher token, or one naming the feed) is
    ignored, and the feed answers for the window it opened."""
    assert fp.mark(local_fed.watch, "k", seq=1, root=local_fed.root)
    marker = Path(fp._marker(local_fed.watch, "k"))
    forged = {
        "seq": 1,
        "at": 0,
        "feed": {"pid": 1, "start": 1, "boot": "", "sock": "x", "t": 10**20},
    }
    marker.write_text(json.dumps(forged | {"local": "0" * 16, "t": 10**20}))
    _found(local_fed, "k", "p0/m1.py", "feed")


def test_a_window_another_instance_opened_is_walked(
    local_fed: Fed, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PostToolUse reaches another process (``serve --workers``) or a restarted one:
    its feeds did not open the window, so the compare walks, and still finds the change."""
    assert fp.mark(local_fed.watch, "k", seq=1, root=local_fed.root)
    assert _feeds(local_fed).issued(str(local_fed.watch), "k")
    other = LocalFeeds(min_tracked=1)
    monkeypatch.setattr(fp, "_LOCAL", other)
    try:
        assert fp.mark(local_fed.watch, "prime", seq=1, root=local_fed.root)  # builds its own watch
        assert other.wait_built(str(local_fed.root), 30)
        _found(local_fed, "k", "p1/m2.py", "git-index")
    finally:
        other.close()


def test_a_flooded_queue_means_the_walk_then_a_pause(local_fed: Fed) -> None:
    """The agent's call writes more events than the kernel queues (no one drains it while
    the call runs): the watch is dropped, the change found by the walk, and the tree is
    walked for the next calls rather than rebuilt on every one."""
    flood = (
        "python3 -c \"\nfor i in range(20000):\n    open('p1/m%d.py' % (i % 2), 'a').write('x')\n\""
    )
    bound = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    assert bound < 20000 * 2  # two watches (the directory, the file) see each write
    change, truth, tokened = local_fed.call(f"{flood}; echo hidden >> p1/m5.py")
    assert tokened and change.method == "git-index"
    assert set(change.files) == truth == {"p1/m0.py", "p1/m1.py", "p1/m5.py"}
    change, truth, tokened = local_fed.call("echo again >> p2/m2.py")
    assert not tokened and change.method == "git-index" and set(change.files) == truth
    assert not _feeds(local_fed).wait_built(str(local_fed.root), 0)  # not being rebuilt either


def test_the_control_directory_removed_by_the_agent_means_the_walk(local_fed: Fed) -> None:
    ctl = _feeds(local_fed)._trees[str(local_fed.root)].ctl
    assert Path(ctl).is_dir()
    change, truth, tokened = local_fed.call(f"rm -rf '{ctl}'; echo hidden >> p3/m3.py")
    assert tokened and change.method == "git-index"
    assert change.files == ("p3/m3.py",) == tuple(truth)


def test_calls_from_many_threads_each_find_their_change(local_fed: Fed) -> None:
    """A service runs sessions' calls on its loop and in threads at once, over one watch:
    every call's window names its own write (and may name a neighbour's; what the full scan
    finds after the call may include a neighbour's later write, so it is no oracle here)."""
    errors: list[BaseException] = []

    def session(n: int) -> None:
        try:
            for j in range(4):
                rel = f"p{n % 4}/m{j + 4 * (n // 4)}.py"
                change, truth, tokened = local_fed.call(f"echo {n} >> {rel}", key=f"t{n}-{j}")
                assert tokened and change.method == "feed"
                assert rel in truth and rel in change.files
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=session, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_closed_feeds_walk_and_release_their_descriptor(local_fed: Fed) -> None:
    feeds = _feeds(local_fed)
    tree = feeds._trees[str(local_fed.root)]
    assert fp.mark(local_fed.watch, "k", seq=1, root=local_fed.root)
    feeds.close()
    with pytest.raises(OSError):
        os.fstat(tree.watch.fd)
    assert not Path(tree.ctl).exists()  # its control directory removed
    _found(local_fed, "k", "p0/m0.py", "git-index")
    assert fp.mark(local_fed.watch, "k2", seq=1, root=local_fed.root)
    assert not feeds.issued(str(local_fed.watch), "k2") and not feeds._building


def test_the_least_recently_used_tree_is_dropped_past_keep(
    local_fed: Fed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(feed_local, "KEEP", 1)
    assert fp.mark(local_fed.watch, "k", seq=1, root=local_fed.root)
    second = make_repo(tmp_path / "second").resolve()
    assert fp.mark(local_fed.watch, "prime", seq=1, root=second)
    assert _feeds(local_fed).wait_built(str(second), 30)
    assert list(_feeds(local_fed)._trees) == [str(second)]
    _found(local_fed, "k", "p2/m2.py", "git-index")


def test_an_idle_watch_is_closed_at_the_next_call(local_fed: Fed) -> None:
    """...and a window the closed watch opened is walked, though a new watch of the same
    tree is in place by the time it is asked."""
    feeds = _feeds(local_fed)
    tree = feeds._trees[str(local_fed.root)]
    assert fp.mark(local_fed.watch, "old", seq=1, root=local_fed.root)
    tree.used -= feed_local.IDLE + 1
    assert fp.mark(local_fed.watch, "k", seq=1, root=local_fed.root)
    assert tree.closed and not feeds.issued(str(local_fed.watch), "k")
    assert feeds.wait_built(str(local_fed.root), 30)  # built again for the next calls
    assert feeds._trees[str(local_fed.root)] is not tree
    _found(local_fed, "old", "p3/m0.py", "git-index")


def test_a_tree_that_cannot_be_watched_is_walked_and_tried_again_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A network filesystem (no inotify events for others' writes): the build fails, every
    call walks, and the build is not attempted again on every call."""
    built: list[str] = []

    def remote(path: str) -> str:
        built.append(path)
        return "nfs"

    monkeypatch.setattr(inotify, "_fs_type", remote)
    root = make_repo(tmp_path / "repo").resolve()
    watch = tmp_path / "watch"
    watch.mkdir(mode=0o700)
    ctl = tmp_path / "ctl"  # its own: /dev/shm is shared with other tests' services
    ctl.mkdir()
    feeds = LocalFeeds(min_tracked=1, ctl_parent=str(ctl))
    monkeypatch.setattr(fp, "_LOCAL", feeds)
    try:
        for n in range(3):
            assert fp.mark(watch, f"k{n}", seq=1, root=root)
            assert not feeds.wait_built(str(root), 30)
            (root / "top.txt").write_text(f"{n}\n")
            change = fp.changes_since(watch, f"k{n}", root)
            assert change is not None and change.method == "git-index"
            assert change.files == ("top.txt",)
        assert len(built) == 1
        # the build made its directory in ctl before it tried the watch, then removed it
        assert not list(ctl.iterdir())
    finally:
        feeds.close()


def test_a_small_tree_is_not_watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_repo(tmp_path / "repo").resolve()  # 45 tracked files
    watch = tmp_path / "watch"
    watch.mkdir(mode=0o700)
    feeds = LocalFeeds()
    assert feeds.min_tracked == feed_local.LOCAL_MIN_TRACKED > 45
    monkeypatch.setattr(fp, "_LOCAL", feeds)
    try:
        assert fp.mark(watch, "k", seq=1, root=root)
        assert not feeds._building and not feeds.wait_built(str(root), 0)
    finally:
        feeds.close()


def test_the_control_directory_is_on_a_tmpfs_and_private(local_fed: Fed) -> None:
    """The barrier creates a file in it on every call: on tmpfs, where a create waits for
    no journal commit; a fresh directory only this user can enter."""
    ctl = Path(_feeds(local_fed)._trees[str(local_fed.root)].ctl)
    assert ctl.parent == Path(memtmp.SHM) and inotify._fs_type(str(ctl)) == "tmpfs"
    assert ctl.stat().st_mode & 0o777 == 0o700


def test_without_a_tmpfs_the_control_directory_is_in_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memtmp, "SHM", str(tmp_path / "no-shm"))
    f = start_local(tmp_path, monkeypatch)
    try:
        ctl = Path(_feeds(f)._trees[str(f.root)].ctl)
        assert ctl.parent == f.watch
        change, truth, tokened = f.call("echo 1 >> p0/m0.py")
        assert tokened and change.method == "feed" and set(change.files) == truth
    finally:
        stop_all(f)
