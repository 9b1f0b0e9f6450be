"""kernel/paths answers as pathlib does, on arbitrary strings (the hook's path has no pathlib)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from hypothesis import example, given
from hypothesis import strategies as st

from infomark.kernel.paths import pure_name, pure_parent_name, pure_parts, relative_under

_PIECES = st.sampled_from(["a", "b", ".", "..", "", "/", "//", ".claude", "x.json", " ", "é"])
PATHS = st.one_of(st.lists(_PIECES, max_size=8).map("/".join), st.text(max_size=20))


@given(PATHS)
@example("a/b/")
@example("a/./")
@example("./infomark/")
@example("/")
@example("")
@example("..")
@example("//x")
def test_names_are_pathlibs(path: str) -> None:
    if "\x00" in path:
        return  # pathlib accepts it too, but no file system does
    p = PurePosixPath(path)
    assert pure_name(path) == p.name
    assert pure_parent_name(path) == p.parent.name
    parts = [x for x in p.parts if x not in ("/", "//")]
    assert pure_parts(path) == parts


@given(st.lists(st.sampled_from(["a", "b", "ab", "é"]), min_size=0, max_size=4),
       st.lists(st.sampled_from(["a", "b", "ab", "é"]), min_size=0, max_size=4))  # fmt: skip
def test_relative_under_is_relative_to(base_parts: list[str], path_parts: list[str]) -> None:
    base = "/" + "/".join(base_parts)
    path = "/" + "/".join(path_parts)
    try:
        want: str | None = PurePosixPath(path).relative_to(base).as_posix()
    except ValueError:
        want = None
    assert relative_under(path, base) == want


def test_os_path_join_keeps_what_the_slash_operator_did(tmp_path: Path) -> None:
    """The conversions rely on these: an absolute second part wins, an empty one is the base."""
    assert os.path.join(tmp_path, "/etc/x") == str(tmp_path / "/etc/x")
    assert os.path.realpath(os.path.join(tmp_path, "")) == str((tmp_path / "").resolve())
    assert os.path.realpath(os.path.join(tmp_path, "a/../b")) == str(
        (tmp_path / "a/../b").resolve()
    )
