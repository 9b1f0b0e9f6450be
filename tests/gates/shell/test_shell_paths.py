"""`paths` and `opaque` (issue 10: the home is protected by what a path resolves to) and the
static word expansion behind them, checked against real bash.

SAFETY: bash only runs `printf '%s\\n' WORDS` here, inside a temp dir, with words drawn from an
alphabet without command separators, redirections or `$`; nothing else is ever executed.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from infomark.gatekeeper import Gatekeeper
from infomark.gates.shell import classify_shell
from infomark.gates.shell.expand import expand_word
from infomark.ledger.calls import ToolCall

FILES = ["a.txt", "b.txt", "ab.py", ".hidden", "sub/x.py", "sub/y.txt", ".infomark/key", "c d"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in FILES:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    return tmp_path


def _bash_fields(words: str, cwd: Path) -> list[str]:
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", "printf '%s\\n' " + words],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=10,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(cwd), "LC_ALL": "C"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


KEY_SPELLINGS = [
    "cat .info*/key",
    "cat \\.infomark/key",
    "cat .infomar[k]/key",
    "cat '.infomark'/key",
    'cat ".infomark/key"',
    "cat .info{mark,x}/key",
    "cd .infomark && cat key",
    "cd sub && cd .. && cd .infomark && cat key",
    "(cd .infomark; cat key)",
    "cat $(echo .infomark)/key",
    "cat `echo .infomark`/key",
    'cat "$(printf %s .infomark)/key"',
    "cat /proc/self/cwd/.infomark/key",
    "cat < .infomark/key",
    "cp .infomark/key /tmp/stolen",
    "echo x > .infomark/key",
    "sudo cat .infomark/key",
    "bash -c 'cat .infomark/key'",
    "cat $'.infomark/key'",
    "tar -czf out.tgz .infomark",
    "cat .[i]nfomark/k?y",
]


@pytest.mark.parametrize("command", KEY_SPELLINGS)
def test_every_spelling_of_the_key_resolves_to_it(tree: Path, command: str) -> None:
    result = classify_shell(command, cwd=str(tree))
    key = str(tree / ".infomark" / "key")
    home = str(tree / ".infomark")
    assert key in result.paths or home in result.paths, result
    assert not result.opaque, result


@pytest.mark.parametrize(
    "command",
    [
        "cat $HOME/.infomark/key",
        "cat $X/key",
        'cat "${DIR}/key"',
        "cd $D && cat key",
        "cd - && cat key",
        "eval 'cat .infomark/key'",
        "source ./x.sh",
        "cat $(whoami)/key",
        "echo x > $OUT",
        "$CMD .infomark/key",
        "cat $((1+1))",
    ],
)
def test_unresolvable_words_are_opaque(tree: Path, command: str) -> None:
    assert classify_shell(command, cwd=str(tree)).opaque


def test_data_words_are_not_paths_nor_opaque(tree: Path) -> None:
    result = classify_shell('echo "$HOME" .infomark/key', cwd=str(tree))
    assert not result.opaque
    assert str(tree / ".infomark" / "key") not in result.paths


def test_paths_are_absolute_and_relative_to_the_given_cwd(tree: Path) -> None:
    result = classify_shell("cat a.txt sub/*.py", cwd=str(tree / "."))
    assert str(tree / "a.txt") in result.paths
    assert str(tree / "sub" / "x.py") in result.paths
    assert all(os.path.isabs(p) for p in result.paths)


def test_a_symlink_is_reported_with_what_it_points_to(tree: Path) -> None:
    (tree / "innocent").symlink_to(tree / ".infomark")
    result = classify_shell("cat innocent/key", cwd=str(tree))
    assert str(tree / ".infomark" / "key") in result.paths


def test_cd_in_a_subshell_keeps_the_outer_directory_too(tree: Path) -> None:
    result = classify_shell("(cd sub); cat .infomark/key", cwd=str(tree))
    assert str(tree / ".infomark" / "key") in result.paths


def test_option_values_are_paths(tree: Path) -> None:
    result = classify_shell("git diff --output=.infomark/key", cwd=str(tree))
    assert str(tree / ".infomark" / "key") in result.paths


# --- the expansion agrees with bash ---------------------------------------------------------

_PIECES = [
    "a",
    "b",
    "x",
    ".",
    "/",
    "*",
    "?",
    "[ab]",
    "[!a]",
    "{a,b}",
    "{1..3}",
    "{,x}",
    "sub",
    "'*'",
    '"a b"',
    "\\*",
    "\\ ",
    "$(echo sub)",
    "`echo a`",
    "~",
    "txt",
    "py",
    ".hidden",
    "c\\ d",
    "''",
    "{a,{b,c}}",
    "[",
    "]",
    "-",
    "_",
]
WORDS = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6).map("".join)


@settings(max_examples=250, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=3))
@example(["//*"]).via("found by this property: bash keeps the doubled slash")
@example(["sub//*", "/*//"])
def test_expansion_agrees_with_bash(
    tmp_path_factory: pytest.TempPathFactory, words: list[str]
) -> None:
    root = tmp_path_factory.mktemp("expand")
    for name in FILES:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    ours: list[str] = []
    with _home(root):
        for word in words:
            fields = expand_word(word, str(root))
            assert fields is not None, word  # every piece is statically expandable
            ours.extend(fields)
    theirs = _bash_fields(" ".join(words), root)
    assert sorted(ours) == sorted(theirs), (words, ours, theirs)


@settings(max_examples=60, deadline=None)
@given(WORDS)
def test_classifier_paths_are_the_expansion(
    tmp_path_factory: pytest.TempPathFactory, word: str
) -> None:
    root = tmp_path_factory.mktemp("paths")
    for name in FILES:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    with _home(root):
        result = classify_shell("cat " + word, cwd=str(root))
        fields = expand_word(word, str(root))
    if result.opaque:  # fail closed: the protection gate denies it (protected_opaque)
        # tree-sitter could not read it (e.g. `\\ ` at the end): also a modify; or the
        # paths cannot all be listed: the expansion is over 1,000 fields (`/*/*` on a busy
        # machine), or its fields and their resolved symlinks (two paths each at most)
        # reach the classifier's cap of 1,000 paths
        assert result.tool_class.mutates or fields is None or len(fields) >= 500, word
        return
    for field in _bash_fields(word, root):
        if field and not word.startswith("-"):  # options are not paths
            # POSIX normpath keeps a leading `//` (implementation-defined); the kernel treats
            # it as `/`, and so does the classifier
            want = os.path.normpath(os.path.join(str(root), field))
            want = "/" + want.lstrip("/") if want.startswith("//") else want
            assert want in result.paths, (word, field)


def test_a_glob_too_wide_to_expand_is_denied_as_opaque(gk: Gatekeeper, project: Path) -> None:
    # what Hypothesis found as `cat /*/*` on a machine with many files: a read whose fields
    # cannot all be listed names no path, so the gate cannot rule out the home: denied
    for i in range(1_001):
        (project / f"f{i}.txt").write_text("x")
    c = classify_shell("cat *.txt", cwd=str(project))
    assert c.opaque and not c.tool_class.mutates and c.paths == ()
    d = gk.authorize(ToolCall("Bash", {"command": "cat *.txt"}))
    assert (d.verdict.value, d.code) == ("deny", "protected_opaque"), d
    assert "spell the paths out literally" in d.reason


@contextlib.contextmanager
def _home(path: Path) -> Iterator[None]:
    """``~`` is $HOME for bash and for the classifier alike: point both at the temp dir."""
    old = os.environ.get("HOME")
    os.environ["HOME"] = str(path)
    try:
        yield
    finally:
        if old is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = old
