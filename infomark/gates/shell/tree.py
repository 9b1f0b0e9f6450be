"""The tree walk: parse with tree-sitter-bash, visit every node, hand each simple command to its
handler, classify file redirections, and follow code that runs one level deeper.

Only the standard library is imported at module load; ``tree_sitter`` and ``tree_sitter_bash``
are imported on the first parse. One parser is kept per process (guarded by a lock).
"""

from __future__ import annotations

import _thread
import os
import sys

from infomark.gates import shell_fs as fs
from infomark.gates.shell import lookup
from infomark.gates.shell.core import (
    DESTRUCTIVE,
    MODIFY,
    Arg,
    Env,
    Handler,
    State,
    Stdin,
    fail_closed,
    read_small,
    result,
    short,
    ws,
)
from infomark.gates.shell.envcode import code_variable
from infomark.gates.shell.resolve import assignment, command_paths, redirect_paths, redirects_of
from infomark.gates.shell.words import (
    BLOCK_DEVICE,
    NULL_SINKS,
    _join,
    _text,
    _word,
    _words,
)
from infomark.kernel.lazyre import lazy_compile
from infomark.kernel.tools import Classification

TYPE_CHECKING = False  # typing costs a hook's start-up
if TYPE_CHECKING:
    from types import ModuleType

    from tree_sitter import Node, Parser, Tree

__all__ = ["MAX_COMMAND_CHARS", "MAX_DEPTH", "classify_shell"]

MAX_COMMAND_CHARS = 65_536
"""Longer command lines are not analysed; they fail closed to modify."""

MAX_DEPTH = 8
"""How deep nested shell code (``bash -c "sh -c '…'"``) is followed before failing closed."""

_MAX_NODES = 400_000
_PLAIN_WORD = lazy_compile(rb"[A-Za-z0-9_./+:,@%-]+")

# ---------------------------------------------------------------------------------------------
# Parser (lazy, one per process)

_PARSER_LOCK = _thread.allocate_lock()
_PARSER: list[Parser] = []


# tree-sitter-bash's external scanner (brace_start) calls the C library's isdigit() on the
# character after `{` and after `{N..`: undefined for code points above 255, and a segfault when
# the out-of-bounds table read lands on unmapped memory (found by the property tests). Such a
# character is replaced, for the parser only, by ASCII word characters of the same UTF-8 length,
# so node byte offsets still index the original text.
_BRACE_HAZARD = lazy_compile(
    rb"(\{[0-9]*(?:\.\.[0-9]*)?)"
    rb"([\xc4-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3})"
)


def _parser_safe(data: bytes) -> bytes:
    if b"<<" in data:
        data = _heredoc_safe(data)
    if b"{" not in data:
        return data
    return _BRACE_HAZARD.sub(lambda m: m.group(1) + b"x" * len(m.group(2)), data)


# bash ends a here-doc only at a line that is exactly its delimiter; tree-sitter-bash also ends
# it at a line that merely starts with it (`EOF = "end of input"` inside `<<'EOF'`). Such body
# lines get their first byte changed, for the parser only (offsets and the body text the
# classifier reads stay the original's).
_HEREDOC_START = lazy_compile(
    rb"(?<!<)<<(?!<)(-?)[ \t]*(?:'([^'\n]+)'|\"([^\"\n]+)\"|\\?([A-Za-z_][A-Za-z0-9_.-]*))"
)


def _heredoc_safe(data: bytes) -> bytes:
    out = bytearray(data)
    pos = 0
    while True:
        m = _HEREDOC_START.search(data, pos)
        if m is None:
            return bytes(out)
        delim = m.group(2) or m.group(3) or m.group(4) or b""
        line_end = data.find(b"\n", m.end())
        if line_end < 0 or not delim:
            return bytes(out)
        start = line_end + 1
        pos = m.end()
        while start < len(data):
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end
            line = data[start:end]
            if m.group(1):
                line = line.lstrip(b"\t")
            if line == delim:
                break
            if line.startswith(delim):
                k = end - len(line)
                out[k] = ord("x") if delim[:1] != b"x" else ord("y")
            start = end + 1


