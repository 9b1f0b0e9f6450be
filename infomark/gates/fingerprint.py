"""Which tracked files did a tool call change? A fingerprint of the working tree by ctime.

No static classifier knows what ``python fix.py`` does, so every execute-class call is
watched: :func:`mark` runs before it (it writes a marker file, whose inode change time is the
kernel's clock at that moment), :func:`changes_since` after it (every tracked file whose
inode change time is not older than the marker changed during the call; a tracked file that
is gone, under a directory changed during the call, was deleted by it). The kernel sets the
change time on every write, rename, truncate, chmod and link, and a process cannot set it
back (``touch -d`` sets the modification time, and changes the change time to now), so the
check cannot be fooled by timestamps the agent chooses.

"Tracked" is what git's index lists when the root is inside a git repository (the index is
parsed here, and its path list cached by the index's own stat data); otherwise a bounded walk
of the root (:data:`WALK_LIMIT` entries, skipping VCS, virtualenv and cache directories). A
walk that hits the bound reports itself incomplete, and the gate treats the tree as
unwatchable.

In a git work tree of :data:`FEED_MIN_TRACKED` files or more on Linux, :func:`mark` also takes
a token of the change feed (:mod:`infomark.gates.feed`), and :func:`changes_since` then
``lstat``s only the tracked paths the feed's watcher says may have changed; whenever the feed
cannot vouch for the whole window, it scans every tracked file as above. A long-running
process (``infomark serve``) installs its own watches instead (:func:`use_local_feed`,
:mod:`infomark.gates.feed_local`: from fewer files, with no watcher process). Standard
library only (hot path).
"""

from __future__ import annotations

import marshal
import os
import struct
import time

from infomark.gates.reach import ENV_DIRS, scan
from infomark.kernel import jsonc
from infomark.kernel.contexts import suppress
from infomark.kernel.digest import sha256
from infomark.kernel.environ import agent_env
from infomark.kernel.records import dataclass
from infomark.kernel.regular import NotRegular, read_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    from _typeshed import StrPath

    class LocalFeeds(Protocol):  # infomark.gates.feed_local.LocalFeeds, which imports us
        def token(self, watch_dir: str, key: str, top: str, git_dir: str) -> bool: ...
        def since(self, watch_dir: str, key: str, top: str) -> list[str] | None: ...
        def forget(self, watch_dir: str, key: str) -> None: ...


__all__ = [
    "FEED_MIN_TRACKED",
    "WALK_LIMIT",
    "TreeChange",
    "changes_since",
    "clear_mark",
    "find_git_dir",
    "mark",
    "marker_seq",
    "marker_time",
    "still_modified",
    "tracked_paths",
    "use_local_feed",
]

WALK_LIMIT = 20_000
# The change feed is used from this many tracked files up (None: never); below it the walk
# costs a millisecond or two and a watcher process would not pay for itself.
FEED_MIN_TRACKED: int | None = 2000
# The path lists of the last indexes read, by index file: (its stat data, the paths).
_KNOWN: dict[str, tuple[str, list[str]]] = {}
_KNOWN_MAX = 8
# A long-running process's own watches (infomark.gates.feed_local), when it installed them.
_LOCAL: LocalFeeds | None = None
_SKIP_DIRS = ENV_DIRS | {
    ".hypothesis",
    ".cc-writes",  # Claude Code's own staging directory (.claude/.cc-writes), not the agent's
}
# Directories whose own entries the host churns: Claude Code's sandbox makes and removes mount
# points for the paths it protects in .claude/ around every Bash command. Their files are still
# compared one by one; only the directory's own change time is not a change.
_HOST_DIRS = frozenset({".claude"})
_ENTRY = struct.Struct(">10I20sH")  # ctime, mtime, dev, ino, mode, uid, gid, size, sha1, flags


@dataclass(frozen=True, slots=True)
class TreeChange:
    """What changed under the root since a marker (paths relative to the root, POSIX)."""

    modified: tuple[str, ...]
    deleted: tuple[str, ...]
    complete: bool  # False: the walk hit its bound, or the tree could not be read
    method: str  # "git-index" | "walk"
    elapsed_ms: float

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(sorted({*self.modified, *self.deleted}))


def use_local_feed(feeds: LocalFeeds | None) -> LocalFeeds | None:
    """Make :func:`mark` and :func:`changes_since` use ``feeds`` (a service's own watches)
    instead of a watcher process; None: back to the watcher process. Returns what was used."""
    global _LOCAL
    old, _LOCAL = _LOCAL, feeds
    return old


