"""The fingerprint of a project's Python environments (real files in temp dirs; Hypothesis)."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from infomark.gates import envprint

_NAME = st.text(alphabet="abcdefghij_.-", min_size=1, max_size=8).filter(
    lambda n: n not in (".", "..")
)


def _venv(root: Path, files: dict[str, str]) -> Path:
    venv = root / ".venv"
    for rel, text in files.items():
        (venv / rel).parent.mkdir(parents=True, exist_ok=True)
        (venv / rel).write_text(text)
    return venv


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
