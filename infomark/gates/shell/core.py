"""What every part of the shell classifier shares: severities, findings, a command's context.

The tree walker (:mod:`.tree`) creates one :class:`State` per classification and one
:class:`Env` per simple command; handlers report through the ``Env``. Whatever a handler needs
from the walker (parsing nested code, the command's stdin, looking up another command) goes
through the :class:`Walker` protocol stored on the state, so handler modules never import the
walker and the package has no import cycle.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from infomark.gates import shell_fs as fs
from infomark.gates.shell.globbing import GLOB_BUDGET
from infomark.kernel.records import dataclass, field
from infomark.kernel.tools import Classification, ToolClass, Walk

TYPE_CHECKING = False  # typing costs a hook's start-up
if TYPE_CHECKING:
    from typing import Protocol

    from tree_sitter import Node

__all__ = [
    "DESTRUCTIVE",
    "EXECUTE",
    "MODIFY",
    "SQL_FILE_LIMIT",
    "Arg",
    "Env",
    "Handler",
    "State",
    "Stdin",
    "Walker",
    "fail_closed",
    "read_small",
    "result",
    "short",
    "ws",
]

SQL_FILE_LIMIT = 1_000_000
"""Files handed to a SQL client (or cat into one) are read and scanned when smaller than this."""

EXECUTE, MODIFY, DESTRUCTIVE = 0, 1, 2
_CLASS_OF = {
    EXECUTE: ToolClass.EXECUTE,
    MODIFY: ToolClass.MODIFY,
    DESTRUCTIVE: ToolClass.DESTRUCTIVE,
}
_MAX_REASONS = 12
_MAX_PATHS = 1_000
_SNIPPET = 72


def ws(words: str) -> frozenset[str]:
    """A word table written as one space-separated string."""
    return frozenset(words.split())


def short(text: str) -> str:
    one = " ".join(text.split())
    if len(one) > _SNIPPET:
        one = one[: _SNIPPET - 1].rstrip() + "…"
    return one


def read_small(path: str, cwd: str | None = None) -> str | None:
    """The text of a small regular file (``< SQL_FILE_LIMIT`` bytes), else None."""
    try:
        full = fs.expanduser(path)
        if cwd is not None:
            full = os.path.join(cwd, full)
        st = fs.stat(full)
        if not fs.isfile(full) or st.st_size >= SQL_FILE_LIMIT:
            return None
        return fs.read_file(full, SQL_FILE_LIMIT).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Arg:
    """One shell word (see :mod:`.words`)."""

    value: str | None  # the word after quote removal; None when it depends on an expansion
    approx: str  # the same with expansions replaced by a placeholder (for scanning)


@dataclass(frozen=True, slots=True)
class Stdin:
    kind: str  # "none" | "text" | "file" | "pipe"
    text: str | None = None  # here-doc / here-string / piped text, when known
    path: str | None = None  # `< path`
    label: str = ""
    producer: str = ""  # the command writing into the pipe, as written (`base64 -d`)
    producer_input: str | None = None  # what the producer itself reads, when known
    exact: bool = False  # ``text`` is exactly what the command reads (no expansion in it)


Handler = Callable[[str, list[Arg], "Env"], None]


if TYPE_CHECKING:

    class Walker(Protocol):
        """The walker's services, as handlers see them."""

        def nested(self, code: str, state: State, depth: int, where: str) -> None: ...

        def stdin_of(self, node: Node, src: bytes) -> Stdin: ...

        def lookup(self, word: str) -> tuple[str | None, Handler | None]: ...

        def module(self, name: str) -> Handler | None: ...

else:

    class Walker:
        """The walker's services, as handlers see them (a ``typing.Protocol`` when type
        checking)."""


