"""The grading surface's walk is cheap (a name the walk did not list is absent without a
``stat``; the home is skipped by its inode) and finds what the plain walk found: the
surface of random project trees equals a reference that stats every candidate and
compares resolved paths (the code before that change, kept here)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.gates import grading
from infomark.gates.grading import CONFIG_NAMES, DEFAULT_TEST_GLOBS, surface

_DIRS = ("", "tests/", "src/", "src/pkg/", "__tests__/", "home/", "home/tests/", "node_modules/")
_NAMES = (*CONFIG_NAMES[:8], "test_a.py", "a_test.go", "x.spec.ts", "main.py", "notes.md")
_TEXT = ("", "[pytest]\naddopts = -q\n", "[tool.pytest.ini_options]\n", "[other]\nx = 1\n",
         '{"scripts": {"test": "jest"}}', "def test_x():\n    assert 1\n")  # fmt: skip


def _reference(root: Path, home: Path | None) -> dict[str, str | None]:
    """The surface as computed before: every candidate stat'ed, the home by resolved path."""

    def walk() -> Iterable[tuple[str, list[str]]]:
        skip_home = home.resolve() if home is not None else None
        count = 0
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(
                d
                for d in dirnames
                if d not in grading._SKIP_DIRS
                and not d.endswith(".egg-info")
                and (skip_home is None or Path(dirpath, d).resolve() != skip_home)
            )
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            yield ("" if rel_dir == "." else rel_dir + "/"), sorted(filenames)
            count += len(filenames)
            if count > grading._MAX_FILES:
                return

    files: dict[str, str | None] = {}
    test_dirs = {""}
    for rel_dir, names in walk():
        for name in names:
            rel = rel_dir + name
            if grading._name_matches(rel, DEFAULT_TEST_GLOBS) or name in CONFIG_NAMES:
                files[rel] = None
                if not name.startswith("conftest") and name not in CONFIG_NAMES:
                    test_dirs.add(rel_dir)
    for d in test_dirs:
        files.setdefault(d + "conftest.py", None)
    for name in CONFIG_NAMES:
        files.setdefault(name, None)
    return {rel: grading._digest(grading.surface_content(root, rel)) for rel in files}


@settings(max_examples=60, deadline=None)
@given(
    tree=st.dictionaries(
        st.tuples(st.sampled_from(_DIRS), st.sampled_from(_NAMES)),
        st.sampled_from(_TEXT),
        max_size=14,
    ),
    as_dirs=st.sets(st.sampled_from(CONFIG_NAMES[:4]), max_size=2),
    home_link=st.booleans(),
)
def test_the_surface_equals_the_plain_walks(
    tree: dict[tuple[str, str], str], as_dirs: set[str], home_link: bool
) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        home = root / "home"  # a home by another name than .infomark: skipped as the home
        home.mkdir()
        for (folder, name), text in tree.items():
            path = root / folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for name in as_dirs:  # a directory where a configuration file would be
            if not (root / name).exists():
                (root / name).mkdir()
        if home_link:  # the home reached through a symlink: skipped either way
            (root / "linked-home").symlink_to(home, target_is_directory=True)
        files, _ = surface(root, "", home=home)
        assert files == _reference(root, home)
