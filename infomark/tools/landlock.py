"""The Landlock backend of :mod:`infomark.tools.sandbox`, where bubblewrap cannot run.

Landlock (Linux 5.13+) lets an unprivileged process restrict its own file access, and that of
everything it starts, to the hierarchies it names; no namespace, no setuid helper, so it works
in containers that forbid user namespaces. It is an **allow-list**: a right granted on a
directory holds for everything beneath it, and nothing can be taken back below. The policy's
"hide this, keep that read-only, inside a writable tree" is therefore drawn by splitting each
tree around its exceptions: a directory on the way to an exception gets only the right to list
it, its other entries get the tree's rights one by one, the exception gets less (nothing when
hidden, reading when read-only). What that costs, said plainly:

* a hidden directory's *names* can be listed (its files cannot be opened);
* a **new** entry cannot be created directly in a directory on the way to an exception (the
  project root when the home is ``<project>/.infomark``, or ``/tmp`` when the project is under
  it): existing files there stay readable and writable, and every other directory is as
  writable as with bubblewrap. Keep the home outside the project (``$INFOMARK_HOME``) to lift it;
* no private ``/tmp``, no PID namespace: other processes can be seen, but Landlock itself forbids
  ptrace of and (ABI 6) signals to any process outside the sandbox;
* the network is closed for TCP only (ABI 4); without ABI 4 it stays open.

Drawing the rules lists each directory on the way to an exception once (``os.scandir``: the
kinds come with the names), and each path gets one rule holding all it needs (a directory on
the way gets everything that holds for all that is below it, so a read-only file's directory
is readable and the file needs no rule of its own). :func:`prepared` keeps the built ruleset
per policy in the process and uses it again while what it was drawn from is unchanged: the
policy's real paths and which of them exist, the entries (names, inodes, kinds) of every
directory it split, the file behind every path it granted by name. A change to any of these
draws and builds it again; a ruleset is never edited once built.

The rules are applied either in the caller's process (:class:`Prepared`: a thread restricts
itself and starts the program, ``sandbox.run``) or by this file run as a script
(``python -I -S landlock.py SPEC… -- argv``, the rules compressed on its command line,
standard library only, ctypes syscalls): it restricts itself, changes to the working directory
and ``exec``s the program, which inherits the restriction and can never lift it.
"""

from __future__ import annotations

import _thread
import base64
import ctypes
import json
import os
import stat
import sys
import zlib
from collections.abc import Iterable, Sequence

__all__ = [
    "Prepared",
    "abi",
    "clear_cache",
    "preexec",
    "prepared",
    "restrict",
    "restrict_self",
    "rules",
    "ruleset",
    "script_argv",
]

_SYS_CREATE, _SYS_ADD, _SYS_RESTRICT = 444, 445, 446  # the same on every Linux architecture
_PR_SET_NO_NEW_PRIVS = 38
_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_NET_TCP = 0b11  # bind, connect (ABI 4)
_SCOPES = 0b11  # abstract unix sockets, signals (ABI 6)

READ = EXECUTE | READ_FILE | READ_DIR
WRITE = (
    WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK
    | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM | REFER | TRUNCATE | IOCTL_DEV
)  # fmt: skip
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
_DEVICES = "/dev"  # /dev/null, /dev/tty … stay writable, as with bubblewrap's --dev

Rule = tuple[str, int]
_PIECE = 100_000  # characters per argument (Linux: at most 128 KiB each)


_LIBC: list[ctypes.CDLL] = []


