"""pytest's rewritten test modules, produced by infomark for the attested copy
(infomark/tools/attest/rewrites.py), tried as an agent would.

Real pytest in fresh subprocesses, real files; every payload lives in ``tmp_path``. What the
cache must never do: serve code that is not what this interpreter's own pytest makes of the
test file's bytes (a forged or stale entry, a ``_pytest`` planted on ``sys.path``, a cache
directory the agent could have made), or change what the run shows (a rewrite warning, the
assertion pass hook).
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infomark.tools.attest import pycache, rewrites
from tests.tools.test_attest_pycache import agent_made

TAG = sys.implementation.cache_tag
FAILING = "from m import f\n\n\ndef test_f():\n    assert f(1) == 3\n"
MODULE = "def f(x):\n    return x + 1\n"


def _project(tmp_path: Path, files: dict[str, str]) -> tuple[Path, Path]:
    copy, home = tmp_path / "copy", tmp_path / "home"
    for rel, text in files.items():
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_text(text)
    home.mkdir(mode=0o700, exist_ok=True)
    return copy, home


def _pytest(copy: Path) -> subprocess.CompletedProcess[str]:
    """``pytest`` in ``copy``, tracing its rewrite hook, writing no byte code of its own."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DEBUG": "1",
    }
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    return subprocess.run(
        [*cmd, "-rA", "-W", "default"], cwd=copy, env=env, capture_output=True, text=True
    )


def _rewriter(home: Path) -> rewrites.Rewriter:
    rw = rewrites.rewriter(str(home))
    assert rw is not None, "this interpreter's site-packages hold pytest"
    return rw


def _pyc(copy: Path, rel: str, rw: rewrites.Rewriter) -> Path:
    path = copy / rel
    return path.parent / "__pycache__" / (path.name[:-3] + rw.tail)


def test_the_rewritten_pycs_are_what_pytest_runs(tmp_path: Path) -> None:
    copy, home = _project(tmp_path, {"m.py": MODULE, "tests/test_a.py": FAILING})
    (copy / "conftest.py").write_text("X = 1\n")
    rw = _rewriter(home)
    done = pycache.fill(str(copy), str(home), rw)
    assert done.rewritten == 2 and done.rewrites_made == 2 and done.written == 1
    ran = _pytest(copy)
    assert f"found cached rewritten pyc for {copy / 'tests' / 'test_a.py'}" in ran.stderr
    assert "assert 2 == 3" in ran.stdout and "where 2 = f(1)" in ran.stdout  # rewritten
    # a second copy of the same bytes elsewhere: served from the cache, pointed at its path
    other, _ = _project(tmp_path / "b", {"m.py": MODULE, "tests/test_a.py": FAILING})
    (other / "tests" / "test_a.py").write_text(
        FAILING + "\n\ndef test_where():\n    print('AT', test_where.__code__.co_filename)\n"
    )
    again = pycache.fill(str(other), str(home), _rewriter(home))
    assert again.rewritten == 1 and again.rewrites_made == 1
    third, _ = _project(tmp_path / "c", {"m.py": MODULE})
    (third / "tests").mkdir()
    (third / "tests" / "test_a.py").write_bytes((other / "tests" / "test_a.py").read_bytes())
    assert pycache.fill(str(third), str(home), _rewriter(home)).rewrites_made == 0  # a hit
    ran = _pytest(third)
    assert "found cached rewritten pyc" in ran.stderr
    assert f"AT {third / 'tests' / 'test_a.py'}" in ran.stdout + ran.stderr


def test_a_forged_or_stale_entry_is_rewritten_again(tmp_path: Path) -> None:
    """An entry whose header does not name the test file's bytes (another source's hash,
    another layout) is never served: the test that fails still fails."""
    copy, home = _project(tmp_path, {"m.py": MODULE, "test_a.py": FAILING})
    rw = _rewriter(home)
    pycache.fill(str(copy), str(home), rw)  # fills the cache
    _pyc(copy, "test_a.py", rw).unlink()
    entry = Path(rw.cache) / (hashlib.sha256(FAILING.encode()).hexdigest() + ".pyc")
    passing = marshal.dumps(compile("def test_f():\n    pass\n", "test_a.py", "exec"))
    other = importlib.util.source_hash(b"def test_f():\n    pass\n")
    for header in (
        importlib.util.MAGIC_NUMBER + b"\x03\0\0\0" + other[:8],  # another source's hash
        importlib.util.MAGIC_NUMBER + b"\x01\0\0\0" + importlib.util.source_hash(FAILING.encode()),
    ):
        entry.write_bytes(header + passing)
        done = pycache.fill(str(copy), str(home), _rewriter(home))
        assert done.rewrites_made == 1
        ran = _pytest(copy)
        assert "1 failed" in ran.stdout, ran.stdout[-2000:]
        _pyc(copy, "test_a.py", rw).unlink()