def _parse(data: bytes) -> Tree:
    """Parse ``data``; node offsets index ``data`` itself (see ``_parser_safe``)."""
    data = _parser_safe(data)
    with _PARSER_LOCK:
        if not _PARSER:
            binding = _tree_sitter()
            parser: Parser = binding.Parser(binding.Language(_bash_language()))
            _PARSER.append(parser)
        return _PARSER[0].parse(data)


def _tree_sitter() -> ModuleType:
    """``tree_sitter``'s extension module ``_binding`` (``Parser``, ``Language``, ``Node``).

    The package's ``__init__`` only re-exports the binding and declares a ``typing.Protocol``
    for query predicates, and ``typing`` with ``warnings`` costs a Bash call ~15 M
    instructions. So the binding is loaded from where ``import tree_sitter`` would find it
    and registered under its own name, so that a later ``import tree_sitter`` (a test, the
    CLI) takes the same module, with the same ``Node`` and ``Parser`` types. The package is
    used when it is imported already, and for anything unexpected.
    """
    loaded = sys.modules.get("tree_sitter._binding")
    if loaded is not None:
        return loaded
    if "tree_sitter" not in sys.modules:
        found = _extension("tree_sitter", "_binding")
        if found is not None:
            return found
    import tree_sitter

    return tree_sitter


def _extension(package: str, name: str, *, register: bool = True) -> ModuleType | None:
    """``package.name``, an extension module, loaded without ``package``'s ``__init__`` from
    the first ``sys.path`` entry that holds ``package`` (the one an import takes); None when
    that entry does not hold it as expected.

    The loader classes come from the import system's own frozen modules (always loaded):
    ``importlib.machinery`` re-exports the same classes, but importing it runs the
    ``importlib`` package (with ``warnings``), ~1.7 M instructions on a Bash call."""
    from _frozen_importlib import ModuleSpec
    from _frozen_importlib_external import EXTENSION_SUFFIXES, ExtensionFileLoader

    for entry in sys.path:
        folder = os.path.join(entry or os.curdir, package)
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            continue  # the first entry with the package is the one an import takes
        for suffix in EXTENSION_SUFFIXES:
            path = os.path.join(folder, name + suffix)
            if os.path.isfile(path):
                full = f"{package}.{name}"
                loader = ExtensionFileLoader(full, path)
                module = loader.create_module(ModuleSpec(full, loader, origin=path))
                if register:
                    sys.modules[full] = module
                loader.exec_module(module)
                return module
        return None
    return None


def _bash_language() -> object:
    """``tree_sitter_bash.language()`` without running that package's ``__init__``.

    The package's ``__init__`` imports :mod:`importlib.resources` for its highlight queries
    (with ``tempfile``, ``shutil``, ``random``, ``typing`` and ``pathlib``: ~46 M instructions,
    a third of a hook call), and the grammar lives in its extension module ``_binding``. So
    the binding is loaded from where ``import tree_sitter_bash`` would find it (the first
    ``sys.path`` entry holding the package); anything unexpected takes the package import.
    """
    if "tree_sitter_bash" not in sys.modules:
        binding = _extension("tree_sitter_bash", "_binding", register=False)
        if binding is not None:
            language: object = binding.language()
            return language
    import tree_sitter_bash

    return tree_sitter_bash.language()


class _Walker:
    """The services handlers reach through ``env.state.walker`` (see :class:`.core.Walker`)."""

    def nested(self, code: str, state: State, depth: int, where: str) -> None:
        _nested(code, state, depth, where)

    def stdin_of(self, node: Node, src: bytes) -> Stdin:
        return _stdin_of(node, src)

    def lookup(self, word: str) -> tuple[str | None, Handler | None]:
        return lookup.lookup(word)

    def module(self, name: str) -> Handler | None:
        return lookup.module_handler(name)


