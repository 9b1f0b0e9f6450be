"""The change feed under attack by an agent with a shell, running as the same OS user.

Each call here is real bash doing what a hostile agent would to make a change unseen: kill the
watcher, stop it, replace it with an impostor on its socket (a fake one that answers "no
change", or our own code started by the agent), rewrite the pin, flood the queue, talk to
the socket. In every case the change is still reported: the feed falls back to the full
walk (``method == "git-index"``), or stays in charge and is right.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from feed_support import Fed, fed

from infomark.gates import feed, inotify
from infomark.gates import fingerprint as fp

__all__ = ["fed"]

# An impostor on the watcher's socket name: answers every request with "ok, nothing changed".
IMPOSTOR = r"""
import json, os, socket, sys
name, ready = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind("\0" + name)
s.listen(8)
with open(ready, "w") as fh:
    fh.write(str(os.getpid()) + "\n")
while True:
    c, _ = s.accept()
    c.recv(4096)
    c.sendall(json.dumps({"ok": True, "seq": 10**9, "paths": []}).encode() + b"\n")
    c.close()
"""


def _impostor(fed: Fed, tmp_path: Path) -> str:
    """Bash that starts the impostor on the pinned socket name and waits (bounded) until it
    listens; its pid goes to ``fed.started`` for the teardown."""
    script = tmp_path / "impostor.py"
    script.write_text(IMPOSTOR)
    ready = tmp_path / "impostor.pid"
    return (
        f"rm -f '{ready}'; mkfifo '{ready}.fifo'; "
        f"(python3 '{script}' '{fed.pin['sock']}' '{ready}.fifo' &) ; "
        f"timeout 20 head -n1 '{ready}.fifo' > '{ready}'"
    )


def _track_impostor(fed: Fed, tmp_path: Path) -> int:
    pid = int((tmp_path / "impostor.pid").read_text())
    fed.started.append(pid)
    return pid


def test_a_killed_watcher_means_the_full_walk(fed: Fed) -> None:
    change, truth, tokened = fed.call(f"kill -9 {fed.pid}; echo hidden >> p0/m1.py")
    assert tokened and change.method == "git-index" and truth == {"p0/m1.py"}
    assert set(change.files) == truth
    # the next call walks too (it starts another watcher once this one has fully exited)
    again, _truth, _tokened = fed.call("echo 2 >> p0/m2.py")
    pin = feed._read_pin(fed.watch, fed.root)
    if pin is not None:
        fed.started.append(pin["pid"])
    assert again.method == "git-index" and again.files == ("p0/m2.py",)


def test_an_impostor_on_the_socket_is_not_believed(fed: Fed, tmp_path: Path) -> None:
    command = f"kill -9 {fed.pid}; {_impostor(fed, tmp_path)}; echo hidden >> p1/m1.py"
    change, truth, tokened = fed.call(command)
    _track_impostor(fed, tmp_path)
    # the impostor answers "ok, nothing changed" from the pinned name: the peer is not the pin
    reply = feed._ask({**fed.pin, "pid": fed.pid}, {"op": "since", "t": 0})
    assert reply is None
    assert (
        tokened and change.method == "git-index" and change.files == ("p1/m1.py",) == tuple(truth)
    )


def test_a_rewritten_pin_naming_the_impostor_is_not_believed(fed: Fed, tmp_path: Path) -> None:
    """The agent kills the watcher, starts an impostor and rewrites the pin to name it
    (pid, start time, boot: all true facts about the impostor)."""
    pin_file = feed.pin_path(fed.watch, fed.root)
    forge = tmp_path / "forge.py"
    forge.write_text(
        "import json, sys\n"
        "from infomark.gates import feed\n"
        "pin = json.load(open(sys.argv[1])); pid = int(open(sys.argv[2]).read())\n"
        "pin.update(pid=pid, start=feed._start_time(pid))\n"
        "json.dump(pin, open(sys.argv[1], 'w'))\n"
    )
    command = (
        f"kill -9 {fed.pid}; {_impostor(fed, tmp_path)}; "
        f"'{sys.executable}' '{forge}' '{pin_file}' '{tmp_path / 'impostor.pid'}'; "
        "echo hidden >> p2/m2.py"
    )
    change, _truth, _ = fed.call(command)
    pid = _track_impostor(fed, tmp_path)
    assert json.loads(pin_file.read_text())["pid"] == pid  # the forgery is in place
    assert change.method == "git-index" and change.files == ("p2/m2.py",)
    # and the next call does not trust it either: its command line is not the watcher's
    nxt, _truth, _tokened = fed.call("echo again >> p2/m3.py")
    assert nxt.method == "git-index" and nxt.files == ("p2/m3.py",)


def test_our_own_watcher_code_started_by_the_agent_is_another_process(fed: Fed) -> None:
    """Killed and restarted with the very same command line (same socket name, same pin
    file) after the change: a genuine watcher, but not the one that gave the token."""
    argv = feed._argv(
        fed.root,
        Path(str(fed.pin["ctl"])),
        str(fed.pin["sock"]),
        feed.pin_path(fed.watch, fed.root),
    )
    env = f"PYTHONPATH='{Path(feed.__file__).resolve().parents[2]}'"
    quoted = " ".join(f"'{a}'" for a in argv)
    command = (
        f"kill -9 {fed.pid}; echo hidden >> p3/m3.py; "
        f"({env} {quoted} > '{fed.root.parent}/restarted' &) ; "
        f"timeout 20 grep -q ready <(timeout 20 tail -f '{fed.root.parent}/restarted')"
    )
    change, _truth, tokened = fed.call(command)
    out = subprocess.run(["pgrep", "-f", str(fed.pin["sock"])], capture_output=True, text=True)
    fed.started.extend(int(p) for p in out.stdout.split())
    assert tokened and change.method == "git-index" and change.files == ("p3/m3.py",)


def test_a_stopped_watcher_times_out_into_the_walk(fed: Fed) -> None:
    try:
        change, _truth, tokened = fed.call(f"kill -STOP {fed.pid}; echo hidden >> p0/m4.py")
        assert tokened and change.method == "git-index" and change.files == ("p0/m4.py",)
    finally:
        os.kill(fed.pid, signal.SIGCONT)


def test_an_overflowed_queue_ends_the_watcher(fed: Fed) -> None:
    """The agent stops the watcher, floods the queue past its bound (distinct events, so the
    kernel cannot merge them), and lets it run again: the overflow ends it; the walk."""
    flood = (
        "python3 -c \"\nfor i in range(20000):\n    open('p1/m%d.py' % (i % 2), 'a').write('x')\n\""
    )
    bound = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    assert bound < 20000 * 2  # two watches (the directory, the file) see each write
    command = f"kill -STOP {fed.pid}; {flood}; echo hidden >> p1/m5.py; kill -CONT {fed.pid}"
    change, truth, tokened = fed.call(command)
    assert tokened and change.method == "git-index"
    assert set(change.files) == truth == {"p1/m0.py", "p1/m1.py", "p1/m5.py"}
    assert feed._ask(fed.pin, {"op": "since", "t": 0}) is None  # it saw the overflow: no answers


def test_requests_from_the_agent_cannot_hide_a_change(fed: Fed, tmp_path: Path) -> None:
    """The socket answers anyone of the user, but a request can only read: asking for
    windows, junk, many barriers, and fake sentinel files in the control directory change
    nothing the compare sees."""
    poke = tmp_path / "poke.py"
    poke.write_text(
        "import json, sys\n"
        "from infomark.gates import feed\n"
        "pin = json.load(open(sys.argv[1]))\n"
        "for req in ({'op': 'since', 't': 10**20}, {'op': 'token'}, {'op': 'forget'},\n"
        "            {'op': 'since', 't': -1}, 'junk'):\n"
        "    feed._ask(pin, req if isinstance(req, dict) else {'op': req})\n"
    )
    ctl = fed.pin["ctl"]
    command = (
        "echo hidden >> p2/m4.py; "
        f"for i in 1 2 3; do : > '{ctl}/fake$i'; done; "
        f"'{sys.executable}' '{poke}' '{feed.pin_path(fed.watch, fed.root)}'"
    )
    change, truth, tokened = fed.call(command)
    assert tokened and change.method == "feed" and change.files == ("p2/m4.py",) == tuple(truth)


def test_the_feed_only_adds_candidates(fed: Fed) -> None:
    """Whatever a feed says, the compare lstats what it names against the marker: names
    that did not change, are not tracked or escape the tree are not reported."""
    assert fp.mark(fed.watch, "k", seq=0)
    since = fp.marker_time(fed.watch, "k")
    assert since is not None
    (fed.root / "p0" / "m0.py").write_text("changed\n")
    listed = fp.tracked_paths(fed.root, None)
    assert listed is not None
    fake = ["p0/m0.py", "p1/m1.py", "../../etc/passwd", "/etc/passwd", "nope/", "p2/"]
    found = fp._scan_candidates(listed[0], listed[1], fake, since)
    assert [p for p, _t, _d in found] == ["p0/m0.py"]


class _Enospc:
    """libc, except that inotify_add_watch fails with ENOSPC (the watch limit) after N calls."""

    def __init__(self, real: ctypes.CDLL, after: int) -> None:
        self.real, self.left = real, after
        self.inotify_init1 = real.inotify_init1

    def inotify_add_watch(self, fd: int, path: bytes, mask: int) -> int:
        self.left -= 1
        if self.left < 0:
            ctypes.set_errno(errno.ENOSPC)
            return -1
        return int(self.real.inotify_add_watch(fd, path, mask))


def test_the_watch_limit_breaks_the_watcher(fed: Fed, monkeypatch: pytest.MonkeyPatch) -> None:
    real = inotify._libc()
    monkeypatch.setattr(inotify, "_libc", lambda: _Enospc(real, 5))
    ctl = fed.root.parent / "ctl-enospc"
    ctl.mkdir()
    with pytest.raises(inotify.FeedBroken, match="No space left"):
        inotify.TreeWatch(str(fed.root), str(ctl))
    # and a new tracked directory that cannot be watched later ends a running one
    monkeypatch.setattr(inotify, "_libc", lambda: _Enospc(real, 10_000))
    watch = inotify.TreeWatch(str(fed.root), str(ctl))
    try:
        watch._libc.left = 0  # type: ignore[attr-defined]
        (fed.root / "p0" / "sub" / "deep.py").unlink()
        (fed.root / "p0" / "sub").rmdir()
        (fed.root / "p0" / "sub").mkdir()
        with pytest.raises(inotify.FeedBroken):
            assert watch.barrier()
    finally:
        watch.close()


def test_a_window_older_than_the_watcher_is_not_vouched_for(fed: Fed) -> None:
    """A watcher answers only for windows that began once all its watches were in place:
    a token from before it was ready (a replayed old marker, or a watcher started during
    the call) gets no answer, so the compare walks."""
    found = fp.find_git_dir(fed.root)
    assert found is not None
    tok = feed.token(fed.watch, found[0], found[1], min_tracked=1)
    assert tok is not None and feed.since(fed.watch, fed.root, tok) == []
    assert feed.since(fed.watch, fed.root, {**tok, "t": 1}) is None
