"""The command hook with a disk that stops in the middle of a blob (run as a script).

``python rel_slow_disk_hook.py READY_FD`` runs ``infomark hook claude-code`` as its own
process (``infomark.cli.entry.main``) with one fault injected: the blob store's
``_write_all`` writes its first chunk, then blocks for good, as a hung or very slow disk
does. The watchdog's clock starts only once the write is stuck (it writes one byte to
READY_FD then), so the timeout always lands mid-blob, whatever the machine's load.
"""

from __future__ import annotations

import _thread
import os
import sys
from collections.abc import Iterable

import infomark.ledger.store.blobs as blobs
import infomark.tools.hooks.dispatch as dispatch

_stuck = _thread.allocate_lock()
_stuck.acquire()
_never = _thread.allocate_lock()
_never.acquire()
READY = int(sys.argv[1])


def stuck_write(fd: int, chunks: Iterable[bytes]) -> None:
    for chunk in chunks:
        os.write(fd, chunk)  # the first chunk reaches the file
        os.write(READY, b"x")
        _stuck.release()
        _never.acquire()  # and the disk never takes another byte


def watch_from_the_stall(self: dispatch._Watchdog) -> None:
    _stuck.acquire()  # the deadline runs from the moment the disk stalls
    if not self._cancelled.acquire(timeout=0.5):
        self._expire()


blobs._write_all = stuck_write
dispatch._Watchdog._watch = watch_from_the_stall  # type: ignore[method-assign]
sys.argv = ["infomark", "hook", "claude-code"]
from infomark.cli.entry import main  # noqa: E402

main()
