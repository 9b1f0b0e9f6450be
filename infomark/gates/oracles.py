"""Oracles that mean something: weak-oracle judgement and the operator's pins.

An oracle is the command that decides a claim. It is judged when the claim is
declared: one that cannot fail (``true``, ``:``, ``exit 0``, ``echo …``, ``test 1``),
masks a failure (``|| true``, ``; exit 0``, ``| tee log``), selects nothing
(``--collect-only``, ``--passWithNoTests``) or touches infomark itself (its CLI,
home, token or service) is refused with ``weak_oracle``. The operator's
``[oracles] allow`` list, when set, is the only way in (``oracle_not_allowed``);
``[oracles] require`` names the runs a finish needs (see :mod:`infomark.gates.finalize`).
A run whose output says no test ran is refused as evidence even when it exits 0.
Pure functions; standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.paths import pure_name
from infomark.kernel.reasons import RejectReason

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _typeshed import StrPath

__all__ = ["OracleJudge", "matches_any", "ran_nothing", "weakness"]

_OPERATORS = frozenset({"&&", "||", ";", "|", "&", "\n", ";;", "|&"})
_NOOP = frozenset({"true", ":", "echo", "printf", "pwd", "exit", "return", "yes", "sleep"})
_SINKS = frozenset({"tee", "cat", "head", "tail", "less", "more", "sort", "uniq", "wc", "tr"})
_SELECT_NOTHING = ("--collect-only", "--co", "--passWithNoTests", "--dry-run", "--list")
_NO_TESTS = lazy_compile(
    r"(?i)no tests ran|collected 0 items|\brunning 0 tests\b|\bRan 0 tests\b|\bno test files\b|"
    r"No tests found|\b0 passing\b|\b0 examples\b|Tests:\s+0 total|\b0 tests? (?:passed|run)\b"
)


def _segments(command: str) -> list[tuple[str, list[str]]] | None:
    """``(operator before it, words)`` per simple command; None when it cannot be split."""
    import shlex  # shlex imports re: only calls that judge an oracle load it

    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    out: list[tuple[str, list[str]]] = []
    op, words = "", list[str]()
    for tok in tokens:
        if tok in _OPERATORS:
            if words:
                out.append((op, words))
            op, words = tok, []
        else:
            words.append(tok)
    if words:
        out.append((op, words))
    return out


def _word(words: list[str]) -> tuple[str, list[str]]:
    """The command word (after ``VAR=x`` assignments, ``env``, ``command``) and its args."""
    import re

    i = 0
    while i < len(words) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[i]):
        i += 1
    while i < len(words) and words[i] in ("env", "command", "builtin", "exec", "nice", "time"):
        i += 1
    if i >= len(words):
        return "", []
    return pure_name(words[i]), words[i + 1 :]


def _cannot_fail(words: list[str]) -> bool:
    name, args = _word(words)
    if not name:
        return True  # only assignments
    if name == "exit":
        return not args or args[0] == "0"
    if name in _NOOP:
        return True
    if name == "wait":
        return not args  # `wait` with no job named exits 0
    if name in ("test", "["):
        inner = [a for a in args if a != "]"]
        return len(inner) == 1 and inner[0] != ""  # `test 1`: a non-empty string is true
    return False


#: compound commands whose status is not the test's when the test is their condition
_CONDITIONS = frozenset({"if", "while", "until"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})


def _ungrouped(
    segs: list[tuple[str, list[str]]],
) -> tuple[list[tuple[str, list[str]]], set[int]]:
    """``segs`` without the subshell and group marks ``( … )`` and ``{ …; }``, and the
    indexes of the segments that end a group: ``(pytest -q; true)`` is ``pytest -q; true``
    whose ``true`` decides the group's status, as a final command decides the line's."""
    out: list[tuple[str, list[str]]] = []
    ends: set[int] = set()
    for op, words in segs:
        ws = [w for w in words if w not in ("{", "}")]
        closed = len(ws) != len(words) and words[-1] == "}"
        if ws:
            ws[0] = ws[0].lstrip("(")
            stripped = ws[-1].rstrip(")")
            closed = closed or stripped != ws[-1]
            ws[-1] = stripped
            ws = [w for w in ws if w]
        if ws:
            out.append((op, ws))
        if closed and out:
            ends.add(len(out) - 1)
    return out, ends


def _nested_weakness(segs: list[tuple[str, list[str]]], home: StrPath | None) -> str | None:
    """The weakness of a script given to ``sh -c`` / ``bash -c`` (judged as its own line)."""
    for _, words in segs:
        name, args = _word(words)
        if name in _SHELLS and "-c" in args[:-1]:
            inner = weakness(args[args.index("-c") + 1], home=home)
            if inner is not None:
                return f"in `{name} -c`: {inner}"
    return None


def _package_dir() -> str:
    """Where the infomark package itself is installed (its source files)."""
    return os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def _touches_infomark(words: Iterable[str], home: StrPath | None) -> bool:
    """A word that names infomark: its CLI or module, its home, its variables, its files.

    A directory that merely has the name ``infomark`` on the way to something else (a
    checkout at ``~/src/infomark/.venv/bin/python``) is not infomark: only the word's own
    name, a path that starts in a package directory ``infomark/``, ``.infomark``,
    ``INFOMARK_*``, the home and the installed package's directory count.
    """
    home_s = os.fspath(home) if home is not None else None
    package = _package_dir()
    for w in words:
        low = w.lower()
        if pure_name(w).lower() == "infomark" or low.startswith(("infomark.", "infomark/")):
            return True
        if ".infomark" in low or "infomark_" in low or package in w:
            return True
        if home_s and home_s in w:
            return True
    return False


def weakness(command: str, *, home: StrPath | None = None) -> str | None:
    """Why ``command`` is a weak oracle (a sentence), or None when it can decide a claim."""
    segs = _segments(command)
    if segs is None:
        return "it cannot be parsed as a shell command (an unclosed quote?)"
    if not segs:
        return "it is empty"
    every = [w for _, words in segs for w in words]
    if _touches_infomark(every, home):
        return "it calls or reads infomark itself (its CLI, home, token or service)"
    segs, ends = _ungrouped(segs)
    if not segs or all(_cannot_fail(words) for _, words in segs):
        return f"`{command}` cannot fail"
    nested = _nested_weakness(segs, home)
    if nested is not None:
        return nested
    for i, (op, words) in enumerate(segs):
        if words[0] in _CONDITIONS:
            return (
                f"`{words[0]}` takes the test's status as its condition: the command exits 0 "
                "when the test fails"
            )
        if i == 0:
            continue
        if op == "||" and _cannot_fail(words):
            return f"`|| {' '.join(words)}` masks the failure of what runs before it"
        last = i == len(segs) - 1 or i in ends  # the last command of the line or of a group
        if op in (";", "&", "\n") and last and _cannot_fail(words):
            return f"the final `{' '.join(words)}` makes the command succeed whatever ran before"
        name, _ = _word(words)
        if op == "|" and name in _SINKS and "pipefail" not in command:
            return f"`| {name}` makes the pipeline's status that of {name}, not of the test"
    for _, words in segs:
        for w in words:
            if w in _SELECT_NOTHING:
                return f"`{w}` runs no test"
        name, args = _word(words)
        if "-k" in args:
            k = args.index("-k")
            if k + 1 >= len(args) or not args[k + 1].strip():
                return "`-k` with an empty expression selects nothing"
    return None


def matches_any(command: str, patterns: Sequence[str]) -> bool:
    """True when the oracle matches one of the operator's patterns (shell-style globs)."""
    import fnmatch

    return any(fnmatch.fnmatchcase(command, p) for p in patterns)


def ran_nothing(output: bytes | str) -> bool:
    """True when a run's output says that no test ran (pytest, unittest, jest, go, cargo, …)."""
    text = output.decode("utf-8", "replace") if isinstance(output, bytes) else output
    return bool(_NO_TESTS.search(text[-20_000:]))


class OracleJudge:
    """The declaration-time judge the ledger calls (``LedgerRules.judge_oracle``)."""

    def __init__(self, allow: Sequence[str] = (), home: StrPath | None = None) -> None:
        self.allow = tuple(allow)
        self.home = home

    def __call__(self, command: str) -> tuple[RejectReason, str] | None:
        weak = weakness(command, home=self.home)
        if weak is not None:
            return RejectReason.WEAK_ORACLE, f"{weak}; {RejectReason.WEAK_ORACLE.hint}"
        if self.allow and not matches_any(command, self.allow):
            allowed = ", ".join(f"`{p}`" for p in self.allow)
            return (
                RejectReason.ORACLE_NOT_ALLOWED,
                f"the operator allows only {allowed}; {RejectReason.ORACLE_NOT_ALLOWED.hint}",
            )
        return None
