"""Wrappers: commands that run another command (``sudo``, ``env``, ``timeout``, ``xargs`` …).

The wrapped command is classified as if it stood alone; code strings a wrapper takes
(``su -c``, ``watch``, ``ssh host CMD``, ``trap``) are parsed one level deeper.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from infomark.gates.shell.core import Env, Handler, ws
from infomark.gates.shell.envcode import code_variable
from infomark.gates.shell.words import (
    ASSIGNMENT,
    Arg,
    _scan,
    _shell_quote,
    _skip_options,
    _static,
)
from infomark.kernel.lazyre import lazy_compile

__all__ = [
    "_argv",
    "_code_on_stdin",
    "_h_alias",
    "_h_chroot",
    "_h_command",
    "_h_env",
    "_h_exec_tool",
    "_h_hash",
    "_h_infomark",
    "_h_opaque",
    "_h_ssh",
    "_h_su",
    "_h_sudo",
    "_h_timeout",
    "_h_trap",
    "_h_watch",
    "_run_rest",
    "_wrapper",
    "special_file",
]


def _argv(argv: Sequence[Arg], env: Env) -> None:
    if not argv:
        return
    head = argv[0]
    if head.value is None:
        if "infomark" in env.text.lower():
            env.state.mark("infomark")
        env.opaque("has a computed command name (opaque)", "opaque_command")
        return
    word = env.state.hashed.get(head.value, head.value)
    name, handler = env.state.walker.lookup(word)
    if name is None:
        env.opaque("has a glob or brace pattern as its command name (opaque)", "opaque_command")
        return
    args = list(argv[1:])
    if handler is None:
        env.execute()
    else:
        handler(name, args, env)


def _run_rest(rest: Sequence[Arg], env: Env, what: str = "runs") -> None:
    if rest:
        _argv(rest, env)
    else:
        env.execute(what + "; not known to modify anything")


def _wrapper(
    short_val: str = "", long_val: frozenset[str] = frozenset(), *, assignments: bool = False
) -> Handler:
    def handle(name: str, args: list[Arg], env: Env) -> None:
        i = _skip_options(args, short_val, long_val, assignments=assignments)
        _run_rest(args[i:], env)

    return handle


def _h_sudo(name: str, args: list[Arg], env: Env) -> None:
    i = _skip_options(
        args,
        "ugCDhprtUT",
        ws(
            "--user --group --close-from --chdir --host --prompt --role --type --other-user "
            "--command-timeout"
        ),
        assignments=True,
    )
    flags = _static(args[:i])
    if (
        name == "sudoedit"
        or "--edit" in flags
        or any(f.startswith("-") and not f.startswith("--") and "e" in f[1:] for f in flags)
    ):
        env.modify("edits files as another user")
        return
    _run_rest(args[i:], env)


def _h_env(name: str, args: list[Arg], env: Env) -> None:
    i, n = 0, len(args)
    while i < n:
        v = args[i].value
        if v is None:
            break
        if v in ("-S", "--split-string") or v.startswith(("--split-string=", "-S")):
            if v in ("-S", "--split-string"):
                code = args[i + 1].approx if i + 1 < n else ""
                i += 2
            else:
                code = v.split("=", 1)[1] if v.startswith("--") else v[2:]
                i += 1
            rest = " ".join(_shell_quote(a.approx) for a in args[i:])
            env.nested(f"{code} {rest}", "env -S string")
            return
        if v == "--":
            i += 1
            break
        if v == "-" or ASSIGNMENT.match(v):
            key, _, value = v.partition("=")
            code_variable(key.rstrip("+"), Arg(value, value), env.state, env.depth, env.quoted)
            i += 1
            continue
        if v in ("-u", "-C", "--unset", "--chdir", "-P"):
            i += 2
            continue
        if v.startswith("-"):
            i += 1
            continue
        break
    _run_rest(args[i:], env, "prints the environment")


def _h_command(name: str, args: list[Arg], env: Env) -> None:
    i = 0
    while i < len(args) and (args[i].value or "").startswith("-") and args[i].value != "--":
        flag = args[i].value or ""
        if "v" in flag or "V" in flag:
            env.execute("looks a command up")
            return
        i += 1
    if i < len(args) and args[i].value == "--":
        i += 1
    _run_rest(args[i:], env)


def _h_timeout(name: str, args: list[Arg], env: Env) -> None:
    i = _skip_options(args, "sk", frozenset({"--signal", "--kill-after"}))
    _run_rest(args[i + 1 :], env)  # skip DURATION


def _h_chroot(name: str, args: list[Arg], env: Env) -> None:
    i = _skip_options(args, "", frozenset({"--userspec", "--groups"}))
    _run_rest(args[i + 1 :], env, "starts a shell in a new root")


def _h_watch(name: str, args: list[Arg], env: Env) -> None:
    i = _skip_options(args, "nq", frozenset({"--interval", "--equexit"}))
    flags = _static(args[:i])
    rest = args[i:]
    if "-x" in flags or "--exec" in flags:
        _run_rest(rest, env)
    elif rest:
        env.nested(" ".join(a.approx for a in rest), "command")
    else:
        env.execute()


def _h_ssh(name: str, args: list[Arg], env: Env) -> None:
    i = _skip_options(args, "BbcDEeFIiJLlmOopQRSWw")
    rest = args[i + 1 :]  # skip the host
    if rest:
        env.nested(" ".join(a.approx for a in rest), "remote command")
    else:
        _code_on_stdin(env, "shell", "opens a remote session")


def _h_su(name: str, args: list[Arg], env: Env) -> None:
    opts, _ = _scan(args, "cs", frozenset({"--command", "--shell", "--session-command"}))
    for opt, val in opts:
        if opt in ("-c", "--command", "--session-command"):
            if val is None:
                break
            if val.value is None:
                env.modify("runs a computed command (opaque)")
            env.nested(val.approx, "command")
            return
    env.execute("switches user")


def _h_trap(name: str, args: list[Arg], env: Env) -> None:
    i = 1 if args and args[0].value == "--" else 0
    if i >= len(args) or (args[i].value or "").startswith("-") or len(args) - i < 2:
        env.execute("lists or resets traps")
        return
    code = args[i]
    if code.value is None:
        env.modify("installs a computed trap handler (opaque)")
    env.nested(code.approx, "trap handler")


def _h_opaque(name: str, args: list[Arg], env: Env) -> None:
    if "infomark" in env.text.lower():
        env.state.mark("infomark")
    env.opaque(f"runs code through `{name}` (opaque)")


def _h_exec_tool(name: str, args: list[Arg], env: Env) -> None:
    """npx / uvx / bunx / pnpm dlx …: fetch a tool and run it; classify the tool's command."""
    opts_end = _skip_options(args, "pc", ws("--package --from --with --python --call -p"))
    for k in range(opts_end):
        v = args[k].value
        if v in ("-c", "--call") and k + 1 < len(args):
            env.nested(args[k + 1].approx, "command")
            return
    _run_rest(args[opts_end:], env)


