"""Recursive operations: which commands read, copy, change or delete a whole tree.

``grep -r key .`` names the project, not the ledger home, yet reads the home too. Each command
here that walks a directory tree records a :class:`~infomark.kernel.tools.Walk` per root, with
what its command line says it skips (``--exclude-dir``, ``-x``, ``--exclude``, ``-prune``,
hidden entries, ignore files, ``--include``). Whether a walk reaches the home is decided by
:mod:`infomark.gates.protect` against the real file system. A root that cannot be resolved
statically makes the line opaque (fail closed); an exclusion this module does not understand
simply earns no credit, so the walk counts as reaching everything under its root.

Names-only walks (``ls -R``, ``du``, ``tree``, ``find`` without ``-exec``) are not walks of
content. A ``find`` listing piped into ``xargs``/``cpio``/``tar -T -``/``zip -@`` is: the
consumer reads every listed file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from infomark.gates import shell_fs as fs
from infomark.gates.shell.core import Env, short, ws
from infomark.gates.shell.walkroots import (
    NAMES_ONLY,
    component_globs,
    from_list,
    literal_paths,
    record,
    walk_roots,
)
from infomark.gates.shell.walks_copy import (
    w_aws,
    w_cp,
    w_generic_archiver,
    w_gsutil,
    w_rsync,
    w_tar,
    w_zip,
)
from infomark.gates.shell.words import Arg, Options, _command_name, _names, _scan
from infomark.kernel.tools import Walk

__all__ = [
    "RG_IGNORE",
    "WALKERS",
    "note_git",
    "note_python_module",
    "note_python_walks",
    "walk_roots",
]

# the option grammars (which options take a value)
_GREP = Options(
    "efmABCdD",
    "--regexp --file --max-count --after-context --before-context --context --directories "
    "--devices --exclude --include --exclude-dir --exclude-from --label --binary-files --color "
    "--colour --group-separator",
)
_RG = Options(
    "efgmABCtTEjMrd",
    "--regexp --file --glob --iglob --max-count --after-context --before-context --context "
    "--type --type-not --type-add --type-clear --encoding --threads --max-columns --replace "
    "--max-depth --max-filesize --ignore-file --pre --pre-glob --sort --sortr --color --colors "
    "--context-separator --field-match-separator --field-context-separator --path-separator "
    "--dfa-size-limit --regex-size-limit --engine --hostname-bin --hyperlink-format --generate",
)
_AG = Options(
    "ABCGgmpW",
    "--ignore --ignore-dir --depth --pager --path-to-ignore --file-search-regex --context",
)
_XARGS = Options(
    "adEILnPs", "--arg-file --delimiter --max-args --max-procs --max-chars --process-slot-var"
)

# -- grep, ripgrep, ag, ack, diff --------------------------------------------------------------


def _w_grep(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _GREP.scan(args)
    names = _names(opts)
    directories = [v.value for o, v in opts if o in ("-d", "--directories") and v is not None]
    recursive = (
        name == "rgrep"
        or bool(names & {"-r", "-R", "--recursive", "--dereference-recursive"})
        or "recurse" in directories
    )
    if not recursive:
        return
    patterns_given = bool(names & {"-e", "-f", "--regexp", "--file"})
    files = pos if patterns_given else pos[1:]
    filters = [(o, v.value) for o, v in opts if o in ("--include", "--exclude") and v is not None]
    only: tuple[str, ...] = ()
    if filters and all(o == "--include" for o, _ in filters):
        only = tuple(v for _, v in filters if v)
    if any(o == "--exclude-from" for o, _ in opts):
        only = ()  # unknown patterns: no credit
    record(
        env,
        walk_roots(files, env),
        "reads",
        follow=bool(names & {"-R", "--dereference-recursive"}),
        exclude=tuple(
            v.value for o, v in opts if o == "--exclude-dir" and v is not None and v.value
        ),
        only=only,
    )


def _w_rg(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _RG.scan(args)
    names = _names(opts)
    if names & {"--files", "--type-list", "--version", "-V", "--help", "-h", "--generate"}:
        return  # names only, or no search at all
    unrestricted = sum(o == "-u" for o, _ in opts) + sum(o == "--unrestricted" for o, _ in opts)
    hidden = (
        unrestricted >= 2 or bool(names & {"--hidden", "-."}) or "--no-ignore-dot" in names
    ) and "--no-hidden" not in names
    patterns_given = bool(names & {"-e", "-f", "--regexp", "--file"})
    files = pos if patterns_given else pos[1:]
    globs = [v.value for o, v in opts if o in ("-g", "--glob", "--iglob") and v and v.value]
    negated = [g[1:] for g in globs if g.startswith("!")]
    no_ignore = unrestricted >= 1 or bool(names & {"--no-ignore", "--no-ignore-dot"})
    record(
        env,
        walk_roots(files, env),
        "reads",
        follow=bool(names & {"-L", "--follow"}),
        skip_hidden=not hidden,
        honours_ignore=() if no_ignore else RG_IGNORE,
        exclude=component_globs(negated, dir_slash=True, gitglob=True),
        exclude_paths=literal_paths(negated, lenient=True),
    )


def _w_ag(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _AG.scan(args)
    names = _names(opts)
    if name == "ag" and names & {"-g"}:
        return  # lists file names matching a pattern
    hidden = bool(names & {"--hidden", "-u", "--unrestricted", "-a", "--all-types"})
    ignores = [v.value for o, v in opts if o in ("--ignore", "--ignore-dir") and v and v.value]
    record(
        env,
        walk_roots(pos[1:], env),
        "reads",
        follow=bool(names & {"-f", "--follow"}),
        skip_hidden=name == "ag" and not hidden,
        exclude=component_globs(ignores),
    )


def _w_diff(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(args, "xXSFIDLU", ws("--exclude --exclude-from --label --starting-file"))
    names = _names(opts)
    if not names & {"-r", "--recursive"}:
        return
    excludes = [v.value for o, v in opts if o in ("-x", "--exclude") and v and v.value]
    record(env, walk_roots(pos, env), "reads", exclude=component_globs(excludes))


# -- find, and what consumes its listing -------------------------------------------------------

_FIND_OPTIONS = ws("-H -L -P -O0 -O1 -O2 -O3")


def _w_find(name: str, args: list[Arg], env: Env) -> None:
    i, n = 0, len(args)
    follow = False
    while i < n and (args[i].value in _FIND_OPTIONS or args[i].value == "-D"):
        follow = follow or args[i].value == "-L"
        i += 2 if args[i].value == "-D" else 1
    roots: list[Arg] = []
    while i < n and args[i].value is not None and not _find_expr(args[i].value or ""):
        roots.append(args[i])
        i += 1
    if i < n and args[i].value is None and not roots:
        roots.append(args[i])
    expr = [a.value for a in args[i:]]
    follow = follow or "-follow" in expr
    reads = deletes = False
    k = 0
    while k < len(expr):
        v = expr[k]
        if v in ("-exec", "-execdir", "-ok", "-okdir"):
            inner = expr[k + 1] if k + 1 < len(expr) else None
            head = _command_name(inner) if inner else None
            if head not in NAMES_ONLY:
                reads = True
                deletes = deletes or head in ("rm", "unlink", "shred")
            while k < len(expr) and expr[k] not in (";", "+"):
                k += 1
        elif v == "-delete":
            deletes = True
        k += 1
    excl_names, excl_paths = _find_prunes(expr)
    files_only = _find_files_excluded(expr)
    kw: dict[str, object] = {
        "follow": follow,
        "exclude": excl_names,
        "exclude_paths": excl_paths,
        "exclude_files": files_only,
    }
    for arg in roots or [Arg(".", ".")]:
        prefix = (arg.value.rstrip("/") or "/") if arg.value else "."
        rs = walk_roots([arg], env)
        walk_kw = {**kw, "prefix": prefix}
        if reads or deletes:
            record(env, rs, "deletes" if deletes and not reads else "reads", **walk_kw)
        else:
            for root in rs:
                env.state.listings.append(
                    Walk(root=root, command=short(env.text), what="lists", **walk_kw)  # type: ignore[arg-type]
                )


def _find_expr(v: str) -> bool:
    return v.startswith("-") or v in ("(", ")", "!", ",")


def _find_prunes(expr: list[str | None]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``-name P -prune -o …`` and ``-path P -prune -o …``: entries that are never entered."""
    names: list[str] = []
    paths: list[str] = []
    for k in range(len(expr) - 3):
        test, pattern, prune, alt = expr[k], expr[k + 1], expr[k + 2], expr[k + 3]
        if prune != "-prune" or alt not in ("-o", "-or") or pattern is None:
            continue
        if k > 0 and expr[k - 1] in ("!", "-not"):
            continue  # `! -name X -prune` prunes everything but X
        if test == "-name":
            names.append(pattern)
        elif test in ("-path", "-wholename"):
            paths.append(pattern)
    return tuple(names), tuple(paths)