_WALKER = _Walker()


def classify_shell(command: str, cwd: str | None = None) -> Classification:
    """Classify a shell command line as execute, modify or destructive. Never raises.

    ``cwd`` is the directory the command starts in (default: this process's); relative paths,
    globs and ``cd`` chains are resolved against it into ``paths``.

    ``families`` names the destructive families found (``file``, ``git``, ``db``); ``reasons``
    name the commands that decided the class, e.g. "`rm -rf build` deletes recursively or by
    force (file)".
    """
    try:
        if not isinstance(command, str):
            return fail_closed(f"command is a {type(command).__name__}, not a string")
        if len(command) > MAX_COMMAND_CHARS:
            return fail_closed(
                f"command is {len(command)} characters (limit {MAX_COMMAND_CHARS}), not analysed"
            )
        if "\x00" in command:
            return fail_closed("command contains a NUL byte")
        try:
            data = command.encode("utf-8")
        except UnicodeEncodeError:
            return fail_closed("command is not valid Unicode (lone surrogate)")
        start = fs.start_dir(cwd)
        state = State(_WALKER, start, text=command)
        _source(data, state, 0)
        return result(state)
    except Exception as exc:  # defensive: a classifier bug must not open the gate
        return fail_closed(f"internal error while classifying ({type(exc).__name__})")


def _source(data: bytes, state: State, depth: int, *, retry: bool = True) -> None:
    """Parse ``data`` as shell code and classify everything in it into ``state``."""
    if depth > MAX_DEPTH:
        state.add(
            MODIFY, f"shell code nested deeper than {MAX_DEPTH} levels: failing closed to modify"
        )
        return
    tree = _parse(data)
    root = tree.root_node
    if root.has_error:
        state.opaque = True  # words in the damaged part are not read: fail closed
        state.add(MODIFY, _syntax_reason(root, data))
        if retry and b"((" in data:
            # bash reads `((a); (b))` as nested subshells when it is not arithmetic;
            # tree-sitter only knows arithmetic. Look at the subshell reading too.
            _source(data.replace(b"((", b"( ("), state, depth, retry=False)
    _walk(root, data, state, depth)


def _nested(code: str, state: State, depth: int, where: str) -> None:
    """Classify ``code`` (a ``-c`` string, a here-doc fed to a shell …) one level deeper."""
    if "\x00" in code:
        state.add(MODIFY, f"{where} contains a NUL byte: failing closed to modify")
        return
    try:
        data = code.encode("utf-8")
    except UnicodeEncodeError:
        state.add(MODIFY, f"{where} is not valid Unicode: failing closed to modify")
        return
    _source(data, state, depth + 1)


def _syntax_reason(root: Node, src: bytes) -> str:
    node = root
    for _ in range(10_000):
        if node.is_error or node.is_missing:
            break
        nxt = next((c for c in node.children if c.has_error or c.is_missing), None)
        if nxt is None:
            break
        node = nxt
    row, col = node.start_point
    near = short(src[node.start_byte : node.end_byte].decode("utf-8", "replace"))
    what = f"missing `{node.type}`" if node.is_missing else f"syntax error near `{near}`"
    return (
        f"unparseable shell ({what} at line {row + 1}, column {col + 1}): failing closed to modify"
    )


_LEAVES = ws(
    "word raw_string string_content comment number variable_name heredoc_start heredoc_end "
    "heredoc_content ansi_c_string file_descriptor test_operator regex special_variable_name"
)


_MAY_NEST = lazy_compile(rb"[$`<>]")  # a command without these holds no code or redirection


