"""The Landlock rules are drawn once per directory and kept while what they were drawn from
holds (issue 27: their cost grew with the entries of every directory split around a hidden
or read-only path, ~14 ms in a crowded ``/tmp``).

What a program may do under a rule set is the union of the rules on a path and on its
parents (a file's rule applies to it alone). The drawing must give every path exactly what
the first implementation gave it, which is kept here as the reference: two passes, one from
``/`` around the hidden paths and one per writable tree around the hidden and read-only
ones, each listing every directory it splits. The kept ruleset is tested against the real
kernel: a directory created, a hidden path that appears, a file swapped, after the rules
were first built.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from infomark.tools import landlock, sandbox
from infomark.tools.landlock import READ, READ_DIR, WRITE, Rule

_FILE = landlock._FILE_RIGHTS


# -- the reference: the first implementation's drawing, unchanged ------------------------------
def _ref_under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _ref_split(tree: str, rights: int, exceptions: dict[str, int], out: list[Rule]) -> None:
    inner = {p: r for p, r in exceptions.items() if _ref_under(p, tree)}
    if tree in inner:
        rights = inner.pop(tree)
        inner = {p: r for p, r in inner.items() if p != tree}
        if not rights:
            return
    if not inner:
        out.append((tree, rights))
        return
    out.append((tree, rights & READ_DIR))
    try:
        names = sorted(os.listdir(tree))
    except OSError:
        return
    for name in names:
        child = os.path.join(tree, name)
        if os.path.islink(child):
            continue
        if os.path.isdir(child):
            _ref_split(child, rights, inner, out)
        elif not any(_ref_under(p, child) for p in inner):
            out.append((child, rights & _FILE))
        elif inner.get(child):
            out.append((child, inner[child] & _FILE))


def _reference(
    writable: Iterable[str], read_only: Iterable[str], hidden: Iterable[str]
) -> list[Rule]:
    hide = {os.path.realpath(p): 0 for p in hidden if os.path.lexists(p)}
    keep = {os.path.realpath(p): READ for p in read_only if os.path.lexists(p)}
    out: list[Rule] = []
    _ref_split("/", READ, hide, out)
    for tree in dict.fromkeys(os.path.realpath(p) for p in (*writable, "/dev")):
        if os.path.isdir(tree):
            _ref_split(tree, READ | WRITE, {**{p: READ for p in keep}, **hide}, out)
    return out


def _effective(rule_list: list[Rule], path: str) -> int:
    """What the kernel grants on ``path`` under ``rule_list`` (links are not followed)."""
    is_dir = os.path.isdir(path) and not os.path.islink(path)
    rights = 0
    for where, granted in rule_list:
        if _ref_under(path, where):  # a file's rule holds for it alone: it has nothing below
            rights |= granted
    return rights if is_dir else rights & _FILE


def _walk(base: Path) -> Iterator[str]:
    yield from (str(p) for p in base.parents)
    for top, dirs, files in os.walk(base):
        yield top
        yield from (os.path.join(top, n) for n in (*dirs, *files))


def _same(base: Path, writable: list[str], read_only: list[str], hidden: list[str]) -> int:
    ref = _reference(writable, read_only, hidden)
    new = landlock.rules(writable, read_only, hidden)
    for path in _walk(base):
        if not os.path.islink(path):
            assert _effective(new, path) == _effective(ref, path), (
                path,
                writable,
                read_only,
                hidden,
            )
    return len(new) - len(ref)


def _tree(base: Path, rng: random.Random) -> list[str]:
    """A random tree of directories, files and links under ``base``; its paths."""
    paths = [base]
    for i in range(rng.randint(8, 30)):
        parent = rng.choice([p for p in paths if p.is_dir() and not p.is_symlink()])
        made = parent / f"n{i}"
        kind = rng.random()
        if kind < 0.5:
            made.mkdir()
        elif kind < 0.9:
            made.write_text("x")
        else:
            made.symlink_to(rng.choice(paths))
        paths.append(made)
    return [str(p) for p in paths]


@pytest.mark.parametrize("seed", range(40))
def test_every_path_gets_what_the_first_drawing_gave_it(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    base = tmp_path / "t"
    base.mkdir()
    paths = _tree(base, rng)
    missing = [str(base / "gone"), str(base / "n0" / "gone")]
    pick = [*paths, *missing]
    writable = rng.sample(pick, rng.randint(1, 3))
    read_only = rng.sample(pick, rng.randint(0, 4))
    hidden = rng.sample(pick, rng.randint(0, 4))
    assert _same(base, writable, read_only, hidden) <= 0  # never more rules than before


@pytest.mark.parametrize(
    "case",
    [
        "agent",
        "writable_in_hidden",
        "hidden_in_read_only",
        "read_only_in_hidden",
        "hidden_is_writable",
        "read_only_is_writable",
        "hidden_file_in_crowd",
    ],
)
def test_the_nested_policies(tmp_path: Path, case: str) -> None:
    b = tmp_path
    for d in ("p/.infomark", "p/.claude", "p/src", "p/k/secret", "p/s/r", "h/w", "crowd"):
        (b / d).mkdir(parents=True)
    for f in (
        "p/.infomark/key",
        "p/.claude/settings.json",
        "p/src/a.py",
        "p/k/secret/t",
        "p/s/r/f",
    ):
        (b / f).write_text("x")
    for i in range(50):
        (b / "crowd" / f"e{i}").write_text("x")
    (b / "crowd" / "token").write_text("secret")
    (b / "p" / "src" / "link").symlink_to(b / "p" / ".infomark")
    s = str(b)
    policies = {
        "agent": ([f"{s}/p", f"{s}/crowd"], [f"{s}/p/.claude/settings.json"], [f"{s}/p/.infomark"]),
        "writable_in_hidden": ([f"{s}/h/w"], [], [f"{s}/h"]),
        "hidden_in_read_only": ([f"{s}/p"], [f"{s}/p/k"], [f"{s}/p/k/secret"]),
        "read_only_in_hidden": ([f"{s}/p"], [f"{s}/p/s/r"], [f"{s}/p/s"]),
        "hidden_is_writable": ([f"{s}/p", f"{s}/h"], [], [f"{s}/h"]),
        "read_only_is_writable": ([f"{s}/p", f"{s}/h"], [f"{s}/h"], []),
        "hidden_file_in_crowd": ([f"{s}/crowd"], [], [f"{s}/crowd/token"]),
    }
    _same(b, *map(list, policies[case]))


def test_a_crowded_directory_is_listed_once(tmp_path: Path) -> None:
    """The project under a crowded scratch directory, as the bench draws it: each entry of
    the crowd is one rule, no longer one per pass."""
    crowd = tmp_path / "crowd"
    (crowd / "project" / ".infomark").mkdir(parents=True)
    for i in range(300):
        (crowd / f"e{i}").mkdir()
    policy: tuple[list[str], list[str], list[str]] = (
        [str(crowd), str(crowd / "project")],
        [],
        [str(crowd / "project" / ".infomark")],
    )
    new = landlock.rules(*policy)
    # one rule per other entry (the project, on the way, is listable from its parents)
    assert sum(1 for p, _ in new if os.path.dirname(p) == str(crowd)) == 300
    assert len(new) < len(_reference(*policy)) * 0.6
    _same(crowd, *map(list, policy))


# -- the kept ruleset, against the real kernel ---------------------------------------------
needs_landlock = pytest.mark.skipif(
    landlock.abi() < 1, reason="SKIPPED LOUDLY: this kernel has no Landlock"
)


def _boxed(prepared: landlock.Prepared, command: str) -> tuple[int, bytes]:
    import subprocess

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            ["bash", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )

    try:
        proc = sandbox._restricted_thread(prepared, start)
    finally:
        prepared.close()
    out, _ = proc.communicate()
    return proc.returncode, out


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many rulesets were built (each is a fresh drawing)."""
    landlock.clear_cache()
    count: list[int] = []
    real = landlock.ruleset

    def counted(*a: object, **k: object) -> int:
        count.append(1)
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(landlock, "ruleset", counted)
    yield count
    landlock.clear_cache()


