"""Shell-command classification with a real bash parser (tree-sitter-bash), not regexes.

Every simple command in a command line is classified, wherever it sits: pipelines, ``&&`` /
``||`` / ``;`` lists, subshells, ``{ …; }`` groups, ``$( … )`` and backticks, if/for/while/case
bodies and function bodies. Wrappers (``sudo``, ``env``, ``timeout``, ``xargs`` …) are looked
through, and the code strings of ``sh -c`` / ``bash -c`` / ``zsh -c`` (and a few other places that
take shell code) are parsed recursively. The overall class is the most severe one found:
destructive > modify > execute.

Text that is only data never counts: quoted arguments, here-doc bodies and commit messages are
words, not commands. The exceptions are deliberate: the ``-c`` strings of shells, SQL handed to SQL
clients (``psql``/``sqlite3``/``mysql``, including here-docs, here-strings and ``.sql`` files) and
code fed to a shell on stdin. ``$( … )`` inside double quotes or an unquoted here-doc *does* run,
and is classified.

Anything the classifier cannot read with confidence fails closed to ``modify``: syntax errors,
computed command names, ``eval`` / ``source``, inline interpreter code, NUL bytes, invalid Unicode,
oversized input. :func:`classify_shell` never raises.

Only the standard library is imported at module load; ``tree_sitter`` and ``tree_sitter_bash`` are
imported on the first parse. One parser is kept per process (guarded by a lock).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from infomark.kernel.tools import Classification, ToolClass

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Tree

__all__ = ["MAX_COMMAND_CHARS", "MAX_DEPTH", "SQL_FILE_LIMIT", "classify_shell"]

MAX_COMMAND_CHARS = 65_536
"""Longer command lines are not analysed; they fail closed to modify."""

MAX_DEPTH = 8
"""How deep nested shell code (``bash -c "sh -c '…'"``) is followed before failing closed."""

SQL_FILE_LIMIT = 1_000_000
"""``.sql`` files handed to a SQL client are read and scanned when smaller than this (bytes)."""

_MAX_NODES = 400_000
_MAX_REASONS = 12
_MAX_SQL_INCLUDES = 3
_SNIPPET = 72

_EXECUTE, _MODIFY, _DESTRUCTIVE = 0, 1, 2
_CLASS_OF = {
    _EXECUTE: ToolClass.EXECUTE,
    _MODIFY: ToolClass.MODIFY,
    _DESTRUCTIVE: ToolClass.DESTRUCTIVE,
}


def _ws(words: str) -> frozenset[str]:
    """A word table written as one space-separated string."""
    return frozenset(words.split())


_PLACEHOLDER = "VAR"  # stands in for an expansion when a computed string is still scanned
_NULL_SINKS = frozenset(
    {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/1", "/dev/fd/2"}
)
_BLOCK_DEVICE = re.compile(
    r"^/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d|md\d|dm-\d|mapper/|loop\d)"
)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")

# ---------------------------------------------------------------------------------------------
# Parser (lazy, one per process)

_PARSER_LOCK = threading.Lock()
_PARSER: list[Parser] = []


# tree-sitter-bash's external scanner (brace_start) calls the C library's isdigit() on the
# character after `{` and after `{N..`: undefined for code points above 255, and a segfault when
# the out-of-bounds table read lands on unmapped memory (found by the property tests). Such a
# character is replaced, for the parser only, by ASCII word characters of the same UTF-8 length,
# so node byte offsets still index the original text.
_BRACE_HAZARD = re.compile(
    rb"(\{[0-9]*(?:\.\.[0-9]*)?)"
    rb"([\xc4-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3})"
)


def _parser_safe(data: bytes) -> bytes:
    if b"{" not in data:
        return data
    return _BRACE_HAZARD.sub(lambda m: m.group(1) + b"x" * len(m.group(2)), data)


def _parse(data: bytes) -> Tree:
    """Parse ``data``; node offsets index ``data`` itself (see ``_parser_safe``)."""
    data = _parser_safe(data)
    with _PARSER_LOCK:
        if not _PARSER:
            import tree_sitter_bash
            from tree_sitter import Language, Parser

            _PARSER.append(Parser(Language(tree_sitter_bash.language())))
        return _PARSER[0].parse(data)


# ---------------------------------------------------------------------------------------------
# Findings


@dataclass(slots=True)
class _State:
    # (severity, family, command or None, what); reasons are formatted only for the winners
    findings: list[tuple[int, str | None, _Env | None, str]] = field(default_factory=list)
    nodes: int = 0
    exhausted: bool = False

    def add(self, severity: int, reason: str, family: str | None = None) -> None:
        self.findings.append((severity, family, None, reason))


def _result(state: _State) -> Classification:
    if not state.findings:
        return Classification(ToolClass.EXECUTE, (), ("no command runs",))
    top = max(f[0] for f in state.findings)
    reasons: list[str] = []
    families: list[str] = []
    more = formatted = 0
    for severity, family, env, what in state.findings:
        if severity != top:
            continue
        if family and top == _DESTRUCTIVE and family not in families:
            families.append(family)
        if len(reasons) >= _MAX_REASONS - 1 or formatted >= 3 * _MAX_REASONS:
            more += 1  # formatting every reason would cost more than the parse
            continue
        formatted += 1
        reason = what if env is None else env.reason(what, family)
        if reason not in reasons:
            reasons.append(reason)
    if more:
        reasons.append(f"… and {more} more")
    return Classification(_CLASS_OF[top], tuple(sorted(families)), tuple(reasons))


def _fail_closed(why: str) -> Classification:
    return Classification(ToolClass.MODIFY, (), (f"{why}: failing closed to modify",))


def _short(text: str) -> str:
    one = " ".join(text.split())
    if len(one) > _SNIPPET:
        one = one[: _SNIPPET - 1].rstrip() + "…"
    return one


# ---------------------------------------------------------------------------------------------
# Entry point


def classify_shell(command: str) -> Classification:
    """Classify a shell command line as execute, modify or destructive. Never raises.

    ``families`` names the destructive families found (``file``, ``git``, ``db``); ``reasons``
    name the commands that decided the class, e.g. "`rm -rf build` deletes recursively or by
    force (file)".
    """
    try:
        if not isinstance(command, str):
            return _fail_closed(f"command is a {type(command).__name__}, not a string")
        if len(command) > MAX_COMMAND_CHARS:
            return _fail_closed(
                f"command is {len(command)} characters (limit {MAX_COMMAND_CHARS}), not analysed"
            )
        if "\x00" in command:
            return _fail_closed("command contains a NUL byte")
        try:
            data = command.encode("utf-8")
        except UnicodeEncodeError:
            return _fail_closed("command is not valid Unicode (lone surrogate)")
        state = _State()
        _source(data, state, 0)
        return _result(state)
    except Exception as exc:  # defensive: a classifier bug must not open the gate
        return _fail_closed(f"internal error while classifying ({type(exc).__name__})")


def _source(data: bytes, state: _State, depth: int, *, retry: bool = True) -> None:
    """Parse ``data`` as shell code and classify everything in it into ``state``."""
    if depth > MAX_DEPTH:
        state.add(
            _MODIFY, f"shell code nested deeper than {MAX_DEPTH} levels: failing closed to modify"
        )
        return
    tree = _parse(data)
    root = tree.root_node
    if root.has_error:
        state.add(_MODIFY, _syntax_reason(root, data))
        if retry and b"((" in data:
            # bash reads `((a); (b))` as nested subshells when it is not arithmetic;
            # tree-sitter only knows arithmetic. Look at the subshell reading too.
            _source(data.replace(b"((", b"( ("), state, depth, retry=False)
    _walk(root, data, state, depth)


def _nested(code: str, state: _State, depth: int, where: str) -> None:
    """Classify ``code`` (a ``-c`` string, a here-doc fed to a shell …) one level deeper."""
    if "\x00" in code:
        state.add(_MODIFY, f"{where} contains a NUL byte: failing closed to modify")
        return
    try:
        data = code.encode("utf-8")
    except UnicodeEncodeError:
        state.add(_MODIFY, f"{where} is not valid Unicode: failing closed to modify")
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
    near = _short(src[node.start_byte : node.end_byte].decode("utf-8", "replace"))
    what = f"missing `{node.type}`" if node.is_missing else f"syntax error near `{near}`"
    return (
        f"unparseable shell ({what} at line {row + 1}, column {col + 1}): failing closed to modify"
    )


# ---------------------------------------------------------------------------------------------
# Tree walk

_LEAVES = _ws(
    "word raw_string string_content comment number variable_name heredoc_start heredoc_end "
    "heredoc_content ansi_c_string file_descriptor test_operator regex special_variable_name"
)


_MAY_NEST = re.compile(rb"[$`<>]")  # a command without these holds no code or redirection


def _walk(root: Node, src: bytes, state: _State, depth: int) -> None:
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
                state.add(_MODIFY, "command too large to analyse: failing closed to modify")
            return
        kind = node.type
        descend = kind not in _LEAVES
        if descend:
            if kind == "command":
                _command(node, src, state, depth)
                descend = _MAY_NEST.search(src, node.start_byte, node.end_byte) is not None
            elif kind == "file_redirect":
                _file_redirect(node, src, state)
            elif kind == "command_substitution":
                _backtick_escapes(node, src, state, depth)
            elif kind == "heredoc_redirect":
                _heredoc_substitutions(node, src, state, depth)
            if descend and cursor.goto_first_child():
                continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def _text(node: Node, src: bytes) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _backtick_escapes(node: Node, src: bytes, state: _State, depth: int) -> None:
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


def _heredoc_substitutions(node: Node, src: bytes, state: _State, depth: int) -> None:
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


# ---------------------------------------------------------------------------------------------
# Words


@dataclass(frozen=True, slots=True)
class _Arg:
    value: str | None  # the word after quote removal; None when it depends on an expansion
    approx: str  # the same with expansions replaced by a placeholder (for scanning)


_DYNAMIC = _ws(
    "simple_expansion expansion command_substitution arithmetic_expansion process_substitution "
    "brace_expression"
)


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _unescape_dq(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_HEX = re.compile(r"[0-9a-fA-F]+")
_OCT = re.compile(r"[0-7]{1,3}")


def _ansi_c(body: str) -> str:
    """Decode the body of ``$'…'``."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[nxt])
            i += 2
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            m = _HEX.match(body, i + 2, min(n, i + 2 + width))
            if m:
                code = int(m.group(), 16)
                out.append(chr(code) if code <= 0x10FFFF else "")
                i = m.end()
            else:
                out.append("\\" + nxt)
                i += 2
        elif nxt in "01234567":
            m = _OCT.match(body, i + 1)
            assert m is not None
            out.append(chr(int(m.group(), 8) & 0xFF))
            i = m.end()
        elif nxt == "c" and i + 2 < n:
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + nxt)
            i += 2
    return "".join(out)


