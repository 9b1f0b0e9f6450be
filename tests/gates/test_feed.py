"""The change feed (inotify watcher) finds every change the full scan finds, call after call.

Every test runs a real watcher process on a real git repository in tmp_path, and real bash
for the call; the full scan of the same window (every tracked file ``lstat``ed against the
marker) is the oracle: the feed names every true change, and nothing the scan would not.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from feed_support import (
    SESSIONS,
    Fed,
    any_fed,
    fed,
    git,
    make_repo,
    start_fed,
    start_local,
    stop_all,
)
from helpers import ledger_text
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.gatekeeper import Gatekeeper
from infomark.gates import feed
from infomark.gates import fingerprint as fp
from infomark.ledger.calls import ToolCall, ToolOutcome

__all__ = ["any_fed", "fed"]  # the fixtures, imported


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_the_feed_finds_every_change_the_full_scan_finds(any_fed: Fed, name: str) -> None:
    for command in SESSIONS[name]:
        change, walk, tokened = any_fed.call(command)
        assert tokened and change.method == "feed", command
        assert walk <= set(change.files) <= any_fed.scanned, command
        if command != "true":
            assert walk, f"{command} changed nothing the scan sees: the test would be vacuous"


def test_a_tracked_directory_a_submodule_is_watched_as_the_scan_sees_it(any_fed: Fed) -> None:
    fed = any_fed
    """A gitlink (a submodule's entry, mode 160000) is a tracked directory: the scan sees its
    change time move when an entry is added or removed, so the feed must name it then."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    (fed.root / "mod").mkdir()
    git(fed.root, "update-index", "--add", "--cacheinfo", f"160000,{sha},mod")
    change, truth, _ = fed.call("true")  # the watcher takes the new entry in
    for command in ("touch mod/new", "rm mod/new", "echo x > mod/other"):
        change, truth, tokened = fed.call(command)
        assert tokened and change.method == "feed", command
        assert truth == {"mod"} and truth <= set(change.files) <= fed.scanned, command


def test_a_small_tree_starts_no_watcher(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    (root / "a.py").write_text("a\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    watch = tmp_path / "w"
    watch.mkdir()
    assert fp.FEED_MIN_TRACKED is not None and fp.FEED_MIN_TRACKED > 1
    assert fp.mark(watch, "k", seq=0, root=root)
    assert "feed" not in (fp._marker_data(watch, "k") or {})
    assert not feed.pin_path(watch, root.resolve()).exists()
    (root / "a.py").write_text("b\n")
    change = fp.changes_since(watch, "k", root)
    assert change is not None and change.method == "git-index" and change.files == ("a.py",)


def test_the_first_call_starts_the_watcher_and_walks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = start_fed(tmp_path, monkeypatch)
    stop_all(f)
    feed.pin_path(f.watch, f.root).unlink()
    change, _truth, tokened = f.call("echo 1 >> p0/m0.py")  # launches, does not wait
    pin = feed._read_pin(f.watch, f.root)
    assert pin is not None
    f.started.append(pin["pid"])
    try:
        assert not tokened and change.method == "git-index" and change.files == ("p0/m0.py",)
    finally:
        stop_all(f)


def test_off_linux_the_walk(fed: Fed, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feed.sys, "platform", "darwin")
    change, walk, tokened = fed.call("echo 1 >> p0/m0.py")
    assert not tokened and change.method == "git-index" and set(change.files) == walk


def test_a_tree_off_git_has_no_watcher(off_git: Path) -> None:
    root = off_git / "plain"
    root.mkdir()
    watch = off_git / "w"
    watch.mkdir()
    assert feed.launch(watch, root, wait=30) is None  # the watcher exits: nothing to track


_EDITS = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=44),
        st.sampled_from(["append", "truncate", "in-place", "replace", "delete", "rmdir", "link"]),
    ),
    min_size=1,
    max_size=6,
)


def _edit(rel: str, how: str, links: Path, k: int) -> str:
    q = f"'{rel}'"
    link = f"'{links}/{k}'"
    return {
        "append": f"[ -f {q} ] && echo more >> {q}",
        "truncate": f"[ -f {q} ] && : > {q}",
        "in-place": f"[ -f {q} ] && printf y | dd of={q} conv=notrunc 2>/dev/null",
        "replace": f"[ -f {q} ] && echo new > {q}.tmp && mv {q}.tmp {q}",
        "delete": f"rm -f {q}",
        "rmdir": f'rm -rf "$(dirname {q})"',
        "link": f"[ -f {q} ] && ln -f {q} {link} && echo l >> {link}",
    }[how] + "; true"


@pytest.mark.parametrize("start", [start_fed, start_local], ids=["watcher", "in-process"])
@settings(max_examples=10, deadline=None)
@given(calls=st.lists(_EDITS, min_size=1, max_size=3))
def test_every_kind_of_write_is_found_by_the_feed(
    tmp_path_factory: pytest.TempPathFactory,
    start: Callable[[Path, pytest.MonkeyPatch], Fed],
    calls: list[list[tuple[int, str]]],
) -> None:
    tmp = tmp_path_factory.mktemp("feedprop")
    with pytest.MonkeyPatch.context() as mp:
        f = start(tmp, mp)
        try:
            files = sorted(fp.tracked_paths(f.root, None)[1])  # type: ignore[index]
            links = tmp / "links"
            links.mkdir()
            for n, edits in enumerate(calls):
                script = [_edit(files[k % len(files)], how, links, k) for k, how in edits]
                # an earlier call's hard links are written again in a later one
                script.append(
                    f'for l in \'{links}\'/*; do [ -f "$l" ] && echo again >> "$l"; done; true'
                )
                change, walk, tokened = f.call("\n".join(script), key=f"k{n}")
                assert tokened and change.method == "feed"
                assert walk <= set(change.files) <= f.scanned
        finally:
            stop_all(f)
            with contextlib.suppress(OSError):
                os.chmod(tmp, 0o700)


def test_the_gatekeeper_reads_the_feed(
    tmp_path: Path, home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the facade: an execute call that edits a tracked file is an
    unannounced_mutation found by the feed (the session's watcher, in its home)."""
    monkeypatch.setattr(fp, "FEED_MIN_TRACKED", 1)
    root = make_repo(project).resolve()
    with Gatekeeper.open(home, "fed", root=root) as gk:
        gk.ingest(ledger_text(("C1", "Guess", "pytest -q"), premises=("C1",)))
        (home / "watch").mkdir(mode=0o700, exist_ok=True)
        pin = feed.launch(home / "watch", root, wait=30)
        assert pin is not None
        f = Fed(root, home / "watch", pin, [pin["pid"]])  # type: ignore[list-item]
        try:
            (root / "tool.py").write_text("open('p1/m1.py', 'a').write('# fixed\\n')\n")
            call = ToolCall("Bash", {"command": f"{sys.executable} tool.py"})
            decision = gk.authorize(call)
            assert decision.allowed
            subprocess.run(call.input["command"], shell=True, cwd=root, check=True)
            evidence = gk.record(call, ToolOutcome(""), call_id=decision.call_id)
            notice = gk.after_tool_text(call, ToolOutcome(""), evidence)
            assert "p1/m1.py" in notice
            event = next(e.payload for e in gk.events() if e.type == "unannounced_mutation")
            assert event["method"] == "feed" and event["files"] == ["p1/m1.py"]
        finally:
            stop_all(f)
