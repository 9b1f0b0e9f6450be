"""git: reads execute; history, working-tree and remote changes modify or destroy (``git``)."""

from __future__ import annotations

from collections.abc import Callable

from infomark.gates import shell_fs as fs
from infomark.gates.shell.core import Env, ws
from infomark.gates.shell.walks import note_git
from infomark.gates.shell.words import Arg, Options, _is_sink, _names, _option_value, _scan, _static
from infomark.kernel.lazyre import lazy_compile

__all__ = ["_h_git"]

# the option grammars (which options take a value)
_CHECKOUT = Options("bB", "--orphan --conflict --pathspec-from-file")
_BRANCH = Options(
    "u",
    "--set-upstream-to --contains --no-contains --merged --no-merged --points-at --sort --format "
    "--column",
)
_TAG = Options(
    "mFun", "--message --file --contains --points-at --merged --no-merged --sort --format"
)


_GIT_GLOBAL_VALUES = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"}
)
_GIT_READS = ws(
    "status diff log show blame annotate grep ls-files ls-tree ls-remote rev-parse rev-list "
    "describe shortlog cat-file show-ref for-each-ref merge-base name-rev var check-ignore "
    "check-attr check-ref-format count-objects fsck whatchanged help version cherry range-diff "
    "diff-tree diff-files diff-index verify-commit verify-tag show-branch difftool request-pull "
    "get-tar-commit-id column show-index"
)
_GIT_RISKY_CONFIG = lazy_compile(
    r"(?i)^(alias\.|core\.(pager|editor|sshcommand|fsmonitor|hookspath|askpass|gitproxy)|"
    r"sequence\.editor|diff\.external|.*\.(command|cmd|program|helper|textconv|process|clean|smudge)$)",
)


_GIT_DRY_RUNS = {
    "fetch": frozenset({"--dry-run"}),
    "push": frozenset({"--dry-run", "-n"}),
    "commit": frozenset({"--dry-run"}),
    "add": frozenset({"--dry-run", "-n"}),
    "rm": frozenset({"--dry-run", "-n"}),
    "mv": frozenset({"--dry-run", "-n"}),
}


def _h_git(name: str, args: list[Arg], env: Env, hops: int = 0) -> None:
    i, n = 0, len(args)
    aliases: dict[str, str] = {}
    while i < n:
        v = args[i].value
        if v is None:
            break
        if v in _GIT_GLOBAL_VALUES:
            if v == "-c" and i + 1 < n:
                setting = args[i + 1].value
                key, _, value = (setting or "alias.?").partition("=")
                if key.lower().startswith("alias.") and setting is not None:
                    aliases[key[6:]] = value  # resolved below when it is the subcommand
                elif _GIT_RISKY_CONFIG.match(key):
                    env.modify(f"sets `{key}`, which can run arbitrary commands (opaque)")
            i += 2
            continue
        if v.startswith("-"):
            if v.startswith("--config-env="):
                env.modify("sets config from the environment (opaque)")
            i += 1
            continue
        break
    if i >= n:
        env.execute("prints git usage or version")
        return
    sub_arg = args[i]
    rest = args[i + 1 :]
    if sub_arg.value is None:
        env.opaque("runs a computed git subcommand (opaque)")
        return
    sub = sub_arg.value
    if sub in aliases:
        _git_alias(sub, aliases[sub], rest, env, hops)
        return
    for key in aliases:
        env.modify(f"sets `alias.{key}`, which can run arbitrary commands (opaque)")
    note_git(sub, rest, env)
    handler = _GIT_HANDLERS.get(sub)
    if sub in _GIT_DRY_RUNS and _GIT_DRY_RUNS[sub] & set(_static(rest)):
        env.execute(f"shows what git {sub} would do (dry run)")
    elif handler is not None:
        handler(sub, rest, env)
    elif sub in _GIT_READS:
        if _git_output(rest, env):
            return
        env.execute(f"reads the repository (git {sub})")
    else:
        env.modify(f"changes the repository or working tree (git {sub})")


def _git_alias(sub: str, value: str, rest: list[Arg], env: Env, hops: int) -> None:
    """``git -c alias.x='reset --hard' x``: classify what the alias expands to."""
    if value.startswith("!"):
        env.modify(f"runs shell alias `{sub}` with git's environment (opaque)")
        env.nested(value[1:] + " " + " ".join(a.approx for a in rest), f"alias `{sub}`")
        return
    words = value.split()
    if hops >= 4 or not words:
        env.modify(f"runs alias `{sub}` (opaque)")
        return
    _h_git("git", [Arg(w, w) for w in words] + rest, env, hops + 1)


def _git_output(args: list[Arg], env: Env) -> bool:
    """``git diff --output=FILE`` (and log, show …): a read that writes a file."""
    target = _option_value(args, frozenset({"--output"}))
    if target is None or _is_sink(target.value):
        return False
    env.modify(f"writes {target.value or 'a computed path'} (--output)")
    return True


def _git_reset(sub: str, args: list[Arg], env: Env) -> None:
    if "--hard" in _static(args):
        env.destroy("discards uncommitted changes with reset --hard", "git")
    else:
        env.modify("moves HEAD or unstages changes (git reset)")


