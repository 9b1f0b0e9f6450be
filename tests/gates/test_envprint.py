"""The fingerprint of a project's Python environments (real files in temp dirs; Hypothesis)."""

from __future__ import annotations

import importlib.util
import marshal
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from infomark.gates import envprint

_NAME = st.text(alphabet="abcdefghij_.-", min_size=1, max_size=8).filter(
    lambda n: n not in (".", "..")
)


def _env(root: Path, name: str, files: dict[str, str]) -> Path:
    top = root / name
    for rel, text in files.items():
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(text)
    return top


def _venv(root: Path, files: dict[str, str]) -> Path:
    return _env(root, ".venv", files)


def _changed(root: Path, before: dict[str, tuple[str, str]]) -> list[str]:
    return envprint.diff(before[".venv"][1], envprint.fingerprint(str(root))[".venv"][1])


def test_nothing_changed_is_the_same_digest(tmp_path: Path) -> None:
    _venv(tmp_path, {"lib/site/a.py": "x = 1\n", "pyvenv.cfg": "home = /usr\n"})
    first, again = envprint.fingerprint(str(tmp_path)), envprint.fingerprint(str(tmp_path))
    assert first[".venv"][0] == again[".venv"][0]
    assert envprint.diff(first[".venv"][1], again[".venv"][1]) == []


def test_an_added_file_and_an_in_place_edit_with_its_times_put_back_are_named(
    tmp_path: Path,
) -> None:
    venv = _venv(tmp_path, {"lib/site/a.py": "x = 1\n", "lib/site/b.py": "y = 2\n"})
    before = envprint.fingerprint(str(tmp_path))
    (venv / "lib/site/evil.pth").write_text("import os\n")
    target = venv / "lib/site/a.py"
    st0 = target.stat()
    with open(target, "r+") as fh:  # same inode, same size
        fh.write("x = 9\n")
    os.utime(target, ns=(st0.st_atime_ns, st0.st_mtime_ns))
    changed = _changed(tmp_path, before)
    assert "lib/site/evil.pth" in changed
    assert "lib/site/a.py" in changed  # its change time moved
    assert "lib/site/b.py" not in changed


def test_no_environment_no_fingerprint(tmp_path: Path) -> None:
    assert envprint.fingerprint(str(tmp_path)) == {}


@given(
    st.dictionaries(_NAME, st.tuples(*[st.integers(0, 2**40)] * 5), min_size=1, max_size=20),
    st.data(),
)
def test_diff_names_exactly_the_rows_that_differ(
    rows: dict[str, tuple[int, ...]], data: st.DataObject
) -> None:
    def text(table: dict[str, tuple[int, ...]]) -> str:
        return "\n".join(sorted(f"{p}\0{' '.join(map(str, v))}" for p, v in table.items()))

    touched = data.draw(st.sets(st.sampled_from(sorted(rows))))
    after = {p: (v[0] + 1, *v[1:]) if p in touched else v for p, v in rows.items()}
    added = data.draw(_NAME.filter(lambda n: n not in rows))
    after[added] = (1, 2, 3, 4, 5)
    assert envprint.diff(text(rows), text(after)) == sorted({*touched, added})