def _walk(root: Node, src: bytes, state: State, depth: int) -> None:
    """Visit every node in document order (a tree cursor: about twice as fast as child lists)."""
    cursor = root.walk()
    while True:
        node = cursor.node
        if node is None:  # pragma: no cover - a cursor always has a node
            return
        state.nodes += 1
        if state.nodes > _MAX_NODES:
            if not state.exhausted:
                state.exhausted = True
                state.add(MODIFY, "command too large to analyse: failing closed to modify")
            return
        kind = node.type
        descend = kind not in _LEAVES
        if descend:
            if kind == "command":
                _command(node, src, state, depth)
                descend = _MAY_NEST.search(src, node.start_byte, node.end_byte) is not None
            elif kind == "file_redirect":
                _file_redirect(node, src, state)
            elif kind == "variable_assignment":
                assignment(node, src, state)
                if node.parent is None or node.parent.type != "command":
                    _code_variable(node, src, state, depth)  # a prefix's: in `_command`
            elif kind == "command_substitution":
                _backtick_escapes(node, src, state, depth)
            elif kind == "heredoc_redirect":
                _heredoc_substitutions(node, src, state, depth)
            if descend and cursor.goto_first_child():
                continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def _code_variable(node: Node, src: bytes, state: State, depth: int) -> None:
    """``GIT_PAGER='touch f' git log``: a variable whose value some program runs."""
    name = node.child_by_field_name("name")
    if name is None or not src[name.start_byte : name.end_byte].isupper():
        return
    value = node.child_by_field_name("value")
    where = "`" + short(src[node.start_byte : node.end_byte].decode("utf-8", "replace")) + "`"
    word = _word(value, src) if value is not None else Arg("", "")
    code_variable(_text(name, src), word, state, depth, where)


def _backtick_escapes(node: Node, src: bytes, state: State, depth: int) -> None:
    """`` `a \\`b\\`` `` runs ``b`` too; tree-sitter reads the escaped backticks as a word."""
    text = _text(node, src)
    if text.startswith("`") and "\\`" in text:
        inner = text[1:-1] if text.endswith("`") and len(text) > 1 else text[1:]
        inner = inner.replace("\\\\", "\\").replace("\\`", "`").replace("\\$", "$")
        _nested(inner, state, depth, "nested backtick substitution")


def _heredoc_quoted(node: Node, src: bytes) -> bool:
    for child in node.children:
        if child.type == "heredoc_start":
            return any(ch in _text(child, src) for ch in "'\"\\")
    return True


def _heredoc_body(node: Node, src: bytes) -> str:
    for child in node.children:
        if child.type == "heredoc_body":
            return _text(child, src)
    return ""


def _heredoc_substitutions(node: Node, src: bytes, state: State, depth: int) -> None:
    """An unquoted here-doc expands `` `…` `` and ``$( … )``; tree-sitter skips backticks."""
    if _heredoc_quoted(node, src):
        return
    body = _heredoc_body(node, src)
    if "`" in body:
        for code in _backtick_segments(body):
            _nested(code, state, depth, "backtick substitution in a here-doc")


def _backtick_segments(text: str) -> list[str]:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "`":
            j = i + 1
            while j < n and text[j] != "`":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i + 1 : j])
            i = j + 1
            continue
        i += 1
    return out


_WRITE_OPS = ws("> >> &> &>> >|")


def _redirect_op(node: Node) -> str | None:
    for child in node.children:
        if not child.is_named:
            return child.type
    return None


def _stmt_snippet(node: Node, src: bytes) -> str:
    top = node
    parent = node.parent
    while parent is not None and parent.type in ("redirected_statement", "heredoc_redirect"):
        top = parent
        parent = parent.parent
    text = _text(top, src)
    return "`" + short(text.split("\n", 1)[0]) + "`"