def _git_push(sub: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(args, "o", ws("--push-option --repo --receive-pack --exec"))
    names = _names(opts)
    if names & {"-f", "--force", "--force-with-lease", "--mirror"}:
        env.destroy("overwrites remote history with a force push", "git")
    elif names & {"-d", "--delete", "--prune"}:
        env.destroy("deletes remote branches or tags", "git")
    elif any((p.value or "").startswith("+") for p in pos[1:]):
        env.destroy("force-pushes a +refspec, overwriting remote history", "git")
    elif any((p.value or "").startswith(":") for p in pos[1:]):
        env.destroy("deletes a remote ref with a :refspec", "git")
    else:
        env.modify("publishes commits to a remote (git push)")


def _git_clean(sub: str, args: list[Arg], env: Env) -> None:
    opts, _ = _scan(args, "e", frozenset({"--exclude"}))
    names = _names(opts)
    if names & {"-n", "--dry-run"} and "-i" not in names:
        env.execute("lists untracked files that would be removed (dry run)")
    elif names & {"-f", "--force"}:
        env.destroy("deletes untracked files with clean -f", "git")
    else:
        env.modify("runs git clean")


_GIT_PATHLIKE = lazy_compile(r"^(\.{1,2}(/.*)?|\./.*|\.\./.*|:.*|.*[*?\[].*|.*/)$")


def _git_checkout(sub: str, args: list[Arg], env: Env) -> None:
    opts, pos = _CHECKOUT.scan(args)
    names = _names(opts)
    dashdash = any(a.value == "--" for a in args)
    if names & {"-f", "--force"}:
        env.destroy("discards working-tree changes with checkout --force", "git")
    elif dashdash and any(a.value != "--" for a in args[[a.value for a in args].index("--") + 1 :]):
        env.destroy("discards working-tree changes to the paths after --", "git")
    elif "--pathspec-from-file" in names or names & {"-p", "--patch"}:
        env.destroy("discards working-tree changes to the named paths", "git")
    elif names & {"-b", "-B", "--orphan"}:
        env.modify("creates and switches to a branch")
    elif len(pos) >= 2:
        env.destroy("overwrites working-tree files from another revision", "git")
    elif len(pos) == 1 and (pos[0].value is None or _looks_like_path(pos[0].value)):
        env.destroy("discards working-tree changes to the named paths", "git")
    elif pos:
        env.modify("switches branches (git checkout)")
    else:
        env.execute("reports the current checkout")


_SOURCE_SUFFIX = lazy_compile(
    r"(?i)\.(py|pyi|js|jsx|ts|tsx|mjs|cjs|json|toml|ya?ml|md|rst|txt|cfg|ini|lock|go|rs|c|h|cc|cpp|"
    r"hpp|java|kt|rb|php|cs|swift|scala|sh|bash|zsh|sql|html|css|scss|vue|svelte|xml|csv|env)$",
)


def _looks_like_path(value: str) -> bool:
    """``git checkout X``: X is a path (discarding its changes) rather than a branch?"""
    if _GIT_PATHLIKE.match(value) or _SOURCE_SUFFIX.search(value):
        return True
    try:
        return fs.lexists(value)
    except (OSError, ValueError):
        return False


def _git_restore(sub: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(args, "s", frozenset({"--source", "--pathspec-from-file"}))
    names = _names(opts)
    staged = bool(names & {"-S", "--staged"})
    worktree = bool(names & {"-W", "--worktree"})
    if not pos and "--pathspec-from-file" not in names:
        env.modify("runs git restore")
    elif staged and not worktree:
        env.execute("unstages changes (restore --staged: the index only)")
    else:
        env.destroy("discards working-tree changes with git restore", "git")


def _git_switch(sub: str, args: list[Arg], env: Env) -> None:
    names = _names(_scan(args, "cC", frozenset({"--create", "--force-create", "--orphan"}))[0])
    if names & {"--discard-changes", "-f", "--force"}:
        env.destroy("discards working-tree changes with switch --discard-changes / --force", "git")
    else:
        env.modify("switches branches (git switch)")


def _git_stash(sub: str, args: list[Arg], env: Env) -> None:
    action = next((a.value for a in args if a.value is None or not a.value.startswith("-")), "push")
    if action in ("drop", "clear", "pop"):
        env.destroy(f"removes stashed changes with stash {action}", "git")
    elif action in ("list", "show"):
        env.execute(f"reads stashes (stash {action})")
    else:
        env.modify(f"changes the working tree or stash (stash {action or 'push'})")


def _git_branch(sub: str, args: list[Arg], env: Env) -> None:
    opts, pos = _BRANCH.scan(args)
    names = _names(opts)
    delete = bool(names & {"-d", "--delete"})
    force = bool(names & {"-f", "--force"})
    if "-D" in names or (delete and force):
        env.destroy("force-deletes branches with branch -D", "git")
    elif delete or names & {
        "-m",
        "-M",
        "--move",
        "-c",
        "-C",
        "--copy",
        "-u",
        "--set-upstream-to",
        "--unset-upstream",
        "--edit-description",
        "-f",
        "--force",
    }:
        env.modify("changes branches")
    elif pos and not names & {
        "-l",
        "--list",
        "-a",
        "--all",
        "-r",
        "--remotes",
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
        "--show-current",
    }:
        env.modify("creates a branch")
    else:
        env.execute("lists branches")


def _git_tag(sub: str, args: list[Arg], env: Env) -> None:
    opts, pos = _TAG.scan(args)
    names = _names(opts)
    if names & {"-d", "--delete", "-a", "-s", "-f", "-m", "-F", "--annotate", "--sign", "--force"}:
        env.modify("creates or deletes tags")
    elif pos and not names & {"-l", "--list", "-v", "--verify"}:
        env.modify("creates a tag")
    else:
        env.execute("lists tags")


def _git_config(sub: str, args: list[Arg], env: Env) -> None:
    opts, pos = _scan(args, "f", ws("--file --blob --type --default"))
    names = _names(opts)
    readers = {
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--list",
        "-l",
        "--get-color",
        "--get-colorbool",
    }
    first = pos[0].value if pos else None
    if (
        first in ("get", "list")
        or (names & readers)
        or (
            len(pos) == 1
            and first not in ("set", "unset", "edit", "rename-section", "remove-section")
            and not names
            & {
                "--unset",
                "--unset-all",
                "--add",
                "--replace-all",
                "--edit",
                "-e",
                "--rename-section",
                "--remove-section",
            }
        )
    ):
        env.execute("reads configuration")
    else:
        env.modify("changes configuration (git config)")


def _git_listing(
    reads: frozenset[str], *, bare_reads: bool = True
) -> Callable[[str, list[Arg], Env], None]:
    def handle(sub: str, args: list[Arg], env: Env) -> None:
        action = next((a.value for a in args if a.value is None or not a.value.startswith("-")), "")
        if (action == "" and bare_reads) or action in reads:
            env.execute(f"reads the repository (git {sub} {action or ''})".replace(" )", ")"))
        else:
            env.modify(f"changes the repository (git {sub} {action or '…'})")

    return handle


def _git_worktree(sub: str, args: list[Arg], env: Env) -> None:
    statics = _static(args)
    if statics[:1] == ["remove"] and ({"-f", "--force"} & set(statics)):
        env.destroy("force-removes a worktree with its changes", "git")
    else:
        _git_listing(frozenset({"list"}), bare_reads=False)(sub, args, env)


def _git_submodule(sub: str, args: list[Arg], env: Env) -> None:
    statics = _static(args)
    if "foreach" in statics:
        k = statics.index("foreach")
        code = " ".join(a.approx for a in args[k + 1 :] if not (a.value or "").startswith("--"))
        env.nested(code, "foreach command")
        return
    _git_listing(frozenset({"status", "summary"}))(sub, args, env)


def _git_apply(sub: str, args: list[Arg], env: Env) -> None:
    flags = set(_static(args))
    if flags & {"--check", "--stat", "--numstat", "--summary"} and "--apply" not in flags:
        env.execute("checks a patch")
    else:
        env.modify("applies a patch")


def _git_archive(sub: str, args: list[Arg], env: Env) -> None:
    opts, _ = _scan(args, "o", ws("--output --format --prefix --remote"))
    target = next((v for o, v in opts if o in ("-o", "--output")), None)
    if target is not None and not _is_sink(target.value):
        env.modify(f"writes archive {target.value or 'at a computed path'}")
    else:
        env.execute("writes an archive to stdout")


def _git_add(sub: str, args: list[Arg], env: Env) -> None:
    """Staging writes the index, never the working tree: not a mutation of the project. The
    tree stays watched (an execute-class call), and what it may stage is judged as a walk."""
    env.execute(f"stages changes (git {sub}: the index only; the working tree is unchanged)")


def _git_history_rewrite(sub: str, args: list[Arg], env: Env) -> None:
    env.destroy(f"rewrites history (git {sub})", "git")


_GIT_HANDLERS: dict[str, Callable[[str, list[Arg], Env], None]] = {
    "add": _git_add,
    "stage": _git_add,
    "reset": _git_reset,
    "push": _git_push,
    "clean": _git_clean,
    "checkout": _git_checkout,
    "restore": _git_restore,
    "switch": _git_switch,
    "stash": _git_stash,
    "branch": _git_branch,
    "tag": _git_tag,
    "config": _git_config,
    "remote": _git_listing(frozenset({"show", "get-url", "-v"})),
    "worktree": _git_worktree,
    "submodule": _git_submodule,
    "notes": _git_listing(frozenset({"list", "show"})),
    "reflog": _git_listing(frozenset({"show", "exists"})),
    "lfs": _git_listing(ws("ls-files status env version logs")),
    "bisect": _git_listing(frozenset({"log", "view", "visualize"}), bare_reads=False),
    "apply": _git_apply,
    "archive": _git_archive,
    "filter-branch": _git_history_rewrite,
    "filter-repo": _git_history_rewrite,
}