def _run_python(venv: Path, code: str) -> str:
    """A real interpreter importing from ``venv/lib/site`` and writing byte code there."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(venv / "lib/site")
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_byte_code_an_honest_run_writes_is_not_a_change(tmp_path: Path) -> None:
    """An installer that compiled nothing (uv's default): the agent's own test run writes
    ``__pycache__`` beside unchanged modules. That must not refuse the attested run."""
    venv = _venv(tmp_path, {"lib/site/mod.py": "x = 1\n", "lib/site/pkg/__init__.py": "y = 2\n"})
    before = envprint.fingerprint(str(tmp_path))
    assert _run_python(venv, "import mod, pkg; print(mod.x + pkg.y)") == "3"
    assert (venv / "lib/site/__pycache__").is_dir()
    raw = _changed(tmp_path, before)
    assert any(p.endswith(".pyc") for p in raw)  # the listing does see them
    after = envprint.fingerprint(str(tmp_path))[".venv"][1]
    assert envprint.diff(before[".venv"][1], after, str(venv)) == []


def test_a_planted_pyc_whose_header_matches_its_source_is_named(tmp_path: Path) -> None:
    """The attack the pass-over must not let through: byte code with the source's mtime and
    size in its header, holding other code. The interpreter loads it (checked here)."""
    venv = _venv(tmp_path, {"lib/site/mod.py": "x = 1\n", "lib/site/other.py": "z = 3\n"})
    before = envprint.fingerprint(str(tmp_path))
    source = venv / "lib/site/mod.py"
    st_src = source.stat()
    evil = compile("x = 9\n", str(source), "exec", dont_inherit=True)
    header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little")
    header += (int(st_src.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
    header += (st_src.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    cache = venv / "lib/site/__pycache__"
    cache.mkdir()
    (cache / f"mod.{sys.implementation.cache_tag}.pyc").write_bytes(header + marshal.dumps(evil))
    assert _run_python(venv, "import mod; print(mod.x)") == "9"  # the attack is real
    assert _run_python(venv, "import other; print(other.z)") == "3"  # an honest one beside it
    after = envprint.fingerprint(str(tmp_path))[".venv"][1]
    named = envprint.diff(before[".venv"][1], after, str(venv))
    assert named == [f"lib/site/__pycache__/mod.{sys.implementation.cache_tag}.pyc"]


def test_byte_code_of_a_changed_source_or_another_interpreter_stays_named(tmp_path: Path) -> None:
    venv = _venv(tmp_path, {"lib/site/mod.py": "x = 1\n"})
    before = envprint.fingerprint(str(tmp_path))
    (venv / "lib/site/mod.py").write_text("x = 2\n")
    (venv / "lib/site/__pycache__").mkdir()
    (venv / "lib/site/__pycache__/mod.pypy-73.pyc").write_bytes(b"\0" * 32)
    assert _run_python(venv, "import mod; print(mod.x)") == "2"
    after = envprint.fingerprint(str(tmp_path))[".venv"][1]
    named = envprint.diff(before[".venv"][1], after, str(venv))
    tag = sys.implementation.cache_tag
    assert named == sorted(
        [
            "lib/site/mod.py",
            f"lib/site/__pycache__/mod.{tag}.pyc",
            "lib/site/__pycache__/mod.pypy-73.pyc",
        ]
    )


def test_a_judge_that_cannot_answer_vouches_for_nothing(tmp_path: Path) -> None:
    """The child that unmarshals the agent's bytes fails or lies about its count: nothing is
    passed over."""
    assert envprint.faithful([[str(tmp_path / "nope.pyc"), "", str(tmp_path / "x.py"), "", 0]]) == [
        False
    ]


def _node(root: Path, files: dict[str, str]) -> Path:
    return _env(root, "node_modules", files)


def _node_changes(root: Path, before: dict[str, tuple[str, str]]) -> list[str]:
    now = envprint.fingerprint(str(root))
    top = str(root / "node_modules")  # as the attested run compares: an honest run's rows settled
    return envprint.diff(before["node_modules"][1], now["node_modules"][1], top)


def test_node_modules_is_fingerprinted_but_its_caches_are_not(tmp_path: Path) -> None:
    top = _node(tmp_path, {"jest-circus/build/run.js": "run()\n", ".vite/deps/x.js": "1\n"})
    before = envprint.fingerprint(str(tmp_path))
    assert "node_modules" in before
    (top / ".vite" / "deps" / "x.js").write_text("2\n")  # vite re-optimized: no change
    (top / ".cache" / "babel-loader").mkdir(parents=True)
    (top / ".cache" / "babel-loader" / "y.json").write_text("{}")
    assert _node_changes(tmp_path, before) == []
    (top / "jest-circus" / "build" / "run.js").write_text("pass()\n")  # the runner: a change
    assert _node_changes(tmp_path, before) == ["jest-circus/build/run.js"]
    # the caches are two names; a cache of any other name (a tool's, or the agent's own
    # hiding place) is listed like any entry: the names only spare honest runs, they never
    # let anything reach the run unlisted
    (top / ".vitest").mkdir()
    (top / ".vitest" / "results.json").write_text("{}")
    assert _node_changes(tmp_path, before) == [
        ".vitest",
        ".vitest/results.json",
        "jest-circus/build/run.js",
    ]
    assert envprint.hidden(envprint.ready_caches("node_modules", str(top))) == [
        str(top / ".cache"),
        str(top / ".vite"),
    ]


def test_a_cache_name_deeper_down_or_a_link_under_a_cache_name_is_listed(tmp_path: Path) -> None:
    """Only the environment's own top-level cache directories are passed over: a package's
    ``.cache`` inside it is code like any other, and a symlink named ``.vite`` (to a folder
    the agent writes) is an entry of the listing (and not hidden: it is no cache of ours); a
    missing cache is made, empty, so that the run can hide it."""
    top = _node(tmp_path, {"pkg/.cache/hook.js": "a\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = envprint.fingerprint(str(tmp_path))
    (top / "pkg" / ".cache" / "hook.js").write_text("b\n")
    (top / ".vite").symlink_to(elsewhere)
    assert _node_changes(tmp_path, before) == [".vite", "pkg/.cache/hook.js"]
    assert envprint.hidden(envprint.ready_caches("node_modules", str(top))) == [
        str(top / ".cache")
    ]  # made, empty
    assert (top / ".vite").is_symlink() and not list((top / ".cache").iterdir())