@pytest.mark.parametrize("how", ["symlink", "open", "file"])
def test_a_cache_directory_the_agent_could_have_made_is_not_used(tmp_path: Path, how: str) -> None:
    copy, home = _project(tmp_path, {"m.py": MODULE, "test_a.py": FAILING})
    rw = _rewriter(home)
    assert rewrites._load(rw)  # learns the format and makes the directory
    Path(rw.cache).rmdir()
    theirs = agent_made(Path(rw.cache), how, tmp_path / "theirs")
    done = pycache.fill(str(copy), str(home), _rewriter(home))
    assert done.rewritten == 0
    assert list(theirs.iterdir()) == []
    assert not _pyc(copy, "test_a.py", rw).exists()


def test_a_pytest_planted_on_sys_path_is_never_imported(tmp_path: Path) -> None:
    """A ``_pytest`` package in the directory infomark runs from (``sys.path[0]``) is not
    this interpreter's own: nothing of it is imported and nothing is rewritten with it."""
    copy, home = _project(tmp_path, {"m.py": MODULE, "test_a.py": FAILING})
    marker = tmp_path / "ran"
    evil = tmp_path / "cwd" / "_pytest"
    (evil / "assertion").mkdir(parents=True)
    payload = f"open({str(marker)!r}, 'w').write('x')\n"
    (evil / "__init__.py").write_text(payload)
    (evil / "_version.py").write_text(payload + "version = '9.2.0'\n")
    (evil / "assertion" / "__init__.py").write_text(payload)
    (evil / "assertion" / "rewrite.py").write_text(payload)
    script = (
        "from infomark.tools.attest import pycache, rewrites\n"
        f"rw = rewrites.rewriter({str(home)!r})\n"
        f"done = pycache.fill({str(copy)!r}, {str(home)!r}, rw)\n"
        "print(rw is None, done.rewritten)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script], cwd=evil.parent, capture_output=True, text=True
    )
    assert ran.stdout.split() == ["True", "0"], ran.stderr
    assert not marker.exists()