def _libc() -> ctypes.CDLL:
    if not _LIBC:  # loaded once: never dlopen() in a forked child of a threaded process
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def abi() -> int:
    """The Landlock ABI version this kernel offers (0: none, or disabled)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        found = int(_libc().syscall(_SYS_CREATE, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(found, 0)


def _handled(version: int) -> int:
    return _FS_BY_ABI[max(k for k in _FS_BY_ABI if k <= version)]


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _parent(path: str) -> str:
    return os.path.dirname(path) if path != "/" else ""


class _Inputs:
    """A policy's paths as the kernel will see them: real, existing (read fresh every time)."""

    __slots__ = ("hide", "keep", "key", "trees")

    def __init__(
        self, writable: Iterable[str], read_only: Iterable[str], hidden: Iterable[str]
    ) -> None:
        self.hide = tuple(sorted({os.path.realpath(p) for p in hidden if os.path.lexists(p)}))
        self.keep = tuple(sorted({os.path.realpath(p) for p in read_only if os.path.lexists(p)}))
        trees = dict.fromkeys(os.path.realpath(p) for p in (*writable, _DEVICES))
        self.trees = tuple(t for t in trees if os.path.isdir(t))
        self.key = (self.hide, self.keep, self.trees)

    def want(self, path: str) -> int:
        """The rights ``path`` must end up with: read everywhere, write in the writable trees
        (read only below a read-only path there), nothing below a hidden path (a writable tree
        inside a hidden one stays writable, as its own rules grant it)."""
        rights = 0 if any(_under(path, h) for h in self.hide) else READ
        for tree in self.trees:
            if not _under(path, tree):
                continue
            if any(_under(h, tree) and _under(path, h) for h in self.hide):
                continue
            kept = any(_under(k, tree) and _under(path, k) for k in self.keep)
            rights |= READ if kept else READ | WRITE
        return rights


Listing = tuple[tuple[str, int, int], ...]  # (name, inode, 0 file / 1 directory / 2 link)


def _listing(path: str) -> Listing | None:
    """A directory's entries as the rules depend on them (None: it cannot be listed)."""
    try:
        with os.scandir(path) as it:
            found = [
                (e.name, e.inode(), 2 if e.is_symlink() else int(e.is_dir(follow_symlinks=False)))
                for e in it
            ]
    except OSError:
        return None
    return tuple(sorted(found))


def _identity(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode))


class _Drawing:
    """The rules of one policy, and what they were drawn from (to tell when they are stale)."""

    def __init__(self, inputs: _Inputs) -> None:
        self.inputs = inputs
        self.rules: list[Rule] = []
        self.listed: list[tuple[str, Listing | None]] = []  # every directory split
        self.seen: list[tuple[str, tuple[int, int, int] | None]] = []  # granted by name
        points = {*inputs.hide, *inputs.keep, *inputs.trees}
        self.kids: dict[str, set[str]] = {"/": set()}
        self.beneath: dict[str, list[str]] = {}
        for point in points:  # every path on the way to a point, and the points below each
            child, up = point, _parent(point)
            while up:
                self.beneath.setdefault(up, []).append(point)
                self.kids.setdefault(up, set()).add(child)
                child, up = up, _parent(up)
            self.kids.setdefault(point, set())
        self._want: dict[str, int] = {}
        self._node("/", True, 0, listed=False)

    def want(self, path: str) -> int:
        if path not in self._want:
            self._want[path] = self.inputs.want(path)
        return self._want[path]

    def _node(self, path: str, is_dir: bool, inherited: int, *, listed: bool) -> None:
        """Grant ``path`` (on the way to a point, or a point) what it needs: its own rights
        when nothing below it needs fewer, else the right to list it and, one by one, its
        entries (a directory's other entries get its rights)."""
        rights = self.want(path) if is_dir else self.want(path) & _FILE_RIGHTS
        if not listed:
            self.seen.append((path, _identity(path)))
        fewer = is_dir and any(rights & ~self.want(p) for p in self.beneath.get(path, ()))
        if not fewer:
            if rights & ~inherited:
                self.rules.append((path, rights))
            for kid in sorted(self.kids.get(path, ())):
                kid_dir = bool(self.kids[kid]) or os.path.isdir(kid)  # a point may be a file
                self._node(kid, kid_dir, inherited | rights, listed=False)
            return
        # on the way to an exception: what holds for everything below it, and listing
        common = rights
        for point in self.beneath.get(path, ()):
            common &= self.want(point)
        own = rights & (common | READ_DIR)
        if own & ~inherited:
            self.rules.append((path, own))
        inherited |= own
        entries = _listing(path)
        self.listed.append((path, entries))
        for name, _inode, kind in entries or ():
            if kind == 2:
                continue  # a link: reached through its target's own rules, never by its name
            child = os.path.join(path, name)
            if child in self.kids:
                self._node(child, kind == 1, inherited, listed=True)
                continue
            mine = rights if kind == 1 else rights & _FILE_RIGHTS
            if mine & ~inherited:
                self.rules.append((child, mine))

    def fresh(self, inputs: _Inputs) -> bool:
        """Whether these rules still hold for ``inputs``: the same paths, every directory
        split holding the same entries (names, inodes, kinds), every path granted by name
        the same file."""
        return (
            inputs.key == self.inputs.key
            and all(_identity(p) == ident for p, ident in self.seen)
            and all(_listing(p) == entries for p, entries in self.listed)
        )


