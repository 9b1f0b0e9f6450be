"""File tools: deleting, writing, editing in place, formatters, and the verbs that only modify."""

from __future__ import annotations

from infomark.gates.shell.assembled import assembled_exec
from infomark.gates.shell.core import Env, Handler
from infomark.gates.shell.words import (
    Arg,
    Options,
    _command_name,
    _first_positional,
    _is_sink,
    _names,
    _scan,
    _static,
)

__all__ = [
    "_MODIFY_VERBS",
    "_formatter",
    "_h_dd",
    "_h_fd",
    "_h_find",
    "_h_modify_verb",
    "_h_remove_item",
    "_h_rimraf",
    "_h_rm",
    "_h_rmdir",
    "_h_ruff",
    "_h_sort",
    "_h_tee",
    "_h_wipe",
]

_SORT = Options("kotST", "--key --output --field-separator --buffer-size --temporary-directory")


def _h_rm(name: str, args: list[Arg], env: Env) -> None:
    opts, _ = _scan(args)
    names = _names(opts)
    if names & {"-r", "-R", "--recursive", "-f", "--force"}:
        env.destroy("deletes recursively or by force", "file")
    elif any(v.lower() in ("/s", "/q") for v in _static(args)):
        env.destroy("deletes recursively (Windows /s)", "file")
    else:
        env.modify("deletes files")


def _h_rimraf(name: str, args: list[Arg], env: Env) -> None:
    env.destroy("deletes recursively", "file")


def _h_rmdir(name: str, args: list[Arg], env: Env) -> None:
    if any(v.lower() in ("/s", "/q") for v in _static(args)):
        env.destroy("deletes a directory tree (Windows /s)", "file")
    else:
        env.modify("removes empty directories")


def _h_remove_item(name: str, args: list[Arg], env: Env) -> None:
    for v in _static(args):
        low = v.lower()
        if low in ("/s", "/q") or (
            len(low) >= 2
            and ("-recurse".startswith(low) or (len(low) >= 3 and "-force".startswith(low)))
        ):
            env.destroy("deletes recursively or by force", "file")
            return
    env.modify("deletes files")


def _h_find(name: str, args: list[Arg], env: Env) -> None:
    found = False
    i, n = 0, len(args)
    while i < n:
        v = args[i].value
        if v == "-delete":
            env.destroy("deletes every match with -delete", "file")
            found = True
        elif v in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < n and args[j].value not in (";", "+"):
                j += 1
            inner = args[i + 1 : j]
            head = _command_name(inner[0].value) if inner and inner[0].value else None
            if head in ("rm", "unlink", "shred", "remove-item"):
                env.destroy(f"deletes every match with {v} {head}", "file")
            elif inner:
                assembled_exec(inner, env, f"find {v}")
            found = True
            i = j
        elif v in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            target = args[i + 1].value if i + 1 < n else None
            if not _is_sink(target):
                env.modify(f"writes {target or 'a computed path'} with {v}")
                found = True
        i += 1
    if not found:
        env.execute("searches files")


def _h_fd(name: str, args: list[Arg], env: Env) -> None:
    for k, arg in enumerate(args):
        if arg.value in ("-x", "--exec", "-X", "--exec-batch"):
            j = k + 1
            while j < len(args) and args[j].value != ";":
                j += 1
            inner = args[k + 1 : j]
            head = _command_name(inner[0].value) if inner and inner[0].value else None
            if head in ("rm", "unlink", "shred"):
                env.destroy(f"deletes every match with {arg.value} {head}", "file")
            elif inner:
                assembled_exec(inner, env, f"fd {arg.value}")
            return
    env.execute("searches files")


def _h_dd(name: str, args: list[Arg], env: Env) -> None:
    for arg in args:
        if arg.approx.startswith("of="):
            env.destroy(f"overwrites {arg.approx[3:]} with dd", "file")
            return
    env.execute("copies stdin to stdout")