def _string_arg(node: Node, src: bytes) -> _Arg:
    """A double-quoted string: literal text between its expansions (tree-sitter drops newlines
    from ``string_content`` children, so the text is taken from the byte ranges)."""
    start, end = node.start_byte + 1, node.end_byte - 1
    parts: list[str] = []
    approx: list[str] = []
    static = True
    pos = start
    for child in node.children:
        if not child.is_named or child.type == "string_content":
            continue
        lit = _unescape_dq(src[pos : child.start_byte].decode("utf-8", "replace"))
        parts.append(lit)
        approx.append(lit)
        static = False
        approx.append(_PLACEHOLDER)
        pos = max(pos, child.end_byte)
    if end > pos:
        lit = _unescape_dq(src[pos:end].decode("utf-8", "replace"))
        parts.append(lit)
        approx.append(lit)
    joined = "".join(approx)
    return _Arg("".join(parts) if static else None, joined)


def _word(node: Node, src: bytes) -> _Arg:
    kind = node.type
    if kind == "word":
        value = _unescape(_text(node, src))
        return _Arg(value, value)
    if kind == "number":
        text = _text(node, src)
        return _Arg(text, text)
    if kind == "raw_string":
        text = _text(node, src)[1:-1]
        return _Arg(text, text)
    if kind == "string":
        return _string_arg(node, src)
    if kind == "ansi_c_string":
        text = _ansi_c(_text(node, src)[2:-1])
        return _Arg(text, text)
    if kind == "command_name" and node.child_count == 1:
        return _word(node.children[0], src)
    if kind in ("translated_string", "concatenation", "command_name"):
        return _join([_word(c, src) for c in node.children if c.type != "$"])
    if kind in _DYNAMIC:
        return _Arg(None, _PLACEHOLDER)
    if kind == "$":
        return _Arg("$", "$")
    return _Arg(None, _text(node, src))


def _join(parts: Sequence[_Arg]) -> _Arg:
    approx = "".join(p.approx for p in parts)
    if any(p.value is None for p in parts):
        return _Arg(None, approx)
    return _Arg("".join(p.value or "" for p in parts), approx)


def _words(nodes: Sequence[Node], src: bytes) -> list[_Arg]:
    """Arguments, merging pieces that touch (tree-sitter splits ``$"…"`` into two)."""
    out: list[_Arg] = []
    prev: Node | None = None
    prev_dollar = False
    for node in nodes:
        arg = _Arg("", "") if node.type == "$" else _word(node, src)
        if prev is not None and node.start_byte == prev.end_byte and out:
            if prev_dollar and node.type == "string":
                out[-1] = arg
            else:
                out[-1] = _join([out[-1], arg])
        else:
            out.append(_Arg("$", "$") if node.type == "$" else arg)
        prev_dollar = node.type == "$"
        prev = node
    return out


# ---------------------------------------------------------------------------------------------
# Redirections

_WRITE_OPS = _ws("> >> &> &>> >|")


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
    return "`" + _short(text.split("\n", 1)[0]) + "`"


def _file_redirect(node: Node, src: bytes, state: _State) -> None:
    op = _redirect_op(node)
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
        state.add(_MODIFY, f"{where} redirects output to a computed path")
    elif target.value in _NULL_SINKS:
        return
    elif _BLOCK_DEVICE.match(target.value):
        state.add(
            _DESTRUCTIVE, f"{where} writes straight to block device {target.value} (file)", "file"
        )
    else:
        state.add(_MODIFY, f"{where} writes {target.value} (redirect)")


# ---------------------------------------------------------------------------------------------
# Commands


@dataclass(frozen=True, slots=True)
class _Stdin:
    kind: str  # "none" | "text" | "file" | "pipe"
    text: str | None = None  # here-doc / here-string / piped text, when known
    path: str | None = None  # `< path`
    label: str = ""


@dataclass(slots=True)
class _Env:
    """What a command handler needs: where to report, its text, and its stdin."""

    state: _State
    node: Node
    src: bytes
    depth: int
    _stdin: _Stdin | None = None
    _quoted: str | None = None

    @property
    def quoted(self) -> str:
        """The command as "`…`" for reasons (computed only when a reason is shown)."""
        if self._quoted is None:
            self._quoted = "`" + _short(_text(self.node, self.src)) + "`"
        return self._quoted

    def reason(self, what: str, family: str | None) -> str:
        suffix = f" ({family})" if family else ""
        return f"{self.quoted} {what}{suffix}"

    def add(self, severity: int, what: str, family: str | None = None) -> None:
        self.state.findings.append((severity, family, self, what))

    def execute(self, what: str = "runs; not known to modify anything") -> None:
        self.add(_EXECUTE, what)

    def modify(self, what: str) -> None:
        self.add(_MODIFY, what)

    def destroy(self, what: str, family: str) -> None:
        self.add(_DESTRUCTIVE, what, family)

    def nested(self, code: str, where: str) -> None:
        _nested(code, self.state, self.depth, f"{self.quoted} {where}")

    def stdin(self) -> _Stdin:
        if self._stdin is None:
            self._stdin = _stdin_of(self.node, self.src)
        return self._stdin


Handler = Callable[[str, list[_Arg], _Env], None]


def _command(node: Node, src: bytes, state: _State, depth: int) -> None:
    name_node = node.child_by_field_name("name")
    if name_node is None:
        return
    env = _Env(state, node, src, depth)
    raw = src[name_node.start_byte : name_node.end_byte]
    if _PLAIN_WORD.fullmatch(raw):  # fast path: no quotes, escapes or expansions
        word: str | None = raw.decode("ascii")
    else:
        word = _word(name_node, src).value
    if word is None:
        env.modify("has a computed command name (opaque)")
        return
    name, handler = _lookup(word)
    if name is None:
        env.modify("has a glob or brace pattern as its command name (opaque)")
        return
    if handler is None:
        env.execute()
        return
    args = _words(node.children_by_field_name("argument"), src)
    parent = node.parent
    if parent is not None and parent.type == "redirected_statement":
        body = parent.child_by_field_name("body")
        if body is not None and body == node:
            # `cmd > out -x y`: tree-sitter files -x and y under the redirect; bash passes them
            # to cmd.
            for redirect in parent.children_by_field_name("redirect"):
                if redirect.type == "file_redirect":
                    args.extend(_words(redirect.children_by_field_name("destination")[1:], src))
    handler(name, args, env)


_PATTERN_CHARS = re.compile(r"[*?\[{]")


def _command_name(value: str) -> str | None:
    """``/usr/bin/RM.exe`` → ``rm``; None when the name is a glob or brace pattern."""
    if _PATTERN_CHARS.search(value):
        return None
    base = value.rstrip("/").rsplit("/", 1)[-1].rsplit("\\", 1)[-1].lower()
    if base.endswith(".exe"):
        base = base[:-4]
    return base


_PLAIN_WORD = re.compile(rb"[A-Za-z0-9_./+:,@%-]+")
_LOOKUP_CACHE: dict[str, tuple[str | None, Handler | None]] = {}


def _lookup(word: str) -> tuple[str | None, Handler | None]:
    """Command word → (normalised name, handler); cached, the same names recur constantly."""
    hit = _LOOKUP_CACHE.get(word)
    if hit is None:
        name = _command_name(word)
        handler = None if name is None else (_HANDLERS.get(name) or _pattern_handler(name))
        hit = (name, handler)
        if len(_LOOKUP_CACHE) < 4096:
            _LOOKUP_CACHE[word] = hit
    return hit


def _argv(argv: Sequence[_Arg], env: _Env) -> None:
    if not argv:
        return
    head = argv[0]
    if head.value is None:
        env.modify("has a computed command name (opaque)")
        return
    name, handler = _lookup(head.value)
    if name is None:
        env.modify("has a glob or brace pattern as its command name (opaque)")
        return
    args = list(argv[1:])
    if handler is None:
        env.execute()
    else:
        handler(name, args, env)


# ---------------------------------------------------------------------------------------------
# Option scanning helpers


