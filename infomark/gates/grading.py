"""The grading surface: the files that decide whether an oracle passes.

When a claim with an oracle is declared, infomark digests its grading surface: the
test files (configurable globs, defaults for pytest/unittest, jest/vitest, go test,
cargo test, rspec), the test configuration by name, every runner's (``conftest.py``,
``pytest.toml``, ``.pytest.ini``, ``pytest.ini``, ``tox.ini``, the test sections of
``setup.cfg`` / ``pyproject.toml``, ``package.json``'s test script, jest/vitest/mocha
config, ``GNUmakefile`` / ``makefile`` / ``Makefile`` …), the files the oracle names, and
what the oracle's runners read by name as :mod:`infomark.gates.surface` discovers it. A
configuration file that does not exist is recorded as absent, so creating one later
is a change too; a new test file is not. Each check re-digests the surface and says
what changed in a short summary ("assertion removed in test_add.py:5").
Standard library only; file I/O, no journal access (the facade emits the events).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence

from infomark.gates.reach import ENV_DIRS
from infomark.kernel import jsonc
from infomark.kernel.digest import sha256
from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.paths import pure_name
from infomark.kernel.regular import read_regular
from infomark.kernel.runners import TEST_CONFIG_NAMES

TYPE_CHECKING = False

if TYPE_CHECKING:
    import re
    from typing import Any

    from _typeshed import StrPath

__all__ = [
    "CONFIG_NAMES",
    "DEFAULT_TEST_GLOBS",
    "change_summary",
    "grading_path",
    "is_grading_config",
    "scan_changes",
    "surface",
    "surface_content",
    "whole_file",
]

DEFAULT_TEST_GLOBS: tuple[str, ...] = (
    "test_*.py",
    "*_test.py",
    "tests/*.py",
    "*.test.js",
    "*.test.ts",
    "*.test.jsx",
    "*.test.tsx",
    "*.test.mjs",
    "*.spec.js",
    "*.spec.ts",
    "*.spec.jsx",
    "*.spec.tsx",
    "__tests__/*",
    "*_test.go",
    "tests/*.rs",
    "*_spec.rb",
    "spec/*.rb",
)
"""Test files by name (a pattern with ``/`` matches a parent directory and the name)."""

CONFIG_NAMES: tuple[str, ...] = TEST_CONFIG_NAMES
"""Test configuration by file name, every runner's (``kernel.runners.TEST_CONFIG_NAMES``:
``pytest.toml``, ``.pytest.ini``, ``GNUmakefile``, ``.mocharc.yml`` …); absent ones are
recorded so a new one counts."""

_SKIP_DIRS = ENV_DIRS | {".infomark", "target", "dist", "build"}
_MAX_FILES = 4000
_MAX_BYTES = 2_000_000

# Sections of shared files that configure tests (the rest of the file is not grading).
_SECTIONS: Mapping[str, re.Pattern[str]] = {
    "pyproject.toml": lazy_compile(r"(?m)^\[tool\.(?:pytest|coverage|tox|hatch\.envs\.test)"),
    "setup.cfg": lazy_compile(r"(?m)^\[(?:tool:pytest|pytest|coverage:)"),
    "tox.ini": lazy_compile(r"(?m)^\[(?:pytest|tox|testenv)"),
}


def _name_matches(rel: str, patterns: Sequence[str]) -> bool:
    import fnmatch  # fnmatch and shlex import re: only calls that need them load them

    parts = rel.split("/")
    name = parts[-1]
    for pat in patterns:
        if "/" in pat:
            want_dir, want_name = pat.rsplit("/", 1)
            if (
                len(parts) >= 2
                and fnmatch.fnmatchcase(parts[-2], want_dir)
                and fnmatch.fnmatchcase(name, want_name)
            ):
                return True
        elif fnmatch.fnmatchcase(name, pat):
            return True
    return False


def is_grading_config(rel: str) -> bool:
    return rel.rsplit("/", 1)[-1] in CONFIG_NAMES


def _sections(name: str, text: str) -> str | None:
    """The test-relevant part of a shared config file (None: it has none)."""
    if name == "package.json":
        try:
            doc = jsonc.loads(text)
        except ValueError:
            return text  # unparseable: the whole file counts
        if not isinstance(doc, dict):
            return text
        scripts = doc.get("scripts") if isinstance(doc.get("scripts"), dict) else {}
        part = {
            k: v
            for k, v in {
                "test": scripts.get("test") if isinstance(scripts, dict) else None,
                "jest": doc.get("jest"),
                "vitest": doc.get("vitest"),
            }.items()
            if v is not None
        }
        return jsonc.dumps(part, sort_keys=True) if part else None
    pattern = _SECTIONS.get(name)
    if pattern is None:
        return text
    out: list[str] = []
    keep = False
    for line in text.splitlines():
        if line.startswith("["):
            keep = bool(pattern.match(line))
        if keep:
            out.append(line)
    return "\n".join(out) if out else None


def surface_content(root: StrPath, rel: str) -> str | None:
    """What of ``rel`` grades tests now (None: absent, or no test section in it)."""
    try:
        data = read_regular(os.path.join(root, rel), _MAX_BYTES)  # the first _MAX_BYTES
    except (OSError, ValueError):
        return None
    text = data.decode("utf-8", "replace")
    return _sections(rel.rsplit("/", 1)[-1], text)


def whole_file(rel: str) -> bool:
    """Does the grading surface hold all of ``rel`` (a test file), not a section of it?"""
    name = rel.rsplit("/", 1)[-1]
    return name != "package.json" and name not in _SECTIONS


def _digest(content: str | None) -> str | None:
    if content is None:
        return None
    return "sha256:" + sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


def grading_path(root: StrPath, path: str) -> str | None:
    """``path`` relative to the root with ``/`` separators (None when it is outside)."""
    p = os.path.join(root, path)  # an absolute path stays itself
    try:
        rel = os.path.relpath(os.path.normpath(p), os.path.normpath(root))
    except ValueError:
        return None
    if rel.startswith(".."):
        return None
    return rel.replace(os.sep, "/")


# Command words that run tests: the files they name are the test (or its input), while the
# files a `grep` or `cat` names are the subject under test.
_RUNNERS = frozenset(
    {
        "pytest",
        "py.test",
        "python",
        "python3",
        "node",
        "bash",
        "sh",
        "zsh",
        "ruby",
        "rspec",
        "jest",
        "vitest",
        "mocha",
        "go",
        "cargo",
        "npx",
        "tox",
        "nox",
        "make",
        "deno",
        "bun",
        "perl",
        "prove",
        "bats",
    }
)


def _oracle_files(root: StrPath, oracle: str) -> list[str]:
    import re
    import shlex

    try:
        words = shlex.split(oracle.replace("\n", " ; "))
    except ValueError:
        words = oracle.split()
    out = []
    runner = False
    for w in words:
        if w in (";", "&&", "||", "|"):
            runner = False
            continue
        base = pure_name(w)
        if not runner and re.fullmatch(
            r"python3?(\.\d+)?|" + "|".join(map(re.escape, _RUNNERS)), base
        ):
            runner = True
            continue
        w = w.split("::", 1)[0]
        if not runner or w.startswith("-") or not w:
            continue
        rel = grading_path(root, w)
        if rel and rel != "." and os.path.isfile(os.path.join(root, rel)):
            out.append(rel)
    return out


def _runner_files(root: StrPath, oracle: str, home: StrPath | None) -> list[str]:
    """What the oracle's runners read by name inside the root, as each runner finds it
    (:func:`infomark.gates.surface.discover`: a conftest or ``__init__.py`` on the way to a
    test, a configuration name closer to the tests, a makefile a recipe includes), present
    or not. Only for a declared oracle: the seed (``oracle=""``) stays a name walk."""
    if not oracle.strip():
        return []
    from infomark.gates.surface import discover

    try:
        found = discover(os.fspath(root), oracle)
    except (OSError, ValueError, RecursionError):
        return []  # unreadable: the names above still count
    home_rel = grading_path(root, os.fspath(home)) if home is not None else None
    out = []
    for rel in found.files:
        top = rel.split("/", 1)[0]
        if top in _SKIP_DIRS or (home_rel and (rel == home_rel or rel.startswith(home_rel + "/"))):
            continue
        out.append(rel)
    return out


def _walk(root: StrPath, home: StrPath | None) -> Iterable[tuple[str, list[str]]]:
    skip_home = _dir_id(home) if home is not None else None
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in _SKIP_DIRS
            and not d.endswith(".egg-info")
            and (skip_home is None or _dir_id(os.path.join(dirpath, d)) != skip_home)
        )
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        yield rel_dir, sorted(filenames)
        count += len(filenames)
        if count > _MAX_FILES:
            return


def _dir_id(path: StrPath) -> tuple[int, int] | None:
    """Which directory ``path`` is (symlinks followed), None when it is none: one ``stat``,
    where comparing resolved paths cost an ``lstat`` per component."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def surface(
    root: StrPath,
    oracle: str,
    *,
    globs: Sequence[str] = DEFAULT_TEST_GLOBS,
    home: StrPath | None = None,
    put: Callable[[bytes], str] | None = None,
) -> tuple[dict[str, str | None], dict[str, str]]:
    """``(path → digest or None, path → blob)`` of the grading surface for ``oracle``.

    ``put`` stores a baseline's content (for diff summaries) and returns its blob id.
    """
    files: dict[str, str | None] = {}
    test_dirs = {""}
    listed: set[str] = set()  # every file the walk saw
    seen, root_listed = 0, False
    for rel_dir, names in _walk(root, home):
        seen += len(names)
        root_listed = root_listed or not rel_dir
        for name in names:
            rel = rel_dir + name
            listed.add(rel)
            if _name_matches(rel, globs) or name in CONFIG_NAMES:
                files[rel] = None
                if not name.startswith("conftest") and name not in CONFIG_NAMES:
                    test_dirs.add(rel_dir)
    for rel in _oracle_files(root, oracle):
        files[rel] = None
        listed.add(rel)
    for rel in _runner_files(root, oracle, home):
        files.setdefault(rel, None)
    absent: set[str] = set()  # recorded as absent without a stat: the walk listed their dir
    for d in test_dirs:  # configuration pytest would pick up if someone created it
        files.setdefault(d + "conftest.py", None)
    for name in CONFIG_NAMES:  # at the root: one created later (jest.config.js …) counts
        files.setdefault(name, None)
    if root_listed and seen <= _MAX_FILES:  # the walk was complete
        absent = {rel for rel in files if rel not in listed}
    blobs: dict[str, str] = {}
    for rel in list(files):
        content = None if rel in absent else surface_content(root, rel)
        files[rel] = _digest(content)
        if content is not None and put is not None:
            blobs[rel] = put(content.encode("utf-8", "surrogatepass"))
    return files, blobs


