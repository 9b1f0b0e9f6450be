"""The attested copy's byte code cache (infomark/tools/attest/pycache.py), tried as an agent would.

Real interpreters (each import runs in a fresh ``python`` subprocess), real files, real bubblewrap
for the one test that writes from inside a sandboxed run. Every payload lives in ``tmp_path``.
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from infomark.tools import sandbox
from infomark.tools.attest import pycache, rewrites
from infomark.tools.attest.sandboxed import private_paths
from tests.security.attested_project import need_bwrap

TAG = sys.implementation.cache_tag


def _run(copy: Path, code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter in ``copy`` that writes no byte code of its own."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, *flags, "-c", code], cwd=copy, env=env, capture_output=True, text=True
    )


def _project(tmp_path: Path, files: dict[str, str]) -> tuple[Path, Path]:
    copy, home = tmp_path / "copy", tmp_path / "home"
    for rel, text in files.items():
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_text(text)
    home.mkdir(mode=0o700)
    return copy, home


def _pyc(copy: Path, rel: str) -> Path:
    return Path(importlib.util.cache_from_source(str(copy / rel)))


def test_fill_writes_checked_pycs_the_interpreter_uses(tmp_path: Path) -> None:
    copy, home = _project(
        tmp_path, {"pkg/__init__.py": "", "pkg/m.py": "def f():\n    return 41 + 1\n"}
    )
    done = pycache.fill(str(copy), str(home))
    assert done.written == 2 and done.compiled == 2
    data = _pyc(copy, "pkg/m.py").read_bytes()
    assert data[:4] == importlib.util.MAGIC_NUMBER and data[4:8] == (0b11).to_bytes(4, "little")
    ran = _run(copy, "import pkg.m; print(pkg.m.f(), pkg.m.__cached__)", "-v")
    assert ran.stdout.split()[0] == "42"
    assert f"m.{TAG}.pyc matches" in ran.stderr  # loaded from the pyc, not compiled
    again = pycache.fill(str(tmp_path / "other"), str(home))  # nothing there: no error
    assert again.written == 0
    copy2, _ = _project(
        tmp_path / "b", {"pkg/__init__.py": "", "pkg/m.py": "def f():\n    return 41 + 1\n"}
    )
    assert pycache.fill(str(copy2), str(home)).compiled == 0  # the same content: a cache hit


def test_a_source_changed_after_the_fill_runs_as_written(tmp_path: Path) -> None:
    """Checked pycs: the run's own change to a source is what it imports."""
    copy, home = _project(tmp_path, {"m.py": "X = 1\n"})
    pycache.fill(str(copy), str(home))
    (copy / "m.py").write_text("X = 2\n")
    assert _run(copy, "import m; print(m.X)").stdout.strip() == "2"