def find_git_dir(root: StrPath) -> tuple[str, str] | None:
    """``(work tree top, git dir)`` for the repository ``root`` is in, or None."""
    top = os.path.realpath(root)
    while True:
        dot = os.path.join(top, ".git")
        if os.path.isdir(dot):
            return top, dot
        if os.path.isfile(dot):
            try:
                text = read_regular(dot, 4096).decode("utf-8", "replace").strip()
            except OSError:
                return None
            if text.startswith("gitdir:"):
                gd = text[7:].strip()
                return top, gd if os.path.isabs(gd) else os.path.realpath(os.path.join(top, gd))
            return None
        parent = os.path.dirname(top)
        if parent == top:
            return None
        top = parent


def _parse_index(data: bytes) -> list[str]:
    """The paths of a git index (versions 2, 3 and 4). ValueError when it is not one."""
    if len(data) < 12 or data[:4] != b"DIRC":
        raise ValueError("not a git index")
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        raise ValueError(f"git index version {version} is not supported")
    off = 12
    out: list[str] = []
    prev = b""
    find = data.index
    for _ in range(count):
        flags = _ENTRY.unpack_from(data, off)[-1]
        start = off + 62
        if version >= 3 and flags & 0x4000:
            start += 2
        if version == 4:
            strip, n = 0, start
            byte = data[n]
            n += 1
            strip = byte & 0x7F
            while byte & 0x80:  # git's offset varint
                byte = data[n]
                n += 1
                strip = ((strip + 1) << 7) | (byte & 0x7F)
            end = find(b"\0", n)
            path = prev[: len(prev) - strip] + data[n:end]
            prev = path
            off = end + 1
        else:
            end = find(b"\0", start)
            path = data[start:end]
            off = off + ((end - off + 8) // 8) * 8
        out.append(path.decode("utf-8", "surrogateescape"))
    return out


def tracked_paths(root: StrPath, cache_dir: StrPath | None = None) -> tuple[str, list[str]] | None:
    """``(work tree top, paths the git index lists)``, or None outside a git repository.

    The list is cached in ``cache_dir`` keyed by the index file's stat data, so a session
    pays for parsing the index once per change of it, and in this process's memory (the
    last :data:`_KNOWN_MAX` indexes), so a long-running one (the service) does not read that
    file again on every call: the list returned is shared, never to be changed. An index
    this parser cannot read is listed by ``git ls-files -z`` instead.
    """
    found = find_git_dir(root)
    return None if found is None else _listed(found, cache_dir)


def _listed(found: tuple[str, str], cache_dir: StrPath | None) -> tuple[str, list[str]]:
    """:func:`tracked_paths` for the repository ``found`` (``find_git_dir``'s answer)."""
    top, git_dir = found
    index = os.path.join(git_dir, "index")
    try:
        st = os.stat(index)
    except OSError:
        return top, []  # a fresh repository: nothing tracked yet
    ident = f"{index}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}"
    known = _KNOWN.get(index)
    if known is not None and known[0] == ident:
        return top, known[1]
    cache = None
    if cache_dir is not None:
        cache = _cache_file(cache_dir, index)
        cached = _read_cache(cache)
        if cached is not None and cached[0] == ident:
            _KNOWN[index] = cached
            return top, cached[1]
    try:
        paths = _parse_index(read_regular(index))
    except NotRegular:
        paths = []  # a FIFO or the like in the index's place: git would hang on it too
    except (OSError, ValueError, IndexError, struct.error):
        paths = _ls_files(top)
    if len(_KNOWN) >= _KNOWN_MAX:
        _KNOWN.pop(next(iter(_KNOWN)))
    _KNOWN[index] = (ident, paths)
    if cache is not None:
        with suppress(OSError):
            tmp = cache + ".tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(marshal.dumps((ident, paths)))
            os.replace(tmp, cache)
    return top, paths


def _cache_file(cache_dir: StrPath, index: str) -> str:
    return os.path.join(cache_dir, "index-" + sha256(index.encode()).hexdigest()[:16])


def _read_cache(cache: str) -> tuple[str, list[str]] | None:
    """``(the index's stat data, its paths)`` as the home's cache file holds them, or None."""
    try:
        cached = marshal.loads(read_regular(cache))  # noqa: S302 - our 0600 cache; data only
    except (OSError, ValueError, EOFError, TypeError):
        return None
    ok = isinstance(cached, tuple) and len(cached) == 2 and isinstance(cached[1], list)
    return (str(cached[0]), cached[1]) if ok else None


def _ls_files(top: str) -> list[str]:
    import subprocess  # lazy: only an index this parser cannot read needs git itself

    try:
        out = subprocess.run(
            ["git", "-C", str(top), "ls-files", "-z"],
            capture_output=True,
            env=agent_env(),
            timeout=10,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def _marker(watch_dir: StrPath, key: str) -> str:
    return os.path.join(
        watch_dir, sha256(key.encode("utf-8", "replace")).hexdigest()[:24] + ".mark"
    )


def mark(
    watch_dir: StrPath,
    key: str,
    *,
    seq: int,
    root: StrPath | None = None,
    classified: tuple[str, str] | None = None,
) -> bool:
    """Write the marker for one call (``key``): its change time is "before the call".

    ``classified``: what the call's class was found from (a digest) and the class, when that
    class may be reused for its result (:func:`infomark.gates.watch.decided_class`).

    With ``root`` in a big enough git work tree on Linux, the marker also holds the change
    feed's token (:mod:`infomark.gates.feed`), so that :func:`changes_since` can ask the
    watcher instead of walking; the first such call starts the watcher.
    """
    data: dict[str, object] = {"seq": seq, "at": time.time()}
    if classified is not None:
        data["classified"] = list(classified)
    local = _LOCAL
    if root is not None and local is not None:
        found = find_git_dir(root)
        if found is not None:
            local.token(os.fspath(watch_dir), key, found[0], found[1])
    elif root is not None and FEED_MIN_TRACKED is not None:
        found = find_git_dir(root)
        if found is not None:
            from infomark.gates import feed  # lazy: only calls that are watched

            tok = feed.token(watch_dir, found[0], found[1], min_tracked=FEED_MIN_TRACKED)
            if tok is not None:
                data["feed"] = tok
    path = _marker(watch_dir, key)
    # A new file each time, never O_TRUNC over the last one: truncating a file whose data is
    # not yet on disk makes ext4 write it out first (auto_da_alloc), ~10-20 ms under load.
    with suppress(FileNotFoundError):
        os.unlink(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(jsonc.dumps(data))
    except OSError:
        return False
    return True


def clear_mark(watch_dir: StrPath, key: str) -> None:
    local = _LOCAL
    if local is not None:
        local.forget(os.fspath(watch_dir), key)
    with suppress(OSError):
        os.unlink(_marker(watch_dir, key))


def _marker_data(watch_dir: StrPath, key: str) -> dict[str, object] | None:
    try:
        with open(_marker(watch_dir, key), encoding="utf-8") as f:
            data = jsonc.loads(f.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else {}


def marker_classified(watch_dir: StrPath, key: str) -> tuple[str, str] | None:
    """The ``classified`` pair the marker for ``key`` holds, or None."""
    data = _marker_data(watch_dir, key)
    found = data.get("classified") if data is not None else None
    if isinstance(found, list) and len(found) == 2 and all(isinstance(x, str) for x in found):
        return found[0], found[1]
    return None


def marker_seq(watch_dir: StrPath, key: str) -> int | None:
    """The journal seq recorded with the marker, or None when there is no marker."""
    data = _marker_data(watch_dir, key)
    if data is None:
        return None
    seq = data.get("seq")
    return seq if isinstance(seq, int) else 0


def marker_time(watch_dir: StrPath, key: str) -> int | None:
    """The kernel change time of the marker for ``key`` (ns), or None."""
    try:
        return os.stat(_marker(watch_dir, key)).st_ctime_ns
    except OSError:
        return None


def changes_since(
    watch_dir: StrPath,
    key: str,
    root: StrPath,
    *,
    skip: tuple[StrPath, ...] = (),
) -> TreeChange | None:
    """What changed under ``root`` since :func:`mark` for ``key``; None without a marker.

    Only the call's own window is judged: a change made after the call returned (by a
    process it left behind) or by someone else between calls is not attributed to a call.
    """
    since = marker_time(watch_dir, key)
    if since is None:
        return None
    low = since
    started = time.perf_counter()
    repo = find_git_dir(root)
    before = None if repo is None else _last_listed(repo, watch_dir)  # before it is replaced
    listed = None if repo is None else _listed(repo, watch_dir)
    if listed is not None:
        top, paths = listed
        if before is not None and before[0] == top and before[1] is not paths:
            paths = _union(paths, before[1])
        candidates = _feed_candidates(watch_dir, key, top)
        if candidates is None:
            found, method = _scan_tracked(top, paths, low), "git-index"
        else:
            found, method = _scan_candidates(top, paths, candidates, low), "feed"
        complete = True
        base = os.path.realpath(top)
        rel_root = os.path.realpath(root)
        if base != rel_root:
            found = [(_relative([p], base, rel_root)[0], t, d) for p, t, d in found]
    else:
        found, complete = _walk(os.path.realpath(root), low, skip)
        method = "walk"
    return TreeChange(
        modified=tuple(sorted(p for p, _t, d in found if not d)),
        deleted=tuple(sorted(p for p, _t, d in found if d)),
        complete=complete,
        method=method,
        elapsed_ms=(time.perf_counter() - started) * 1000,
    )


def _last_listed(found: tuple[str, str], cache_dir: StrPath) -> tuple[str, list[str]] | None:
    """The tracked list last read for the index of the repository ``found`` (this process's
    memory, else the home's cache), whatever that index holds now, or None.

    A call can remove, empty or replace git's index as well as change files: what was
    tracked when it began is tracked for its compare too, so that a change to a file the
    index listed before the call is still seen.
    """
    index = os.path.join(found[1], "index")
    known = _KNOWN.get(index) or _read_cache(_cache_file(cache_dir, index))
    return None if known is None else (found[0], known[1])


def _union(now: list[str], before: list[str]) -> list[str]:
    seen = set(now)
    return now + [p for p in before if p not in seen]


def _relative(paths: list[str], top: str, root: str) -> list[str]:
    """Tracked paths (relative to ``top``) relative to ``root``; both resolved, absolute."""
    if top == root:
        return paths
    inside = root.rstrip("/") + "/"
    out = []
    for p in paths:
        full = os.path.join(top, p)
        if full == root:
            out.append(".")
        elif full.startswith(inside):
            out.append(full[len(inside) :])
        else:
            out.append(full)  # tracked, outside the root: still the project's
    return out


def _feed_candidates(watch_dir: StrPath, key: str, top: str) -> list[str] | None:
    """What the change feed says may have changed in the call's window; None: walk."""
    local = _LOCAL
    if local is not None:
        found = local.since(os.fspath(watch_dir), key, top)
        if found is not None:
            return found
    data = _marker_data(watch_dir, key)
    tok = data.get("feed") if data else None
    if not isinstance(tok, dict):
        return None
    from infomark.gates import feed  # lazy: only when the mark took a token

    return feed.since(watch_dir, top, tok)


def _scan_candidates(
    top: str, paths: list[str], candidates: list[str], since: int
) -> list[tuple[str, int, bool]]:
    """:func:`_scan_tracked` over the tracked paths the feed names (``dir/``: all under it)."""
    exact = {c for c in candidates if not c.endswith("/")}
    prefixes = tuple(c for c in candidates if c.endswith("/"))
    if "/" in prefixes:
        return _scan_tracked(top, paths, since)  # the top itself changed: everything
    if prefixes:
        picked = [p for p in paths if p in exact or p.startswith(prefixes)]
    else:
        picked = [p for p in paths if p in exact]
    return _scan_tracked(top, picked, since)


def _scan_tracked(top: str, paths: list[str], since: int) -> list[tuple[str, int, bool]]:
    """``(path, change time, deleted)`` of every tracked path changed since ``since``."""
    lstat = os.lstat
    base = str(top) + os.sep
    out: list[tuple[str, int, bool]] = []
    missing: list[str] = []
    for p in paths:
        try:
            t = lstat(base + p).st_ctime_ns
        except OSError:
            missing.append(p)
            continue
        if t >= since:
            out.append((p, t, False))
    for p in missing:
        gone = _gone_at(top, p)
        if gone is not None and gone >= since:
            out.append((p, gone, True))
    return out


def _gone_at(top: str, rel: str) -> int | None:
    """A missing path was removed when its nearest existing parent last changed."""
    parent = os.path.dirname(os.path.join(top, rel))
    while True:
        try:
            return os.lstat(parent).st_ctime_ns
        except OSError:
            up = os.path.dirname(parent)
            if parent == top or up == parent:
                return None
            parent = up


def _walk(
    root: str, since: int, skip: tuple[StrPath, ...]
) -> tuple[list[tuple[str, int, bool]], bool]:
    skipped = {os.path.realpath(s) for s in skip}
    found: list[tuple[str, int, bool]] = []
    prefix = len(str(root)) + 1

    def enter(entry: os.DirEntry[str]) -> bool:
        return entry.name not in _SKIP_DIRS and entry.path not in skipped

    for entry in scan(str(root), WALK_LIMIT, enter):
        if entry is None:
            return found, False
        try:
            t = entry.stat(follow_symlinks=False).st_ctime_ns
        except OSError:
            continue
        if t < since:
            continue
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in _HOST_DIRS:  # entries added or removed
                found.append((entry.path[prefix:] + "/", t, True))
        else:
            found.append((entry.path[prefix:], t, False))
    return found, True


def still_modified(root: StrPath, files: list[str]) -> list[str] | None:
    """Of ``files`` (relative to root), those that still differ from git's index.

    None when there is no git repository to compare with (the tree cannot be shown restored).
    """
    import subprocess  # lazy: only while a violation stands

    found = find_git_dir(root)
    if found is None or not files:
        return None if found is None else []
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-m", "-d", "-z", "--", *files],
            capture_output=True,
            env=agent_env(),
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    listed = {p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p}
    return [f for f in files if f in listed or not os.path.exists(os.path.join(root, f))]
