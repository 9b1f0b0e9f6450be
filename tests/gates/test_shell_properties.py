"""Properties of the shell classifier: total, quote-safe, wrapper-transparent, monotonic.

SAFETY: every command string here is DATA for the parser. Nothing is ever executed.
"""

from __future__ import annotations

import shlex

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from infomark.gates.classify import Classification, ToolClass
from infomark.gates.shell import classify_shell

SEVERITY = {ToolClass.EXECUTE: 0, ToolClass.MODIFY: 1, ToolClass.DESTRUCTIVE: 2}

DESTRUCTIVE: list[tuple[str, str]] = [
    ("rm -rf build", "file"),
    ("rm -f notes.txt", "file"),
    ("find . -name '*.tmp' -delete", "file"),
    ("dd if=/dev/zero of=disk.img", "file"),
    ("shred secret.txt", "file"),
    ("mkfs.ext4 /dev/sdb1", "file"),
    ("git reset --hard", "git"),
    ("git push --force origin main", "git"),
    ("git clean -fdx", "git"),
    ("git checkout -- src/app.py", "git"),
    ("git branch -D old", "git"),
    ("git stash drop", "git"),
    ("psql -c 'DROP TABLE users'", "db"),
    ("sqlite3 app.db 'DELETE FROM sessions'", "db"),
    ("mysql -e 'TRUNCATE logs'", "db"),
]

WRAPPERS = [
    "sudo",
    "sudo -u root",
    "sudo -E",
    "doas",
    "env",
    "env A=1",
    "env -i PATH=/bin",
    "env -u HOME",
    "command",
    "command -p",
    "exec",
    "nice",
    "nice -n 5",
    "nohup",
    "time",
    "time -p",
    "timeout 5",
    "timeout -s KILL 10s",
    "timeout --kill-after=3 10",
    "stdbuf -oL",
    "stdbuf -i 0 -o L",
    "xargs",
    "xargs -0",
    "xargs -n 1 -P 4",
    "setsid",
    "ionice -c 3",
    "uv run",
    "poetry run",
]

WELL_FORMED = [
    "ls -la",
    "cat README.md",
    "echo hello",
    "echo 'rm -rf /'",
    "git status",
    "git commit -m 'git reset --hard'",
    "pytest -q",
    "make build",
    "echo hi > out.txt",
    "cp a b",
    "pip install requests",
    "python -c 'print(1)'",
    "sed -i s/a/b/ f",
    "psql -c 'SELECT 1'",
    "x=$(date)",
    "(cd src && ls)",
    "{ ls; pwd; }",
    "if true; then ls; fi",
    "for f in a b; do echo $f; done",
    "$CMD arg",
    "cat < in.txt",
    "grep -q x f",
    "true",
]

RESERVED = {
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "while", "until", "do", "done",
    "in", "function", "select", "coproc", "time",
}  # fmt: skip

WORD = st.from_regex(r"[A-Za-z0-9_./=+-]{1,10}", fullmatch=True).filter(lambda w: w not in RESERVED)
GENERATED = st.lists(WORD, min_size=1, max_size=5).map(" ".join)
ANY_COMMAND = st.one_of(st.sampled_from(WELL_FORMED), GENERATED)
JOINERS = st.sampled_from([" ; ", " && ", " || ", " | ", "\n"])


def _check(result: Classification) -> None:
    assert isinstance(result, Classification)
    assert result.tool_class in SEVERITY
    assert result.reasons and all(isinstance(r, str) and r for r in result.reasons)
    # the catch-all guard must never be what answered: that would hide a classifier bug
    assert not any(r.startswith("internal error") for r in result.reasons), result.reasons
    if result.tool_class is not ToolClass.DESTRUCTIVE:
        # below destructive only the markers of issue 11 may appear
        assert set(result.families) <= {"opaque_command", "infomark"}, result
    if "opaque_command" in result.families:
        assert result.opaque and result.tool_class is not ToolClass.EXECUTE


# --- totality ------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(exclude_categories=()), max_size=300))
def test_never_raises_on_arbitrary_text(text: str) -> None:
    _check(classify_shell(text))