def scan_changes(
    root: StrPath,
    baseline: Mapping[str, str | None],
    reported: Mapping[str, Mapping[str, Any]],
) -> list[tuple[str, str | None, str | None]]:
    """``(path, digest now, content now)`` for every surface file whose state moved.

    A file is reported when it differs from its baseline and from what was last
    reported for it, or when it is back to its baseline after a reported change.
    """
    out: list[tuple[str, str | None, str | None]] = []
    for rel, base in baseline.items():
        content = surface_content(root, rel)
        now = _digest(content)
        seen = reported.get(rel)
        if now == base:
            if seen is not None:
                out.append((rel, now, content))
        elif seen is None or seen.get("digest") != now:
            out.append((rel, now, content))
    return out


_WHAT = (
    (
        lazy_compile(r"\bassert\b|\bexpect\(|assert[A-Z_]\w*\(|\bt\.(?:Error|Fatal)|assert_eq!"),
        "assertion",
    ),
    (lazy_compile(r"skip|xfail|\.only\(|\bxit\(|t\.Skip|#\[ignore\]"), "skip marker"),
    (lazy_compile(r"collect_ignore|testpaths|norecursedirs"), "test collection setting"),
    (lazy_compile(r"addopts|-k\s|--deselect"), "test selection option"),
)


