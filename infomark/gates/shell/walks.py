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

import glob
import os
from collections.abc import Callable, Iterable

from infomark.gates.shell.core import Env, short, ws
from infomark.gates.shell.words import Arg, _command_name, _names, _scan
from infomark.kernel.tools import Walk

__all__ = [
    "RG_IGNORE",
    "WALKERS",
    "note_git",
    "note_python_module",
    "note_python_walks",
    "walk_roots",
]

_MAGIC = frozenset("*?[")
_NAMES_ONLY = ws("ls stat basename dirname echo printf true false du realpath readlink test [")


def _state_cwds(env: Env) -> list[str]:
    return list(env.state.cwds)


def walk_roots(values: Iterable[Arg], env: Env, *, default: bool = True) -> list[str]:
    """Absolute roots for the words ``values`` (globs expanded against the real file system,
    from every directory the line may be in); the line's directories when there are none.
    A word that depends on an expansion makes the line opaque and counts as every directory
    the line may be in (the widest root it could be)."""
    out: list[str] = []
    given = False
    for arg in values:
        given = True
        value = arg.value
        if value is None or "{" in value:
            env.state.opaque = value is None or env.state.opaque
            out.extend(_state_cwds(env))
            continue
        if value.startswith("~"):
            value = os.path.expanduser(value)
        for base in _state_cwds(env):
            if _MAGIC & set(value):
                hits = glob.glob(value, root_dir=base) if not os.path.isabs(value) else None
                if hits is None:
                    hits = glob.glob(value)
                out.extend(os.path.normpath(os.path.join(base, h)) for h in hits or [value])
            else:
                out.append(os.path.normpath(os.path.join(base, value)))
    if not given and default:
        out.extend(_state_cwds(env))
    return list(dict.fromkeys(out))


def _record(env: Env, roots: Iterable[str], what: str, **kw: object) -> None:
    for root in roots:
        walk = Walk(root=root, command=short(env.text), what=what, **kw)  # type: ignore[arg-type]
        if walk not in env.state.walks:
            env.state.walks.append(walk)


def _component_globs(patterns: Iterable[str]) -> tuple[str, ...]:
    """Patterns that name an entry anywhere below the root (``.infomark``, ``.info*``)."""
    out = []
    for p in patterns:
        p = p.rstrip("/")
        if p.endswith("/**"):
            p = p[:-3]
        if p.startswith("**/"):
            p = p[3:]
        if p and "/" not in p:
            out.append(p)
    return tuple(out)


def _literal_paths(patterns: Iterable[str]) -> tuple[str, ...]:
    """Patterns that name one path relative to the root, without wildcards (``./.infomark``)."""
    out = []
    for p in patterns:
        p = p.rstrip("/")
        while p.startswith("./"):
            p = p[2:]
        p = p.lstrip("/")
        if p and "/" in p and not (_MAGIC & set(p)):
            out.append(p)
    return tuple(out)


# -- grep, ripgrep, ag, ack, diff --------------------------------------------------------------

_GREP_SHORT_VALUES = "efmABCdD"
_GREP_LONG_VALUES = ws(
    "--regexp --file --max-count --after-context --before-context --context --directories "
    "--devices --exclude --include --exclude-dir --exclude-from --label --binary-files --color "
    "--colour --group-separator"
)