def _find_files_excluded(expr: list[str | None]) -> tuple[str, ...]:
    """``-type f -not -path './.infomark/*'``: no file under that path is acted on. Directories
    still are, so this only counts with ``-type f``."""
    if not any(expr[k] == "-type" and expr[k + 1] == "f" for k in range(len(expr) - 1)):
        return ()
    out: list[str] = []
    for k in range(len(expr) - 2):
        if expr[k] in ("!", "-not") and expr[k + 1] in ("-path", "-wholename"):
            pattern = expr[k + 2]
            if pattern:
                out.append(pattern)
    return tuple(out)


def _w_xargs(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _XARGS.scan(args)
    inner = _command_name(pos[0].value) if pos and pos[0].value else None
    if inner in NAMES_ONLY:
        return
    files = [v for o, v in opts if o in ("-a", "--arg-file")]
    if files:
        from_list(env, files, "reads")
        return
    stdin = env.stdin()
    if stdin.kind == "pipe" and not env.state.listings and stdin.text is None:
        return  # names from another program (`git ls-files | xargs grep`): not a walk
    from_list(env, [None], "reads")


def w_cpio(name: str, args: list[Arg], env: Env) -> None:
    flags = "".join(a.value[1:] for a in args if a.value and a.value.startswith("-"))
    if "o" in flags or "p" in flags or {"--create", "--pass-through"} & {a.value for a in args}:
        from_list(env, [None], "copies")


# -- permissions, git, python modules ----------------------------------------------------------


def _w_chmod(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(args, "", ws("--reference --from"))
    names = _names(opts)
    if not names & {"-R", "--recursive"}:
        return
    targets = pos if "--reference" in names else pos[1:]
    if name == "setfacl":
        targets = pos
    record(
        env,
        walk_roots(targets, env, default=False),
        "changes",
        follow=bool(names & {"-L"}),
    )


def _git_top(env: Env) -> list[str]:
    tops = []
    for cwd in list(env.state.cwds):
        here = fs.start_dir(cwd)
        top = here
        while True:
            if fs.exists(os.path.join(top, ".git")):
                break
            parent = os.path.dirname(top)
            if parent == top:
                top = here
                break
            top = parent
        tops.append(top)
    return list(dict.fromkeys(tops))


_GIT_IGNORE = (".gitignore",)
RG_IGNORE = (".ignore", ".rgignore")


def note_git(sub: str, args: list[Arg], env: Env) -> None:
    """git subcommands that walk the working tree, ignored files included when forced."""
    opts, pos = _scan(args, "m" if sub in ("stash",) else "", ws("--pathspec-from-file"))
    names = _names(opts)
    pathspecs = [a for a in pos if a.value != "--"]
    if any(o == "--pathspec-from-file" for o, _ in opts):
        env.state.opaque = True
    if sub in ("add", "stage"):
        if names & {"-n", "--dry-run", "-u", "--update"} or (
            not pathspecs and not names & {"-A", "--all", "--no-ignore-removal"}
        ):
            return
        roots = walk_roots(pathspecs, env) if pathspecs else _git_top(env)
        force = bool(names & {"-f", "--force"})
        record(env, roots, "stages", honours_ignore=() if force else _GIT_IGNORE)
    elif sub == "stash":
        action = pathspecs[0].value if pathspecs else "push"
        if action not in ("push", "save") and pathspecs:
            return
        if names & {"-a", "--all"}:
            record(env, _git_top(env), "stashes and removes")
        elif names & {"-u", "--include-untracked"}:
            record(env, _git_top(env), "stashes and removes", honours_ignore=_GIT_IGNORE)
    elif sub == "clean":
        if names & {"-n", "--dry-run"}:
            return
        roots = walk_roots(pathspecs, env)
        if names & {"-x", "-X"}:
            record(env, roots, "deletes")
        else:
            record(env, roots, "deletes", honours_ignore=_GIT_IGNORE)
    elif sub == "grep":
        if "--no-index" in names:
            record(
                env,
                walk_roots(pos[1:], env),
                "reads",
                honours_ignore=_GIT_IGNORE if "--exclude-standard" in names else (),
            )
        elif "--untracked" in names:
            record(
                env,
                walk_roots(pos[1:], env),
                "reads",
                honours_ignore=() if "--no-exclude-standard" in names else _GIT_IGNORE,
            )


def note_python_module(module: str, args: list[Arg], env: Env) -> None:
    """``python -m http.server`` serves a tree; ``-m zipfile/tarfile -c`` archives one."""
    static = [a.value for a in args]
    if module == "http.server":
        opts, _ = _scan(args, "db", ws("--directory --bind --protocol"))
        where = [v for o, v in opts if o in ("-d", "--directory") and v is not None]
        record(env, walk_roots(where, env), "serves", follow=True)
    elif module in ("zipfile", "tarfile") and static[:1] in (["-c"], ["--create"]):
        record(env, walk_roots(args[2:], env, default=False), "copies", follow=True)


def note_python_walks(roots: Iterable[str | None], env: Env, what: str) -> None:
    """Inline Python that walks or copies trees (``os.walk('.')``, ``shutil.copytree``)."""
    for root in roots:
        if root is None:
            env.state.opaque = True
            continue
        record(env, walk_roots([Arg(root, root)], env), what)


WALKERS: dict[str, Callable[[str, list[Arg], Env], None]] = {
    **dict.fromkeys(("grep", "egrep", "fgrep", "rgrep"), _w_grep),
    "rg": _w_rg,
    "ag": _w_ag,
    "ack": _w_ag,
    "ack-grep": _w_ag,
    "diff": _w_diff,
    "cp": w_cp,
    "scp": w_cp,
    "rsync": w_rsync,
    **dict.fromkeys(("tar", "gtar", "bsdtar"), w_tar),
    "zip": w_zip,
    **dict.fromkeys(
        ("7z", "7za", "7zr", "jar", "pax", "rclone", "restic", "borg"), w_generic_archiver
    ),
    "aws": w_aws,
    "gsutil": w_gsutil,
    "find": _w_find,
    "xargs": _w_xargs,
    "parallel": _w_xargs,
    "cpio": w_cpio,
    **dict.fromkeys(("chmod", "chown", "chgrp", "setfacl"), _w_chmod),
}
