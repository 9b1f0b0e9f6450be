"""Runners that take a command in a less usual place: ``script -c``, ``flock``, ``taskset``,
``gdb -ex shell``, and ``time -o`` (which also writes a file)."""

from __future__ import annotations

from infomark.gates.shell.core import Env, ws
from infomark.gates.shell.words import (
    Arg,
    _is_sink,
    _option_value,
    _scan,
    _skip_options,
)
from infomark.gates.shell.wrappers import _code_on_stdin, _run_rest

__all__ = ["_h_flock", "_h_gdb", "_h_script", "_h_taskset", "_h_time"]


def _h_script(name: str, args: list[Arg], env: Env) -> None:
    """``script [-c CMD] [FILE]``: runs CMD (or a shell) and records it into FILE (typescript)."""
    opts, pos = _scan(args, "cIOBTEmo", ws("--command --log-in --log-out --log-io --log-timing"))
    for opt, val in opts:
        if opt in ("-c", "--command"):
            if val is None or val.value is None:
                env.opaque("runs a computed command (opaque)")
            if val is not None:
                env.nested(val.approx, "command")
    logs = [v for o, v in opts if o in ("-I", "-O", "-B", "-T", "--log-in", "--log-out")]
    target = pos[0] if pos else Arg("typescript", "typescript")
    for log in [target, *logs]:
        if log is not None and not _is_sink(log.value):
            env.modify(f"records the session into {log.value or 'a computed path'}")
            return
    if not any(o in ("-c", "--command") for o, _ in opts):
        _code_on_stdin(env, "shell")


def _h_flock(name: str, args: list[Arg], env: Env) -> None:
    """``flock [opts] FILE CMD…`` / ``flock FILE -c CMD`` / ``flock FD``: creates FILE, runs CMD."""
    i = _skip_options(args, "wEc", ws("--timeout --conflict-exit-code --command"))
    rest = args[i:]
    codes = [args[k + 1] for k in range(i) if args[k].value in ("-c", "--command") and k + 1 < i]
    lock = rest[0] if rest else None
    if lock is not None and lock.value is not None and lock.value.isdigit():
        env.execute("locks an open file descriptor")
        return
    for k, arg in enumerate(rest[1:], 1):
        if arg.value in ("-c", "--command") and k + 1 < len(rest):
            codes.append(rest[k + 1])
            rest = rest[:k]
            break
    env.modify(f"creates or locks {lock.value if lock and lock.value else 'a computed path'}")
    for code in codes:
        env.nested(code.approx, "command")
    if not codes:
        _run_rest(rest[1:], env)


def _h_taskset(name: str, args: list[Arg], env: Env) -> None:
    """``taskset [-c] MASK CMD…``; ``taskset -p [MASK] PID`` changes a running process only."""
    i = _skip_options(args)
    flags = {a.value for a in args[:i]}
    if flags & {"-p", "--pid"} or any(f and f.startswith("-") and "p" in f for f in flags):
        env.execute("changes the CPU affinity of a running process")
        return
    _run_rest(args[i + 1 :], env)


def _h_gdb(name: str, args: list[Arg], env: Env) -> None:
    """``gdb -ex 'shell CMD'`` / ``-ex '!CMD'`` run shell code; scripts and Python are opaque."""
    found = False
    for k, arg in enumerate(args):
        v = arg.value or ""
        if v in ("-ex", "--ex", "-iex", "--iex", "-eval-command", "--eval-command"):
            cmd = args[k + 1] if k + 1 < len(args) else None
        elif v.startswith(("--eval-command=", "-eval-command=")):
            value = v.split("=", 1)[1]
            cmd = Arg(value, value)
        elif v in ("-x", "--command", "-ix", "--init-command", "-p", "--pid"):
            env.modify(f"runs a gdb script or attaches to a process ({v}) (opaque)")
            return
        else:
            continue
        found = True
        if cmd is None or cmd.value is None:
            env.opaque("runs a computed gdb command (opaque)")
            continue
        text = cmd.value.strip()
        word = text.split(None, 1)[0] if text else ""
        if word in ("shell", "!") or text.startswith(("!", "|", "pipe")):
            env.nested(text.removeprefix("shell").lstrip("!|").removeprefix("pipe"), "shell")
        elif word in ("python", "py", "python-interactive", "pi", "source", "dump", "restore"):
            env.modify(f"runs `{word}` inside gdb (opaque)")
        elif (word in ("set", "call", "print", "p") and "=" in text) or word == "call":
            env.modify("changes a debugged program's state")
        else:
            env.execute("runs a gdb command")
    if not found:
        env.execute("debugs a program")


def _h_time(name: str, args: list[Arg], env: Env) -> None:
    """``time [-o FILE] [-a] CMD`` (GNU time writes its report into FILE)."""
    i = _skip_options(args, "fo", ws("--format --output"))
    target = _option_value(args[:i], frozenset({"-o", "--output"}))
    if target is not None and not _is_sink(target.value):
        env.modify(f"writes its report into {target.value or 'a computed path'}")
    _run_rest(args[i:], env)
