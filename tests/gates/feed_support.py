"""A git repository under a live change-feed watcher, and one watched call run by real bash."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from infomark.gates import feed
from infomark.gates import fingerprint as fp

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@x.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@x.invalid",
}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True)


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
    """A repository, a watch dir, and the pinned watcher (started for the test)."""

    root: Path
    watch: Path
    pin: dict[str, object]
    started: list[int] = field(default_factory=list)  # every process the test started
    scanned: set[str] = field(default_factory=set)  # what the full scan named, last call

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


def stop_all(fed: Fed) -> None:
    for pid in fed.started:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        with contextlib.suppress(ChildProcessError):  # not our child, or reaped already
            os.waitpid(pid, 0)


@pytest.fixture
def fed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fed]:
    f = start_fed(tmp_path, monkeypatch)
    try:
        yield f
    finally:
        stop_all(f)
