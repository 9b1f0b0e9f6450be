"""pytest's rewritten test modules for the attested copy, produced by infomark itself.

pytest rewrites the ``assert`` statements of every test module and ``conftest.py`` it imports
(``_pytest.assertion.rewrite``) and keeps the result in ``__pycache__/<name>.<cache
tag>-pytest-<version>.pyc``. A fresh copy holds none, so every attested run paid for the
rewriting of all its test files again (docs/performance.md, "Attested runs"). :func:`fill`
writes those pycs into the copy just before the sandboxed run, from a cache in the ledger
home, under the same rules as :mod:`.pycache`, plus:

- **the producer is infomark's own interpreter**: :func:`rewriter` imports
  ``_pytest.assertion.rewrite`` in infomark's process, only from this interpreter's own
  ``site-packages`` (never a ``_pytest`` of the project or of ``sys.path[0]``), and rewrites
  the copy's bytes the way pytest's ``_rewrite_test`` does (``ast.parse``,
  ``rewrite_asserts`` with no config, ``compile`` with no future flags and asserts kept).
  The project's environment, which the agent can change and put back between runs, produces
  nothing here; its pytest still runs the tests, and reads these pycs only when its version
  and cache tag name the same file;
- **keyed by the rewriter's own files**: the cache directory is named for the interpreter's
  magic number and cache tag, pytest's version, the pyc format, and the SHA-256 of every
  file of the ``_pytest`` package it was imported from (hashed before and after the import;
  a rewriter whose files changed after this process imported it produces nothing), each
  entry by the SHA-256 of the test file's bytes;
- **only what pytest would write**: a file pytest's rewriter warns about (an assert of a
  tuple, an invalid escape) is left to the run, so the warning is still shown; so is every
  file when the copy's configuration or the oracle could turn on
  ``enable_assertion_pass_hook`` (:func:`usable`, and an ini file that names it), which
  changes the rewritten code;
- **the format of that pytest**: the entries are checked-hash pycs; a pytest that writes
  checked-hash pycs (9.2 here) gets the entry as is (it hashes the source and rewrites it again
  when they differ); one that writes timestamp pycs (8.x) gets the copy's file's mtime and
  size and the code object pointed at the copy's path. A pytest whose ``_write_pyc_fp``
  writes neither is not served.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import importlib.util
import io
import marshal
import os
import sys
import sysconfig
import threading
import types
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

from infomark.tools.attest.cachefiles import private_dir, read_regular, store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CONFIG_SUFFIXES", "Rewriter", "mentions_pass_hook", "rewriter", "usable"]

_MAGIC = importlib.util.MAGIC_NUMBER
_TAG = sys.implementation.cache_tag or "none"
_CHECKED = b"\x03\x00\x00\x00"
_TIMESTAMP = b"\x00\x00\x00\x00"
#: configuration files pytest may read its ini options from (checked for the pass hook)
CONFIG_SUFFIXES = (".toml", ".ini", ".cfg")
_PASS_HOOK = b"enable_assertion_pass_hook"
#: oracle words that can point pytest at another ini file or override an ini option
_INI_FLAGS = ("-c", "--config-file", "--inifile", "-o", "--override-ini", "--conf", "--ov")
_LOCK = threading.Lock()
_IMPORTED: dict[str, str] = {}  # the _pytest directory -> its digest when this process imported it


@dataclass(slots=True)
class Rewriter:
    """pytest's rewriter of infomark's interpreter and the cache directory its output goes to."""

    pytest_dir: str  # the real path of the ``_pytest`` package
    version: str
    digest: str  # SHA-256 of the package's files
    home: str
    fmt: str = ""  # "hash" or "stat" once known ("" until a miss imported the rewriter)
    cache: str = ""
    module: Any = field(default=None, repr=False)

    @property
    def tail(self) -> str:
        """The end of the pyc's name pytest looks for: ``.<tag>-pytest-<version>.pyc``."""
        return f".{_TAG}-pytest-{self.version}.pyc"


