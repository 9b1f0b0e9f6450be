"""Walks of copies and archives: ``cp -r``, ``scp -r``, ``rsync -a``, ``tar c``, ``zip -r``,
``7z a``, ``jar``, ``pax -w``, ``rclone``, ``restic``, ``borg``, ``aws s3``, ``gsutil`` (see
:mod:`.walks` for what a walk is and how its exclusions are credited).
"""

from __future__ import annotations

import os

from infomark.gates.shell.core import Env, ws
from infomark.gates.shell.walkroots import (
    MAGIC,
    component_globs,
    from_list,
    literal_paths,
    record,
    walk_roots,
)
from infomark.gates.shell.words import Arg, Options, _names, _scan

__all__ = [
    "w_aws",
    "w_cp",
    "w_generic_archiver",
    "w_gsutil",
    "w_rsync",
    "w_tar",
    "w_zip",
]

_RSYNC = Options(
    "efTBM",
    "--exclude --include --exclude-from --include-from --files-from --filter --rsh --rsync-path "
    "--temp-dir --compare-dest --link-dest --copy-dest --backup-dir --suffix --chmod --chown "
    "--max-size --min-size --partial-dir --log-file --password-file --port --out-format "
    "--timeout --remote-option --info --debug --usermap --groupmap",
)


