"""What a command line names on disk: the ``paths`` and ``opaque`` of a classification.

Every word that may name a path (arguments that are not options, the values of ``--opt=VALUE``,
redirection targets, a command word with a ``/``) is expanded as bash would (see :mod:`.expand`)
against every directory the line may be in at that point: the starting directory and each
``cd``/``pushd`` target seen so far (a ``cd`` inside a subshell may or may not still apply, so
all of them are kept). A word that cannot be expanded statically makes the line ``opaque``.
Arguments of pure data commands (``echo``, ``printf``, assignments) are not paths.
"""

from __future__ import annotations

import os

from infomark.gates import shell_fs as fs
from infomark.gates.shell.core import State, ws
from infomark.gates.shell.expand import expand_word
from infomark.gates.shell.words import _text, _word

TYPE_CHECKING = False  # typing costs a hook's start-up
if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["assignment", "command_paths", "redirect_paths", "redirects_of"]

_DATA = ws(
    "echo printf : true false alias export local declare readonly typeset unset set shopt "
    "return exit break continue shift trap hash type command builtin let test ["
)
_CD = ws("cd pushd")
_MAX_CWDS = 16
_PATH_MAX = 4096


def redirects_of(node: Node) -> list[Node]:
    """The redirections of the statement whose body is ``node`` (none when it has none)."""
    parent = node.parent
    if parent is not None and parent.type == "redirected_statement":
        body = parent.child_by_field_name("body")
        if body is not None and body == node:
            return parent.children_by_field_name("redirect")
    return []


def _raw_args(nodes: list[Node], redirects: list[Node], src: bytes) -> list[str]:
    """The arguments as written, pieces that touch merged (``a"b"$(c)`` is one word)."""
    for redirect in redirects:
        if redirect.type == "file_redirect":
            nodes = [*nodes, *redirect.children_by_field_name("destination")[1:]]
    out: list[str] = []
    prev_end = -1
    for child in nodes:
        start = child.start_byte
        while start >= 2 and src[start - 2 : start] in (b"\\ ", b"\\\t") and start - 2 >= prev_end:
            start -= 2  # tree-sitter drops a leading escaped blank (`\\ a` is the word " a")
        text = src[start : child.end_byte].decode("utf-8", "replace")
        if start == prev_end and out:
            out[-1] += text
        else:
            out.append(text)
        prev_end = child.end_byte
    return out


_GLOB_CHARS = frozenset("*?[")
_GLOB_SHOPTS = ws("dotglob globstar extglob nocaseglob nullglob failglob globasciiranges")


def _note(raw: str, state: State) -> None:
    key = (raw, len(state.cwds))
    if key in state.noted:  # the same word in the same directories: nothing new
        return
    state.noted.add(key)
    if _GLOB_CHARS & set(raw) and not any(q in raw for q in "'\"\\"):
        if state.glob_changed:
            state.opaque = True  # bash's glob options changed on this line: expansion unknown
            return
        if "**" in raw:
            _globstar(raw, state)
    for base in list(state.cwds):
        fields = expand_word(raw, base, budget=state.glob_budget)
        if fields is None:
            state.opaque = True
            return
        for field in fields:
            if field and len(field) <= _PATH_MAX:
                state.path(field, base)


def command_paths(
    name_node: Node,
    arg_nodes: list[Node],
    redirects: list[Node],
    name: str | None,
    word: str | None,
    src: bytes,
    state: State,
) -> None:
    """Record the paths one simple command names (and follow ``cd``). ``arg_nodes`` are its
    arguments without the pieces glued to the command word."""
    if word is not None and "/" in word:
        _note(word if _plain(word) else _text(name_node, src), state)
    if name == "shopt" and arg_nodes:
        words = _raw_args(arg_nodes, redirects, src)
        if "-s" in words and _GLOB_SHOPTS & set(words):
            state.glob_changed = True
    if name in _DATA:
        return
    if not arg_nodes and not redirects:
        if name in _CD:
            _cd([], state)
        return
    args = _raw_args(arg_nodes, redirects, src)
    if name in _CD:
        _cd(args, state)
        return
    patterns = _PATTERN_OPTIONS.get(name or "", frozenset())
    skip = 0
    for raw in args:
        if skip:
            if skip > 0 or not raw.startswith("-"):
                skip -= 1 if skip > 0 else 0
                continue
            skip = 0
        if raw.startswith("-"):
            key, eq, value = raw.partition("=")
            if _unquoted(key) in patterns:
                # a pattern of what to skip or match (`--exclude-dir=.infomark`), not a path
                skip = 0 if eq else (-1 if name == "zip" else 1)
                continue
            if not eq or not value or not key[1:].replace("-", "").isalnum():
                continue
            raw = value
        _note(raw, state)