def _scan(
    args: Sequence[_Arg], short_val: str = "", long_val: frozenset[str] = frozenset()
) -> tuple[list[tuple[str, _Arg | None]], list[_Arg]]:
    """GNU-style options (anywhere) and positionals. Options come back as ``("-x", value)`` or
    ``("--long", value)``; value is None for flags."""
    opts: list[tuple[str, _Arg | None]] = []
    pos: list[_Arg] = []
    i, n = 0, len(args)
    only_pos = False
    while i < n:
        arg = args[i]
        v = arg.value
        if only_pos or v is None or v == "-" or not v.startswith("-"):
            pos.append(arg)
            i += 1
            continue
        if v == "--":
            only_pos = True
            i += 1
            continue
        if v.startswith("--"):
            name, eq, val = v.partition("=")
            if eq:
                opts.append((name, _Arg(val, val)))
            elif name in long_val and i + 1 < n:
                opts.append((name, args[i + 1]))
                i += 1
            else:
                opts.append((name, None))
            i += 1
            continue
        letters = v[1:]
        for k, ch in enumerate(letters):
            if ch in short_val:
                rest = letters[k + 1 :]
                if rest:
                    opts.append(("-" + ch, _Arg(rest, rest)))
                elif i + 1 < n:
                    opts.append(("-" + ch, args[i + 1]))
                    i += 1
                else:
                    opts.append(("-" + ch, None))
                break
            opts.append(("-" + ch, None))
        i += 1
    return opts, pos


def _skip_options(
    args: Sequence[_Arg],
    short_val: str = "",
    long_val: frozenset[str] = frozenset(),
    *,
    assignments: bool = False,
) -> int:
    """Index of the first positional (the wrapped command) after a wrapper's options."""
    i, n = 0, len(args)
    while i < n:
        v = args[i].value
        if v is None:
            return i
        if v == "--":
            return i + 1
        if assignments and _ASSIGNMENT.match(v):
            i += 1
            continue
        if v.startswith("--"):
            i += 1 if ("=" in v or v not in long_val) else 2
            continue
        if v.startswith("-") and len(v) > 1:
            step = 1
            for k, ch in enumerate(v[1:]):
                if ch in short_val:
                    if k == len(v) - 2:
                        step = 2
                    break
            i += step
            continue
        return i
    return i


def _names(opts: Sequence[tuple[str, _Arg | None]]) -> set[str]:
    return {name for name, _ in opts}


def _static(args: Sequence[_Arg]) -> list[str]:
    return [a.value for a in args if a.value is not None]


def _is_sink(value: str | None) -> bool:
    return value is not None and (value in _NULL_SINKS or value == "-")


def _first_positional(
    args: Sequence[_Arg], short_val: str = "", long_val: frozenset[str] = frozenset()
) -> tuple[str | None, list[_Arg]]:
    """The subcommand (first positional, ``+toolchain`` skipped) and everything after it."""
    i, n = 0, len(args)
    while i < n:
        v = args[i].value
        if v is None:
            return None, list(args[i + 1 :])
        if v.startswith("+") and len(v) > 1:
            i += 1
            continue
        if v.startswith("-") and v != "-":
            j = _skip_options(args[i:], short_val, long_val)
            i += max(j, 1)
            continue
        return v.lower(), list(args[i + 1 :])
    return "", []


# ---------------------------------------------------------------------------------------------
# Wrappers: run another command


def _run_rest(rest: Sequence[_Arg], env: _Env, what: str = "runs") -> None:
    if rest:
        _argv(rest, env)
    else:
        env.execute(what + "; not known to modify anything")


def _wrapper(
    short_val: str = "", long_val: frozenset[str] = frozenset(), *, assignments: bool = False
) -> Handler:
    def handle(name: str, args: list[_Arg], env: _Env) -> None:
        i = _skip_options(args, short_val, long_val, assignments=assignments)
        _run_rest(args[i:], env)

    return handle