def _policy(base: Path) -> tuple[list[str], list[str], list[str]]:
    project = base / "project"
    return (
        [str(base), str(project)],
        [str(project / ".claude" / "settings.json")],
        [str(project / ".infomark"), str(base / "user" / ".config" / "infomark")],
    )


@needs_landlock
def test_the_ruleset_is_built_once_while_nothing_changes(tmp_path: Path, built: list[int]) -> None:
    (tmp_path / "project" / ".infomark").mkdir(parents=True)
    (tmp_path / "project" / ".infomark" / "key").write_text("KEY")
    for i in range(100):
        (tmp_path / f"e{i}").mkdir()
    w, r, h = _policy(tmp_path)
    for _ in range(3):
        _code, out = _boxed(
            landlock.prepared(w, r, h, network=True), f"cat {h[0]}/key; ls {tmp_path}/e5"
        )
        assert b"KEY" not in out and b"Permission denied" in out, out
    assert len(built) == 1


@needs_landlock
def test_a_hidden_path_that_appears_is_hidden(tmp_path: Path, built: list[int]) -> None:
    """The operator's directory does not exist when the rules are first built; once it does,
    the kept rules (which granted its parent as an ordinary directory) are not used."""
    (tmp_path / "project" / ".infomark").mkdir(parents=True)
    (tmp_path / "user").mkdir()
    w, r, h = _policy(tmp_path)
    assert _boxed(landlock.prepared(w, r, h, network=True), "true")[0] == 0
    token = Path(h[1]) / "operator-token"
    token.parent.mkdir(parents=True)
    token.write_text("OPERATOR")
    code, out = _boxed(landlock.prepared(w, r, h, network=True), f"cat {token}")
    assert b"OPERATOR" not in out and code != 0
    assert len(built) == 2