def test_a_rewriter_changed_after_its_import_produces_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key is the digest of pytest's files; code imported before they changed (and put
    back) is not what that key names, so it fills no entry under it."""
    copy, home = _project(tmp_path, {"m.py": MODULE, "test_a.py": FAILING})
    rw = _rewriter(home)
    monkeypatch.setitem(rewrites._IMPORTED, rw.pytest_dir, "f" * 64)
    done = pycache.fill(str(copy), str(home), rw)
    assert done.rewritten == 0 and done.written == 1


def test_what_pytest_warns_about_is_left_to_it(tmp_path: Path) -> None:
    copy, home = _project(
        tmp_path,
        {
            "m.py": MODULE,
            "test_tuple.py": "def test_t():\n    assert (1 == 2, 'always true')\n",
            "test_escape.py": "def test_e():\n    assert '\\d' != ''\n",
            "test_a.py": FAILING,
        },
    )
    rw = _rewriter(home)
    done = pycache.fill(str(copy), str(home), rw)
    assert done.rewritten == 1
    assert not _pyc(copy, "test_tuple.py", rw).exists()
    assert not _pyc(copy, "test_escape.py", rw).exists()
    ran = _pytest(copy)
    assert "assertion is always true" in ran.stdout + ran.stderr


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pyproject.toml", "[tool.pytest.ini_options]\nenable_assertion_pass_hook = true\n"),
        ("sub/pytest.ini", "[pytest]\nenable_assertion_pass_hook = true\n"),
    ],
)
def test_the_assertion_pass_hook_leaves_the_rewriting_to_pytest(
    tmp_path: Path, name: str, text: str
) -> None:
    copy, home = _project(tmp_path, {"m.py": MODULE, "test_a.py": FAILING, name: text})
    done = pycache.fill(str(copy), str(home), _rewriter(home))
    assert done.rewritten == 0 and "enable_assertion_pass_hook" in done.rewrites_skipped
    assert done.written == 1  # the modules' byte code is still there


def test_oracle_words_that_can_set_ini_options_turn_the_cache_off() -> None:
    assert rewrites.usable(["python", "-m", "pytest", "-q", "-p", "infomark_attest_plugin"])
    for words in (
        ["pytest", "-c", "other.ini"],
        ["pytest", "-cother.ini"],
        ["pytest", "--config-file=x"],
        ["pytest", "-o", "x=y"],
        ["pytest", "--override-ini=enable_assertion_pass_hook=true"],
        ["sh", "-c", "pytest"],
        ["pytest", "-W", "enable_assertion_pass_hook"],
    ):
        assert not rewrites.usable(words), words


def test_a_pytest_writing_timestamp_pycs_gets_the_copys_stat_and_path(tmp_path: Path) -> None:
    """pytest 8 writes (and reads) timestamp pycs and keeps the code's file name: the copy's
    pyc then carries its file's mtime and size and names its path."""

    class Pytest8:
        @staticmethod
        def _write_pyc_fp(fp: io.BytesIO, source_stat: os.stat_result, co: object) -> None:
            fp.write(importlib.util.MAGIC_NUMBER + b"\0\0\0\0")
            fp.write((int(source_stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little"))
            fp.write((source_stat.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
            fp.write(marshal.dumps(co))

    class Unknown:
        @staticmethod
        def _write_pyc_fp(fp: io.BytesIO, source_hash: bytes, co: object) -> None:
            fp.write(b"something else")

    assert rewrites._format(Pytest8) == "stat"
    assert rewrites._format(Unknown) is None
    assert rewrites._format(object()) is None
    source = tmp_path / "test_a.py"
    source.write_text("def test_f():\n    def inner():\n        pass\n")
    code = compile(source.read_bytes(), "/elsewhere/test_a.py", "exec")
    entry = b"x" * 16 + marshal.dumps(code)
    rw = rewrites.Rewriter("", "8.4.0", "", str(tmp_path), fmt="stat")
    st = source.stat()
    out = rewrites.for_copy(rw, entry, str(source), st)
    assert out[:8] == importlib.util.MAGIC_NUMBER + b"\0\0\0\0"
    assert int.from_bytes(out[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
    assert int.from_bytes(out[12:16], "little") == st.st_size
    moved = marshal.loads(out[16:])
    inner = next(c for c in moved.co_consts if hasattr(c, "co_consts"))
    nested = next(c for c in inner.co_consts if hasattr(c, "co_consts"))
    assert moved.co_filename == inner.co_filename == nested.co_filename == str(source)


def test_a_cache_reached_through_a_symlinked_top_directory_is_never_read(tmp_path: Path) -> None:
    """``<home>/pycache`` a symlink to a directory of the agent's, holding a private
    directory of the right name with a passing entry for the failing test: nothing of it
    is served (the test still fails), nothing is written there."""
    copy, home = _project(tmp_path, {"m.py": MODULE, "test_a.py": FAILING})
    rw = _rewriter(home)
    assert rewrites._load(rw)
    name = os.path.basename(rw.cache)
    theirs = tmp_path / "theirs"
    (theirs / name).mkdir(parents=True, mode=0o700)
    passing = marshal.dumps(compile("def test_f():\n    pass\n", "test_a.py", "exec"))
    header = importlib.util.MAGIC_NUMBER + b"\x03\0\0\0"
    forged = header + importlib.util.source_hash(FAILING.encode())[:8] + passing
    entry = hashlib.sha256(FAILING.encode()).hexdigest() + ".pyc"
    (theirs / name / entry).write_bytes(forged)
    for old in (home / "pycache").rglob("*"):
        if old.is_file():
            old.unlink()
    for old in sorted((home / "pycache").rglob("*"), reverse=True):
        old.rmdir()
    (home / "pycache").rmdir()
    (home / "pycache").symlink_to(theirs)
    done = pycache.fill(str(copy), str(home), _rewriter(home))
    assert done.rewritten == 0 and done.written == 0
    assert sorted(p.name for p in (theirs / name).iterdir()) == [entry]
    assert "1 failed" in _pytest(copy).stdout
