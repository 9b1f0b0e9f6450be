"""Byte code for the attested copy, compiled by infomark itself and kept out of the agent's reach.

A fresh copy holds no byte code (:func:`infomark.tools.attest.carry.guard`: byte code is never
carried), so every attested run compiled each of the project's modules again. :func:`fill`
writes a ``__pycache__/<name>.<cache tag>.pyc`` beside each module of the copy just before the
sandboxed run, from a cache in the ledger home:

- **produced only here**: infomark compiles the copy's source itself (``compile()``, which runs
  nothing of it), with the future flags of no caller (``dont_inherit``) and asserts kept
  (``optimize=0``), as a *checked* hash-based pyc (PEP 552, flags ``0b11``): the interpreter
  that imports it hashes the source beside it and compiles that source instead when it differs;
- **keyed by content**: the entry's name is the SHA-256 of the source bytes, under a directory
  named for this interpreter's magic number and cache tag; an entry whose header does not name
  this magic number, the checked flags and the hash of those bytes is compiled again;
- **out of the agent's reach**: ``<home>/pycache`` (0700, entries 0600, written through a
  temporary file and renamed), in the ledger home, which every sandboxed run has hidden; a cache
  directory that is a symlink, not a directory, not the caller's or open to others is not used
  (the copy then gets no byte code, as before);
- **only plain sources**: a file whose ``coding:`` declaration names anything but UTF-8 is left
  to the run (a codec lookup can import a module), as is one that does not compile, is over
  :data:`MAX_SOURCE` bytes, is a symlink, or is a test file or ``conftest.py`` (pytest compiles
  those itself, with its assertion rewriting, and reads no plain pyc for them).

The pyc is written only where the copy has no ``__pycache__`` entry of that name (``O_EXCL``,
``O_NOFOLLOW``, a ``__pycache__`` that is not a real directory is skipped). The sandboxed run can
still write byte code into its own copy, which is thrown away after it; nothing it writes reaches
the cache. An interpreter of another version looks for its own cache tag and compiles.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import marshal
import os
import re
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from infomark.tools.attest import rewrites
from infomark.tools.attest.cachefiles import private_dir, read_regular, read_with_stat, store
from infomark.tools.attest.fileio import write_fd

__all__ = ["MAX_SOURCE", "Filled", "cache_dir", "compile_pyc", "fill", "reads"]

#: sources larger than this are left to the run (compiling them here is not worth holding them)
MAX_SOURCE = 1 << 20
#: entries kept before the cache is emptied and starts again (a bound, not an eviction policy)
MAX_ENTRIES = 50_000

_FLAGS_CHECKED = (0b11).to_bytes(4, "little")  # hash-based, check_source on
_TAG = sys.implementation.cache_tag or "none"
_MAGIC = importlib.util.MAGIC_NUMBER
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn"})


@dataclass(slots=True)
class Filled:
    """What :func:`fill` did for one copy."""

    written: int = 0
    compiled: int = 0  # cache misses compiled in this call
    skipped: int = 0
    cache: str = ""  # the cache directory used ("" when none could be)
    rewritten: int = 0  # pytest's rewritten test modules written (:mod:`.rewrites`)
    rewrites_made: int = 0  # of them, rewritten in this call (cache misses)
    rewrites_skipped: str = ""  # why none were written, when none could be


def cache_dir(home: str) -> str | None:
    """``<home>/pycache/<magic>-<tag>``, created 0700, or None when a part of it is not a
    private directory of this user (a symlink, a file, someone else's, open to others)."""
    top = private_dir(os.path.join(home, "pycache"))
    return private_dir(os.path.join(top, f"{_MAGIC.hex()}-{_TAG}")) if top is not None else None


def _plain_encoding(data: bytes) -> bool:
    """No ``coding:`` declaration in the first two lines, or one that names UTF-8 (the
    tokenizer's own names for it): only then is the source compiled here."""
    for line in data.split(b"\n", 2)[:2]:
        m = _COOKIE.match(line)
        if m:
            name = m.group(1).decode("ascii", "replace").lower().replace("_", "-")
            return name == "utf-8" or name.startswith("utf-8-")
        if line.strip() and not line.lstrip().startswith(b"#"):
            return True  # a second line is a declaration only after a comment or blank line
    return True


def compile_pyc(data: bytes, filename: str) -> bytes | None:
    """A checked hash-based pyc of the source ``data`` for this interpreter, or None when it is
    left to the run (another encoding, too large, does not compile)."""
    if len(data) > MAX_SOURCE or not _plain_encoding(data):
        return None
    try:
        code = compile(data, filename, "exec", dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    return _MAGIC + _FLAGS_CHECKED + importlib.util.source_hash(data) + marshal.dumps(code)


def _valid(pyc: bytes, data: bytes) -> bool:
    return (
        pyc[:4] == _MAGIC
        and pyc[4:8] == _FLAGS_CHECKED
        and pyc[8:16] == importlib.util.source_hash(data)
    )


def _entry(cache: str, data: bytes, filename: str, done: Filled) -> bytes | None:
    """The cached pyc of ``data`` (compiled and stored on a miss or a bad entry)."""
    name = hashlib.sha256(data).hexdigest() + ".pyc"
    pyc = read_regular(f"{cache}/{name}")
    if pyc is not None and _valid(pyc, data):
        return pyc
    pyc = compile_pyc(data, filename)
    if pyc is None:
        return None
    done.compiled += 1
    store(cache, name, pyc)
    return pyc


def _is_test(name: str) -> bool:
    return name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")


def _pycache(directory: str) -> str | None:
    """``directory``'s ``__pycache__``, made 0700 if missing; None if it is not a real
    directory (a symlink or a file: nothing is written through it)."""
    pycache = os.path.join(directory, "__pycache__")
    try:
        os.mkdir(pycache, 0o700)
    except FileExistsError:
        if not stat.S_ISDIR(os.lstat(pycache).st_mode):
            return None
    except OSError:
        return None
    return pycache


def _write_pyc(pycache: str, name: str, pyc: bytes, tail: str = f".{_TAG}.pyc") -> bool:
    target = f"{pycache}/{name[:-3]}{tail}"
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return False
    try:
        write_fd(fd, pyc)
    except OSError:  # never a truncated pyc: the import would fail on it
        with contextlib.suppress(OSError):
            os.unlink(target)
        return False
    finally:
        os.close(fd)
    return True


def reads(rel: str) -> bool:
    """Whether :func:`fill` reads the file ``rel``: a module, or a file pytest may read its
    ini options from (:data:`infomark.tools.attest.rewrites.CONFIG_SUFFIXES`)."""
    return rel.endswith((".py", *rewrites.CONFIG_SUFFIXES))


def fill(
    copy: str,
    home: str,
    tests: rewrites.Rewriter | None = None,
    sources: Mapping[str, bytes] | None = None,
) -> Filled:
    """Write the cached byte code of each module of ``copy`` beside it (see the module), and
    with ``tests`` pytest's rewritten test modules and ``conftest.py`` (:mod:`.rewrites`).

    ``sources``: the bytes of the regular files the copy was just written with (copy-relative
    path -> bytes, every file :func:`reads` names; :attr:`infomark.tools.attest.carry.Carry.
    sources`), which are then not read again; without it the copy is walked and read."""
    done = Filled()
    cache = cache_dir(home)
    if cache is None:
        return done
    done.cache = cache
    try:
        _bound(cache)
        found = _walk(copy) if sources is None else _listed(copy, sources)
        _serve(found, cache, done, tests)
    except OSError:
        pass  # a full disk, a file removed under it: the rest is left to the run
    return done


def _bound(cache: str) -> None:
    """Empty the cache once it holds :data:`MAX_ENTRIES` entries."""
    if len(os.listdir(cache)) > MAX_ENTRIES:
        for old in os.listdir(cache):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(cache, old))


#: one file :func:`fill` considers: its directory (absolute), its name, and its bytes (None:
#: read it from the directory, not through a symlink)
_Found = tuple[str, str, bytes | None]


def _walk(copy: str) -> list[_Found]:
    """The files of ``copy`` that :func:`reads` names (not through a symlinked directory)."""
    found: list[_Found] = []
    for directory, dirs, files in os.walk(copy):
        dirs[:] = [d for d in dirs if d not in _SKIPPED_DIRS]
        found += [(directory, n, None) for n in files if reads(n)]
    return found


def _listed(copy: str, sources: Mapping[str, bytes]) -> list[_Found]:
    """The files of ``sources`` as :func:`_walk` would find them: none in a skipped directory
    or in one reached through a symlink (the walk does not follow those)."""
    real = os.path.realpath(copy)
    plain: dict[str, str | None] = {}  # a directory of the copy -> its path (None: skipped)
    found: list[_Found] = []
    for rel, data in sources.items():
        head, _, name = rel.rpartition("/")
        if head not in plain:
            directory = f"{real}/{head}" if head else real
            skipped = _SKIPPED_DIRS.intersection(head.split("/"))
            plain[head] = None if skipped or os.path.realpath(directory) != directory else directory
        directory_or_none = plain[head]
        if directory_or_none is not None:
            found.append((directory_or_none, name, data))
    return found


def _serve(found: list[_Found], cache: str, done: Filled, tests: rewrites.Rewriter | None) -> None:
    """Write the modules' byte code for ``found``, then (``tests``) pytest's rewritten test
    modules, unless a configuration file names the assertion pass hook."""
    pass_hook = False
    test_files: list[_Found] = []  # served once the whole copy is seen
    pycaches: dict[str, str | None] = {}
    for directory, name, data in found:
        if not name.endswith(".py"):
            if tests is not None and not pass_hook:
                if data is None:
                    data = read_regular(os.path.join(directory, name))
                pass_hook = data is not None and rewrites.mentions_pass_hook(data)
            continue
        if _is_test(name):
            test_files.append((directory, name, data))
            continue
        if directory not in pycaches:
            pycaches[directory] = _pycache(directory)
        pycache = pycaches[directory]
        path = f"{directory}/{name}"
        if data is None:
            data = read_regular(path)  # a symlink is not followed: left to the run
        pyc = None if data is None or pycache is None else _entry(cache, data, path, done)
        if pyc is not None and pycache is not None and _write_pyc(pycache, name, pyc):
            done.written += 1
        else:
            done.skipped += 1
    if tests is None:
        return
    if pass_hook:
        done.rewrites_skipped = "a configuration file names enable_assertion_pass_hook"
        return
    _serve_tests(tests, test_files, done, pycaches)


def _serve_tests(
    rw: rewrites.Rewriter,
    found: list[_Found],
    done: Filled,
    pycaches: dict[str, str | None],
) -> None:
    for directory, name, data in found:
        path = f"{directory}/{name}"
        st: os.stat_result | None = None
        if data is None:
            got = read_with_stat(path)
            if got is None:
                continue
            data, st = got
        if len(data) > MAX_SOURCE or not _plain_encoding(data):
            continue
        pyc, made = rewrites.entry(rw, data, path)
        if pyc is None:
            if not rw.cache:
                done.rewrites_skipped = "no pytest of infomark's own to rewrite with"
                return
            continue
        if directory not in pycaches:
            pycaches[directory] = _pycache(directory)
        pycache = pycaches[directory]
        if pycache is not None and _write_pyc(
            pycache, name, rewrites.for_copy(rw, pyc, path, st), rw.tail
        ):
            done.rewritten += 1
            done.rewrites_made += made
