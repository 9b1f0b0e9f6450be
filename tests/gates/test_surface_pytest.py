"""pytest's grading surface, checked against the real pytest of this environment (issue 26 §2).

The rootdir / configuration search is compared with pytest's own ``determine_setup`` over
generated layouts (files in the project, in a test directory and **above** the project); the
attacks of the issue (a new ``pytest.toml`` / ``.pytest.ini`` selecting a trivial test, in the
project or above it; a parent directory's ``conftest.py``) are run on real pytest to show they
work on a bare run, and the surface shows they are graded from the baseline.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from _pytest.config.findpaths import CONFIG_LOADERS_BY_NAME, determine_setup
from hypothesis import given
from hypothesis import strategies as st

from infomark.gates.surface import discover, parse_oracle, source_set
from infomark.gates.surface.python import pytest_setup
from infomark.kernel.runners import PYTEST_CONFIG_NAMES, RunnerKind

CONTENT = {
    "pytest.toml": ["[pytest]\n", ""],
    ".pytest.toml": ["[pytest]\n"],
    "pytest.ini": ["[pytest]\n", ""],
    ".pytest.ini": ["[pytest]\n"],
    "pyproject.toml": ["[tool.pytest.ini_options]\n", "[project]\nname = 'x'\n"],
    "tox.ini": ["[pytest]\n", "[tox]\n"],
    "setup.cfg": ["[tool:pytest]\n", "[metadata]\nname = x\n"],
    "setup.py": ["\n"],
}


def test_the_precedence_is_pytests_own() -> None:
    assert tuple(CONFIG_LOADERS_BY_NAME) == PYTEST_CONFIG_NAMES


def _pytest_run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin",
        "HOME": str(root),
        # the projects here need no plugin; this venv's (hypothesis, xdist, anyio, timeout)
        # cost ~1 s of CPU per run to load, 6x pytest's own start-up
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


layout = st.dictionaries(
    st.tuples(st.sampled_from(["up", "root", "tests"]), st.sampled_from(sorted(CONTENT))),
    st.integers(min_value=0, max_value=1),
    max_size=5,
)


@given(layout, st.sampled_from([[], ["tests"], ["tests/test_a.py"], ["tests/test_a.py::t"]]))
def test_rootdir_and_inifile_match_pytest(
    tmp_path: Path, files: dict[tuple[str, str], int], args: list[str]
) -> None:
    up = Path(tempfile.mkdtemp(dir=tmp_path))
    root = up / "root"
    dirs = {"up": up, "root": root, "tests": root / "tests"}
    dirs["tests"].mkdir(parents=True)
    (dirs["tests"] / "test_a.py").write_text("def t():\n    pass\n")
    for (where, name), pick in files.items():
        options = CONTENT[name]
        (dirs[where] / name).write_text(options[pick % len(options)])
    (call,) = parse_oracle("pytest " + " ".join(args))
    ours = pytest_setup(str(root), call, {})
    theirs = determine_setup(
        inifile=None,
        override_ini=None,
        args=[str(root / a) for a in args],
        rootdir_cmd_arg=None,
        invocation_dir=root,
    )
    assert ours == (str(theirs[0]), str(theirs[1]) if theirs[1] else None)
    surface = discover(str(root), "pytest " + " ".join(args))
    if theirs[1] is not None:
        found = Path(theirs[1])
        listed = set(surface.above) | {str(root / f) for f in surface.files}
        assert str(found) in listed
        # every name that would win over it, from the start up to its directory, is listed
        start = root / "tests" if args else root
        for d in [start, *start.parents]:
            last = d == found.parent
            names = PYTEST_CONFIG_NAMES
            if last:  # in the winning directory, the names that come before it
                names = names[: names.index(found.name) + 1] if found.name in names else ()
            for name in names:
                assert str(d / name) in listed
            if last:
                break


def _calc_project(base: Path) -> Path:
    root = base / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests" / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    (root / "tests" / "test_trivial.py").write_text("def test_trivial():\n    assert True\n")
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    return root


@pytest.mark.parametrize("name", ["pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini"])
def test_new_config_in_the_project_is_graded(tmp_path: Path, name: str) -> None:
    root = _calc_project(tmp_path)
    baseline = discover(str(root), "pytest -q")
    assert _pytest_run(root, "-q").returncode == 1  # the bug shows
    if name.endswith(".toml"):
        (root / name).write_text('[pytest]\naddopts = ["-k", "trivial"]\npythonpath = ["."]\n')
    else:
        (root / name).write_text("[pytest]\naddopts = -k trivial\npythonpath = .\n")
    attack = _pytest_run(root, "-q")
    assert attack.returncode == 0, attack.stdout  # the attack works on a bare run
    assert name in baseline.files and baseline.covers(name)
    sources = source_set(baseline, ["calc.py", "pyproject.toml", "tests/test_calc.py"])
    assert not sources.carried(name)
    assert sources.carried("calc.py") and not sources.carried("pyproject.toml")


@pytest.mark.parametrize("name", [".pytest.ini", "pytest.toml", "tox.ini", "setup.cfg"])
def test_config_above_the_project_is_on_the_surface(tmp_path: Path, name: str) -> None:
    root = _calc_project(tmp_path)
    (root / "pyproject.toml").unlink()  # no configuration of its own: pytest looks up
    baseline = discover(str(root), "pytest -q tests")
    content = {
        ".pytest.ini": "[pytest]\naddopts = -k trivial\n",
        "pytest.toml": '[pytest]\naddopts = ["-k", "trivial"]\n',
        "tox.ini": "[pytest]\naddopts = -k trivial\n",
        "setup.cfg": "[tool:pytest]\naddopts = -k trivial\n",
    }[name]
    (tmp_path / name).write_text(content)
    attack = _pytest_run(root, "tests")
    assert attack.returncode == 0 and "1 deselected" in attack.stdout, attack.stdout
    assert f"rootdir: {tmp_path}" in attack.stdout
    assert str(tmp_path / name) in baseline.above


def test_parent_conftest_is_on_the_surface(tmp_path: Path) -> None:
    root = _calc_project(tmp_path)
    (root / "pyproject.toml").unlink()
    baseline = discover(str(root), "pytest -q tests")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n    out = yield\n"
        "    rep = out.get_result()\n    rep.outcome = 'passed'\n"
    )
    attack = _pytest_run(root, "-q", "tests")
    assert attack.returncode == 0, attack.stdout  # the parent's conftest passed a failing test
    assert str(tmp_path / "conftest.py") in baseline.above
    assert str(tmp_path / "pytest.ini") in baseline.above


def test_conftests_and_inits_on_the_way_to_each_test(tmp_path: Path) -> None:
    root = _calc_project(tmp_path)
    (root / "tests" / "unit").mkdir()
    (root / "tests" / "unit" / "test_u.py").write_text("def test_u():\n    pass\n")
    surface = discover(str(root), "pytest -q")
    for rel in (
        "conftest.py",
        "__init__.py",
        "tests/conftest.py",
        "tests/__init__.py",
        "tests/unit/conftest.py",
        "tests/unit/__init__.py",
    ):
        assert surface.covers(rel), rel
    assert set(surface.tests) == {
        "tests/test_calc.py",
        "tests/test_trivial.py",
        "tests/unit/test_u.py",
    }
    assert surface.kind is RunnerKind.PYTEST and not surface.conservative
    # a conftest anywhere under the collection path is graded; a new test is carried
    assert surface.covers("src/deep/conftest.py")
    sources = source_set(surface, ["calc.py", "tests/test_calc.py", "pyproject.toml"])
    assert sources.carried("tests/test_new.py") and not sources.is_source("tests/test_new.py")
    assert not sources.carried("tests/test_calc.py")  # an existing test: the baseline's
    assert not sources.carried("__init__.py")  # a new root __init__.py
    assert sources.carried("calc_helpers.py")  # a new module beside the source
    assert not sources.carried("newdir/mod.py")  # a directory that held no source
    assert not sources.carried("sitecustomize.py") and not sources.carried("x.pth")


def test_source_globs_decide_but_never_over_grading(tmp_path: Path) -> None:
    root = _calc_project(tmp_path)
    surface = discover(str(root), "pytest -q")
    sources = source_set(surface, ["calc.py"], globs=["**/*.py", "*.py"])
    assert sources.carried("newdir/mod.py")
    assert not sources.carried("conftest.py") and not sources.carried("__init__.py")


def test_plugins_and_options_name_their_files(tmp_path: Path) -> None:
    root = _calc_project(tmp_path)
    surface = discover(
        str(root), "pytest -p myplug -c cfg/pytest.ini --lf tests", environ={"PYTEST_PLUGINS": "p2"}
    )
    for rel in ("myplug.py", "myplug/__init__.py", "p2.py", "cfg/pytest.ini"):
        assert rel in surface.files, rel
    assert ".pytest_cache/**" in surface.globs
    addopts = discover(str(root), "pytest", environ={"PYTEST_ADDOPTS": "-p other"})
    assert "other.py" in addopts.files


def test_a_real_plugin_module_named_by_p_is_loaded_from_the_project(tmp_path: Path) -> None:
    root = _calc_project(tmp_path)
    (root / "myplug.py").write_text(
        "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n    out = yield\n"
        "    out.get_result().outcome = 'passed'\n"
    )
    assert _pytest_run(root, "-q", "-p", "myplug", "tests").returncode == 0
    assert "myplug.py" in discover(str(root), "pytest -q -p myplug tests").files


def test_unittest_discovers_what_the_surface_lists(tmp_path: Path) -> None:
    root = tmp_path / "u"
    (root / "tests" / "sub").mkdir(parents=True)
    for d in ("tests", "tests/sub"):
        (root / d / "__init__.py").write_text("")
    (root / "tests" / "test_one.py").write_text(
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        pass\n"
    )
    (root / "tests" / "sub" / "test_two.py").write_text(
        "import unittest\n\nclass U(unittest.TestCase):\n    def test_b(self):\n        pass\n"
    )
    real = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-v"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert real.returncode == 0 and "Ran 2 tests" in real.stderr, real.stderr
    surface = discover(str(root), "python -m unittest discover -s tests")
    assert surface.kind is RunnerKind.UNITTEST
    assert set(surface.tests) == {"tests/test_one.py", "tests/sub/test_two.py"}
    assert {"tests/__init__.py", "tests/sub/__init__.py"} <= set(surface.files)


def test_a_source_packages_init_stays_source(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / "pkg" / "tests").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("from pkg.core import f\n")
    (root / "pkg" / "core.py").write_text("def f():\n    return 1\n")
    (root / "pkg" / "tests" / "__init__.py").write_text("")
    (root / "pkg" / "tests" / "test_core.py").write_text("def test_f():\n    pass\n")
    surface = discover(str(root), "pytest -q")
    assert "pkg/tests/__init__.py" in surface.files  # the tests' package grades
    assert "pkg/__init__.py" not in surface.files  # the source package's is source
    assert "__init__.py" in surface.files  # absent at the root: a new one would grade
    sources = source_set(surface, ["pkg/__init__.py", "pkg/core.py", "pkg/tests/test_core.py"])
    assert sources.carried("pkg/__init__.py") and not sources.carried("__init__.py")


_PART = st.sampled_from(["a", "b", "", "test_a.py", "a_test.py", "conftest.py", ".x", "**", "[a]"])
_NAME_PATTERN = st.sampled_from(
    ["test_*.py", "*_test.py", "conftest.py", "*", "?", "[ab]", "", "**", "a*", "[!a]*"]
)


@given(st.lists(_PART, min_size=1, max_size=5), _NAME_PATTERN)
def test_a_name_at_any_depth_matches_as_the_segment_walk_does(parts: list[str], name: str) -> None:
    """``**/<name>`` (the runners' test and conftest globs) takes a fast path in
    ``glob_match``: the same answer as matching segment by segment."""
    from infomark.gates.surface.model import _match, glob_match

    rel, pattern = "/".join(parts), f"**/{name}"
    assert glob_match(rel, pattern) is _match(parts, pattern.split("/"))
