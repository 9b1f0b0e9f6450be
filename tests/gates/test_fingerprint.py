"""The working-tree fingerprint: git's index parsed exactly, changes and deletions by ctime."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.gates import fingerprint as fp
from infomark.kernel.regular import read_regular

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@x.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@x.invalid",
}


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout


def ls_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True)
    return [p for p in out.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


NAMES = st.lists(
    st.text(alphabet="abcxyz_-.é0", min_size=1, max_size=12).filter(
        lambda s: s not in (".", "..") and not s.startswith(".git")
    ),
    min_size=1,
    max_size=8,
    unique=True,
)


@settings(max_examples=15, deadline=None)
@given(names=NAMES, version=st.sampled_from(["2", "3", "4"]), deep=st.booleans())
def test_the_index_parser_lists_what_git_lists(
    tmp_path_factory: pytest.TempPathFactory, names: list[str], version: str, deep: bool
) -> None:
    root = tmp_path_factory.mktemp("idx")
    git(root, "init", "-q")
    for n in names:
        target = root / ("d1/d2" if deep else "") / n
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(n)
    git(root, "add", "-A")
    git(root, "update-index", "--index-version", version)
    listed = fp.tracked_paths(root, None)
    assert listed is not None and listed[1] == ls_files(root)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "r"
    (root / "pkg").mkdir(parents=True)
    for i in range(5):
        (root / "pkg" / f"m{i}.py").write_text(f"x = {i}\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "i")
    return root


def test_changes_and_deletions_since_the_mark(repo: Path, tmp_path: Path) -> None:
    watch = tmp_path / "watch"
    watch.mkdir()
    assert fp.changes_since(watch, "k", repo) is None  # no mark, no answer
    assert fp.mark(watch, "k", seq=3) and fp.marker_seq(watch, "k") == 3
    assert fp.changes_since(watch, "k", repo).files == ()  # type: ignore[union-attr]
    (repo / "pkg" / "m1.py").write_text("x = 9\n")
    (repo / "pkg" / "m2.py").unlink()
    os.utime(repo / "pkg" / "m1.py", (0, 0))  # an old mtime fools nothing: ctime moved
    (repo / "untracked.py").write_text("new\n")
    change = fp.changes_since(watch, "k", repo)
    assert change is not None and change.complete and change.method == "git-index"
    assert change.modified == ("pkg/m1.py",) and change.deleted == ("pkg/m2.py",)
    fp.clear_mark(watch, "k")
    assert fp.changes_since(watch, "k", repo) is None


def test_a_file_missing_before_the_mark_is_not_reported(repo: Path, tmp_path: Path) -> None:
    (repo / "pkg" / "m3.py").unlink()
    watch = tmp_path / "w"
    watch.mkdir()
    fp.mark(watch, "k", seq=0)
    assert fp.changes_since(watch, "k", repo).files == ()  # type: ignore[union-attr]


def test_a_subdirectory_root_reports_paths_relative_to_it(repo: Path, tmp_path: Path) -> None:
    watch = tmp_path / "w"
    watch.mkdir()
    fp.mark(watch, "k", seq=0)
    (repo / "pkg" / "m0.py").write_text("changed\n")
    change = fp.changes_since(watch, "k", repo / "pkg")
    assert change is not None and change.modified == ("m0.py",)


def test_without_git_a_bounded_walk(off_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = off_git / "plain"
    (root / "a").mkdir(parents=True)
    (root / "a" / "x.txt").write_text("1")
    (root / "node_modules").mkdir()
    watch = off_git / "w"
    watch.mkdir()
    fp.mark(watch, "k", seq=0)
    (root / "a" / "x.txt").write_text("2")
    (root / "node_modules" / "dep.js").write_text("skipped")
    change = fp.changes_since(watch, "k", root)
    assert change is not None and change.method == "walk" and change.complete
    assert "a/x.txt" in change.files and not any("node_modules/" in f for f in change.files)
    monkeypatch.setattr(fp, "WALK_LIMIT", 1)
    limited = fp.changes_since(watch, "k", root)
    assert limited is not None and not limited.complete


def test_still_modified_compares_with_the_index(repo: Path) -> None:
    (repo / "pkg" / "m4.py").write_text("dirty\n")
    assert fp.still_modified(repo, ["pkg/m4.py", "pkg/m0.py"]) == ["pkg/m4.py"]
    git(repo, "checkout", "--", "pkg/m4.py")
    assert fp.still_modified(repo, ["pkg/m4.py"]) == []
    assert fp.still_modified(repo.parent, ["x"]) is None  # no repository: cannot be shown back


_EDITS = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=30),
        st.sampled_from(["append", "truncate", "rewrite-in-place", "replace", "delete", "rmdir"]),
    ),
    max_size=6,
)


@settings(max_examples=20, deadline=None)
@given(edits=_EDITS)
def test_every_kind_of_write_is_found(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[int, str]]
) -> None:
    """In-place writes keep the inode and the directory's times; only the file's own change
    time shows them, so the scan stats every tracked file (a scan of directories only would
    miss `append`, `truncate` and `rewrite-in-place`). It finds exactly what was changed."""
    root = tmp_path_factory.mktemp("scan")
    files = [f"top{i}.txt" for i in range(3)]
    files += [f"pkg{d}/sub/m{i}.py" for d in range(3) for i in range(3)]
    files += [f"pkg{d}/m{i}.py" for d in range(3) for i in range(3)]
    files += [f"z{i}/only.txt" for i in range(3)]
    for f in files:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("x\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    watch = tmp_path_factory.mktemp("watch")
    assert fp.mark(watch, "k", seq=1)
    expect: set[str] = set()
    for k, how in edits:
        f = root / files[k % len(files)]
        if not f.parent.exists():
            continue
        rel = f.relative_to(root).as_posix()
        if how == "rmdir":
            for p in list(f.parent.iterdir()):
                if p.is_file():
                    expect.add(p.relative_to(root).as_posix())
                    p.unlink()
            with contextlib.suppress(OSError):
                f.parent.rmdir()  # gone entirely when it held no subdirectory
            continue
        if not f.exists():
            continue
        expect.add(rel)
        if how == "append":
            with f.open("a") as fh:
                fh.write("more\n")
        elif how == "truncate":
            f.write_text("")
        elif how == "rewrite-in-place":
            with f.open("r+") as fh:
                fh.write("y")
        elif how == "replace":
            tmp = f.with_suffix(".new")
            tmp.write_text("new\n")
            os.replace(tmp, f)
        else:
            f.unlink()
    change = fp.changes_since(watch, "k", root)
    assert change is not None and change.complete
    assert set(change.files) == expect


def test_the_index_list_is_kept_in_memory_until_the_index_changes(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-running process reads the index (or its cache file) once per change of it;
    a changed index is read again, whatever the process remembers."""
    cache = tmp_path / "cache"
    cache.mkdir()
    first = fp.tracked_paths(repo, cache)
    assert first is not None and len(first[1]) == 5
    opened: list[str] = []

    def watched_read(path: str, limit: int | None = None) -> bytes:
        opened.append(path)
        return read_regular(path, limit)

    monkeypatch.setattr(fp, "read_regular", watched_read)
    again = fp.tracked_paths(repo, cache)
    assert again is not None and again[1] is first[1] and opened == []
    (repo / "pkg" / "new.py").write_text("n\n")
    git(repo, "add", "pkg/new.py")
    changed = fp.tracked_paths(repo, cache)
    assert changed is not None and "pkg/new.py" in changed[1] and len(changed[1]) == 6
    assert any(p.endswith("index") or "index-" in p for p in opened)  # read again