def _h_wipe(name: str, args: list[Arg], env: Env) -> None:
    verb = (
        "formats a filesystem"
        if name.startswith(("mkfs", "mke2fs", "mkswap", "format"))
        else "destroys data"
    )
    env.destroy(verb, "file")


def _h_tee(name: str, args: list[Arg], env: Env) -> None:
    _, pos = _scan(args)
    targets = [a for a in pos if not _is_sink(a.value)]
    if targets:
        env.modify(f"writes {targets[0].value or 'a computed path'}")
    else:
        env.execute("copies stdin to stdout")


def _h_sort(name: str, args: list[Arg], env: Env) -> None:
    opts, _ = _SORT.scan(args)
    for opt, val in opts:
        if opt in ("-o", "--output") and not _is_sink(val.value if val else None):
            env.modify(f"writes {(val.value if val else None) or 'a computed path'}")
            return
    env.execute("sorts text; not known to modify anything")


_MODIFY_VERBS: dict[str, str] = {
    "mv": "moves files",
    "cp": "copies files",
    "touch": "creates or touches files",
    "mkdir": "creates directories",
    "ln": "creates links",
    "link": "creates links",
    "unlink": "deletes a file",
    "chmod": "changes permissions",
    "chown": "changes ownership",
    "chgrp": "changes ownership",
    "chattr": "changes file attributes",
    "setfacl": "changes access control lists",
    "patch": "patches files",
    "truncate": "truncates files",
    "install": "installs files",
    "mktemp": "creates a temporary file",
    "mkfifo": "creates a FIFO",
    "mknod": "creates a device node",
    "split": "writes split files",
    "csplit": "writes split files",
    "dos2unix": "rewrites files in place",
    "unix2dos": "rewrites files in place",
    "zip": "writes an archive",
    "rename": "renames files",
    "scp": "copies files",
    "ren": "renames files",
    "md": "creates directories",
    "copy": "copies files",
    "move": "moves files",
    "vi": "opens an editor",
    "vim": "opens an editor",
    "nvim": "opens an editor",
    "nano": "opens an editor",
    "emacs": "opens an editor",
    "ed": "edits files",
    "ex": "edits files",
    "pico": "opens an editor",
    "micro": "opens an editor",
    # PowerShell cmdlets and aliases
    "set-content": "writes files",
    "add-content": "writes files",
    "out-file": "writes files",
    "new-item": "creates files",
    "ni": "creates files",
    "copy-item": "copies files",
    "cpi": "copies files",
    "move-item": "moves files",
    "mi": "moves files",
    "rename-item": "renames files",
    "rni": "renames files",
    "clear-content": "empties files",
    "set-item": "changes items",
}


def _h_modify_verb(name: str, args: list[Arg], env: Env) -> None:
    env.modify(_MODIFY_VERBS.get(name, "modifies files"))


# Formatters (they rewrite files unless asked only to check)


def _formatter(
    *, writes_unless: frozenset[str] = frozenset(), writes_if: frozenset[str] = frozenset()
) -> Handler:
    def handle(name: str, args: list[Arg], env: Env) -> None:
        flags = {v.split("=", 1)[0] for v in _static(args) if v.startswith("-")}
        writes = bool(flags & writes_if) if writes_if else not flags & writes_unless
        if writes:
            env.modify("rewrites files (formatter)")
        else:
            env.execute("checks formatting; not known to modify anything")

    return handle


def _h_ruff(name: str, args: list[Arg], env: Env) -> None:
    sub, _rest = _first_positional(args)
    flags = {v.split("=", 1)[0] for v in _static(args) if v.startswith("-")}
    if sub == "format" and not flags & {"--check", "--diff"}:
        env.modify("rewrites files (formatter)")
    elif sub == "clean":
        env.modify("deletes caches")
    elif "--fix" in flags and "--no-fix" not in flags and "--diff" not in flags:
        env.modify("rewrites files (--fix)")
    else:
        env.execute("checks code; not known to modify anything")