def _h_sudo(name: str, args: list[_Arg], env: _Env) -> None:
    i = _skip_options(
        args,
        "ugCDhprtUT",
        _ws(
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


def _h_env(name: str, args: list[_Arg], env: _Env) -> None:
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
        if v == "-" or _ASSIGNMENT.match(v):
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


def _shell_quote(text: str) -> str:
    if text and re.fullmatch(r"[A-Za-z0-9_@%+=:,./-]+", text):
        return text
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _h_command(name: str, args: list[_Arg], env: _Env) -> None:
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


def _h_timeout(name: str, args: list[_Arg], env: _Env) -> None:
    i = _skip_options(args, "sk", frozenset({"--signal", "--kill-after"}))
    _run_rest(args[i + 1 :], env)  # skip DURATION


def _h_chroot(name: str, args: list[_Arg], env: _Env) -> None:
    i = _skip_options(args, "", frozenset({"--userspec", "--groups"}))
    _run_rest(args[i + 1 :], env, "starts a shell in a new root")


def _h_xargs(name: str, args: list[_Arg], env: _Env) -> None:
    i = _skip_options(
        args,
        "adEILnPs",
        _ws("--arg-file --delimiter --max-args --max-procs --max-chars --process-slot-var"),
    )
    rest = args[i:]
    inner = _command_name(rest[0].value) if rest and rest[0].value else None
    if inner in ("rm", "unlink", "shred"):
        env.destroy(f"deletes every path it reads with {inner}", "file")
        return
    _run_rest(rest, env, "echoes its input")


def _h_watch(name: str, args: list[_Arg], env: _Env) -> None:
    i = _skip_options(args, "nq", frozenset({"--interval", "--equexit"}))
    flags = _static(args[:i])
    rest = args[i:]
    if "-x" in flags or "--exec" in flags:
        _run_rest(rest, env)
    elif rest:
        env.nested(" ".join(a.approx for a in rest), "command")
    else:
        env.execute()


def _h_ssh(name: str, args: list[_Arg], env: _Env) -> None:
    i = _skip_options(args, "BbcDEeFIiJLlmOopQRSWw")
    rest = args[i + 1 :]  # skip the host
    if rest:
        env.nested(" ".join(a.approx for a in rest), "remote command")
    else:
        _code_on_stdin(env, "shell", "opens a remote session")


def _h_su(name: str, args: list[_Arg], env: _Env) -> None:
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


def _h_trap(name: str, args: list[_Arg], env: _Env) -> None:
    i = 1 if args and args[0].value == "--" else 0
    if i >= len(args) or (args[i].value or "").startswith("-") or len(args) - i < 2:
        env.execute("lists or resets traps")
        return
    code = args[i]
    if code.value is None:
        env.modify("installs a computed trap handler (opaque)")
    env.nested(code.approx, "trap handler")


def _h_opaque(name: str, args: list[_Arg], env: _Env) -> None:
    env.modify(f"runs code through `{name}` (opaque)")


def _h_exec_tool(name: str, args: list[_Arg], env: _Env) -> None:
    """npx / uvx / bunx / pnpm dlx …: fetch a tool and run it; classify the tool's command."""
    opts_end = _skip_options(args, "pc", _ws("--package --from --with --python --call -p"))
    for k in range(opts_end):
        v = args[k].value
        if v in ("-c", "--call") and k + 1 < len(args):
            env.nested(args[k + 1].approx, "command")
            return
    _run_rest(args[opts_end:], env)


# ---------------------------------------------------------------------------------------------
# Shells and interpreters


_SHELLS = _ws("bash sh zsh dash ksh ash mksh fish rbash yash")


def _h_shell(name: str, args: list[_Arg], env: _Env) -> None:
    i, n = 0, len(args)
    c_mode = False
    while i < n:
        v = args[i].value
        if v is None:
            break
        if v in ("--", "-"):
            i += 1
            break
        if v.startswith("--"):
            i += 2 if v in ("--rcfile", "--init-file") else 1
            continue
        if v[:1] in "-+" and len(v) > 1:
            letters = v[1:]
            if v[0] == "-" and "c" in letters:
                c_mode = True
            i += 2 if ("o" in letters or "O" in letters) else 1
            continue
        break
    rest = args[i:]
    if c_mode:
        if not rest:
            env.execute("has no code after -c")
            return
        code = rest[0]
        if code.value is None:
            env.modify("runs a computed -c string (opaque)")
        env.nested(code.approx, "-c string")
        return
    if rest:
        env.execute("runs a script")
        return
    _code_on_stdin(env, "shell")


def _code_on_stdin(env: _Env, what: str, idle: str = "") -> None:
    """Code read from stdin: a shell's is parsed when known, an interpreter's is opaque."""
    stdin = env.stdin()
    if stdin.kind == "none":
        env.execute(idle or f"starts an interactive {what}")
    elif stdin.kind == "file":
        env.execute(f"runs a script {stdin.label}")
    elif stdin.text is not None and what == "shell":
        env.nested(stdin.text, f"code {stdin.label}")
    else:
        env.modify(f"runs opaque inline code {stdin.label}")


def _h_pwsh(name: str, args: list[_Arg], env: _Env) -> None:
    for k, arg in enumerate(args):
        v = (arg.value or "").lower()
        if v in ("-command", "-c", "/c", "-com", "-comm", "-comma", "-comman"):
            env.nested(" ".join(a.approx for a in args[k + 1 :]), "command")
            return
        if v in ("-encodedcommand", "-e", "-ec", "-enc"):
            env.modify("runs an encoded command (opaque)")
            return
        if v in ("-file", "-f"):
            env.execute("runs a script")
            return
    if name == "cmd":
        env.execute("starts a command prompt")
    else:
        env.execute("starts PowerShell")


def _h_python(name: str, args: list[_Arg], env: _Env) -> None:
    i, n = 0, len(args)
    info = False
    while i < n:
        v = args[i].value
        if v is None or v == "-" or not v.startswith("-"):
            break
        if v == "--":
            i += 1
            break
        if v.startswith("--"):
            info = info or v in (
                "--version",
                "--help",
                "--help-all",
                "--help-env",
                "--help-xoptions",
            )
            i += 2 if v == "--check-hash-based-pycs" else 1
            continue
        letters = v[1:]
        step = 1
        for k, ch in enumerate(letters):
            if ch == "c":
                env.modify("runs opaque inline code")
                return
            if ch == "m":
                module = letters[k + 1 :]
                rest = args[i + 1 :]
                if not module:
                    module = (rest[0].value or "") if rest else ""
                    rest = rest[1:]
                _python_module(module, rest, env)
                return
            if ch in "WX":
                step = 1 if letters[k + 1 :] else 2
                break
            if ch in "Vh?":
                info = True
        i += step
    if i < n and args[i].value != "-":
        env.execute("runs a script")
    elif info:
        env.execute("prints interpreter information")
    else:
        _code_on_stdin(env, "interpreter")


def _python_module(module: str, rest: list[_Arg], env: _Env) -> None:
    module = module.lower()
    if module in ("venv", "virtualenv", "ensurepip"):
        env.modify(f"creates or changes an environment with -m {module}")
        return
    handler = _MODULE_HANDLERS.get(module)
    if handler is not None:
        handler(module, rest, env)
    else:
        env.execute(f"runs module {module}; not known to modify anything")


def _interpreter(
    code_short: str,
    code_long: frozenset[str] = frozenset(),
    *,
    inplace: str = "",
    attached: str = "",
    separate: str = "",
    long_val: frozenset[str] = frozenset(),
) -> Handler:
    """An interpreter: inline code flags (opaque), in-place edit flags, else script or stdin."""

    def handle(name: str, args: list[_Arg], env: _Env) -> None:
        i, n = 0, len(args)
        info = False
        edits = False
        while i < n:
            v = args[i].value
            if v is None or v == "-" or not v.startswith("-"):
                break
            if v == "--":
                i += 1
                break
            if v.startswith("--"):
                key = v.split("=", 1)[0]
                if key in code_long:
                    env.modify("runs opaque inline code")
                    return
                info = info or key in ("--version", "--help")
                i += 2 if (key in long_val and "=" not in v) else 1
                continue
            letters = v[1:]
            step = 1
            for k, ch in enumerate(letters):
                if ch in code_short:
                    env.modify("runs opaque inline code")
                    return
                if ch in inplace:
                    edits = True
                    break
                if ch in attached:
                    break
                if ch in separate:
                    step = 1 if letters[k + 1 :] else 2
                    break
                if ch in "vVh":
                    info = True
            i += step
        if edits:
            env.modify("edits files in place")
        elif i < n and args[i].value != "-":
            env.execute("runs a script")
        elif info:
            env.execute("prints interpreter information")
        else:
            _code_on_stdin(env, "interpreter")

    return handle


# ---------------------------------------------------------------------------------------------
# Files


def _h_rm(name: str, args: list[_Arg], env: _Env) -> None:
    opts, _ = _scan(args)
    names = _names(opts)
    if names & {"-r", "-R", "--recursive", "-f", "--force"}:
        env.destroy("deletes recursively or by force", "file")
    elif any(v.lower() in ("/s", "/q") for v in _static(args)):
        env.destroy("deletes recursively (Windows /s)", "file")
    else:
        env.modify("deletes files")


def _h_rimraf(name: str, args: list[_Arg], env: _Env) -> None:
    env.destroy("deletes recursively", "file")


def _h_rmdir(name: str, args: list[_Arg], env: _Env) -> None:
    if any(v.lower() in ("/s", "/q") for v in _static(args)):
        env.destroy("deletes a directory tree (Windows /s)", "file")
    else:
        env.modify("removes empty directories")


def _h_remove_item(name: str, args: list[_Arg], env: _Env) -> None:
    for v in _static(args):
        low = v.lower()
        if low in ("/s", "/q") or (
            len(low) >= 2
            and ("-recurse".startswith(low) or (len(low) >= 3 and "-force".startswith(low)))
        ):
            env.destroy("deletes recursively or by force", "file")
            return
    env.modify("deletes files")


def _h_find(name: str, args: list[_Arg], env: _Env) -> None:
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
                _argv(inner, env)
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


def _h_fd(name: str, args: list[_Arg], env: _Env) -> None:
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
                _argv(inner, env)
            return
    env.execute("searches files")


def _h_dd(name: str, args: list[_Arg], env: _Env) -> None:
    for arg in args:
        if arg.approx.startswith("of="):
            env.destroy(f"overwrites {arg.approx[3:]} with dd", "file")
            return
    env.execute("copies stdin to stdout")


def _h_wipe(name: str, args: list[_Arg], env: _Env) -> None:
    verb = (
        "formats a filesystem"
        if name.startswith(("mkfs", "mke2fs", "mkswap", "format"))
        else "destroys data"
    )
    env.destroy(verb, "file")


def _h_tee(name: str, args: list[_Arg], env: _Env) -> None:
    _, pos = _scan(args)
    targets = [a for a in pos if not _is_sink(a.value)]
    if targets:
        env.modify(f"writes {targets[0].value or 'a computed path'}")
    else:
        env.execute("copies stdin to stdout")


def _h_sed(name: str, args: list[_Arg], env: _Env) -> None:
    opts, _ = _scan(args, "efl", frozenset({"--expression", "--file", "--line-length"}))
    if _names(opts) & {"-i", "--in-place"}:
        env.modify("edits files in place")
    else:
        env.execute("filters text; not known to modify anything")


def _h_sort(name: str, args: list[_Arg], env: _Env) -> None:
    opts, _ = _scan(
        args,
        "kotST",
        frozenset(
            {"--key", "--output", "--field-separator", "--buffer-size", "--temporary-directory"}
        ),
    )
    for opt, val in opts:
        if opt in ("-o", "--output") and not _is_sink(val.value if val else None):
            env.modify(f"writes {(val.value if val else None) or 'a computed path'}")
            return
    env.execute("sorts text; not known to modify anything")


_CURL_VALUES = "AbcCdDeEFHKmoPQrtTuUwxXyYz"
_CURL_LONG_VALUES = _ws(
    "--output --dump-header --cookie-jar --trace --trace-ascii --libcurl --etag-save --stderr "
    "--data --data-raw --data-binary --data-urlencode --json --header --user-agent --request "
    "--user --form --url --write-out --max-time --connect-timeout --proxy --referer --cookie "
    "--config --range --upload-file --cert --key --retry --output-dir"
)
_CURL_WRITES = _ws(
    "-o --output -D --dump-header -c --cookie-jar --trace --trace-ascii --libcurl --etag-save "
    "--stderr"
)


def _h_curl(name: str, args: list[_Arg], env: _Env) -> None:
    opts, _ = _scan(args, _CURL_VALUES, _CURL_LONG_VALUES)
    for opt, val in opts:
        if opt in ("-O", "--remote-name", "--remote-name-all"):
            env.modify("downloads to a file (-O)")
            return
        if opt in _CURL_WRITES:
            target = val.value if val else None
            if not _is_sink(target):
                env.modify(f"writes {target or 'a computed path'} ({opt})")
                return
    env.execute("fetches a URL to stdout")


def _h_wget(name: str, args: list[_Arg], env: _Env) -> None:
    opts, _ = _scan(
        args,
        "OoaePUtTwiQlARDIXB",
        _ws(
            "--output-document --output-file --append-output --directory-prefix --user-agent "
            "--tries --timeout --wait --input-file --execute --header --level --accept --reject "
            "--domains --base --post-data --user --password"
        ),
    )
    names = _names(opts)
    to_stdout = any(
        opt in ("-O", "--output-document") and _is_sink(val.value if val else None)
        for opt, val in opts
    )
    for opt, val in opts:
        if opt in ("-o", "-a", "--output-file", "--append-output") and not _is_sink(
            val.value if val else None
        ):
            env.modify(f"writes log {(val.value if val else None) or 'a computed path'}")
            return
    if "--spider" in names or to_stdout:
        env.execute("fetches a URL without saving it")
    else:
        env.modify("downloads files")


_TAR_LONG_VALUES = frozenset(
    {"--file", "--directory", "--exclude", "--files-from", "--use-compress-program"}
)


def _h_tar(name: str, args: list[_Arg], env: _Env) -> None:
    modes: set[str] = set()
    archive: _Arg | None = None
    rest = args
    first = args[0].value if args else None
    if first and not first.startswith("-") and first.isalpha():
        modes.update(first)
        if "f" in first:
            archive = args[1] if len(args) > 1 else None
        rest = args[1:]
    opts, _ = _scan(rest, "fCbgKLNTVXIH", _TAR_LONG_VALUES)
    for opt, val in opts:
        if opt in ("-f", "--file"):
            archive = val
        elif opt.startswith("--"):
            modes.add(
                {
                    "--extract": "x",
                    "--get": "x",
                    "--create": "c",
                    "--append": "r",
                    "--update": "u",
                    "--catenate": "A",
                    "--concatenate": "A",
                    "--delete": "D",
                }.get(opt, "")
            )
        else:
            modes.add(opt[1:])
    if "x" in modes:
        env.modify("extracts files")
    elif modes & {"c", "r", "u", "A", "D"}:
        if archive is not None and _is_sink(archive.value):
            env.execute("writes an archive to stdout")
        elif archive is None:
            env.execute("writes an archive to the default device")
        else:
            env.modify(f"writes archive {archive.value or 'at a computed path'}")
    else:
        env.execute("lists or compares an archive")


def _h_unzip(name: str, args: list[_Arg], env: _Env) -> None:
    opts, _ = _scan(args, "dxP")
    if _names(opts) & {"-l", "-t", "-v", "-p", "-Z", "-z"}:
        env.execute("lists or tests an archive")
    else:
        env.modify("extracts files")


def _h_compress(name: str, args: list[_Arg], env: _Env) -> None:
    opts, _ = _scan(args, "oS", frozenset({"--suffix"}))
    names = _names(opts)
    if (
        names & {"-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test"}
        and "-o" not in names
    ):
        env.execute("writes to stdout or tests an archive")
    else:
        env.modify("compresses or decompresses files in place")


def _h_7z(name: str, args: list[_Arg], env: _Env) -> None:
    sub, _ = _first_positional(args)
    if sub in ("a", "d", "e", "x", "u", "rn"):
        env.modify(f"changes files or archives ({sub})")
    else:
        env.execute("lists or tests an archive")


def _h_rsync(name: str, args: list[_Arg], env: _Env) -> None:
    if any(v.startswith("--delete") for v in _static(args)):
        env.destroy("deletes destination files missing from the source with --delete", "file")
    else:
        env.modify("copies files")


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


def _h_modify_verb(name: str, args: list[_Arg], env: _Env) -> None:
    env.modify(_MODIFY_VERBS.get(name, "modifies files"))


# ---------------------------------------------------------------------------------------------
# Formatters (they rewrite files unless asked only to check)


def _formatter(
    *, writes_unless: frozenset[str] = frozenset(), writes_if: frozenset[str] = frozenset()
) -> Handler:
    def handle(name: str, args: list[_Arg], env: _Env) -> None:
        flags = {v.split("=", 1)[0] for v in _static(args) if v.startswith("-")}
        writes = bool(flags & writes_if) if writes_if else not flags & writes_unless
        if writes:
            env.modify("rewrites files (formatter)")
        else:
            env.execute("checks formatting; not known to modify anything")

    return handle


def _h_ruff(name: str, args: list[_Arg], env: _Env) -> None:
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


# ---------------------------------------------------------------------------------------------
# Package managers

_PKG_LONG_VALUES = _ws(
    "--prefix --dir --cwd --filter --workspace --registry --cache --userconfig --python "
    "--directory --project --manifest-path --config --log --proxy --cache-dir --root "
    "--installroot --releasever --repo --enablerepo --disablerepo --setopt --name --channel"
)


def _joined(*words: str | None) -> str:
    return " ".join(w for w in words if w)


def _package_manager(
    modifies: frozenset[str],
    *,
    wrappers: frozenset[str] = frozenset(),
    bare_modifies: bool = False,
    short_val: str = "C",
    nested: dict[str, frozenset[str]] | None = None,
) -> Handler:
    def handle(name: str, args: list[_Arg], env: _Env) -> None:
        sub, rest = _first_positional(args, short_val, _PKG_LONG_VALUES)
        if sub is None:
            env.modify(f"runs a computed {name} subcommand (opaque)")
        elif sub == "" and bare_modifies:
            env.modify("installs packages")
        elif sub in wrappers:
            _h_exec_tool(name, rest, env)
        elif nested and sub in nested:
            sub2, _ = _first_positional(rest, short_val, _PKG_LONG_VALUES)
            if sub2 is None or sub2 in nested[sub]:
                env.modify(f"changes packages or project files ({sub} {sub2 or '…'})")
            else:
                env.execute(f"runs {_joined(name, sub)}; not known to modify anything")
        elif sub in modifies:
            env.modify(f"changes installed packages or project files ({name} {sub})")
        else:
            env.execute(f"runs {_joined(name, sub)}; not known to modify anything")

    return handle


_PIP = _ws("install uninstall download wheel")
_NPM = _ws(
    "install i in ins inst insta instal isnt isnta isntal isntall add ci clean-install ic "
    "install-clean isntall-clean install-test it install-ci-test cit uninstall un unlink remove "
    "rm r update up upgrade udpate link ln prune dedupe ddp publish unpublish deprecate rebuild "
    "rb init create innit pkg version dist-tag"
)
_PNPM = _ws(
    "add install i remove rm un uninstall update up upgrade link ln unlink prune import dedupe "
    "rebuild rb init create patch patch-commit publish fetch setup"
)
_YARN = _ws(
    "add install remove upgrade up upgrade-interactive link unlink dedupe import init create "
    "publish version patch patch-commit"
)
_BUN = _ws("install i add a remove rm update link unlink init create upgrade publish patch")
_APT = _ws(
    "install remove purge autoremove upgrade dist-upgrade full-upgrade update reinstall build-dep "
    "clean autoclean autopurge source satisfy"
)
_DNF = _ws(
    "install remove erase update upgrade downgrade reinstall autoremove distro-sync groupinstall "
    "groupremove localinstall swap makecache clean"
)
_BREW = _ws(
    "install uninstall remove rm reinstall upgrade update tap untap link unlink cleanup "
    "autoremove pin unpin postinstall"
)
_CARGO = _ws(
    "install uninstall add remove rm update fix new init publish yank generate-lockfile vendor "
    "clean"
)
_CONDA = frozenset(
    {"install", "remove", "uninstall", "update", "upgrade", "create", "clean", "rename"}
)


def _h_npm(name: str, args: list[_Arg], env: _Env) -> None:
    sub, rest = _first_positional(args, "C", _PKG_LONG_VALUES)
    if sub == "audit" and "fix" in _static(rest):
        env.modify("changes installed packages (audit fix)")
    elif sub in ("exec", "x"):
        _h_exec_tool(name, rest, env)
    else:
        _NPM_BASE(name, args, env)


_NPM_BASE = _package_manager(_NPM)


def _h_yarn(name: str, args: list[_Arg], env: _Env) -> None:
    sub, rest = _first_positional(args, "", _PKG_LONG_VALUES)
    if sub == "" and set(_static(args)) & {"--version", "-v", "--help", "-h"}:
        env.execute("prints yarn information")
    elif sub == "":
        env.modify("installs packages")
    elif sub == "dlx" or sub == "exec":
        _h_exec_tool(name, rest, env)
    elif sub in _YARN:
        env.modify(f"changes installed packages or project files ({sub})")
    elif sub is None:
        env.modify("runs a computed yarn subcommand (opaque)")
    else:
        env.execute(f"runs {_joined('yarn', sub)}; not known to modify anything")


def _h_bun(name: str, args: list[_Arg], env: _Env) -> None:
    statics = _static(args)
    if any(v in ("-e", "--eval", "-p", "--print") for v in statics):
        env.modify("runs opaque inline code")
        return
    sub, rest = _first_positional(args)
    if sub == "x":
        _h_exec_tool(name, rest, env)
    elif sub in _BUN:
        env.modify(f"changes installed packages or project files ({sub})")
    elif sub is None:
        env.modify("runs a computed bun subcommand (opaque)")
    else:
        env.execute(f"runs {_joined('bun', sub)}; not known to modify anything")


def _h_uv(name: str, args: list[_Arg], env: _Env) -> None:
    sub, rest = _first_positional(args, "", _PKG_LONG_VALUES)
    if sub == "run":
        _uv_run(rest, env)
    elif sub == "pip":
        sub2, _ = _first_positional(rest)
        if sub2 in ("install", "uninstall", "sync", "compile"):
            env.modify(f"changes installed packages (uv pip {sub2})")
        else:
            env.execute(f"runs {_joined('uv', 'pip', sub2)}; not known to modify anything")
    elif sub == "tool":
        sub2, rest2 = _first_positional(rest)
        if sub2 == "run":
            _h_exec_tool(name, rest2, env)
        elif sub2 in ("install", "uninstall", "upgrade", "update-shell"):
            env.modify(f"changes installed tools (uv tool {sub2})")
        else:
            env.execute(f"runs {_joined('uv', 'tool', sub2)}; not known to modify anything")
    elif sub == "python":
        sub2, _ = _first_positional(rest)
        if sub2 in ("install", "uninstall", "pin"):
            env.modify(f"changes installed Pythons (uv python {sub2})")
        else:
            env.execute(f"runs {_joined('uv', 'python', sub2)}; not known to modify anything")
    elif sub in (
        "add",
        "remove",
        "sync",
        "lock",
        "init",
        "venv",
        "build",
        "publish",
        "self",
        "export",
        "format",
        "cache",
    ):
        env.modify(f"changes packages or project files (uv {sub})")
    elif sub is None:
        env.modify("runs a computed uv subcommand (opaque)")
    else:
        env.execute(f"runs {_joined('uv', sub)}; not known to modify anything")


_UV_RUN_VALUES = _ws(
    "--with --with-editable --with-requirements --python -p --project --directory --env-file "
    "--extra --group --package --index --default-index --index-url --extra-index-url --from "
    "--cache-dir --config-file --only-group --no-group --exclude-newer"
)


def _uv_run(args: list[_Arg], env: _Env) -> None:
    i = _skip_options(args, "pw", _UV_RUN_VALUES)
    _run_rest(args[i:], env)


def _h_poetry_like(name: str, args: list[_Arg], env: _Env) -> None:
    sub, rest = _first_positional(args, "C", _PKG_LONG_VALUES)
    if sub == "run":
        _run_rest(rest, env)
    elif sub in (
        "add",
        "remove",
        "install",
        "uninstall",
        "update",
        "upgrade",
        "lock",
        "init",
        "new",
        "build",
        "publish",
        "self",
        "sync",
        "clean",
    ):
        env.modify(f"changes packages or project files ({name} {sub})")
    elif sub is None:
        env.modify(f"runs a computed {name} subcommand (opaque)")
    else:
        env.execute(f"runs {_joined(name, sub)}; not known to modify anything")


def _h_go(name: str, args: list[_Arg], env: _Env) -> None:
    sub, rest = _first_positional(args, "C")
    if sub in ("get", "install", "generate", "fmt", "clean"):
        env.modify(f"changes packages or source files (go {sub})")
    elif sub in ("mod", "work"):
        sub2, _ = _first_positional(rest)
        if sub2 in ("tidy", "download", "vendor", "init", "edit", "use", "sync"):
            env.modify(f"changes module files (go {sub} {sub2})")
        else:
            env.execute(f"runs {_joined('go', sub, sub2)}; not known to modify anything")
    elif sub is None:
        env.modify("runs a computed go subcommand (opaque)")
    else:
        env.execute(f"runs {_joined('go', sub)}; not known to modify anything")


def _h_cargo(name: str, args: list[_Arg], env: _Env) -> None:
    sub, _ = _first_positional(args, "Z", _PKG_LONG_VALUES)
    flags = set(_static(args))
    if sub == "fmt" and "--check" not in flags:
        env.modify("rewrites files (cargo fmt)")
    elif sub == "clippy" and "--fix" in flags:
        env.modify("rewrites files (cargo clippy --fix)")
    elif sub in _CARGO:
        env.modify(f"changes packages or project files (cargo {sub})")
    elif sub is None:
        env.modify("runs a computed cargo subcommand (opaque)")
    else:
        env.execute(f"runs {_joined('cargo', sub)}; not known to modify anything")


def _h_pacman(name: str, args: list[_Arg], env: _Env) -> None:
    for v in _static(args):
        if v.startswith("-") and not v.startswith("--") and len(v) > 1:
            op = v[1]
            if op in "RUD" or (op == "S" and not set(v[2:]) & set("silgp")):
                env.modify("changes installed packages")
            else:
                env.execute("queries packages")
            return
    env.execute("queries packages")


def _h_deno(name: str, args: list[_Arg], env: _Env) -> None:
    sub, _ = _first_positional(args)
    flags = set(_static(args))
    if sub == "eval":
        env.modify("runs opaque inline code")
    elif sub == "fmt" and "--check" not in flags:
        env.modify("rewrites files (deno fmt)")
    elif sub in ("install", "uninstall", "add", "remove", "upgrade", "compile", "init"):
        env.modify(f"changes packages or project files (deno {sub})")
    else:
        env.execute(f"runs {_joined('deno', sub)}; not known to modify anything")


# ---------------------------------------------------------------------------------------------
# git

_GIT_GLOBAL_VALUES = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"}
)
_GIT_READS = _ws(
    "status diff log show blame annotate grep ls-files ls-tree ls-remote rev-parse rev-list "
    "describe shortlog cat-file show-ref for-each-ref merge-base name-rev var check-ignore "
    "check-attr check-ref-format count-objects fsck whatchanged help version cherry range-diff "
    "diff-tree diff-files diff-index verify-commit verify-tag show-branch difftool request-pull "
    "get-tar-commit-id column show-index"
)
_GIT_RISKY_CONFIG = re.compile(
    r"^(alias\.|core\.(pager|editor|sshcommand|fsmonitor|hookspath|askpass|gitproxy)|"
    r"sequence\.editor|diff\.external|.*\.(command|cmd|program|helper|textconv|process|clean|smudge)$)",
    re.IGNORECASE,
)


def _h_git(name: str, args: list[_Arg], env: _Env) -> None:
    i, n = 0, len(args)
    while i < n:
        v = args[i].value
        if v is None:
            break
        if v in _GIT_GLOBAL_VALUES:
            if v == "-c" and i + 1 < n:
                key = (args[i + 1].value or "alias.?").split("=", 1)[0]
                if _GIT_RISKY_CONFIG.match(key):
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
        env.modify("runs a computed git subcommand (opaque)")
        return
    sub = sub_arg.value
    handler = _GIT_HANDLERS.get(sub)
    if handler is not None:
        handler(sub, rest, env)
    elif sub in _GIT_READS:
        env.execute(f"reads the repository (git {sub})")
    else:
        env.modify(f"changes the repository or working tree (git {sub})")


def _git_reset(sub: str, args: list[_Arg], env: _Env) -> None:
    if "--hard" in _static(args):
        env.destroy("discards uncommitted changes with reset --hard", "git")
    else:
        env.modify("moves HEAD or unstages changes (git reset)")


def _git_push(sub: str, args: list[_Arg], env: _Env) -> None:
    opts, pos = _scan(args, "o", _ws("--push-option --repo --receive-pack --exec"))
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


def _git_clean(sub: str, args: list[_Arg], env: _Env) -> None:
    opts, _ = _scan(args, "e", frozenset({"--exclude"}))
    names = _names(opts)
    if names & {"-n", "--dry-run"} and "-i" not in names:
        env.execute("lists untracked files that would be removed (dry run)")
    elif names & {"-f", "--force"}:
        env.destroy("deletes untracked files with clean -f", "git")
    else:
        env.modify("runs git clean")


_GIT_PATHLIKE = re.compile(r"^(\.{1,2}(/.*)?|\./.*|\.\./.*|:.*|.*[*?\[].*|.*/)$")


def _git_checkout(sub: str, args: list[_Arg], env: _Env) -> None:
    opts, pos = _scan(
        args,
        "bB",
        frozenset({"--orphan", "--conflict", "--pathspec-from-file"}),
    )
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


_SOURCE_SUFFIX = re.compile(
    r"\.(py|pyi|js|jsx|ts|tsx|mjs|cjs|json|toml|ya?ml|md|rst|txt|cfg|ini|lock|go|rs|c|h|cc|cpp|"
    r"hpp|java|kt|rb|php|cs|swift|scala|sh|bash|zsh|sql|html|css|scss|vue|svelte|xml|csv|env)$",
    re.IGNORECASE,
)


def _looks_like_path(value: str) -> bool:
    """``git checkout X``: X is a path (discarding its changes) rather than a branch?"""
    if _GIT_PATHLIKE.match(value) or _SOURCE_SUFFIX.search(value):
        return True
    try:
        return os.path.lexists(value)
    except (OSError, ValueError):
        return False


def _git_restore(sub: str, args: list[_Arg], env: _Env) -> None:
    opts, pos = _scan(args, "s", frozenset({"--source", "--pathspec-from-file"}))
    names = _names(opts)
    staged = bool(names & {"-S", "--staged"})
    worktree = bool(names & {"-W", "--worktree"})
    if not pos and "--pathspec-from-file" not in names:
        env.modify("runs git restore")
    elif staged and not worktree:
        env.modify("unstages changes (restore --staged)")
    else:
        env.destroy("discards working-tree changes with git restore", "git")


def _git_switch(sub: str, args: list[_Arg], env: _Env) -> None:
    names = _names(_scan(args, "cC", frozenset({"--create", "--force-create", "--orphan"}))[0])
    if names & {"--discard-changes", "-f", "--force"}:
        env.destroy("discards working-tree changes with switch --discard-changes / --force", "git")
    else:
        env.modify("switches branches (git switch)")


def _git_stash(sub: str, args: list[_Arg], env: _Env) -> None:
    action = next((a.value for a in args if a.value is None or not a.value.startswith("-")), "push")
    if action in ("drop", "clear", "pop"):
        env.destroy(f"removes stashed changes with stash {action}", "git")
    elif action in ("list", "show"):
        env.execute(f"reads stashes (stash {action})")
    else:
        env.modify(f"changes the working tree or stash (stash {action or 'push'})")


def _git_branch(sub: str, args: list[_Arg], env: _Env) -> None:
    opts, pos = _scan(
        args,
        "u",
        _ws(
            "--set-upstream-to --contains --no-contains --merged --no-merged --points-at --sort "
            "--format --column"
        ),
    )
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


def _git_tag(sub: str, args: list[_Arg], env: _Env) -> None:
    opts, pos = _scan(
        args,
        "mFun",
        _ws("--message --file --contains --points-at --merged --no-merged --sort --format"),
    )
    names = _names(opts)
    if names & {"-d", "--delete", "-a", "-s", "-f", "-m", "-F", "--annotate", "--sign", "--force"}:
        env.modify("creates or deletes tags")
    elif pos and not names & {"-l", "--list", "-v", "--verify"}:
        env.modify("creates a tag")
    else:
        env.execute("lists tags")


def _git_config(sub: str, args: list[_Arg], env: _Env) -> None:
    opts, pos = _scan(args, "f", _ws("--file --blob --type --default"))
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
) -> Callable[[str, list[_Arg], _Env], None]:
    def handle(sub: str, args: list[_Arg], env: _Env) -> None:
        action = next((a.value for a in args if a.value is None or not a.value.startswith("-")), "")
        if (action == "" and bare_reads) or action in reads:
            env.execute(f"reads the repository (git {sub} {action or ''})".replace(" )", ")"))
        else:
            env.modify(f"changes the repository (git {sub} {action or '…'})")

    return handle