@dataclass(slots=True)
class State:
    """Everything found in one command line."""

    walker: Walker
    start_cwd: str
    # (severity, family, command or None, what); reasons are formatted only for the winners
    findings: list[tuple[int, str | None, Env | None, str]] = field(default_factory=list)
    nodes: int = 0
    exhausted: bool = False
    marks: list[str] = field(default_factory=list)  # families reported at any severity
    paths: list[str] = field(default_factory=list)
    seen_paths: set[str] = field(default_factory=set)
    noted: set[tuple[str, int]] = field(default_factory=set)  # words already expanded
    glob_budget: list[int] = field(default_factory=lambda: [GLOB_BUDGET])
    opaque: bool = False
    cwds: list[str] = field(default_factory=list)  # every directory the line may be in
    variables: dict[str, str] = field(default_factory=dict)  # NAME=static value seen so far
    aliases: dict[str, str] = field(default_factory=dict)
    hashed: dict[str, str] = field(default_factory=dict)  # `hash -p PATH NAME`
    text: str = ""  # the whole command line, for self-invocation checks
    walks: list[Walk] = field(default_factory=list)  # recursive reads/copies/changes
    listings: list[Walk] = field(default_factory=list)  # `find ROOT` name lists (for xargs)
    glob_changed: bool = False  # `shopt -s dotglob/globstar…` or GLOBIGNORE: globs unknown
    inherited: list[Stdin] = field(default_factory=list)  # stdin of the code being nested

    def __post_init__(self) -> None:
        if not self.cwds:
            self.cwds.append(self.start_cwd)

    def add(self, severity: int, reason: str, family: str | None = None) -> None:
        self.findings.append((severity, family, None, reason))

    def mark(self, family: str) -> None:
        if family not in self.marks:
            self.marks.append(family)

    def path(self, path: str, base: str | None = None) -> None:
        """Record a path the line names; a relative one against ``base``, else against every
        directory the line may be in."""
        if len(self.paths) >= _MAX_PATHS:
            fs.read_any()  # the count includes symlinks resolved (fs.realpath): the tree decides
            self.opaque = True
            return
        bases = [base] if base is not None else self.cwds
        for where in [""] if os.path.isabs(path) else bases:
            full = os.path.normpath(os.path.join(where, path))
            if full.startswith("//"):
                full = full[1:]
            for proc in _PROC_CWD:  # the shell's own cwd, not this process's
                if full == proc or full.startswith(proc + "/"):
                    full = os.path.normpath(self.cwds[-1] + full[len(proc) :])
            if full in self.seen_paths:
                continue
            self.seen_paths.add(full)
            self.paths.append(full)
            real = _real(full)
            if real is not None and real not in self.seen_paths:
                self.seen_paths.add(real)
                self.paths.append(real)


_PROC_CWD = ("/proc/self/cwd", "/proc/thread-self/cwd")


def _real(path: str) -> str | None:
    if path.startswith(("/dev/", "/proc/self/fd", "/proc/thread-self/fd")):
        return None
    try:
        real = fs.realpath(path)
    except (OSError, ValueError):
        return None
    return real if real != path else None


@dataclass(slots=True)
class Env:
    """What a command handler needs: where to report, its text, and its stdin."""

    state: State
    node: Node
    src: bytes
    depth: int
    _stdin: Stdin | None = None
    _quoted: str | None = None

    @property
    def text(self) -> str:
        """The command as written."""
        return self.src[self.node.start_byte : self.node.end_byte].decode("utf-8", "replace")

    @property
    def quoted(self) -> str:
        """The command as "`…`" for reasons (computed only when a reason is shown)."""
        if self._quoted is None:
            self._quoted = "`" + short(self.text) + "`"
        return self._quoted

    def reason(self, what: str, family: str | None) -> str:
        suffix = f" ({family})" if family else ""
        return f"{self.quoted} {what}{suffix}"

    def add(self, severity: int, what: str, family: str | None = None) -> None:
        self.state.findings.append((severity, family, self, what))

    def execute(self, what: str = "runs; not known to modify anything") -> None:
        self.add(EXECUTE, what)

    def modify(self, what: str) -> None:
        self.add(MODIFY, what)

    def destroy(self, what: str, family: str) -> None:
        self.add(DESTRUCTIVE, what, family)

    def opaque(self, what: str, family: str | None = None) -> None:
        """Something that may name a path or a command could not be resolved: modify."""
        self.state.opaque = True
        if family:
            self.state.mark(family)
        self.add(MODIFY, what)

    def nested(self, code: str, where: str, *, inherit: bool = True) -> None:
        """Classify ``code`` one level deeper. Its commands read this command's stdin
        (``sh -c sh <<< CODE`` runs CODE) unless ``inherit`` is off (the code *is* the stdin)."""
        stdin = self.stdin() if inherit else Stdin("none")
        if stdin.kind != "none":
            self.state.inherited.append(stdin)
        try:
            self.state.walker.nested(code, self.state, self.depth, f"{self.quoted} {where}")
        finally:
            if stdin.kind != "none":
                self.state.inherited.pop()

    def stdin(self) -> Stdin:
        if self._stdin is None:
            own = self.state.walker.stdin_of(self.node, self.src)
            if own.kind == "none" and self.state.inherited:
                own = self.state.inherited[-1]  # nested code reads its runner's stdin
            self._stdin = own
        return self._stdin


def result(state: State) -> Classification:
    paths = tuple(state.paths)
    if not state.findings:
        return Classification(
            ToolClass.EXECUTE,
            tuple(state.marks),
            ("no command runs",),
            paths,
            state.opaque,
            tuple(state.walks),
        )
    top = max(f[0] for f in state.findings)
    reasons: list[str] = []
    families: list[str] = []
    more = formatted = 0
    for severity, family, env, what in state.findings:
        if severity != top:
            continue
        if family and top == DESTRUCTIVE and family not in families:
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
    for mark in state.marks:
        if mark not in families:
            families.append(mark)
    return Classification(
        _CLASS_OF[top],
        tuple(sorted(families)),
        tuple(reasons),
        paths,
        state.opaque,
        tuple(state.walks),
    )


def fail_closed(why: str) -> Classification:
    return Classification(ToolClass.MODIFY, (), (f"{why}: failing closed to modify",), (), True)