def test_infomark_future_flags_and_optimisation_do_not_leak_into_the_pyc(tmp_path: Path) -> None:
    """pycache.py has ``from __future__ import annotations`` and infomark may run with -O: the
    module must still evaluate its annotations and keep its asserts."""
    copy, home = _project(tmp_path, {"ann.py": "x: undefined_name = 1\n", "a.py": "assert 0\n"})
    fill = f"from infomark.tools.attest import pycache; pycache.fill({str(copy)!r}, {str(home)!r})"
    done = subprocess.run([sys.executable, "-O", "-c", fill], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert _pyc(copy, "a.py").exists() and _pyc(copy, "ann.py").exists()
    assert "NameError" in _run(copy, "import ann").stderr
    assert "AssertionError" in _run(copy, "import a").stderr


def test_a_coding_declaration_is_never_looked_up_here(tmp_path: Path) -> None:
    """``# coding: evilcodec`` could make a codec lookup import a module: such a file is left
    to the sandboxed run, and nothing of the project runs in infomark's process."""
    marker = tmp_path / "ran"
    evil = f"open({str(marker)!r}, 'w').write('x')\n"
    copy, home = _project(
        tmp_path,
        {
            "evilcodec.py": evil,
            "encodings_evilcodec.py": evil,
            "m.py": "# -*- coding: evilcodec -*-\nX = 1\n",
            "n.py": "#!/usr/bin/env python\n# coding: latin-1\nY = 'é'\n",
            "u.py": "# coding: utf-8\nZ = 1\n",
        },
    )
    sys.path.insert(0, str(copy))
    try:
        done = pycache.fill(str(copy), str(home))
    finally:
        sys.path.remove(str(copy))
    assert not marker.exists()
    assert not _pyc(copy, "m.py").exists() and not _pyc(copy, "n.py").exists()
    assert _pyc(copy, "u.py").exists()
    assert done.skipped == 2


def test_a_forged_or_stale_cache_entry_is_compiled_again(tmp_path: Path) -> None:
    copy, home = _project(tmp_path, {"m.py": "X = 1\n"})
    cache = pycache.cache_dir(str(home))
    assert cache is not None
    name = Path(cache) / (__import__("hashlib").sha256(b"X = 1\n").hexdigest() + ".pyc")
    code = compile("X = 666\n", "m.py", "exec", dont_inherit=True)
    for flags, digest in (
        (0b01, importlib.util.source_hash(b"X = 1\n")),  # unchecked: never trusted
        (0b11, importlib.util.source_hash(b"X = 666\n")),  # checked, of another source
    ):
        name.write_bytes(
            importlib.util.MAGIC_NUMBER + flags.to_bytes(4, "little") + digest + marshal.dumps(code)
        )
        done = pycache.fill(str(copy), str(home))
        assert done.compiled == 1
        assert _run(copy, "import m; print(m.X)").stdout.strip() == "1"
        _pyc(copy, "m.py").unlink()


def agent_made(target: Path, how: str, theirs: Path) -> Path:
    """Put at ``target`` what the agent could have made instead of a private directory: a
    ``symlink`` to ``theirs`` (made empty), a directory ``open`` to all, or a ``file``."""
    theirs.mkdir()
    if how == "symlink":
        target.symlink_to(theirs)
    elif how == "open":
        target.mkdir()
        target.chmod(0o777)
    else:
        target.write_text("")
    return theirs


@pytest.mark.parametrize("how", ["symlink", "open", "file"])
def test_a_cache_directory_the_agent_could_have_made_is_not_used(tmp_path: Path, how: str) -> None:
    copy, home = _project(tmp_path, {"m.py": "X = 1\n"})
    theirs = agent_made(home / "pycache", how, tmp_path / "theirs")
    done = pycache.fill(str(copy), str(home))
    assert done.cache == "" and done.written == 0
    assert list(theirs.iterdir()) == []
    assert not _pyc(copy, "m.py").exists()


def test_nothing_is_written_through_a_symlink_in_the_copy(tmp_path: Path) -> None:
    copy, home = _project(tmp_path, {"a/m.py": "X = 1\n", "b/n.py": "Y = 1\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (copy / "a" / "__pycache__").symlink_to(outside)
    (copy / "b" / "link.py").symlink_to(tmp_path / "outside.py")
    (tmp_path / "outside.py").write_text("Z = 1\n")
    done = pycache.fill(str(copy), str(home))
    assert list(outside.iterdir()) == []
    assert not (copy / "b" / "__pycache__" / f"link.{TAG}.pyc").exists()
    assert _pyc(copy, "b/n.py").exists()
    assert done.written == 1


def test_a_sandboxed_run_cannot_write_the_cache(tmp_path: Path) -> None:
    """The cache is in the ledger home, which an attested run's sandbox hides."""
    need_bwrap()
    copy, home = _project(tmp_path, {"m.py": "X = 1\n"})
    pycache.fill(str(copy), str(home))
    cache = pycache.cache_dir(str(home))
    assert cache is not None
    before = sorted(os.listdir(cache))
    planted = os.path.join(cache, "planted.pyc")
    entry = os.path.join(cache, before[0])
    script = f"echo x > {planted}; echo x > {entry}; ls {cache}"
    policy = sandbox.SandboxPolicy(
        cwd=str(copy),
        writable=(str(copy),),
        hidden=private_paths(str(home)),
        env=sandbox.clean_env(),
    )
    ran = sandbox.run(["/bin/sh", "-c", script], policy)
    assert ran.exit_code != 0
    assert sorted(os.listdir(cache)) == before
    assert _run(copy, "import m; print(m.X)").stdout.strip() == "1"


def _written(copy: Path) -> dict[str, bytes]:
    """The copy's pycs: their header (magic, flags, the source's hash) by path (the code
    objects name each copy's own path)."""
    return {
        str(p.relative_to(copy)): p.read_bytes()[:16]
        for p in sorted(copy.rglob("*.pyc"))
        if not p.is_symlink() and p.parent.is_dir() and not p.parent.is_symlink()
    }


def test_the_bytes_in_hand_fill_the_copy_as_the_walk_does(tmp_path: Path) -> None:
    """``sources`` (the bytes the copy was just written with) replace the walk and the reads:
    the same pycs, none in a skipped directory or through a symlinked one (inside or out of
    the copy), and the pass hook in a configuration file is still seen."""
    files = {
        "pkg/__init__.py": "",
        "pkg/m.py": "def f(x):\n    return x + 1\n",
        "tests/test_m.py": "from pkg.m import f\n\n\ndef test_f():\n    assert f(1) == 2\n",
        "tests/conftest.py": "X = 1\n",
        ".git/hooks/h.py": "H = 1\n",
        "pkg/__pycache__/old.py": "O = 1\n",
        "setup.cfg": "[metadata]\nname = x\n",
    }
    outside = tmp_path / "outside"
    outside.mkdir()
    copies = []
    for name in ("walked", "in-hand"):
        copy, home = _project(tmp_path / name, files)
        (copy / "inner").symlink_to(copy / "pkg")
        (copy / "out").symlink_to(outside)
        copies.append((copy, home))
    rw = [rewrites.rewriter(str(home)) for _copy, home in copies]
    walked = pycache.fill(str(copies[0][0]), str(copies[0][1]), rw[0])
    sources = {rel: text.encode() for rel, text in files.items()}
    sources |= {"inner/m.py": sources["pkg/m.py"], "out/m.py": sources["pkg/m.py"]}
    in_hand = pycache.fill(str(copies[1][0]), str(copies[1][1]), rw[1], sources)
    assert (walked.written, walked.rewritten) == (in_hand.written, in_hand.rewritten)
    assert walked.written == 2 and (walked.rewritten == 2 or rw[0] is None)
    assert _written(copies[0][0]) == _written(copies[1][0])
    assert list(outside.iterdir()) == []
    hooked = dict(sources, **{"setup.cfg": b"[tool:pytest]\nenable_assertion_pass_hook = 1\n"})
    copy, home = _project(tmp_path / "hooked", files)
    done = pycache.fill(str(copy), str(home), rewrites.rewriter(str(home)), hooked)
    assert done.rewritten == 0 and done.written == 2


def test_the_copys_sources_are_the_bytes_it_holds(tmp_path: Path) -> None:
    """``Carry.sources`` names every regular file of the copy the fill reads, with the bytes
    the copy holds, after the carried changes (an edit, a deletion, a new module, a source
    turned into a symlink) and nothing else."""
    from infomark.gatekeeper import Gatekeeper
    from infomark.gates import baseline
    from infomark.tools.attest import carry
    from tests.security.attested_project import git

    root = tmp_path / "proj"
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": "A = 1\n",
        "pkg/b.py": "B = 1\n",
        "pkg/c.py": "C = 1\n",
        "tests/test_a.py": "def test_a():\n    assert True\n",
        "setup.cfg": "[metadata]\n",
        "README": "r\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    gk = Gatekeeper.open(tmp_path / "home", "s", root=root)
    try:
        baseline.ensure(gk.store)
        (root / "pkg" / "a.py").write_text("A = 2\n")
        (root / "pkg" / "b.py").unlink()
        (root / "pkg" / "d.py").write_text("D = 1\n")
        (root / "pkg" / "c.py").unlink()
        (root / "pkg" / "c.py").symlink_to("a.py")
        manifest = baseline.load(gk.store, gk.store.refresh().baseline)
        copy = tmp_path / "copy" / "proj"
        copy.mkdir(parents=True)
        held, _surface = carry.build(gk.store, manifest, str(copy), "pytest -q")
    finally:
        gk.close()
    on_disk = {
        str(p.relative_to(copy)): p.read_bytes()
        for p in copy.rglob("*")
        if p.is_file() and not p.is_symlink() and pycache.reads(p.name)
    }
    assert held.sources == on_disk
    assert on_disk["pkg/a.py"] == b"A = 2\n" and "pkg/b.py" not in on_disk
    assert "pkg/d.py" in on_disk and "pkg/c.py" not in on_disk