def usable(words: Iterable[str]) -> bool:
    """Whether the oracle's words (and the variables passed into the sandbox) leave pytest's
    ini options to its configuration files: no ``-c``/``-o`` (or their long forms) and no
    mention of the assertion pass hook."""
    return not any("assertion_pass" in w or w.startswith(_INI_FLAGS) for w in words)


def mentions_pass_hook(data: bytes) -> bool:
    return _PASS_HOOK in data


def _site_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    return [os.path.realpath(paths[k]) for k in ("purelib", "platlib") if paths.get(k)]


def _locate() -> str | None:
    """The real path of the ``_pytest`` package this interpreter imports, when it lies in
    this interpreter's own ``site-packages`` (else None: nothing is produced or served)."""
    loaded = sys.modules.get("_pytest")
    origin = getattr(loaded, "__file__", None) if loaded is not None else None
    if origin is None:
        try:
            spec = importlib.util.find_spec("_pytest")  # a top-level name: nothing is imported
        except (ImportError, ValueError):
            return None
        origin = spec.origin if spec is not None else None
    if not origin:
        return None
    package = os.path.dirname(os.path.realpath(origin))
    if os.path.dirname(package) not in _site_dirs():
        return None
    return package


def _digest(package: str) -> str:
    """SHA-256 over every ``.py`` file of ``package`` (relative name and bytes, sorted)."""
    h = hashlib.sha256()
    found: list[str] = []
    for directory, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [os.path.join(directory, n) for n in files if n.endswith(".py")]
    for path in sorted(found):
        with open(path, "rb") as fh:
            data = fh.read()
        h.update(os.path.relpath(path, package).encode() + b"\0" + len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _version(package: str) -> str | None:
    """pytest's version: the string assigned to ``version`` in its ``_version.py`` (parsed,
    not imported)."""
    try:
        with open(os.path.join(package, "_version.py"), "rb") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        value = getattr(node, "value", None)
        named = any(isinstance(t, ast.Name) and t.id == "version" for t in targets)
        if named and isinstance(value, ast.Constant) and isinstance(value.value, str):
            text = value.value
            if text and all(c.isalnum() or c in ".+-_" for c in text):
                return text
    return None


def rewriter(home: str) -> Rewriter | None:
    """The rewriter for the copies of ``home``'s runs, or None when this interpreter has no
    pytest of its own (or the cache directory cannot be private)."""
    package = _locate()
    if package is None:
        return None
    try:
        version, digest = _version(package), _digest(package)
    except OSError:
        return None
    if version is None:
        return None
    done = Rewriter(package, version, digest, home)
    top = private_dir(os.path.join(home, "pycache"))  # never listed through a symlink
    if top is None:
        return done
    prefix = f"{_MAGIC.hex()}-{_TAG}-pytest-{version}-{digest[:24]}-"
    with contextlib.suppress(OSError):
        for name in os.listdir(top):
            fmt = name[len(prefix) :]
            if name.startswith(prefix) and fmt in ("hash", "stat"):
                cache = private_dir(os.path.join(top, name))
                if cache is not None:
                    done.fmt, done.cache = fmt, cache
                    break
    return done


def _load(rw: Rewriter) -> bool:
    """Import the rewriter (once per process) and learn its pyc format; False when it cannot
    be trusted or its format is not one served here."""
    if rw.module is not None:
        return bool(rw.fmt and rw.cache)
    with _LOCK:
        first = rw.pytest_dir not in _IMPORTED and "_pytest.assertion.rewrite" not in sys.modules
        try:
            module = importlib.import_module("_pytest.assertion.rewrite")
        except Exception:  # a broken pytest: nothing is produced
            return False
        if os.path.dirname(os.path.dirname(os.path.realpath(module.__file__ or ""))) != (
            rw.pytest_dir
        ):
            return False
        if first:
            _IMPORTED[rw.pytest_dir] = _digest(rw.pytest_dir)  # what the import read
        if _IMPORTED.setdefault(rw.pytest_dir, rw.digest) != rw.digest:
            return False  # its files changed after this process imported it
    fmt = _format(module)
    if fmt is None:
        return False
    top = private_dir(os.path.join(rw.home, "pycache"))
    name = f"{_MAGIC.hex()}-{_TAG}-pytest-{rw.version}-{rw.digest[:24]}-{fmt}"
    cache = private_dir(os.path.join(top, name)) if top is not None else None
    if cache is None or (rw.fmt and rw.fmt != fmt):
        return False
    rw.module, rw.fmt, rw.cache = module, fmt, cache
    return True


def _format(module: Any) -> str | None:
    """ "hash" or "stat": which of the two pyc layouts this pytest's ``_write_pyc_fp`` writes,
    tried on an empty module (None: neither, or no such function)."""
    write = getattr(module, "_write_pyc_fp", None)
    if write is None:
        return None
    code = compile(b"", "<empty>", "exec", dont_inherit=True)
    body = marshal.dumps(code)
    source = importlib.util.source_hash(b"")
    st = os.stat_result((0o100644, 0, 0, 1, 0, 0, 7, 0, 1_700_000_000, 0))
    tries = (
        ("hash", source, _MAGIC + _CHECKED + source[:8] + body),
        ("stat", st, _timestamp_header(1_700_000_000, 7) + body),
    )
    for fmt, arg, expected in tries:
        buf = io.BytesIO()
        try:
            write(buf, arg, code)
        except Exception:  # noqa: S112 - the other layout's argument: try the next
            continue
        if buf.getvalue() == expected:
            return fmt
    return None


def _timestamp_header(mtime: float, size: int) -> bytes:
    return (
        _MAGIC
        + _TIMESTAMP
        + (int(mtime) & 0xFFFFFFFF).to_bytes(4, "little")
        + (size & 0xFFFFFFFF).to_bytes(4, "little")
    )


def _rewrite(rw: Rewriter, data: bytes, filename: str) -> bytes | None:
    """The checked-hash pyc of ``data`` rewritten as pytest would, or None when the rewriter
    warned (left to the run, so the warning shows) or the source does not parse."""
    module = rw.module
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            tree = ast.parse(data, filename=filename)
            module.rewrite_asserts(tree, data, filename, None)
            code = compile(tree, filename, "exec", dont_inherit=True, optimize=0)
        except Exception:  # pytest reports it itself, from the source
            return None
    if seen:
        return None
    return _MAGIC + _CHECKED + importlib.util.source_hash(data)[:8] + marshal.dumps(code)


def entry(rw: Rewriter, data: bytes, filename: str) -> tuple[bytes | None, bool]:
    """The cached pyc of the test file ``data`` (rewritten and stored on a miss or a bad
    entry) and whether it was rewritten in this call."""
    name = hashlib.sha256(data).hexdigest() + ".pyc"
    if rw.cache:
        pyc = read_regular(f"{rw.cache}/{name}")
        if pyc is not None and pyc[:16] == _MAGIC + _CHECKED + importlib.util.source_hash(data)[:8]:
            return pyc, False
    if not _load(rw):
        return None, False
    pyc = _rewrite(rw, data, filename)
    if pyc is None:
        return None, False
    store(rw.cache, name, pyc)
    return pyc, True


def for_copy(rw: Rewriter, pyc: bytes, path: str, st: os.stat_result | None = None) -> bytes:
    """What to write into the copy for the source at ``path`` (stat ``st``; None: taken here,
    not through a symlink, when the format needs it)."""
    if rw.fmt == "hash":
        return pyc  # pytest checks the hash itself and points the code at ``path``
    if st is None:
        st = os.lstat(path)
    code = marshal.loads(pyc[16:])  # noqa: S302 - an entry infomark wrote, in its 0700 home
    return _timestamp_header(st.st_mtime, st.st_size) + marshal.dumps(_moved(code, path))


def _moved(code: types.CodeType, path: str) -> types.CodeType:
    """``code`` and its nested code objects with ``co_filename`` set to ``path``."""
    return code.replace(
        co_filename=path,
        co_consts=tuple(
            _moved(c, path) if isinstance(c, types.CodeType) else c for c in code.co_consts
        ),
    )