def w_cp(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(args, "tS", ws("--target-directory --suffix --backup --reflink --sparse"))
    names = _names(opts)
    if name == "cp" and not names & {"-r", "-R", "--recursive", "-a", "--archive"}:
        return
    if name == "scp" and "-r" not in names:
        return
    targeted = bool(names & {"-t", "--target-directory"})
    sources = pos if targeted else pos[:-1]
    if name == "scp":
        sources = [a for a in sources if a.value is None or ":" not in a.value]
    follow = name == "scp" or bool(names & {"-L", "--dereference"})
    record(env, walk_roots(sources, env, default=False), "copies", follow=follow)


def w_rsync(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _RSYNC.scan(args)
    names = _names(opts)
    if any(o == "--files-from" for o, _ in opts):
        from_list(env, [v for o, v in opts if o == "--files-from"], "copies")
        return
    recursive = bool(names & {"-r", "--recursive", "-a", "--archive"}) and not (
        names & {"--no-recursive", "--no-r"}
    )
    if not recursive or len(pos) < 2:
        return
    sources = [a for a in pos[:-1] if a.value is None or ":" not in a.value]
    credit = not names & {"--include", "--include-from", "--exclude-from", "--filter", "-f"}
    excludes = [v.value for o, v in opts if o == "--exclude" and v and v.value] if credit else []
    follow = bool(names & {"-L", "--copy-links", "-k", "--copy-dirlinks", "--copy-unsafe-links"})
    for src in sources:
        # an anchored pattern (`/x`) is relative to the transfer root: the source itself only
        # when it ends in `/` (or is `.`)
        contents = src.value is not None and (src.value.endswith("/") or src.value in (".", "./"))
        anchored = [p.strip("/") for p in excludes if p.startswith("/")] if contents else []
        anchored = [p for p in anchored if p and not (MAGIC & set(p))]
        record(
            env,
            walk_roots([src], env, default=False),
            "copies",
            follow=follow,
            exclude=component_globs((p for p in excludes if not p.startswith("/")), dir_slash=True),
            exclude_paths=tuple(anchored),
        )


_TAR_VALUE_LETTERS = "fbCTXHgNVIKLF"
_TAR_LONG_VALUES = ws(
    "--file --directory --files-from --exclude-from --blocking-factor --format "
    "--listed-incremental --newer --label --exclude --transform --xform --owner --group --mode "
    "--mtime --use-compress-program --suffix --newer-mtime --after-date --level --index-file"
)


def w_tar(name: str, args: list[Arg], env: Env) -> None:
    """A tar that creates (``c``/``r``/``u``) copies its operands' trees, and the files its
    ``-T`` lists name, unless it does not recurse (the options: :func:`_tar_read`)."""
    t = _tar_read(_tar_expand(args), env)
    if not t.creating:
        return
    if t.lists:
        from_list(env, t.lists, "copies")
    if not t.recursion:
        return
    pats = t.excludes if t.credit else []
    for base, arg in t.operands:
        if arg.value is not None and not base and arg.value.startswith("-"):
            continue
        if base and arg.value is not None:
            arg = Arg(os.path.join(base, arg.value), arg.approx)
        roots = walk_roots([arg], env, default=False)
        record(
            env,
            roots,
            "copies",
            follow=t.follow,
            exclude=component_globs(pats),
            exclude_paths=literal_paths(pats),
        )


class _Tar:
    """What a tar command line says that the walk needs."""

    __slots__ = (
        "bases",
        "creating",
        "credit",
        "excludes",
        "follow",
        "lists",
        "operands",
        "recursion",
    )

    def __init__(self) -> None:
        self.creating = False
        self.recursion = True
        self.follow = False
        self.excludes: list[str] = []
        self.credit = True  # its excludes can be credited (none comes from a file)
        self.operands: list[tuple[str, Arg]] = []  # (directory it is relative to, operand)
        self.lists: list[Arg | None] = []
        # -C DIR changes the directory of the operands after it
        self.bases: list[str | None] = [None]


def _tar_expand(args: list[Arg]) -> list[Arg]:
    """Old-style bundled letters (``tar czf x .``) as options, each value after its letter."""
    seq = list(args)
    first = seq[0].value if seq else None
    if first and not first.startswith("-") and first.isalpha():
        expanded: list[Arg] = []
        values = seq[1:]
        for letter in first:
            expanded.append(Arg("-" + letter, "-" + letter))
            if letter in _TAR_VALUE_LETTERS and values:
                expanded.append(values.pop(0))
        seq = expanded + values
    return seq


def _tar_read(seq: list[Arg], env: Env) -> _Tar:
    """The options and operands of a tar command line, in order (``--`` ends the options)."""
    t = _Tar()
    i, n = 0, len(seq)
    only_pos = False
    while i < n:
        arg = seq[i]
        v = arg.value
        if only_pos or v is None or not v.startswith("-") or v == "-":
            t.operands.append((t.bases[-1] or "", arg))
        elif v == "--":
            only_pos = True
        elif v.startswith("--"):
            key, eq, val = v.partition("=")
            value: Arg | None = Arg(val, val) if eq else None
            if not eq and key in _TAR_LONG_VALUES:
                value = seq[i + 1] if i + 1 < n else None
                i += 1
            _tar_long(t, key, value, env)
        else:
            i += _tar_short(t, v[1:], seq[i + 1] if i + 1 < n else None, env)
        i += 1
    return t


def _tar_long(t: _Tar, key: str, value: Arg | None, env: Env) -> None:
    """One long option (``--key`` with its value, if it takes one)."""
    t.creating = t.creating or key in ("--create", "--append", "--update")
    if key == "--no-recursion":
        t.recursion = False
    elif key == "--recursion":
        t.recursion = True
    elif key == "--dereference":
        t.follow = True
    elif key == "--exclude" and value is not None and value.value:
        t.excludes.append(value.value)
    elif key in ("--exclude-from", "--exclude-tag", "--exclude-tag-all"):
        t.credit = t.credit and key != "--exclude-from"
    elif key == "--directory":
        t.bases.append(value.value if value is not None else None)
        if value is None or value.value is None:
            env.state.opaque = True
    elif key == "--files-from":
        t.lists.append(value)


# A short option acts as its long spelling does (the others change nothing this reads).
_TAR_SHORT_AS_LONG = {
    "c": "--create",
    "r": "--append",
    "u": "--update",
    "h": "--dereference",
    "C": "--directory",
    "T": "--files-from",
    "X": "--exclude-from",
}


def _tar_short(t: _Tar, letters: str, following: Arg | None, env: Env) -> int:
    """A bundle of short options; the first that takes a value ends it (the rest of the
    bundle, else the word ``following``). Returns 1 when it took that word, else 0."""
    for k, ch in enumerate(letters):
        key = _TAR_SHORT_AS_LONG.get(ch, "")
        if ch not in _TAR_VALUE_LETTERS:
            _tar_long(t, key, None, env)
            continue
        rest = letters[k + 1 :]
        _tar_long(t, key, Arg(rest, rest) if rest else following, env)
        return 0 if rest else 1
    return 0


def w_zip(name: str, args: list[Arg], env: Env) -> None:
    i, n = 0, len(args)
    recursive = False
    follow = True
    excludes: list[str] = []
    operands: list[Arg] = []
    from_stdin = False
    while i < n:
        v = args[i].value
        if v in ("-x", "--exclude", "-i", "--include"):
            i += 1
            while i < n and not (args[i].value or "").startswith("-"):
                if v in ("-x", "--exclude") and args[i].value:
                    excludes.append(args[i].value or "")
                elif v in ("-i", "--include"):
                    pass  # an include list only narrows; no credit is taken for it
                i += 1
            continue
        if v is not None and v.startswith("-") and v != "-" and not v.startswith("--"):
            letters = v[1:]
            recursive = recursive or "r" in letters or "R" in letters
            follow = follow and "y" not in letters
            from_stdin = from_stdin or "@" in letters
            if letters[-1:] in ("b", "n", "t", "P", "O", "Z", "s"):  # options with a value
                i += 1
        elif v in ("--recurse-paths", "--recurse-patterns"):
            recursive = True
        elif v == "--symlinks":
            follow = False
        elif v == "--names-stdin":
            from_stdin = True
        elif v is None or not v.startswith("-"):
            operands.append(args[i])
        i += 1
    if from_stdin:
        from_list(env, [None], "copies")
    if not recursive or len(operands) < 2:
        return
    for arg in operands[1:]:
        prefix = os.path.normpath(arg.value) if arg.value else ""
        record(
            env,
            walk_roots([arg], env, default=False),
            "copies",
            follow=follow,
            exclude_files=tuple(excludes),
            prefix="" if prefix in (".", "./") else prefix,
        )


def w_generic_archiver(name: str, args: list[Arg], env: Env) -> None:
    """7z a/u, jar c/u, pax -w, rclone/restic/borg: every path operand is walked."""
    static = [a.value for a in args if a.value is not None]
    if name.startswith("7z"):
        if not static or static[0] not in ("a", "u"):
            return
        operands = [a for a in args[2:] if not (a.value or "").startswith("-")]
    elif name == "jar":
        if not static or not set(static[0].lstrip("-")) & set("cu"):
            return
        operands = [a for a in args[2:] if not (a.value or "").startswith("-")]
    elif name == "pax":
        if "-w" not in static:
            return
        operands = [a for a in args if not (a.value or "").startswith("-")]
    elif name == "rclone":
        if not static or static[0] not in ("copy", "sync", "move", "copyto", "bisync", "check"):
            return
        operands = [a for a in args[1:-1] if (a.value or "x:").find(":") < 0]
    elif name == "restic":
        if "backup" not in static:
            return
        k = [a.value for a in args].index("backup")
        operands = [a for a in args[k + 1 :] if not (a.value or "").startswith("-")]
    else:  # borg create REPO::ARCHIVE PATH…
        if "create" not in static:
            return
        k = [a.value for a in args].index("create")
        operands = [a for a in args[k + 1 :] if not (a.value or "").startswith("-")][1:]
    record(env, walk_roots(operands, env, default=False), "copies", follow=True)


def w_aws(name: str, args: list[Arg], env: Env) -> None:
    static = [a.value for a in args if a.value is not None]
    if static[:2] == ["s3", "sync"] or (static[:2] == ["s3", "cp"] and "--recursive" in static):
        local = [
            a
            for a in args[2:]
            if a.value is None or (not a.value.startswith(("-", "s3://")) and ":" not in a.value)
        ][:1]
        record(env, walk_roots(local, env, default=False), "uploads", follow=True)


def w_gsutil(name: str, args: list[Arg], env: Env) -> None:
    static = [a.value for a in args if a.value is not None]
    sub = next((v for v in static if not v.startswith("-")), "")
    if sub in ("cp", "rsync", "mv") and {"-r", "-R"} & set(static):
        k = static.index(sub)
        local = [a for a in args[k + 1 : -1] if not (a.value or "-").startswith(("-", "gs://"))]
        record(env, walk_roots(local, env, default=False), "uploads", follow=True)