# Producers whose output is code nobody can read before it runs (the consumer is opaque).
_DECODERS = (
    "base64", "base32", "basenc", "xxd", "od", "uudecode", "openssl", "gpg", "age", "rev", "tr",
    "gzip", "gunzip", "zcat", "bzip2", "bunzip2", "bzcat", "xz", "unxz", "xzcat", "lzma",
    "unlzma", "zstd", "unzstd", "zstdcat", "brotli",
)  # fmt: skip
_FETCHERS = ("curl", "wget", "fetch", "nc", "ncat", "socat", "aria2c")
_RUNTIME_CODE = {**dict.fromkeys(_DECODERS, "decoded"), **dict.fromkeys(_FETCHERS, "fetched")}


def _decoded(producer: str, text: str | None) -> str | None:
    """What ``echo TEXT | base64 -d`` (or ``base32``) writes, when TEXT is known: read as well
    as the opaque finding, it can only add (``rm -rf`` inside is destructive)."""
    if text is None or producer.split() not in (
        [w, f] for w in ("base64", "base32") for f in ("-d", "--decode")
    ):
        return None
    import base64
    import binascii

    decode = base64.b64decode if producer.startswith("base64") else base64.b32decode
    try:
        return decode("".join(text.split())).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return None


def _code_on_stdin(env: Env, what: str, idle: str = "") -> None:
    """Code read from stdin: a shell's is parsed when known, an interpreter's is opaque."""
    stdin = env.stdin()
    if stdin.kind == "none":
        env.execute(idle or f"starts an interactive {what}")
    elif stdin.kind == "file":
        env.execute(f"runs a script {stdin.label}")
    elif stdin.text is not None and what == "shell":
        env.nested(stdin.text, f"code {stdin.label}", inherit=False)
    elif stdin.kind == "pipe" and stdin.producer:
        word = stdin.producer.split()[0].rsplit("/", 1)[-1] if stdin.producer.split() else ""
        how = _RUNTIME_CODE.get(word, "produced")
        env.opaque(f"runs code {how} at run time by `{stdin.producer}`: unknown code (opaque)")
        decoded = _decoded(stdin.producer, stdin.producer_input)
        if decoded is not None:  # read it too: the decoded code may be worse than modify
            env.nested(decoded, f"code decoded by `{stdin.producer}`")
    else:
        env.opaque(f"runs unknown code {stdin.label} (opaque)")


