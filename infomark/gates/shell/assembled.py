"""Commands that assemble another command from input at run time: ``xargs``, ``find -exec``,
``fd -x``, GNU ``parallel``.

The input (stdin, ``-a FILE``, found file names) is treated as the adversary's: when the
input is visible in the same command line (a quoted here-string or here-doc, ``parallel
::: ARGS``) the commands it makes are classified as they will run. Otherwise the command is
classified with harmless input, then with hostile probes in every place the input goes (a
shell command, Python code, a command word); if a probe makes the command worse than the
harmless input did, the input decides what runs (``xargs -I{} sh -c '{}'``,
``xargs sh -c``, ``xargs env``, ``find -exec sh -c {} \\;``): unknown code, ``opaque``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from infomark.gates.shell.core import EXECUTE, Env, State, Stdin
from infomark.gates.shell.words import Arg, _command_name, _shell_quote
from infomark.gates.shell.wrappers import _argv, _code_on_stdin

__all__ = ["_h_parallel", "_h_xargs", "assembled_exec", "input_reaches_code"]

# Hostile input, one value per reading of the place it lands in: shell code (bare, inside
# single or double quotes, inside `$(…)`), Python code (bare or inside a string literal), a
# command word. No "/" (a file name found by `find` cannot hold one).
_PY = "__import__('os').system('rm -rf .')"
_PROBES = (
    "x; rm -rf .",
    "x'; rm -rf .; '",
    'x"; rm -rf .; "',
    "$(rm -rf .)",
    _PY,
    f'x"); {_PY}; ("',
    f"x'); {_PY}; ('",
    f'x"""); {_PY}; ("""',
    "rm",
)
_WORD_PROBES = [["rm", "-rf", "."], *([p] for p in _PROBES[:-1])]
_HARMLESS = "x"
_MAX_RESOLVED = 64  # input lines resolved one by one; more: probed like unknown input


def _severity(argvs: Sequence[Sequence[Arg]], env: Env) -> tuple[int, bool]:
    """The class (and opacity) of running every argv, in a scratch state."""
    scratch = State(env.state.walker, env.state.cwds[-1], text=env.state.text)
    scratch.variables = dict(env.state.variables)
    probe = Env(scratch, env.node, env.src, env.depth, Stdin("none"))
    for argv in argvs:
        _argv(list(argv), probe)
    top = max((f[0] for f in scratch.findings), default=EXECUTE)
    return top, scratch.opaque


def input_reaches_code(
    build: Callable[[list[str]], list[Arg]], env: Env, *, appended: bool = False
) -> bool:
    """True when some hostile input makes ``build(input)`` worse than harmless input does.
    ``build`` gets the input words: appended to the command (``appended``) or one value
    that replaces a placeholder."""
    probes = _WORD_PROBES if appended else [[p] for p in _PROBES]
    harmless = _severity([build([_HARMLESS])], env)
    return any(_severity([build(p)], env) > harmless for p in probes)


def _substitute(args: Sequence[Arg], token: str, value: str) -> list[Arg]:
    out: list[Arg] = []
    for arg in args:
        if arg.value is not None and token in arg.value:
            text = arg.value.replace(token, value)
            out.append(Arg(text, text))
        else:
            out.append(arg)
    return out


def _opaque(env: Env, who: str, source: str) -> None:
    env.opaque(f"runs code that `{who}` assembles at run time from {source}: unknown code (opaque)")


def _source(stdin: Stdin) -> str:
    if stdin.kind == "pipe" and stdin.producer:
        return f"the output of `{stdin.producer}`"
    if stdin.kind == "file":
        return f"file {stdin.path or 'a computed path'}"
    if stdin.kind == "text":
        return "input with expansions in it"
    return "its standard input"


# --- xargs ---------------------------------------------------------------------------------

_XARGS_SHORT_VAL = "adEeILlnPs"  # short options that take a value (glued or next word)
_XARGS_LONG_VAL = frozenset(
    {"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--eof",
     "--max-lines", "--process-slot-var"}
)  # fmt: skip


def _xargs_options(args: list[Arg]) -> tuple[dict[str, str | None], int]:
    """xargs's options (``-I`` / ``-i`` / ``--replace``, ``-a``, ``-n``, ``-L``, ``-0``,
    ``-d``) and the index of its command."""
    opts: dict[str, str | None] = {}
    i, n = 0, len(args)
    while i < n:
        v = args[i].value
        if v is None or v == "-" or not v.startswith("-"):
            break
        if v == "--":
            i += 1
            break
        if v.startswith("--"):
            key, eq, val = v.partition("=")
            if key == "--replace":
                opts["-I"] = val if eq else "{}"
            elif key in _XARGS_LONG_VAL:
                if not eq:
                    val = (args[i + 1].value or "") if i + 1 < n else ""
                    i += 1
                short = {"--arg-file": "-a", "--max-args": "-n", "--delimiter": "-d"}
                opts[short.get(key, key)] = val
            elif key == "--null":
                opts["-0"] = ""
            i += 1
            continue
        letters = v[1:]
        step = 1
        for k, ch in enumerate(letters):
            if ch == "i":  # -i[R]: the old spelling of -I R (R glued or `{}`)
                opts["-I"] = letters[k + 1 :] or "{}"
                break
            if ch in _XARGS_SHORT_VAL:
                glued = letters[k + 1 :]
                if glued:
                    opts["-" + ch] = glued
                else:
                    opts["-" + ch] = (args[i + 1].value or "") if i + 1 < n else ""
                    step = 2
                break
            opts["-" + ch] = ""
        i += step
    return opts, i


def _xargs_chunks(text: str, opts: dict[str, str | None]) -> list[list[str]] | None:
    """The argument lists xargs makes of ``text`` (None when it cannot be told)."""
    replace = opts.get("-I")
    if "-0" in opts or "-d" in opts:
        sep = "\0" if "-0" in opts else _delimiter(opts.get("-d") or "\n")
        if sep is None:
            return None
        items = [t for t in text.split(sep) if t != ""]
        lines = [[t] for t in items]
    else:
        parsed = [
            _unquote(line.lstrip(" \t"), split=replace is None)
            for line in text.splitlines()
            if line.strip()
        ]
        if any(p is None for p in parsed):
            return None
        lines = [p for p in parsed if p is not None]
        items = [w for line in lines for w in line]
    if replace is not None:
        return [line[:1] for line in lines]
    if (count := _count(opts.get("-n"))) is not None:
        return [items[k : k + count] for k in range(0, len(items), count)] or [[]]
    if (count := _count(opts.get("-L"))) is not None:
        return [
            [w for line in lines[k : k + count] for w in line] for k in range(0, len(lines), count)
        ] or [[]]
    return [items]


def _unquote(line: str, *, split: bool) -> list[str] | None:
    """xargs's reading of one input line: quotes protect blanks and are removed; ``split``
    cuts at blanks outside quotes (not with ``-I``). A backslash (whose reading differs
    between xargs versions) or an unmatched quote: None, and the input is probed instead."""
    if "\\" in line:
        return None
    items: list[str] = []
    cur: list[str] = []
    quote = ""
    started = False
    for ch in line:
        if quote:
            if ch == quote:
                quote = ""
            else:
                cur.append(ch)
        elif ch in "'\"":
            quote, started = ch, True
        elif split and ch in " \t":
            if cur or started:
                items.append("".join(cur))
            cur, started = [], False
        else:
            cur.append(ch)
    if quote:
        return None
    if cur or started:
        items.append("".join(cur))
    return items


def _count(value: str | None) -> int | None:
    if value is None:
        return None
    return int(value) if value.isdigit() and int(value) > 0 else 1


def _delimiter(value: str) -> str | None:
    if len(value) == 1:
        return value
    escapes = {"\\n": "\n", "\\t": "\t", "\\0": "\0"}
    return escapes.get(value)


def _h_xargs(name: str, args: list[Arg], env: Env) -> None:
    """``xargs [opts] CMD ARGS…``: runs CMD with arguments read from its input."""
    opts, i = _xargs_options(args)
    rest = args[i:] or [Arg("echo", "echo")]
    inner = _command_name(rest[0].value) if rest[0].value else None
    if inner in ("rm", "unlink", "shred"):
        env.destroy(f"deletes every path it reads with {inner}", "file")
        return
    replace = opts.get("-I")
    if replace == "":
        replace = "{}"
    stdin = Stdin("file", path=opts.get("-a"), label="") if "-a" in opts else env.stdin()
    chunks = None
    if stdin.kind == "text" and stdin.exact and stdin.text is not None:
        chunks = _xargs_chunks(stdin.text, opts)
    if chunks is not None and len(chunks) <= _MAX_RESOLVED:
        for chunk in chunks:  # the input is in the command line: run what it makes
            if replace is not None:
                _argv(_substitute(rest, replace, chunk[0] if chunk else ""), env)
            else:
                _argv([*rest, *(Arg(w, w) for w in chunk)], env)
        return

    if replace is not None:
        token = replace

        def build(value: list[str]) -> list[Arg]:
            return _substitute(rest, token, value[0])

    else:

        def build(value: list[str]) -> list[Arg]:
            return [*rest, *(Arg(w, w) for w in value)]

    if input_reaches_code(build, env, appended=replace is None):
        _opaque(env, "xargs", _source(stdin))
    _argv(build([_HARMLESS]) if replace is not None else list(rest), env)


# --- find -exec / fd -x --------------------------------------------------------------------


_FIND_MARKS = ("{}",)
_FD_MARKS = ("{}", "{.}", "{/}", "{//}", "{/.}")


def assembled_exec(inner: list[Arg], env: Env, who: str) -> None:
    """``find -exec CMD {} ;`` / ``fd -x CMD``: CMD runs once per found path, ``{}`` replaced
    by it (anywhere in a word), or (``fd`` without a placeholder) the path appended. A found
    name can be any text the agent gave a file: one that lands in code is unknown code."""
    marks = _FD_MARKS if who.startswith("fd") else _FIND_MARKS
    placed = any(m in (a.value or "") for a in inner for m in marks)

    def build(value: list[str]) -> list[Arg]:
        if not placed:
            return [*inner, *(Arg(w, w) for w in value)]
        out = inner
        for mark in marks:
            out = _substitute(out, mark, value[0])
        return out

    appended = not placed and who.startswith("fd")
    if (placed or appended) and input_reaches_code(build, env, appended=appended):
        _opaque(env, who, "the names of the files it finds")
    _argv(build(["./" + _HARMLESS]) if placed else inner, env)


# --- GNU parallel --------------------------------------------------------------------------

_PARALLEL_SEPARATORS = (":::", "::::", ":::+", "::::+")


def _h_parallel(name: str, args: list[Arg], env: Env) -> None:
    """GNU parallel: the words before ``:::`` are a command template run by a shell, ``{}``
    replaced by each (shell-quoted) argument; with no template each argument is a command."""
    from infomark.gates.shell.words import _skip_options

    i = _skip_options(args, "jaSdIiEX", frozenset({"--jobs", "--arg-file", "--sshlogin",
                                                    "--delimiter", "--colsep"}))  # fmt: skip
    command: list[Arg] = []
    k = i
    while k < len(args) and args[k].value not in _PARALLEL_SEPARATORS:
        command.append(args[k])
        k += 1
    sources = args[k:]
    files = any(a.value in ("::::", "::::+") for a in sources)
    values = [a for a in sources if a.value not in _PARALLEL_SEPARATORS]
    if any(a.value is None for a in command):
        env.opaque("runs a computed command template (opaque)")
    # parallel joins its command words with spaces and hands them to a shell: the quotes the
    # caller's shell removed are gone (`parallel echo 'a; touch f' ::: 1` runs touch), unless
    # -q / --quote asks it to quote each word.
    quote = any(a.value in ("-q", "--quote") for a in args[:i])
    template = " ".join(
        _shell_quote(a.approx) if quote and not _is_mark(a.approx) else a.approx for a in command
    )
    if not command and not sources:
        _code_on_stdin(env, "shell")  # each input line is a command
        return
    if any(a.value in ("--pipe", "--pipepart") for a in args[:i]):
        env.nested(template, "command fed parallel's input")  # it reads parallel's stdin
        return
    if sources and not files and all(a.value is not None for a in values):
        for value in values:  # the arguments are in the command line: run what they make
            code = _fill(template, value.value or "") if command else value.value or ""
            env.nested(code, "command template" if command else "command")
        return
    source = "the files it reads" if files else _source(env.stdin())
    if not command:
        _opaque(env, "parallel", source)
        return
    harmless = _severity_of_code(_fill(template, _HARMLESS), env)
    if any(_severity_of_code(_fill(template, p), env) > harmless for p in _PROBES):
        _opaque(env, "parallel", source)
    env.nested(_fill(template, _HARMLESS), "command template")


_MARKS = ("{}", "{.}", "{/}", "{//}", "{/.}", "{#}", "{%}", "{1}")


def _is_mark(word: str) -> bool:
    return word in _MARKS


def _fill(template: str, value: str) -> str:
    """The template with its replacement strings filled in as parallel does (quoted);
    without any, the argument is appended."""
    quoted = _shell_quote(value)
    if not any(m in template for m in _MARKS):
        return f"{template} {quoted}"
    for mark in _MARKS:
        template = template.replace(mark, quoted)
    return template


def _severity_of_code(code: str, env: Env) -> tuple[int, bool]:
    scratch = State(env.state.walker, env.state.cwds[-1], text=env.state.text)
    scratch.variables = dict(env.state.variables)
    env.state.walker.nested(code, scratch, env.depth, "probe")
    top = max((f[0] for f in scratch.findings), default=EXECUTE)
    return top, scratch.opaque