SHELLISH = st.lists(
    st.sampled_from(
        [*"abrmfgit -\"'`$(){}[]<>|&;\\\n#=*?!~", "rm", " -rf ", "<<", "EOF", "\x00", "bash -c "]
    ),
    max_size=60,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(SHELLISH)
def test_never_raises_on_shell_like_text(text: str) -> None:
    _check(classify_shell(text))


# --- quoted text is data -------------------------------------------------------------------------

# Inside double quotes only `$`, backticks, `"` and `\` are special; lone surrogates and NUL
# cannot be encoded into a command line at all (those fail closed, tested elsewhere).
QUOTE_SAFE = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters='"\\$`\x00'), max_size=60
)


@settings(max_examples=300, deadline=None)
@given(QUOTE_SAFE, QUOTE_SAFE, st.sampled_from([d for d, _ in DESTRUCTIVE]))
def test_destructive_text_inside_double_quotes_stays_execute(
    before: str, after: str, dangerous: str
) -> None:
    result = classify_shell(f'echo "{before}{dangerous}{after}"')
    assert result.tool_class is ToolClass.EXECUTE, result.reasons


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(DESTRUCTIVE), st.sampled_from(["echo", "printf '%s'", "grep -F"]))
def test_single_quoted_destructive_text_is_data(case: tuple[str, str], reader: str) -> None:
    command, _ = case
    assert classify_shell(f"{reader} {shlex.quote(command)}").tool_class is ToolClass.EXECUTE


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(DESTRUCTIVE), st.sampled_from(["bash", "sh", "zsh", "bash -e", "sh -x"]))
def test_shell_c_strings_are_code(case: tuple[str, str], shell: str) -> None:
    command, family = case
    result = classify_shell(f"{shell} -c {shlex.quote(command)}")
    assert result.tool_class is ToolClass.DESTRUCTIVE
    assert family in result.families


# --- wrappers are transparent --------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(WRAPPERS), max_size=5), st.sampled_from(DESTRUCTIVE))
def test_any_wrapper_chain_keeps_destructive(chain: list[str], case: tuple[str, str]) -> None:
    command, family = case
    result = classify_shell(" ".join([*chain, command]))
    assert result.tool_class is ToolClass.DESTRUCTIVE, result.reasons
    assert family in result.families


# --- monotonic composition -----------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(ANY_COMMAND, JOINERS, st.sampled_from(DESTRUCTIVE), st.booleans())
def test_joining_with_a_destructive_command_is_destructive(
    other: str, joiner: str, case: tuple[str, str], destructive_first: bool
) -> None:
    command, family = case
    joined = command + joiner + other if destructive_first else other + joiner + command
    result = classify_shell(joined)
    assert result.tool_class is ToolClass.DESTRUCTIVE, (joined, result.reasons)
    assert family in result.families


@settings(max_examples=300, deadline=None)
@given(ANY_COMMAND, ANY_COMMAND, st.sampled_from([" ; ", " && ", " || ", "\n"]))
def test_lists_take_the_most_severe_part(left: str, right: str, joiner: str) -> None:
    a, b = classify_shell(left), classify_shell(right)
    assume(not any("unparseable" in r for r in (*a.reasons, *b.reasons)))
    joined = classify_shell(left + joiner + right)
    assert SEVERITY[joined.tool_class] == max(SEVERITY[a.tool_class], SEVERITY[b.tool_class])
    if joined.tool_class is ToolClass.DESTRUCTIVE:
        assert set(joined.families) == set(a.families) | set(b.families)


@settings(max_examples=200, deadline=None)
@given(ANY_COMMAND, ANY_COMMAND)
def test_a_pipe_never_lowers_severity(left: str, right: str) -> None:
    a, b = classify_shell(left), classify_shell(right)
    assume(not any("unparseable" in r for r in (*a.reasons, *b.reasons)))
    joined = classify_shell(f"{left} | {right}")
    assert SEVERITY[joined.tool_class] >= max(SEVERITY[a.tool_class], SEVERITY[b.tool_class])
