"""An oracle string, read the way the shell would, down to the runners it starts.

``shlex`` splits the command into simple commands (``;``, ``&&``, ``||``, ``|``); each one's
wrappers are taken off in turn — ``NAME=value`` assignments, ``env [-i] [-u N] …``,
``timeout [opts] DURATION``, ``nice``, ``time``, ``command``, ``exec``, ``nohup``,
``stdbuf``, ``xvfb-run``, ``sh|bash -c 'script'`` (read recursively), ``uv run``, ``poetry
run``, ``pipenv run``, ``pdm run``, ``hatch run``, ``npx``, ``pnpm exec|dlx``, ``yarn
exec``, ``bunx`` — and the word left is matched against the runner table
(``python -m pytest`` is pytest, ``npm test`` a package script). ``cd DIR`` sets the directory
of the commands after it. What is not a runner the table knows is :data:`RunnerKind.UNKNOWN`.
"""

from __future__ import annotations

import re

from infomark.gates.oracles import _segments
from infomark.gates.surface.model import RunnerCall
from infomark.kernel.paths import pure_name
from infomark.kernel.runners import RunnerKind

__all__ = ["parse_oracle"]

_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.S)
_PYTHON = re.compile(r"python(?:3(?:\.\d+)?)?|pypy3?")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_MAX_DEPTH = 6

# wrapper word -> (options that take a value, positional words before the command)
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "-n", "-t", "--class", "--classdata"}), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "xvfb-run": (frozenset({"-n", "-s", "-e", "-f", "-p", "--server-args", "--server-num"}), 0),
    "chronic": (frozenset(), 0),
    "unbuffer": (frozenset(), 0),
    "catchsegv": (frozenset(), 0),
}
# `<tool> run|exec …`: (the word after the tool, options that take a value)
_RUN_WRAPPERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "uv": (
        frozenset({"run"}),
        frozenset(
            {
                "--with",
                "--with-requirements",
                "--with-editable",
                "--python",
                "-p",
                "--project",
                "--directory",
                "--extra",
                "--group",
                "--only-group",
                "--env-file",
                "--package",
                "--index",
                "--index-url",
                "--default-index",
                "--extra-index-url",
                "--find-links",
                "-f",
                "--cache-dir",
                "--config-file",
            }
        ),
    ),
    "poetry": (frozenset({"run"}), frozenset({"-C", "--directory", "-P", "--project"})),
    "pipenv": (frozenset({"run"}), frozenset()),
    "pdm": (frozenset({"run"}), frozenset({"-p", "--project"})),
    "hatch": (frozenset({"run"}), frozenset({"-e", "--env"})),
    "rye": (frozenset({"run"}), frozenset()),
    "pnpm": (frozenset({"exec", "dlx"}), frozenset({"-C", "--dir", "--filter", "-F"})),
    "yarn": (frozenset({"exec", "dlx"}), frozenset()),
    "conda": (frozenset({"run"}), frozenset({"-n", "--name", "-p", "--prefix"})),
}
_NPX = frozenset({"npx", "bunx", "pnpx"})
_NPX_VALUE = frozenset({"-p", "--package", "-c", "--call", "--node-options"})
_PY_VALUE = frozenset({"-W", "-X", "-Q"})
_NODE_RUNNERS = {"jest": RunnerKind.JEST, "vitest": RunnerKind.VITEST, "mocha": RunnerKind.MOCHA}
_PY_MODULES = {
    "pytest": RunnerKind.PYTEST,
    "py.test": RunnerKind.PYTEST,
    "unittest": RunnerKind.UNITTEST,
    "tox": RunnerKind.TOX,
    "nox": RunnerKind.NOX,
}
_COMMANDS = {
    "pytest": RunnerKind.PYTEST,
    "py.test": RunnerKind.PYTEST,
    "make": RunnerKind.MAKE,
    "gmake": RunnerKind.MAKE,
    "npm": RunnerKind.NPM,
    "yarn": RunnerKind.NPM,
    "pnpm": RunnerKind.NPM,
    "bun": RunnerKind.NPM,
    "cargo": RunnerKind.CARGO,
    "go": RunnerKind.GO,
    "tox": RunnerKind.TOX,
    "nox": RunnerKind.NOX,
    **_NODE_RUNNERS,
}


def _split(command: str) -> list[list[str]] | None:
    """The simple commands of ``command`` (None: it cannot be split, an unclosed quote)."""
    segments = _segments(command)  # the weak-oracle judge's own reading of the shell
    return None if segments is None else [words for _, words in segments]


def parse_oracle(oracle: str) -> tuple[RunnerCall, ...]:
    """Every runner call in ``oracle`` (an unparseable one: one UNKNOWN call of its words)."""
    calls: list[RunnerCall] = []
    _parse(oracle, (), "", 0, calls)
    return tuple(calls)


def _parse(
    command: str, env: tuple[tuple[str, str], ...], cwd: str, depth: int, out: list[RunnerCall]
) -> None:
    simple = _split(command)
    if simple is None:
        out.append(RunnerCall(RunnerKind.UNKNOWN, tuple(command.split()), (), env, cwd))
        return
    for words in simple:
        if words[0] == "cd" and len(words) <= 2:
            target = words[1] if len(words) == 2 else ""
            cwd = _join(cwd, target) if target and not target.startswith(("-", "~")) else cwd
            continue
        _unwrap(words, env, cwd, depth, out)