@pytest.mark.parametrize("change", ["new_dir", "swapped_dir", "swapped_read_only"])
@needs_landlock
def test_a_change_where_the_rules_were_split_draws_them_again(
    tmp_path: Path, built: list[int], change: str
) -> None:
    project = tmp_path / "project"
    (project / ".infomark").mkdir(parents=True)
    (project / ".claude").mkdir()
    settings = project / ".claude" / "settings.json"
    settings.write_text("{}")
    (project / "old").mkdir()
    w, r, h = _policy(tmp_path)
    assert _boxed(landlock.prepared(w, r, h, network=True), "true")[0] == 0
    if change == "new_dir":  # made by the user, outside the sandbox: writable inside it
        (project / "new").mkdir()
        command, target = f"echo ok > {project}/new/f", project / "new" / "f"
    elif change == "swapped_dir":  # the same name, another directory
        (project / "old").rmdir()
        (project / "old").mkdir()
        command, target = f"echo ok > {project}/old/f", project / "old" / "f"
    else:  # an editor's atomic save: a new file under the read-only name
        (project / ".claude" / "tmp").write_text("{}")
        os.replace(project / ".claude" / "tmp", settings)
        command, target = f"echo bad > {settings}", settings
    code, out = _boxed(landlock.prepared(w, r, h, network=True), command)
    if change == "swapped_read_only":  # (the kept rules would refuse it too: fail closed)
        assert code != 0 and settings.read_text() == "{}", out
    else:  # the kept rules would not know the new directory
        assert code == 0 and target.read_text() == "ok\n", out
    assert len(built) == 2


@needs_landlock
def test_each_caller_gets_its_own_descriptor(tmp_path: Path, built: list[int]) -> None:
    (tmp_path / "project" / ".infomark").mkdir(parents=True)
    (tmp_path / "project" / "src").mkdir()
    w, r, h = _policy(tmp_path)
    first = landlock.prepared(w, r, h, network=True)
    second = landlock.prepared(w, r, h, network=True)
    assert first.fd != second.fd and len(built) == 1
    first.close()
    landlock.clear_cache()  # the kept descriptor closed: a caller's own copy still works
    assert _boxed(second, f"echo ok > {tmp_path}/project/src/f")[0] == 0
    assert (tmp_path / "project" / "src" / "f").read_text() == "ok\n"
    landlock.prepared(w, r, h, network=False).close()  # another policy: another ruleset
    assert len(built) == 2