# Options whose values are name patterns, not paths: `grep -r --exclude-dir=.infomark`
# does not read the home (the walk itself is judged in protect.py). zip's -x/-i take every
# word up to the next option.
_PATTERN_OPTIONS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("grep", "egrep", "fgrep", "rgrep"), ws("--exclude-dir --exclude --include")),
    "rg": ws("-g --glob --iglob"),
    **dict.fromkeys(("ag", "ack", "ack-grep"), ws("--ignore --ignore-dir")),
    "diff": ws("-x --exclude"),
    "rsync": ws("--exclude --include"),
    **dict.fromkeys(("tar", "gtar", "bsdtar"), ws("--exclude")),
    "zip": ws("-x -i --exclude --include"),
    "find": ws("-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname"),
}


def _unquoted(word: str) -> str:
    return word if _plain(word) else ""


def _globstar(raw: str, state: State) -> None:
    """``**`` recurses under globstar (and always in zsh): a walk from its literal prefix
    that skips hidden entries, as both shells do by default."""
    from infomark.kernel.tools import Walk

    parts = raw.split("/")
    k = next(i for i, p in enumerate(parts) if _GLOB_CHARS & set(p))
    prefix = "/".join(parts[:k]) or ("/" if raw.startswith("/") else ".")
    for base in state.cwds:
        root = os.path.normpath(os.path.join(base, fs.expanduser(prefix)))
        walk = Walk(root=root, command=raw, what="expands to", skip_hidden=True)
        if walk not in state.walks:
            state.walks.append(walk)


def _plain(word: str) -> bool:
    return not any(ch in word for ch in "'\"\\$`*?[{~")


def _cd(args: list[str], state: State) -> None:
    targets = [a for a in args if not (a.startswith("-") and a != "-")]
    if any(a.startswith("-") and set(a[1:]) - set("LPe@") for a in args):
        state.opaque = True
        return
    if not targets:
        new = [fs.expanduser("~")]
    elif targets[0] == "-":
        state.opaque = True
        return
    else:
        new = []
        for base in list(state.cwds):
            fields = expand_word(targets[0], base, budget=state.glob_budget)
            if fields is None or len(fields) != 1:
                state.opaque = True
                return
            new.append(os.path.normpath(os.path.join(base, fields[0])))
    for cwd in new:
        state.path(cwd)
        if cwd not in state.cwds:
            if len(state.cwds) >= _MAX_CWDS:
                state.opaque = True
                return
            state.cwds.append(cwd)


def redirect_paths(node: Node, src: bytes, state: State) -> None:
    """A redirection's target (read or written) is a path; ``>&2`` and ``<&-`` are not."""
    dest = node.child_by_field_name("destination")
    if dest is None:
        return
    if dest.type == "number":
        return
    raw = _text(dest, src)
    if raw == "-":
        return
    _note(raw, state)


def assignment(node: Node, src: bytes, state: State) -> None:
    """``NAME=value``: remember the value (a computed command word may be this name)."""
    name = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    if name is None:
        return
    if _text(name, src) == "GLOBIGNORE":
        state.glob_changed = True  # a set GLOBIGNORE turns dotglob on
    if value is None:
        state.variables[_text(name, src)] = ""
        return
    static = _word(value, src).value
    # a computed value is kept as written: `X=$(which infomark)` still names infomark
    state.variables[_text(name, src)] = static if static is not None else _text(value, src)