def _join(cwd: str, target: str) -> str:
    import posixpath

    if target.startswith("/"):
        return target  # an absolute directory: discovery reads it as such
    return posixpath.normpath(posixpath.join(cwd or ".", target)).removeprefix("./")


def _skip_options(words: list[str], i: int, takes_value: frozenset[str]) -> int:
    """The index of the first word after the options starting at ``i``."""
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        w = words[i]
        i += 1
        if w == "--":
            break
        if w in takes_value:
            i += 1
    return i


def _unwrap(
    words: list[str],
    env: tuple[tuple[str, str], ...],
    cwd: str,
    depth: int,
    out: list[RunnerCall],
) -> None:
    i = 0
    prefix: list[str] = []
    while i < len(words):
        w = words[i]
        name = pure_name(w)
        if _ASSIGN.fullmatch(w):
            key, _, value = w.partition("=")
            env = (*env, (key, value))
            prefix.append(w)
            i += 1
            continue
        if name == "env":
            j = i + 1
            while j < len(words):
                a = words[j]
                if a in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
                    if a in ("-C", "--chdir") and j + 1 < len(words):
                        cwd = _join(cwd, words[j + 1])
                    j += 2
                elif a.startswith("-"):
                    j += 1
                elif _ASSIGN.fullmatch(a):
                    key, _, value = a.partition("=")
                    env = (*env, (key, value))
                    j += 1
                else:
                    break
            prefix.extend(words[i:j])
            i = j
            continue
        if name in _WRAPPERS:
            takes_value, positional = _WRAPPERS[name]
            j = _skip_options(words, i + 1, takes_value) + positional
            prefix.extend(words[i:j])
            i = j
            continue
        if name in _SHELLS and depth < _MAX_DEPTH:
            script = _shell_script(words[i + 1 :])
            if script is not None:
                _parse(script, env, cwd, depth + 1, out)
                return
        if name in _RUN_WRAPPERS and i + 1 < len(words):
            verbs, takes_value = _RUN_WRAPPERS[name]
            j = _skip_options(words, i + 1, takes_value)
            if j < len(words) and words[j] in verbs:
                j = _skip_options(words, j + 1, takes_value)
                prefix.extend(words[i:j])
                i = j
                continue
        if name in _NPX:
            j = _skip_options(words, i + 1, _NPX_VALUE)
            prefix.extend(words[i:j])
            i = j
            continue
        break
    rest = words[i:]
    if not rest:
        return
    out.append(_runner(rest, env, cwd, tuple(prefix)))


def _shell_script(args: list[str]) -> str | None:
    """The script of ``sh [-opts] -c SCRIPT`` (None: the shell runs a file or stdin)."""
    i = 0
    while i < len(args) and args[i].startswith(("-", "+")):
        a = args[i]
        if a in ("-o", "+o", "-O", "+O"):
            i += 2
            continue
        if "c" in a.lstrip("-+") and a.startswith("-"):
            return args[i + 1] if i + 1 < len(args) else ""
        i += 1
    return None


def _runner(
    words: list[str], env: tuple[tuple[str, str], ...], cwd: str, prefix: tuple[str, ...]
) -> RunnerCall:
    name = pure_name(words[0])
    argv = tuple(words)
    if _PYTHON.fullmatch(name):
        k = 1
        while k < len(words) and words[k].startswith("-") and words[k] not in ("-m", "-c", "-"):
            k += 2 if words[k] in _PY_VALUE else 1
        if k + 1 < len(words) and words[k] == "-m":
            kind = _PY_MODULES.get(words[k + 1], RunnerKind.UNKNOWN)
            return RunnerCall(kind, argv, tuple(words[k + 2 :]), env, cwd, prefix)
        return RunnerCall(RunnerKind.UNKNOWN, argv, tuple(words[k:]), env, cwd, prefix)
    if name == "node" and "--test" in words[1:]:
        return RunnerCall(RunnerKind.NODE_TEST, argv, tuple(words[1:]), env, cwd, prefix)
    kind = _COMMANDS.get(name, RunnerKind.UNKNOWN)
    if kind is RunnerKind.GO and (len(words) < 2 or words[1] != "test"):
        kind = RunnerKind.UNKNOWN
    if kind is RunnerKind.CARGO and not ({"test", "t", "nextest"} & set(words[1:3])):
        kind = RunnerKind.UNKNOWN
    if kind is RunnerKind.MAKE:
        cwd = _make_dir(words, cwd)
    return RunnerCall(kind, argv, tuple(words[1:]), env, cwd, prefix)


def _make_dir(words: list[str], cwd: str) -> str:
    """``make -C DIR`` (cumulative, like make's own ``-C``)."""
    i = 1
    while i < len(words):
        w = words[i]
        if w in ("-C", "--directory") and i + 1 < len(words):
            cwd = _join(cwd, words[i + 1])
            i += 2
            continue
        if w.startswith("--directory="):
            cwd = _join(cwd, w.partition("=")[2])
        elif w.startswith("-C") and len(w) > 2:
            cwd = _join(cwd, w[2:])
        i += 1
    return cwd