def _file_redirect(node: Node, src: bytes, state: State) -> None:
    op = _redirect_op(node)
    redirect_paths(node, src, state)
    if op is None or (op not in _WRITE_OPS and op != ">&"):
        return
    dest = node.child_by_field_name("destination")
    if dest is None:
        return
    target = _word(dest, src)
    if op == ">&" and (dest.type == "number" or target.value == "-"):
        return  # fd duplication / closing, not a file
    where = _stmt_snippet(node, src)
    if target.value is None:
        state.add(MODIFY, f"{where} redirects output to a computed path")
    elif target.value in NULL_SINKS:
        return
    elif BLOCK_DEVICE.match(target.value):
        state.add(
            DESTRUCTIVE, f"{where} writes straight to block device {target.value} (file)", "file"
        )
    else:
        state.add(MODIFY, f"{where} writes {target.value} (redirect)")


def _command(node: Node, src: bytes, state: State, depth: int) -> None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return
    env = Env(state, node, src, depth)
    for child in node.children:
        if child.type == "variable_assignment":  # `GIT_PAGER=… git log`
            _code_variable(child, src, state, depth)
    raw = src[name_node.start_byte : name_node.end_byte]
    arg_nodes = _fd_prefixes_dropped(node, node.children_by_field_name("argument"))
    glued = 0  # tree-sitter splits `i'n'\fomark` after a quote: bash reads one word
    end = name_node.end_byte
    while glued < len(arg_nodes) and arg_nodes[glued].start_byte == end:
        end = arg_nodes[glued].end_byte
        glued += 1
    if glued:
        word: str | None = _join([_word(name_node, src), *_words(arg_nodes[:glued], src)]).value
        arg_nodes = arg_nodes[glued:]
    elif _PLAIN_WORD.fullmatch(raw):  # fast path: no quotes, escapes or expansions
        word = raw.decode("ascii")
    else:
        word = _word(name_node, src).value
    if word is not None and word in state.aliases and depth <= MAX_DEPTH:
        rest = src[name_node.end_byte : node.end_byte].decode("utf-8", "replace")
        env.nested(state.aliases[word] + rest, f"alias `{word}`")
        return
    if word is not None and word in state.hashed:
        word = state.hashed[word]
    if word is None:
        _computed_name(env, _text(name_node, src))
        return
    name, handler = lookup.lookup(word)
    redirects = redirects_of(node)
    command_paths(name_node, arg_nodes, redirects, name, word, src, state)
    if name is None:
        env.opaque("has a glob or brace pattern as its command name (opaque)", "opaque_command")
        return
    if handler is None:
        env.execute()
        return
    args = _words(arg_nodes, src)
    for redirect in redirects:
        if redirect.type == "file_redirect":
            # `cmd > out -x y`: tree-sitter files -x and y under the redirect; bash passes them
            # to cmd.
            args.extend(_words(redirect.children_by_field_name("destination")[1:], src))
    handler(name, args, env)


def _fd_prefixes_dropped(node: Node, args: list[Node]) -> list[Node]:
    """``sh 0<<< CODE``: tree-sitter reads the descriptor of a here-string as an argument."""
    starts = {c.start_byte for c in node.children if c.type.endswith("_redirect")}
    if not starts:
        return args
    return [a for a in args if not (a.type == "number" and a.end_byte in starts)]


def _computed_name(env: Env, written: str) -> None:
    """A command word that is a variable or a substitution: fail closed, and say whether it
    may be infomark itself (``X=infomark; $X record``, ``$(which infomark) record``)."""
    state = env.state
    named = "infomark" in written.lower()
    for key, value in state.variables.items():
        if ("$" + key in written or "${" + key in written) and "infomark" in value.lower():
            named = True
    if named:
        state.mark("infomark")
    env.opaque("has a computed command name (opaque)", "opaque_command")


