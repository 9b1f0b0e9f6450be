"""A git repository under a live change-feed watcher, and one watched call run by real bash."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from infomark.gates import feed
from infomark.gates import fingerprint as fp
from infomark.gates.feed_local import LocalFeeds

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@x.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@x.invalid",
}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True)


# Each entry is a session: calls run one after another under the same watcher.
SESSIONS = {
    "nothing": ["true"],
    "append": ["echo y >> p0/m1.py"],
    "truncate": [": > p1/m2.py"],
    "rewrite in place (python)": ["python3 -c \"open('p2/m3.py','r+').write('Z')\""],
    "chmod": ["chmod +x p3/m4.py"],
    "touch -d (old mtime)": ["touch -d 2001-01-01 p0/m5.py"],
    "replace by rename": ["echo n > /tmp/x.$$ && mv /tmp/x.$$ p1/m6.py"],
    "delete": ["rm p2/m7.py"],
    "rm -rf a tracked dir": ["rm -rf p3"],
    "rm -rf and recreate, then edit the new dir": [
        "rm -rf p0 && mkdir -p p0/sub && echo a > p0/m1.py",
        "echo b > p0/m2.py && echo c > p0/sub/deep.py",
    ],
    "move a dir away and back": ["mv p1 p1.away", "mv p1.away p1 && echo x >> p1/m0.py"],
    "write through a hard link made in an earlier call": [
        "ln p2/m1.py ../l2 && mv p2/m1.py p2/m9.py",
        "echo evil >> ../l2",
    ],
    "mmap write": [
        "python3 -c \"import mmap,os; fd=os.open('p3/m1.py',os.O_RDWR); m=mmap.mmap(fd,0); "
        "os.close(fd); m[0:1]=b'Q'; m.flush()\""
    ],
    "symlink replaces a file": ["rm p0/m3.py && ln -s /etc/hostname p0/m3.py"],
    "newly tracked in a new dir, then edited": [
        "mkdir -p fresh/deeper && echo 1 > fresh/deeper/n.py && git add fresh",
        "echo 2 >> fresh/deeper/n.py",
    ],
    "many writes, then return (the barrier)": [
        "for d in p0 p1 p2 p3; do for i in 0 1 2 3 4 5 6 7 8 9; do echo $i >> $d/m$i.py; done; done"
    ],
    "a directory replaced by a file": ["rm -rf p1/sub && echo f > p1/sub"],
}


def make_repo(root: Path, dirs: int = 4, per_dir: int = 10) -> Path:
    for d in range(dirs):
        (root / f"p{d}" / "sub").mkdir(parents=True)
        for i in range(per_dir):
            (root / f"p{d}" / f"m{i}.py").write_text(f"v = {i}\n")
        (root / f"p{d}" / "sub" / "deep.py").write_text("deep\n")
    (root / "top.txt").write_text("top\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


@dataclass
class Fed:
    """A repository, a watch dir, and the pinned watcher (started for the test), or, with
    ``feeds``, the process's own watches (a service's, :mod:`infomark.gates.feed_local`)."""

    root: Path
    watch: Path
    pin: dict[str, object]
    started: list[int] = field(default_factory=list)  # every process the test started
    scanned: set[str] = field(default_factory=set)  # what the full scan named, last call
    feeds: LocalFeeds | None = None

    @property
    def pid(self) -> int:
        pid = self.pin["pid"]
        assert isinstance(pid, int)
        return pid

    def call(self, command: str, *, key: str = "k") -> tuple[fp.TreeChange, set[str], bool]:
        """Mark, run ``command`` in real bash, compare. Returns (the change, what truly
        changed, whether the mark took a feed token).

        What truly changed: every tracked file whose change time is not older than the marker
        (the full scan's test), and every tracked file that existed before the call and is
        gone after it. The full scan may name more (a file missing since an earlier call,
        under a directory this call changed; :attr:`scanned`), and so may the feed, but never
        less.
        """
        before = self._existing()
        assert fp.mark(self.watch, key, seq=1, root=self.root)
        if self.feeds is not None:
            fed = self.feeds.issued(str(self.watch), key)
        else:
            fed = "feed" in (fp._marker_data(self.watch, key) or {})
        since = fp.marker_time(self.watch, key)
        assert since is not None
        subprocess.run(["bash", "-c", command], cwd=self.root, env=GIT_ENV, check=False)
        change = fp.changes_since(self.watch, key, self.root)
        assert change is not None
        listed = fp.tracked_paths(self.root, None)
        assert listed is not None
        scan = fp._scan_tracked(listed[0], listed[1], since)
        truth = {p for p, _t, d in scan if not d} | (before - self._existing())
        self.scanned = {p for p, _t, _d in scan}
        assert truth <= self.scanned  # the full scan names every true change
        fp.clear_mark(self.watch, key)
        return change, truth, fed

    def _existing(self) -> set[str]:
        listed = fp.tracked_paths(self.root, None)
        assert listed is not None
        return {p for p in listed[1] if os.path.lexists(self.root / p)}


def start_fed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Fed:
    monkeypatch.setattr(fp, "FEED_MIN_TRACKED", 1)
    root = make_repo(tmp_path / "repo").resolve()
    watch = tmp_path / "home" / "watch"
    watch.mkdir(parents=True, mode=0o700)
    pin = feed.launch(watch, root, wait=30)
    assert pin is not None, "the watcher did not report ready"
    return Fed(root, watch, pin, [pin["pid"]])  # type: ignore[list-item]


def start_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Fed:
    """A repository watched by this process's own feeds, installed as a service installs
    them; the watch is built (the first marked call starts it) before the test's calls."""
    root = make_repo(tmp_path / "repo").resolve()
    watch = tmp_path / "home" / "watch"
    watch.mkdir(parents=True, mode=0o700)
    feeds = LocalFeeds(min_tracked=1)
    monkeypatch.setattr(fp, "_LOCAL", feeds)
    assert fp.mark(watch, "prime", seq=0, root=root)
    assert not feeds.issued(str(watch), "prime")  # the first call walks: nothing built yet
    assert feeds.wait_built(str(root), 30), "the watch was not built"
    fp.clear_mark(watch, "prime")
    return Fed(root, watch, {}, feeds=feeds)


def stop_all(fed: Fed) -> None:
    if fed.feeds is not None:
        fed.feeds.close()
    for pid in fed.started:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        with contextlib.suppress(ChildProcessError):  # not our child, or reaped already
            os.waitpid(pid, 0)


def _running(
    start: Callable[[Path, pytest.MonkeyPatch], Fed], tmp_path: Path, mp: pytest.MonkeyPatch
) -> Iterator[Fed]:
    f = start(tmp_path, mp)
    try:
        yield f
    finally:
        stop_all(f)


@pytest.fixture
def fed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fed]:
    """The watcher process's feed (a command hook's)."""
    yield from _running(start_fed, tmp_path, monkeypatch)


@pytest.fixture
def local_fed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fed]:
    """The process's own feed (a service's)."""
    yield from _running(start_local, tmp_path, monkeypatch)


@pytest.fixture(params=["watcher", "in-process"])
def any_fed(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Fed]:
    """Each kind of feed: the watcher process (a command hook's), the process's own (a
    service's)."""
    start = start_fed if request.param == "watcher" else start_local
    yield from _running(start, tmp_path, monkeypatch)