def _w_grep(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(args, _GREP_SHORT_VALUES, _GREP_LONG_VALUES)
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
    _record(
        env,
        walk_roots(files, env),
        "reads",
        follow=bool(names & {"-R", "--dereference-recursive"}),
        exclude=tuple(
            v.value for o, v in opts if o == "--exclude-dir" and v is not None and v.value
        ),
        only=only,
    )


_RG_SHORT_VALUES = "efgmABCtTEjMrd"
_RG_LONG_VALUES = ws(
    "--regexp --file --glob --iglob --max-count --after-context --before-context --context "
    "--type --type-not --type-add --type-clear --encoding --threads --max-columns --replace "
    "--max-depth --max-filesize --ignore-file --pre --pre-glob --sort --sortr --color --colors "
    "--context-separator --field-match-separator --field-context-separator --path-separator "
    "--dfa-size-limit --regex-size-limit --engine --hostname-bin --hyperlink-format --generate"
)


def _w_rg(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(args, _RG_SHORT_VALUES, _RG_LONG_VALUES)
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
    _record(
        env,
        walk_roots(files, env),
        "reads",
        follow=bool(names & {"-L", "--follow"}),
        skip_hidden=not hidden,
        honours_ignore=() if no_ignore else RG_IGNORE,
        exclude=_component_globs(negated),
        exclude_paths=_literal_paths(negated),
    )


def _w_ag(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(
        args,
        "ABCGgmpW",
        ws("--ignore --ignore-dir --depth --pager --path-to-ignore --file-search-regex --context"),
    )
    names = _names(opts)
    if name == "ag" and names & {"-g"}:
        return  # lists file names matching a pattern
    hidden = bool(names & {"--hidden", "-u", "--unrestricted", "-a", "--all-types"})
    ignores = [v.value for o, v in opts if o in ("--ignore", "--ignore-dir") and v and v.value]
    _record(
        env,
        walk_roots(pos[1:], env),
        "reads",
        follow=bool(names & {"-f", "--follow"}),
        skip_hidden=name == "ag" and not hidden,
        exclude=_component_globs(ignores),
    )


def _w_diff(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(args, "xXSFIDLU", ws("--exclude --exclude-from --label --starting-file"))
    names = _names(opts)
    if not names & {"-r", "--recursive"}:
        return
    excludes = [v.value for o, v in opts if o in ("-x", "--exclude") and v and v.value]
    _record(env, walk_roots(pos, env), "reads", exclude=_component_globs(excludes))


# -- copies and archives -----------------------------------------------------------------------


def _w_cp(name: str, args: list[Arg], env: Env) -> None:
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
    _record(env, walk_roots(sources, env, default=False), "copies", follow=follow)


_RSYNC_LONG_VALUES = ws(
    "--exclude --include --exclude-from --include-from --files-from --filter --rsh "
    "--rsync-path --temp-dir --compare-dest --link-dest --copy-dest --backup-dir --suffix "
    "--chmod --chown --max-size --min-size --partial-dir --log-file --password-file --port "
    "--out-format --timeout --remote-option --info --debug --usermap --groupmap"
)


def _w_rsync(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(args, "efTBM", _RSYNC_LONG_VALUES)
    names = _names(opts)
    if any(o == "--files-from" for o, _ in opts):
        _from_list(env, [v for o, v in opts if o == "--files-from"], "copies")
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
        anchored = [p for p in anchored if p and not (_MAGIC & set(p))]
        _record(
            env,
            walk_roots([src], env, default=False),
            "copies",
            follow=follow,
            exclude=_component_globs(p for p in excludes if not p.startswith("/")),
            exclude_paths=tuple(anchored),
        )


_TAR_VALUE_LETTERS = "fbCTXHgNVIKLF"
_TAR_LONG_VALUES = ws(
    "--file --directory --files-from --exclude-from --blocking-factor --format "
    "--listed-incremental --newer --label --exclude --transform --xform --owner --group --mode "
    "--mtime --use-compress-program --suffix --newer-mtime --after-date --level --index-file"
)


def _w_tar(name: str, args: list[Arg], env: Env) -> None:
    seq = list(args)
    first = seq[0].value if seq else None
    if first and not first.startswith("-") and first.isalpha():  # old style: `tar czf x .`
        expanded: list[Arg] = []
        values = seq[1:]
        for letter in first:
            expanded.append(Arg("-" + letter, "-" + letter))
            if letter in _TAR_VALUE_LETTERS and values:
                expanded.append(values.pop(0))
        seq = expanded + values
    creating = False
    recursion = True
    follow = False
    excludes: list[str] = []
    credit = True
    operands: list[tuple[str, Arg]] = []  # (directory it is relative to, operand)
    lists: list[Arg | None] = []
    bases: list[str | None] = [None]  # -C DIR changes the directory of the operands after it
    i, n = 0, len(seq)
    only_pos = False
    while i < n:
        arg = seq[i]
        v = arg.value
        if only_pos or v is None or not v.startswith("-") or v == "-":
            operands.append((bases[-1] or "", arg))
            i += 1
            continue
        if v == "--":
            only_pos = True
            i += 1
            continue
        if v.startswith("--"):
            key, eq, val = v.partition("=")
            value: Arg | None = Arg(val, val) if eq else None
            if not eq and key in _TAR_LONG_VALUES:
                value = seq[i + 1] if i + 1 < n else None
                i += 1
            creating = creating or key in ("--create", "--append", "--update")
            if key == "--no-recursion":
                recursion = False
            elif key == "--recursion":
                recursion = True
            elif key == "--dereference":
                follow = True
            elif key == "--exclude" and value is not None and value.value:
                excludes.append(value.value)
            elif key in ("--exclude-from", "--exclude-tag", "--exclude-tag-all"):
                credit = credit and key != "--exclude-from"
            elif key == "--directory":
                bases.append(value.value if value is not None else None)
                if value is None or value.value is None:
                    env.state.opaque = True
            elif key == "--files-from":
                lists.append(value)
            i += 1
            continue
        letters = v[1:]
        for k, ch in enumerate(letters):
            if ch in "cru":
                creating = True
            elif ch == "h":
                follow = True
            if ch in _TAR_VALUE_LETTERS:
                rest = letters[k + 1 :]
                value = Arg(rest, rest) if rest else (seq[i + 1] if i + 1 < n else None)
                if not rest:
                    i += 1
                if ch == "C":
                    bases.append(value.value if value is not None else None)
                    if value is None or value.value is None:
                        env.state.opaque = True
                elif ch == "T":
                    lists.append(value)
                elif ch == "X":
                    credit = False
                break
        i += 1
    if not creating:
        return
    if lists:
        _from_list(env, lists, "copies")
    if not recursion:
        return
    pats = excludes if credit else []
    for base, arg in operands:
        if arg.value is not None and not base and arg.value.startswith("-"):
            continue
        if base and arg.value is not None:
            arg = Arg(os.path.join(base, arg.value), arg.approx)
        roots = walk_roots([arg], env, default=False)
        _record(
            env,
            roots,
            "copies",
            follow=follow,
            exclude=_component_globs(pats),
            exclude_paths=_literal_paths(pats),
        )


def _w_zip(name: str, args: list[Arg], env: Env) -> None:
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
        _from_list(env, [None], "copies")
    if not recursive or len(operands) < 2:
        return
    for arg in operands[1:]:
        prefix = os.path.normpath(arg.value) if arg.value else ""
        _record(
            env,
            walk_roots([arg], env, default=False),
            "copies",
            follow=follow,
            exclude_files=tuple(excludes),
            prefix="" if prefix in (".", "./") else prefix,
        )


def _w_generic_archiver(name: str, args: list[Arg], env: Env) -> None:
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
    _record(env, walk_roots(operands, env, default=False), "copies", follow=True)


def _w_aws(name: str, args: list[Arg], env: Env) -> None:
    static = [a.value for a in args if a.value is not None]
    if static[:2] == ["s3", "sync"] or (static[:2] == ["s3", "cp"] and "--recursive" in static):
        local = [
            a
            for a in args[2:]
            if a.value is None or (not a.value.startswith(("-", "s3://")) and ":" not in a.value)
        ][:1]
        _record(env, walk_roots(local, env, default=False), "uploads", follow=True)


def _w_gsutil(name: str, args: list[Arg], env: Env) -> None:
    static = [a.value for a in args if a.value is not None]
    sub = next((v for v in static if not v.startswith("-")), "")
    if sub in ("cp", "rsync", "mv") and {"-r", "-R"} & set(static):
        k = static.index(sub)
        local = [a for a in args[k + 1 : -1] if not (a.value or "-").startswith(("-", "gs://"))]
        _record(env, walk_roots(local, env, default=False), "uploads", follow=True)


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
            if head not in _NAMES_ONLY:
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
            _record(env, rs, "deletes" if deletes and not reads else "reads", **walk_kw)
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


def _from_list(env: Env, sources: Iterable[Arg | None], what: str) -> None:
    """A command reads every file a list names: a `find` listing on stdin, or a file."""
    for src in sources:
        if src is not None and src.value not in (None, "-", "/dev/stdin"):
            env.state.opaque = True  # the list's contents are not known statically
            continue
        stdin = env.stdin()
        if stdin.kind == "pipe" and env.state.listings:
            for listing in env.state.listings:
                env.state.walks.append(
                    Walk(
                        root=listing.root,
                        command=short(env.text),
                        what=what,
                        follow=listing.follow,
                        exclude=listing.exclude,
                        exclude_paths=listing.exclude_paths,
                        exclude_files=listing.exclude_files,
                        prefix=listing.prefix,
                    )
                )
        elif stdin.kind == "text" or (stdin.kind == "pipe" and stdin.text is not None):
            for word in (stdin.text or "").split():
                env.state.path(word)
        else:
            env.state.opaque = True


def _w_xargs(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(
        args,
        "adEILnPs",
        ws("--arg-file --delimiter --max-args --max-procs --max-chars --process-slot-var"),
    )
    inner = _command_name(pos[0].value) if pos and pos[0].value else None
    if inner in _NAMES_ONLY:
        return
    files = [v for o, v in opts if o in ("-a", "--arg-file")]
    if files:
        _from_list(env, files, "reads")
        return
    stdin = env.stdin()
    if stdin.kind == "pipe" and not env.state.listings and stdin.text is None:
        return  # names from another program (`git ls-files | xargs grep`): not a walk
    _from_list(env, [None], "reads")


def _w_cpio(name: str, args: list[Arg], env: Env) -> None:
    flags = "".join(a.value[1:] for a in args if a.value and a.value.startswith("-"))
    if "o" in flags or "p" in flags or {"--create", "--pass-through"} & {a.value for a in args}:
        _from_list(env, [None], "copies")


# -- permissions, git, python modules ----------------------------------------------------------


def _w_chmod(name: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(args, "", ws("--reference --from"))
    names = _names(opts)
    if not names & {"-R", "--recursive"}:
        return
    targets = pos if "--reference" in names else pos[1:]
    if name == "setfacl":
        targets = pos
    _record(
        env,
        walk_roots(targets, env, default=False),
        "changes",
        follow=bool(names & {"-L"}),
    )


def _git_top(env: Env) -> list[str]:
    tops = []
    for cwd in _state_cwds(env):
        here = os.path.abspath(cwd)
        top = here
        while True:
            if os.path.exists(os.path.join(top, ".git")):
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
        _record(env, roots, "stages", honours_ignore=() if force else _GIT_IGNORE)
    elif sub == "stash":
        action = pathspecs[0].value if pathspecs else "push"
        if action not in ("push", "save") and pathspecs:
            return
        if names & {"-a", "--all"}:
            _record(env, _git_top(env), "stashes and removes")
        elif names & {"-u", "--include-untracked"}:
            _record(env, _git_top(env), "stashes and removes", honours_ignore=_GIT_IGNORE)
    elif sub == "clean":
        if names & {"-n", "--dry-run"}:
            return
        roots = walk_roots(pathspecs, env)
        if names & {"-x", "-X"}:
            _record(env, roots, "deletes")
        else:
            _record(env, roots, "deletes", honours_ignore=_GIT_IGNORE)
    elif sub == "grep":
        if "--no-index" in names:
            _record(
                env,
                walk_roots(pos[1:], env),
                "reads",
                honours_ignore=_GIT_IGNORE if "--exclude-standard" in names else (),
            )
        elif "--untracked" in names:
            _record(
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
        _record(env, walk_roots(where, env), "serves", follow=True)
    elif module in ("zipfile", "tarfile") and static[:1] in (["-c"], ["--create"]):
        _record(env, walk_roots(args[2:], env, default=False), "copies", follow=True)


def note_python_walks(roots: Iterable[str | None], env: Env, what: str) -> None:
    """Inline Python that walks or copies trees (``os.walk('.')``, ``shutil.copytree``)."""
    for root in roots:
        if root is None:
            env.state.opaque = True
            continue
        _record(env, walk_roots([Arg(root, root)], env), what)


WALKERS: dict[str, Callable[[str, list[Arg], Env], None]] = {
    **dict.fromkeys(("grep", "egrep", "fgrep", "rgrep"), _w_grep),
    "rg": _w_rg,
    "ag": _w_ag,
    "ack": _w_ag,
    "ack-grep": _w_ag,
    "diff": _w_diff,
    "cp": _w_cp,
    "scp": _w_cp,
    "rsync": _w_rsync,
    **dict.fromkeys(("tar", "gtar", "bsdtar"), _w_tar),
    "zip": _w_zip,
    **dict.fromkeys(
        ("7z", "7za", "7zr", "jar", "pax", "rclone", "restic", "borg"), _w_generic_archiver
    ),
    "aws": _w_aws,
    "gsutil": _w_gsutil,
    "find": _w_find,
    "xargs": _w_xargs,
    "parallel": _w_xargs,
    "cpio": _w_cpio,
    **dict.fromkeys(("chmod", "chown", "chgrp", "setfacl"), _w_chmod),
}