@pytest.mark.parametrize(
    "hide",
    [
        "mv .git/index ../index.away",  # the index gone: "nothing tracked"
        "rm .git/index && mkfifo .git/index",  # a FIFO: git and a plain open would hang
        "git rm -q --cached pkg/m1.py",  # the changed file untracked in the same call
        "printf 'DIRC junk' > .git/index",  # an index nobody can parse
    ],
    ids=["removed", "fifo", "untracked", "garbage"],
)
def test_a_call_that_hides_the_index_still_has_its_change_seen(
    repo: Path, tmp_path: Path, hide: str
) -> None:
    """What the index listed when the call began is tracked for its compare: a command that
    edits a file and then removes, replaces or rewrites git's index is still reported."""
    watch = tmp_path / "watch"
    watch.mkdir()
    assert fp.tracked_paths(repo, watch) is not None  # the list before the call, as a hook
    assert fp.mark(watch, "k", seq=1, root=repo)
    subprocess.run(
        f"echo evil >> pkg/m1.py && {hide}", shell=True, cwd=repo, env=GIT_ENV, check=True
    )
    fp._KNOWN.clear()  # the next hook process remembers nothing: the home's cache only
    change = fp.changes_since(watch, "k", repo)
    assert change is not None and "pkg/m1.py" in change.modified