def rules(writable: Iterable[str], read_only: Iterable[str], hidden: Iterable[str]) -> list[Rule]:
    """The Landlock rules for a policy: read everything but ``hidden``, write ``writable``
    but not ``read_only`` nor ``hidden``."""
    return _Drawing(_Inputs(writable, read_only, hidden)).rules


def script_argv(
    argv: Sequence[str], *, cwd: str, rule_list: list[Rule], network: bool
) -> list[str]:
    """The command line that runs ``argv`` under ``rule_list`` (this file as a script)."""
    # On the command line, compressed and cut into pieces (one argument may hold 128 KiB, and
    # a busy /tmp makes many rules); never in a file the agent's earlier programs could edit.
    raw = json.dumps({"cwd": cwd, "rules": rule_list, "network": network}).encode()
    packed = base64.b64encode(zlib.compress(raw, 6)).decode("ascii")
    pieces = [packed[i : i + _PIECE] for i in range(0, len(packed), _PIECE)] or [""]
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), *pieces, "--", *argv]


class _Ruleset(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _fail(what: str) -> None:
    err = ctypes.get_errno()
    sys.stderr.write(f"infomark sandbox (landlock): {what} failed: {os.strerror(err)}\n")
    raise SystemExit(126)


def ruleset(rule_list: Sequence[Rule], *, network: bool, version: int | None = None) -> int:
    """A Landlock ruleset holding ``rule_list``, as a file descriptor (the caller closes it);
    exit 126 on any failure. It restricts nothing until :func:`restrict_self` uses it."""
    version = abi() if version is None else version
    if version < 1:
        _fail("landlock_create_ruleset (no Landlock in this kernel)")
    libc = _libc()
    handled = _handled(version)
    attr = _Ruleset(
        handled, 0 if network or version < 4 else _NET_TCP, _SCOPES if version >= 6 else 0
    )
    size = 8 if version < 4 else 16 if version < 6 else 24
    fd = int(libc.syscall(_SYS_CREATE, ctypes.byref(attr), ctypes.c_size_t(size), 0))
    if fd < 0:
        _fail("landlock_create_ruleset")
    os.set_inheritable(fd, False)
    try:
        for path, rights in rule_list:
            _add(libc, fd, path, rights & handled)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _add(libc: ctypes.CDLL, fd: int, path: str, allowed: int) -> None:
    if not allowed:
        return
    try:
        parent = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return  # gone since the rules were drawn: nothing to grant
    try:
        kind = os.fstat(parent).st_mode
        if stat.S_ISLNK(kind):
            return  # swapped for a link since the rules were drawn: grant nothing
        if not stat.S_ISDIR(kind):
            allowed &= _FILE_RIGHTS
        beneath = _PathBeneath(allowed, parent)
        if libc.syscall(_SYS_ADD, fd, _RULE_PATH_BENEATH, ctypes.byref(beneath), 0) != 0:
            _fail(f"landlock_add_rule({path})")
    finally:
        os.close(parent)


def restrict_self(fd: int) -> None:
    """Restrict this process (and what it starts) to the ruleset ``fd``: two system calls,
    nothing else (it runs in a forked child too). Exit 126 on failure."""
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail("prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.syscall(_SYS_RESTRICT, fd, 0) != 0:
        _fail("landlock_restrict_self")


def restrict(rule_list: Sequence[Rule], *, network: bool) -> None:
    """Restrict this process (and what it starts) to ``rule_list``; exit 126 on any failure
    (never run the program unrestricted)."""
    fd = ruleset(rule_list, network=network)
    try:
        restrict_self(fd)
    finally:
        os.close(fd)


class Prepared:
    """A ruleset built once, applied by calling it: two system calls in the calling thread
    (``sandbox.run`` calls it in a thread of its own that then starts the program, so no
    interpreter starts per command; the script costs one: issue 27's bench). Close it once
    the program has started."""

    def __init__(self, rule_list: Sequence[Rule], *, network: bool) -> None:
        _libc()  # loaded here: the child never dlopen()s
        self.fd = ruleset(rule_list, network=network)

    @classmethod
    def adopt(cls, fd: int) -> Prepared:
        """A :class:`Prepared` over the ruleset ``fd`` (it closes it)."""
        made = cls.__new__(cls)
        made.fd = fd
        return made

    def __call__(self) -> None:
        restrict_self(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def preexec(rule_list: Sequence[Rule], *, network: bool) -> Prepared:
    """The :class:`Prepared` ruleset of ``rule_list``; applying it raises ``SystemExit`` on
    failure, so whatever was to start after it never starts."""
    return Prepared(rule_list, network=network)


_CACHE_SIZE = 8  # policies kept per process (one ruleset descriptor each)
_cache: dict[tuple[object, ...], tuple[_Drawing, int]] = {}  # least recently used first
_cache_lock = _thread.allocate_lock()


def prepared(
    writable: Iterable[str], read_only: Iterable[str], hidden: Iterable[str], *, network: bool
) -> Prepared:
    """The :class:`Prepared` ruleset of a policy (as :func:`rules` draws it), built once per
    process and reused while what it was drawn from is unchanged: the policy's real paths,
    the entries (names, inodes, kinds) of every directory split around an exception, and the
    files granted by name. Anything else changed, and the rules are drawn and built again.
    A ruleset is never changed once built, and a thread restricted by it keeps its own copy
    of the rules; the caller closes what it gets (a duplicate of the kept descriptor)."""
    inputs = _Inputs(writable, read_only, hidden)
    key = (inputs.key, network)
    _libc()
    with _cache_lock:
        found = _cache.pop(key, None)
        if found is not None and not found[0].fresh(inputs):
            os.close(found[1])
            found = None
        if found is None:
            drawing = _Drawing(inputs)
            found = (drawing, ruleset(drawing.rules, network=network))
        _cache[key] = found
        while len(_cache) > _CACHE_SIZE:
            os.close(_cache.pop(next(iter(_cache)))[1])
        return Prepared.adopt(os.dup(found[1]))


def clear_cache() -> None:
    """Forget every kept ruleset (the next :func:`prepared` draws and builds again)."""
    with _cache_lock:
        while _cache:
            os.close(_cache.popitem()[1][1])


def main(args: Sequence[str]) -> None:
    if "--" not in args or list(args).index("--") in (0, len(args) - 1):
        sys.stderr.write("usage: landlock.py SPEC… -- PROGRAM [ARGS…] (infomark's sandbox)\n")
        raise SystemExit(2)
    cut = list(args).index("--")
    spec = json.loads(zlib.decompress(base64.b64decode("".join(args[:cut]))))
    restrict([(str(p), int(r)) for p, r in spec["rules"]], network=bool(spec["network"]))
    os.chdir(spec["cwd"])
    program = list(args[list(args).index("--") + 1 :])
    try:
        os.execvp(program[0], program)  # noqa: S606 (the program the sandbox runs)
    except OSError as exc:
        sys.stderr.write(f"{program[0]}: {exc.strerror}\n")
        raise SystemExit(127) from exc


if __name__ == "__main__":
    main(sys.argv[1:])