def _stdin_of(node: Node, src: bytes) -> Stdin:
    for child in node.children:
        if child.type == "herestring_redirect":
            named = child.named_children
            if named:
                word = _word(named[-1], src)
                return Stdin(
                    "text", word.approx, label="from a here-string", exact=word.value is not None
                )
    own = _redirect_stdin(node, src)
    if own is not None:
        return own
    stmt = node
    if redirects_of(node) and node.parent is not None:
        stmt = node.parent
    # A command reads what its pipeline feeds it, else what a redirect of an enclosing
    # compound statement (`if …; fi <<< X`, `while …; done < F`, `… | { sh; }`) feeds it.
    while stmt is not None and stmt.type not in _STDIN_BARRIERS:
        parent = stmt.parent
        if parent is None:
            break
        if parent.type == "pipeline":
            prev = stmt.prev_named_sibling
            if prev is not None:
                return _pipe_stdin(prev, src)
            grand = parent.parent
            if grand is not None and grand.type == "heredoc_redirect":  # `cat <<X | cmd`
                owner = grand.parent
                first = owner.child_by_field_name("body") if owner is not None else None
                text = None
                if first is not None and first.type == "command" and _is_plain_cat(first, src):
                    text = _heredoc_body(grand, src)
                return Stdin("pipe", text, label="from a here-doc through a pipe")
        elif parent.type == "redirected_statement" and stmt.type != "command":
            outer = _redirect_stdin(parent, src)
            if outer is not None:
                return outer
        stmt = parent
    return Stdin("none")


# Code in these does not read the stdin of the statement around it.
_STDIN_BARRIERS = frozenset(
    {"command_substitution", "process_substitution", "function_definition", "program"}
)


def _redirect_stdin(node: Node, src: bytes) -> Stdin | None:
    """What a statement's own redirects feed its stdin (here-string, here-doc, ``< file``)."""
    redirects = node.children if node.type == "redirected_statement" else redirects_of(node)
    for redirect in redirects:
        if redirect.type == "herestring_redirect" and redirect.named_children:
            word = _word(redirect.named_children[-1], src)
            exact = word.value is not None
            return Stdin("text", word.approx, label="from a here-string", exact=exact)
        if redirect.type == "heredoc_redirect":
            body = _heredoc_body(redirect, src)
            exact = _heredoc_quoted(redirect, src) or not any(c in body for c in "$`\\")
            return Stdin("text", body, label="from a here-doc", exact=exact)
        if redirect.type == "file_redirect" and _redirect_op(redirect) == "<":
            dest = redirect.child_by_field_name("destination")
            path = _word(dest, src).value if dest is not None else None
            return Stdin("file", path=path, label=f"from file {path}")
    return None


def _pipe_stdin(prev: Node, src: bytes) -> Stdin:
    producer = short(src[prev.start_byte : prev.end_byte].decode("utf-8", "replace"))
    return Stdin(
        "pipe",
        _upstream_text(prev, src),
        label=f"from a pipe from `{producer}`",
        producer=producer,
        producer_input=_stdin_of(prev, src).text if prev.type == "command" else None,
    )


def _is_plain_cat(node: Node, src: bytes) -> bool:
    name = node.child_by_field_name("name")
    return (
        name is not None
        and _word(name, src).value == "cat"
        and not node.children_by_field_name("argument")
    )


def _upstream_text(node: Node, src: bytes) -> str | None:
    """Text a simple producer (echo/printf/cat) writes into a pipe, when it is knowable."""
    cmd = node
    if node.type == "redirected_statement":
        body = node.child_by_field_name("body")
        if body is None:
            return None
        cmd = body
    if cmd.type != "command":
        return None
    name_node = cmd.child_by_field_name("name")
    if name_node is None:
        return None
    name = _word(name_node, src).value
    args = _words(cmd.children_by_field_name("argument"), src)
    if name in ("echo", "printf"):
        return " ".join(a.approx for a in args)
    if name == "cat":
        if not args:
            stdin = _stdin_of(cmd, src)
            return stdin.text if stdin.kind == "text" else None
        texts = [read_small(a.value) if a.value else None for a in args]
        if any(t is None for t in texts):
            return None
        return "\n".join(t or "" for t in texts)
    return None