_STDIN_FILES = lazy_compile(r"^/(?:dev/stdin|dev/fd/0|proc/[^/]+/fd/0|proc/self/task/[^/]+/fd/0)$")


def special_file(path: str, env: Env) -> str | None:
    """``"stdin"`` when a script path is the command's own stdin in any spelling
    (``/dev/stdin``, ``//dev/./fd/0``, ``/proc/self/fd/0``, ``stdin`` after ``cd /dev``),
    ``"device"`` for another descriptor (``/dev/fd/3``, ``/proc/PID/fd/N``, ``/dev/tty``) or
    a path written as ``/proc/…`` (code nobody can read beforehand), else None (a script
    file, ``/dev/shm/x`` included)."""
    if not path:
        return None
    full = posixpath.normpath(posixpath.join(env.state.cwds[-1], path))
    if full.startswith("//"):
        full = full[1:]
    if _STDIN_FILES.match(full):
        return "stdin"
    if _DESCRIPTORS.match(full):  # /dev/shm/x (a tmpfs) is a file like any other
        return "device"
    if path.startswith("/proc/") and not path.startswith(_PROC_CWD):
        return "device"  # written as /proc/…: a process's memory, environment, descriptors
    return None


# A descriptor of some process (a pipe, a socket, a deleted file): no script file.
_DESCRIPTORS = lazy_compile(
    r"^(?:/proc/[^/]+/(?:task/[^/]+/)?fd/|/dev/fd/|/dev/(?:tty|stdout|stderr)$)"
)
_PROC_CWD = ("/proc/self/cwd/", "/proc/thread-self/cwd/")


def _h_infomark(name: str, args: list[Arg], env: Env) -> None:
    """infomark itself, in any spelling (``\\infomark``, ``inf""omark``, a path to it)."""
    env.state.mark("infomark")
    env.execute("runs infomark itself (self-invocation)")


def _h_alias(name: str, args: list[Arg], env: Env) -> None:
    """``alias x='rm -rf y'``: a later ``x`` runs that code (expanded whenever aliases are on,
    which an agent's shell may well have: failing towards the stricter reading)."""
    defined = False
    for arg in args:
        if arg.value is None:
            if "=" in arg.approx:
                env.opaque("defines a computed alias (opaque)")
            continue
        key, eq, value = arg.value.partition("=")
        if eq and key and not key.startswith("-"):
            env.state.aliases[key] = value
            defined = True
    env.execute("defines aliases" if defined else "lists aliases")


def _h_hash(name: str, args: list[Arg], env: Env) -> None:
    """``hash -p /bin/rm ls``: a later ``ls`` runs ``/bin/rm``."""
    statics = [a.value for a in args]
    for k, v in enumerate(statics):
        if v == "-p" and k + 2 < len(statics):
            path, target = statics[k + 1], statics[k + 2]
            if path is None or target is None:
                env.opaque("remembers a computed command path (opaque)", "opaque_command")
                return
            env.state.hashed[target] = path
            env.execute(f"makes `{target}` run {path}")
            return
    env.execute("lists or resets remembered command paths")