def _git_worktree(sub: str, args: list[_Arg], env: _Env) -> None:
    statics = _static(args)
    if statics[:1] == ["remove"] and ({"-f", "--force"} & set(statics)):
        env.destroy("force-removes a worktree with its changes", "git")
    else:
        _git_listing(frozenset({"list"}), bare_reads=False)(sub, args, env)


def _git_submodule(sub: str, args: list[_Arg], env: _Env) -> None:
    statics = _static(args)
    if "foreach" in statics:
        k = statics.index("foreach")
        code = " ".join(a.approx for a in args[k + 1 :] if not (a.value or "").startswith("--"))
        env.nested(code, "foreach command")
        return
    _git_listing(frozenset({"status", "summary"}))(sub, args, env)


def _git_apply(sub: str, args: list[_Arg], env: _Env) -> None:
    flags = set(_static(args))
    if flags & {"--check", "--stat", "--numstat", "--summary"} and "--apply" not in flags:
        env.execute("checks a patch")
    else:
        env.modify("applies a patch")


def _git_archive(sub: str, args: list[_Arg], env: _Env) -> None:
    opts, _ = _scan(args, "o", _ws("--output --format --prefix --remote"))
    target = next((v for o, v in opts if o in ("-o", "--output")), None)
    if target is not None and not _is_sink(target.value):
        env.modify(f"writes archive {target.value or 'at a computed path'}")
    else:
        env.execute("writes an archive to stdout")


