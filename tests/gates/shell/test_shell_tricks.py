"""Spelling tricks a hostile agent would try against the parser itself.

SAFETY: the commands are DATA; they are classified, never run.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from infomark.gates.shell import classify_shell
from infomark.kernel.tools import ToolClass

D, M = ToolClass.DESTRUCTIVE, ToolClass.MODIFY


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # a here-doc body line that only starts with the delimiter does not end it (bash rule)
        ("cat <<'EOF'\nEOF = 1\nEOF\nrm -rf x", D),
        ("cat <<-EOF\n\tEOFISH\n\tEOF\nrm -rf x", D),
        # a here-string is not a here-doc: later lines are commands
        ("python3 <<< 'x'\nxrm=1\nrm -rf x", D),
        # aliases and hash -p make a harmless word run something else
        ("alias ls='rm -rf'\nls build", D),
        ("alias ls='rm -rf'; ls build", D),
        ("hash -p /bin/rm cat\ncat -rf build", D),
        # tree-sitter splits a word after a quote; bash does not
        ("r'm' -rf build", D),
        ("'r'm -rf build", D),
        ("\\rm -rf build", D),
        # git aliases given on the command line
        ("git -c alias.st='reset --hard' st", D),
        ("git -c alias.x='!rm -rf build' x", D),
        ("git -c alias.x='clean -fdx' x", D),
        # SQL whose WHERE selects every row
        ("sqlite3 app.db 'DELETE FROM users WHERE 1'", D),
        ("sqlite3 app.db \"DELETE FROM users WHERE 'a' = 'a'\"", D),
        ("sqlite3 app.db 'DELETE FROM users WHERE TRUE'", D),
        ("psql -c 'UPDATE accounts SET balance = 0'", D),
        ("sqlite3 app.db 'DELETE FROM users WHERE id = 3'", M),
        # awk's system() runs its string as shell code
        ("awk 'BEGIN { system(\"rm -rf build\") }'", D),
        ("awk 'BEGIN { system(cmd) }'", M),
        # runners
        ("script -qc 'rm -rf build' /dev/null", D),
        ("taskset 0x1 rm -rf build", D),
        ("flock /tmp/l rm -rf build", D),
        ("flock /tmp/l -c 'rm -rf build'", D),
        ("gdb -batch -ex '!rm -rf build'", D),
        ("parallel rm -rf ::: build dist", D),
        ("time -o t.txt rm -rf build", D),
        ("printf 'a\\n' | xargs -I{} sh -c 'rm -rf {}'", D),
        # manage.py flush empties the database
        ("python manage.py flush --noinput", D),
        ("./manage.py flush", D),
    ],
)
def test_tricks(command: str, expected: ToolClass) -> None:
    result = classify_shell(command)
    assert result.tool_class is expected, result


@pytest.mark.parametrize(
    "word",
    ["[a" * 5000, "[a" * 5000 + "]", "[[:" * 3000, "*/" * 30, "{a,b}" * 30, "{1..99999999}"],
    ids=["open-brackets", "one-huge-bracket", "class-openers", "deep-stars", "brace-bomb", "seq"],
)
def test_hostile_globs_stay_cheap_and_fail_closed(tmp_path: Path, word: str) -> None:
    for k in range(300):
        (tmp_path / f"d{k}" / "e").mkdir(parents=True)
    start = time.perf_counter()
    result = classify_shell("cat " + word, cwd=str(tmp_path))
    assert time.perf_counter() - start < 2.0
    assert result.opaque or result.paths, result