# An assertion that cannot fail, and one made to pass whatever happens.
_TRIVIAL = lazy_compile(
    r"^\s*assert\s*\(?\s*(?:True|1|not\s+False|\"[^\"]*\"|'[^']*')\s*\)?\s*(?:#.*)?$"
)
_WEAKENED = lazy_compile(r"\bor\s+True\b|\bor\s+1\b|pytest\.approx\(.*abs\s*=")


def _kind(line: str) -> str:
    for pattern, what in _WHAT:
        if pattern.search(line):
            return what
    return "line"


def change_summary(rel: str, old: str | None, new: str | None, *, limit: int = 3) -> str:
    """A short account of what changed: "assertion removed in test_add.py:5"."""
    if new is None:
        return f"{rel} deleted" if old is not None else f"{rel} unchanged"
    if old is None:
        return f"{rel}: test configuration created (there was none when the claim was declared)"
    a, b = old.splitlines(), new.splitlines()
    notes: list[str] = []
    import difflib  # only to describe a changed grading file: not at hook start-up

    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        removed, added = a[i1:i2], b[j1:j2]
        for k, line in enumerate(removed):
            what = _kind(line)
            if what != "line":
                kept = [b for b in added if _kind(b) == what and not _TRIVIAL.search(b)]
                if not kept:
                    verb = "removed"
                elif any(_WEAKENED.search(b) for b in kept):
                    verb = "weakened"
                else:
                    verb = "changed"
                notes.append(f"{what} {verb} in {rel}:{i1 + k + 1}")
        for k, line in enumerate(added):
            what = _kind(line)
            if what != "line" and not any(_kind(r) == what for r in removed):
                notes.append(f"{what} added in {rel}:{j1 + k + 1}")
        if not notes:
            notes.append(f"{rel}:{i1 + 1} changed")
        if len(notes) >= limit:
            break
    return "; ".join(dict.fromkeys(notes[:limit])) or f"{rel} changed"