def _git_history_rewrite(sub: str, args: list[_Arg], env: _Env) -> None:
    env.destroy(f"rewrites history (git {sub})", "git")


_GIT_HANDLERS: dict[str, Callable[[str, list[_Arg], _Env], None]] = {
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
    "lfs": _git_listing(_ws("ls-files status env version logs")),
    "bisect": _git_listing(frozenset({"log", "view", "visualize"}), bare_reads=False),
    "apply": _git_apply,
    "archive": _git_archive,
    "filter-branch": _git_history_rewrite,
    "filter-repo": _git_history_rewrite,
}


# ---------------------------------------------------------------------------------------------
# SQL clients

_SQL_WRITES = _ws(
    "INSERT UPDATE CREATE ALTER REPLACE MERGE GRANT REVOKE COPY RENAME ATTACH DETACH VACUUM "
    "REINDEX UPSERT LOAD CALL EXEC EXECUTE DO IMPORT REFRESH CLUSTER COMMENT SECURITY REASSIGN"
)
_SQL_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*|;")


def _strip_sql(sql: str) -> str:
    """Blank out string literals, quoted identifiers and comments (not ``/*! … */``, which MySQL
    executes). Backslash escapes are deliberately ignored: ending a literal early only exposes
    more text to the scan."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`":
            j = i + 1
            while j < n:
                if sql[j] == ch:
                    if j + 1 < n and sql[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            out.append(" ")
            i = j + 1
        elif ch == "-" and sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j
        elif ch == "/" and sql.startswith("/*", i) and not sql.startswith("/*!", i):
            j = sql.find("*/", i + 2)
            out.append(" ")
            i = n if j < 0 else j + 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


@dataclass(slots=True)
class _SqlScan:
    destructive: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    opaque: list[str] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)
    shell: list[str] = field(default_factory=list)


_META_WRITES = _ws(
    ".import .restore .output .once .save .backup .clone .load \\o \\out \\copy \\w \\write"
)


def _scan_sql(sql: str) -> _SqlScan:
    scan = _SqlScan()
    lines: list[str] = []
    for line in sql.splitlines():
        stripped = line.strip()
        if stripped.startswith((".", "\\")):
            word, _, rest = stripped.partition(" ")
            word = word.lower()
            if word in (".shell", ".system", "\\!"):
                scan.shell.append(rest)
            elif word == "\\gexec":
                scan.opaque.append("runs generated SQL (\\gexec)")
            elif word in (".read", "\\i", "\\ir", "\\include", "\\include_relative"):
                scan.includes.append(rest.strip().strip("'\""))
            elif word in _META_WRITES:
                scan.writes.append(word)
            continue
        lines.append(line)
    text = _strip_sql("\n".join(lines))
    statement: list[str] = []
    tokens = [t.upper() for t in _SQL_TOKEN.findall(text)]
    tokens.append(";")
    for tok in tokens:
        if tok != ";":
            statement.append(tok)
            continue
        if statement:
            _sql_statement(statement, scan)
        statement = []
    return scan


def _sql_statement(tokens: list[str], scan: _SqlScan) -> None:
    words = set(tokens)
    for kw in ("DROP", "TRUNCATE"):
        if kw in words and kw not in scan.destructive:
            scan.destructive.append(kw)
    if "DELETE" in words and tokens[0] not in ("GRANT", "REVOKE"):
        if "WHERE" not in words:
            if "DELETE without WHERE" not in scan.destructive:
                scan.destructive.append("DELETE without WHERE")
        elif "DELETE" not in scan.writes:
            scan.writes.append("DELETE")
    lead = tokens[0]
    if lead in _SQL_WRITES and lead not in scan.writes:
        scan.writes.append(lead)
    elif lead == "WITH":
        for kw in ("INSERT", "UPDATE", "MERGE"):
            if kw in words and kw not in scan.writes:
                scan.writes.append(kw)


def _read_small(path: str) -> str | None:
    try:
        full = os.path.expanduser(path)
        st = os.stat(full)
        if not os.path.isfile(full) or st.st_size >= SQL_FILE_LIMIT:
            return None
        with open(full, "rb") as fh:
            return fh.read(SQL_FILE_LIMIT).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


def _sql_text(env: _Env, sql: str, label: str, hops: int = 0) -> None:
    scan = _scan_sql(sql)
    for kw in scan.destructive:
        env.destroy(f"runs SQL {kw} {label}", "db")
    if scan.writes:
        env.modify(f"runs SQL that writes ({', '.join(scan.writes)}) {label}")
    for note in scan.opaque:
        env.modify(f"{note} (opaque)")
    for code in scan.shell:
        env.nested(code, "shell escape in SQL")
    for path in scan.includes:
        if hops >= _MAX_SQL_INCLUDES:
            env.modify(f"includes SQL file {path} too deeply to inspect")
        else:
            _sql_file(env, path, hops + 1)
    if not (scan.destructive or scan.writes or scan.opaque or scan.includes or scan.shell):
        env.execute(f"runs read-only SQL {label}")


def _sql_file(env: _Env, path: str | None, hops: int = 0) -> None:
    if path is None:
        env.modify("runs SQL from a computed path (opaque)")
        return
    text = _read_small(path)
    if text is None:
        env.modify(
            f"runs SQL file {path}, which could not be inspected (missing, unreadable or "
            f"≥ {SQL_FILE_LIMIT} bytes)"
        )
        return
    _sql_text(env, text, f"from file {path}", hops)


def _sql_stdin(env: _Env) -> None:
    stdin = env.stdin()
    if stdin.kind == "text" and stdin.text is not None:
        _sql_text(env, stdin.text, stdin.label)
    elif stdin.kind == "file":
        _sql_file(env, stdin.path)
    elif stdin.kind == "pipe":
        if stdin.text is not None:
            _sql_text(env, stdin.text, stdin.label)
        else:
            env.modify("runs SQL read from a pipe (opaque)")
    else:
        env.execute("opens an interactive SQL session")


def _sql_arg(env: _Env, arg: _Arg | None, label: str) -> None:
    if arg is None:
        return
    if arg.value is None:
        env.modify(f"runs computed SQL {label} (opaque)")
    _sql_text(env, arg.approx, label)


def _h_psql(name: str, args: list[_Arg], env: _Env) -> None:
    opts, _ = _scan(
        args,
        "cdfhpUvoLPTFR",
        _ws(
            "--command --file --dbname --host --port --username --set --variable --output "
            "--log-file --pset --field-separator --record-separator --table-attr"
        ),
    )
    given = False
    for opt, val in opts:
        if opt in ("-c", "--command"):
            _sql_arg(env, val, "in -c")
            given = True
        elif opt in ("-f", "--file"):
            given = True
            if val is not None and val.value == "-":
                _sql_stdin(env)
            else:
                _sql_file(env, val.value if val else None)
    if not given:
        _sql_stdin(env)


def _h_mysql(name: str, args: list[_Arg], env: _Env) -> None:
    opts, _ = _scan(
        args,
        "euhPDSO",
        _ws("--execute --user --host --port --database --socket"),
    )
    given = False
    for opt, val in opts:
        if opt in ("-e", "--execute"):
            _sql_arg(env, val, "in -e")
            given = True
    if not given:
        _sql_stdin(env)


_SQLITE_VALUES = _ws(
    "-separator -newline -nullvalue -vfs -maxsize -mmap -pagecache -lookaside -heap -escape"
)


def _h_sqlite(name: str, args: list[_Arg], env: _Env) -> None:
    i, n = 0, len(args)
    pos: list[_Arg] = []
    given = False
    while i < n:
        v = args[i].value
        if v is not None and v.startswith("-") and len(v) > 1:
            key = "-" + v.lstrip("-")
            if (key == "-cmd" or (key == "-c" and name == "duckdb")) and i + 1 < n:
                _sql_arg(env, args[i + 1], "in -cmd")
                given = True
                i += 2
                continue
            if key == "-init" and i + 1 < n:
                _sql_file(env, args[i + 1].value)
                given = True
                i += 2
                continue
            i += 2 if key in _SQLITE_VALUES else 1
            continue
        pos.append(args[i])
        i += 1
    for arg in pos[1:]:
        _sql_arg(env, arg, "in an argument")
        given = True
    if len(pos) <= 1 and not given:
        _sql_stdin(env)
    elif len(pos) <= 1:
        stdin = env.stdin()
        if stdin.kind != "none":
            _sql_stdin(env)


# ---------------------------------------------------------------------------------------------
# stdin of a command (here-doc, here-string, `< file`, pipe)


def _stdin_of(node: Node, src: bytes) -> _Stdin:
    for child in node.children:
        if child.type == "herestring_redirect":
            named = child.named_children
            if named:
                return _Stdin("text", _word(named[-1], src).approx, label="from a here-string")
    stmt = node
    parent = node.parent
    if parent is not None and parent.type == "redirected_statement":
        body = parent.child_by_field_name("body")
        if body is not None and body == node:
            for redirect in parent.children_by_field_name("redirect"):
                if redirect.type == "heredoc_redirect":
                    return _Stdin("text", _heredoc_body(redirect, src), label="from a here-doc")
                if redirect.type == "file_redirect" and _redirect_op(redirect) == "<":
                    dest = redirect.child_by_field_name("destination")
                    path = _word(dest, src).value if dest is not None else None
                    return _Stdin("file", path=path, label=f"from file {path}")
            stmt = parent
    parent = stmt.parent
    if parent is not None and parent.type == "pipeline":
        prev = stmt.prev_named_sibling
        if prev is not None:
            return _Stdin("pipe", _upstream_text(prev, src), label="from a pipe")
        grand = parent.parent
        if grand is not None and grand.type == "heredoc_redirect":  # `cat <<X | cmd`
            owner = grand.parent
            first = owner.child_by_field_name("body") if owner is not None else None
            text = None
            if first is not None and first.type == "command" and _is_plain_cat(first, src):
                text = _heredoc_body(grand, src)
            return _Stdin("pipe", text, label="from a here-doc through a pipe")
    return _Stdin("none")


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
        texts = [_read_small(a.value) if a.value else None for a in args]
        if any(t is None for t in texts):
            return None
        return "\n".join(t or "" for t in texts)
    return None


# ---------------------------------------------------------------------------------------------
# Handler table


_HANDLERS: dict[str, Handler] = {
    # wrappers
    "sudo": _h_sudo,
    "sudoedit": _h_sudo,
    "doas": _wrapper("uC"),
    "env": _h_env,
    "command": _h_command,
    "builtin": _wrapper(),
    "exec": _wrapper("a"),
    "nice": _wrapper("n", frozenset({"--adjustment"})),
    "nohup": _wrapper(),
    "time": _wrapper("fo", frozenset({"--format", "--output"})),
    "timeout": _h_timeout,
    "stdbuf": _wrapper("ioe", frozenset({"--input", "--output", "--error"})),
    "xargs": _h_xargs,
    "setsid": _wrapper(),
    "ionice": _wrapper("cn", frozenset({"--class", "--classdata"})),
    "chroot": _h_chroot,
    "busybox": _wrapper(),
    "coproc": _wrapper(),
    "watch": _h_watch,
    "ssh": _h_ssh,
    "su": _h_su,
    "trap": _h_trap,
    "npx": _h_exec_tool,
    "uvx": _h_exec_tool,
    "bunx": _h_exec_tool,
    # opaque
    "eval": _h_opaque,
    "source": _h_opaque,
    ".": _h_opaque,
    "invoke-expression": _h_opaque,
    "iex": _h_opaque,
    # shells and interpreters
    **dict.fromkeys(_SHELLS, _h_shell),
    "pwsh": _h_pwsh,
    "powershell": _h_pwsh,
    "cmd": _h_pwsh,
    "node": _interpreter(
        "ep",
        frozenset({"--eval", "--print"}),
        separate="r",
        long_val=frozenset(
            {"--require", "--import", "--loader", "--input-type", "--conditions", "--title"}
        ),
    ),
    "nodejs": _interpreter("ep", frozenset({"--eval", "--print"}), separate="r"),
    "perl": _interpreter("eE", inplace="i", attached="IMmdDlCx0"),
    "ruby": _interpreter("e", inplace="i", separate="rIC"),
    "php": _interpreter("r", separate="cdzf"),
    "lua": _interpreter("e", separate="l"),
    "rscript": _interpreter("e"),
    "mongosh": _interpreter("", _ws("--eval")),
    "mongo": _interpreter("", _ws("--eval")),
    "bun": _h_bun,
    "deno": _h_deno,
    # files
    "rm": _h_rm,
    "del": _h_remove_item,
    "erase": _h_remove_item,
    "rd": _h_remove_item,
    "ri": _h_remove_item,
    "remove-item": _h_remove_item,
    "rmdir": _h_rmdir,
    "rimraf": _h_rimraf,
    "find": _h_find,
    "fd": _h_fd,
    "fdfind": _h_fd,
    "dd": _h_dd,
    "shred": _h_wipe,
    "wipefs": _h_wipe,
    "mke2fs": _h_wipe,
    "mkswap": _h_wipe,
    "blkdiscard": _h_wipe,
    "format-volume": _h_wipe,
    "clear-disk": _h_wipe,
    "tee": _h_tee,
    "sed": _h_sed,
    "gsed": _h_sed,
    "sort": _h_sort,
    "curl": _h_curl,
    "wget": _h_wget,
    "tar": _h_tar,
    "gtar": _h_tar,
    "bsdtar": _h_tar,
    "unzip": _h_unzip,
    **dict.fromkeys(
        ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lz4", "lzma"),
        _h_compress,
    ),
    "7z": _h_7z,
    "7za": _h_7z,
    "7zr": _h_7z,
    "rsync": _h_rsync,
    **dict.fromkeys(_MODIFY_VERBS, _h_modify_verb),
    # formatters
    "black": _formatter(writes_unless=_ws("--check --diff --version -h --help")),
    "isort": _formatter(writes_unless=_ws("--check --check-only -c --diff --version -h")),
    "autopep8": _formatter(writes_if=frozenset({"-i", "--in-place"})),
    "autoflake": _formatter(writes_if=frozenset({"-i", "--in-place"})),
    "yapf": _formatter(writes_if=frozenset({"-i", "--in-place"})),
    "prettier": _formatter(writes_if=frozenset({"--write", "-w"})),
    "eslint": _formatter(writes_if=frozenset({"--fix"})),
    "gofmt": _formatter(writes_if=frozenset({"-w"})),
    "goimports": _formatter(writes_if=frozenset({"-w"})),
    "shfmt": _formatter(writes_if=frozenset({"-w", "--write"})),
    "clang-format": _formatter(writes_if=frozenset({"-i"})),
    "rustfmt": _formatter(writes_unless=_ws("--check --version -h --help")),
    "ruff": _h_ruff,
    # package managers
    **dict.fromkeys(("pip", "pip3"), _package_manager(_PIP)),
    "pipx": _package_manager(
        _ws(
            "install uninstall upgrade upgrade-all uninstall-all reinstall reinstall-all inject "
            "uninject ensurepath"
        ),
        wrappers=frozenset({"run"}),
    ),
    "npm": _h_npm,
    "pnpm": _package_manager(_PNPM, wrappers=frozenset({"dlx", "exec"})),
    "yarn": _h_yarn,
    **dict.fromkeys(("apt", "apt-get", "aptitude"), _package_manager(_APT, short_val="oc")),
    **dict.fromkeys(("dnf", "yum", "microdnf", "tdnf"), _package_manager(_DNF, short_val="c")),
    "apk": _package_manager(_ws("add del upgrade update fix cache")),
    "zypper": _package_manager(
        _ws("install in remove rm update up dist-upgrade dup patch refresh ref addrepo ar")
    ),
    "pacman": _h_pacman,
    "brew": _package_manager(_BREW),
    "port": _package_manager(
        frozenset(
            {"install", "uninstall", "upgrade", "selfupdate", "activate", "deactivate", "clean"}
        )
    ),
    "snap": _package_manager(_ws("install remove refresh revert enable disable")),
    "flatpak": _package_manager(_ws("install uninstall update remove")),
    "cargo": _h_cargo,
    "go": _h_go,
    "gem": _package_manager(_ws("install uninstall update cleanup pristine")),
    **dict.fromkeys(
        ("bundle", "bundler"),
        _package_manager(
            frozenset(
                {"install", "update", "add", "remove", "lock", "clean", "binstubs", "init", "gem"}
            ),
            wrappers=frozenset({"exec"}),
        ),
    ),
    "composer": _package_manager(
        _ws("install require update remove create-project dump-autoload upgrade u i req rm")
    ),
    **dict.fromkeys(
        ("conda", "mamba", "micromamba"),
        _package_manager(
            _CONDA,
            wrappers=frozenset({"run"}),
            nested={"env": frozenset({"create", "remove", "update"})},
        ),
    ),
    "poetry": _h_poetry_like,
    "pipenv": _h_poetry_like,
    "pdm": _h_poetry_like,
    "hatch": _h_poetry_like,
    "rustup": _package_manager(
        _ws("install update uninstall default self target component toolchain override set")
    ),
    "dotnet": _package_manager(_ws("add remove new restore tool workload")),
    "uv": _h_uv,
    # version control
    "git": _h_git,
    # SQL clients
    "psql": _h_psql,
    "mysql": _h_mysql,
    "mariadb": _h_mysql,
    "sqlite3": _h_sqlite,
    "sqlite": _h_sqlite,
    "duckdb": _h_sqlite,
}

_MODULE_HANDLERS: dict[str, Handler] = {
    "pip": _HANDLERS["pip"],
    "black": _HANDLERS["black"],
    "isort": _HANDLERS["isort"],
    "autopep8": _HANDLERS["autopep8"],
    "autoflake": _HANDLERS["autoflake"],
    "yapf": _HANDLERS["yapf"],
    "ruff": _h_ruff,
    "pipx": _HANDLERS["pipx"],
    "poetry": _h_poetry_like,
    "pdm": _h_poetry_like,
    "uv": _h_uv,
}

_PYTHON = re.compile(r"^(python|pypy|py)(\d+(\.\d+)*)?[a-z]?$")
_PIP_NAME = re.compile(r"^pip\d+(\.\d+)*$")


def _pattern_handler(name: str) -> Handler | None:
    if _PYTHON.match(name):
        return _h_python
    if _PIP_NAME.match(name):
        return _HANDLERS["pip"]
    if name.startswith("mkfs"):
        return _h_wipe
    return None
