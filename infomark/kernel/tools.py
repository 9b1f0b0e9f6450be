"""The tool vocabulary: what class of action a tool call is, and what its evidence can back.

This module is the one place these words are defined, and :data:`TOOL_TABLE` is the one table
of every tool name the project knows, with its :class:`ToolClass` and its
:class:`EvidenceClass`. The gate (``gates/classify``), the ledger (``evidence_class_for``), the
hook, the MCP proxy and the docs all read it, so the gate and the ledger cannot disagree about a
name. Standard library only (hot path).

Where a new tool name goes: add it to the row of its class in ``_ROWS`` below, with the host it
comes from (a local file tool gets the ``file`` flag, and ``creates`` when it makes new files:
the scratch rules read them). Names are compared normalised (:func:`normalise_tool_name`); an
MCP name ``mcp__<server>__<tool>`` is looked up by its ``<tool>`` part.

Why this module is longer than 500 lines: most of it is the table, data written as Python
rows (about 300 lines, one row a host and class, with the comments that say why a name has
its class). It stays one module with the vocabulary it is written in, so the hook loads one
module for both, from its bytecode, with nothing parsed at start-up; a data file would add a
read and a parse to every hook process, and a module of its own a second import.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from infomark.kernel.enums import StrEnum
from infomark.kernel.records import dataclass

__all__ = [
    "INFOMARK_SERVER",
    "INFOMARK_TOOL_NAMES",
    "SHELL_TOOL_NAMES",
    "TOOL_TABLE",
    "Classification",
    "EvidenceClass",
    "ToolClass",
    "ToolSpec",
    "Walk",
    "lookup_tool",
    "normalise_tool_name",
    "split_mcp_name",
    "tool_table_markdown",
]


class ToolClass(StrEnum):
    """What a tool call may do, from harmless to irreversible (plus meta and unknown)."""

    READ = "read"
    SEARCH = "search"
    WEB = "web"
    EXECUTE = "execute"
    DELEGATION = "delegation"  # a sub-agent or an isolated model call: its answer is hearsay
    MODIFY = "modify"
    DESTRUCTIVE = "destructive"
    LEDGER = "ledger"  # meta: the ledger's own tools, todo lists, plan mode
    UNKNOWN = "unknown"

    @property
    def mutates(self) -> bool:
        """Whether a call of this class may change the project (the gate's question)."""
        return self in _MUTATING

    @property
    def severity(self) -> int:
        """Order for "the stricter wins": read < … < modify < destructive."""
        return _SEVERITY[self]


_MUTATING = frozenset({ToolClass.MODIFY, ToolClass.DESTRUCTIVE, ToolClass.UNKNOWN})
_SEVERITY = {
    ToolClass.LEDGER: 0,
    ToolClass.READ: 1,
    ToolClass.SEARCH: 1,
    ToolClass.WEB: 1,
    ToolClass.EXECUTE: 2,
    ToolClass.DELEGATION: 2,
    ToolClass.UNKNOWN: 3,
    ToolClass.MODIFY: 4,
    ToolClass.DESTRUCTIVE: 5,
}


class EvidenceClass(StrEnum):
    """What the recorded result of a tool call may back."""

    EXECUTION = "execution"  # may back oracle_stamp (→ Exact) and inference_stamp
    OBSERVATION = "observation"  # may back inference_stamp only (→ Inferred)
    WEB = "web"  # backs neither: a fetched page is Hypothetical at best
    INELIGIBLE = "ineligible"
    # infomark ran the claim's oracle itself, sandboxed, in a copy made of the baseline's
    # grading surface and the agent's source changes (docs/security.md#attested-runs); never a
    # class a tool or the configuration can give
    ATTESTED = "attested"

    @property
    def eligible_for(self) -> tuple[str, ...]:
        if self in (EvidenceClass.EXECUTION, EvidenceClass.ATTESTED):
            return ("oracle_stamp", "inference_stamp")
        if self is EvidenceClass.OBSERVATION:
            return ("inference_stamp",)
        return ()


@dataclass(frozen=True, slots=True)
class Walk:
    """A command that reads, copies, changes or deletes everything under ``root``.

    ``grep -r key .``, ``cp -r . /tmp/x``, ``tar czf x.tgz .``, ``chmod -R …``. Whether the
    walk reaches a protected directory under ``root`` is decided later, against the real file
    system (:mod:`infomark.gates.protect`), from what the command line says it skips:

    - ``skip_hidden``: entries whose name starts with ``.`` are not entered (ripgrep, ag);
    - ``honours_ignore``: the ignore files the command reads (``.gitignore`` for ``git add``
      without ``-f``; ``.ignore``/``.rgignore`` for ripgrep): a directory whose own ignore file
      ignores everything in it is skipped;
    - ``exclude``: globs matched against each entry's name (``--exclude-dir=.infomark``);
    - ``exclude_paths``: globs matched against a directory's path below ``root`` as the
      command spells it (``prefix`` + ``/`` + the relative path): the directory is skipped
      (``find . -path ./.infomark -prune -o …``, ``rsync --exclude=/.infomark``);
    - ``exclude_files``: globs every file's path (spelled the same way) must match for the
      file to be skipped (``zip -r x.zip . -x '.infomark/*'``);
    - ``only``: only files whose name matches one of these are read (``--include='*.py'``);
    - ``follow``: symlinks met under ``root`` are followed (``grep -R``, ``zip -r``).
    """

    root: str
    command: str
    what: str = "reads"
    follow: bool = False
    skip_hidden: bool = False
    honours_ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    exclude_paths: tuple[str, ...] = ()
    exclude_files: tuple[str, ...] = ()
    only: tuple[str, ...] = ()
    prefix: str = ""


@dataclass(frozen=True, slots=True)
class Classification:
    """The class of one tool call, the destructive families it touches, and why.

    ``paths`` are the filesystem paths the call names, as far as they could be resolved
    statically (globs, quotes, escapes, ``cd`` chains); ``opaque`` is True when some word
    that may name a path could not be resolved (a variable, a substitution), so a check of
    protected paths must fail closed. ``walks`` are the recursive operations it runs
    (:class:`Walk`).
    """

    tool_class: ToolClass
    families: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    opaque: bool = False
    walks: tuple[Walk, ...] = ()


_DROP = str.maketrans("", "", "_-. ")


def normalise_tool_name(name: str) -> str:
    """Lower-case ``name`` and drop ``_ - .`` and spaces: ``Notebook-Read`` → ``notebookread``."""
    return name.lower().translate(_DROP)


def split_mcp_name(name: str) -> tuple[str, str] | None:
    """``mcp__<server>__<tool>`` → ``(server, tool)``; None for any other name."""
    if not name.lower().startswith("mcp__"):
        return None
    server, _, tool = name[5:].partition("__")
    return server, tool


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One row of the tool table.

    ``shell``: the call's ``command`` input is a shell command line, classified by the shell
    classifier (the class given here is only what a missing command fails closed to).
    ``editor``: a multi-command file editor; ``command: view`` only reads.
    ``file``: a local file tool: its path inputs name the files it writes, so the scratch
    rules may judge them (a remote tool, GitHub's ``create_or_update_file``, is not one).
    ``creates``: of those, one that creates a file that is not there (an edit needs one).
    ``family``: the destructive family a destructive tool belongs to.
    """

    name: str
    spelling: str  # as the host spells it
    tool_class: ToolClass
    evidence_class: EvidenceClass
    hosts: tuple[str, ...]
    shell: bool = False
    editor: bool = False
    file: bool = False
    creates: bool = False
    family: str = ""


#: the MCP server name under which infomark serves its own tools (``infomark mcp-proxy``)
INFOMARK_SERVER = "infomark"
#: infomark's own MCP tools; only these, served by :data:`INFOMARK_SERVER`, are ``ledger``
INFOMARK_TOOL_NAMES: frozenset[str] = frozenset(
    {
        "infomark_ledger",
        "infomark_stamp",
        "infomark_divergence",
        "infomark_status",
        "infomark_check",
        "infomark_finish",
    }
)

_R, _S, _W, _X = ToolClass.READ, ToolClass.SEARCH, ToolClass.WEB, ToolClass.EXECUTE
_M, _D, _L, _G = ToolClass.MODIFY, ToolClass.DESTRUCTIVE, ToolClass.LEDGER, ToolClass.DELEGATION
_EXE, _OBS = EvidenceClass.EXECUTION, EvidenceClass.OBSERVATION
_WEBEV, _NONE = EvidenceClass.WEB, EvidenceClass.INELIGIBLE

# (class, evidence, hosts, flags, names). Hosts: cc Claude Code, codex Codex CLI, gemini
# Gemini CLI, opencode OpenCode, cursor Cursor, cline Cline/Roo Code, continue Continue,
# openhands OpenHands, goose goose, agents the OpenAI Agents SDK, smol smolagents, mcp-fs /
# mcp-git / mcp-github / mcp-memory / mcp-fetch / mcp-everything the reference MCP servers,
# generic: common spellings of custom tools (and names infomark has always known). Aider has
# no tool calls (it edits through its own edit formats and `/run`), so it adds no name.
_Flags = str  # space-separated: "shell", "editor", "file", "creates", "family=<f>" (ToolSpec)
_ROWS: tuple[tuple[ToolClass, EvidenceClass, str, _Flags, tuple[str, ...]], ...] = (
    # -- shell tools: the `command` is a shell command line -------------------------------
    (_X, _EXE, "cc opencode", "shell", ("Bash",)),
    (_X, _EXE, "codex agents", "shell", ("shell", "local_shell", "exec_command")),
    (_X, _EXE, "gemini", "shell", ("run_shell_command",)),
    (_X, _EXE, "cursor", "shell", ("run_terminal_cmd",)),
    (_X, _EXE, "cline", "shell", ("execute_command",)),
    (_X, _EXE, "continue", "shell", ("run_terminal_command", "builtin_run_terminal_command")),
    (_X, _EXE, "openhands", "shell", ("execute_bash", "cmd_run")),
    (_X, _EXE, "goose", "shell", ("developer__shell",)),
    (
        _X,
        _EXE,
        "generic",
        "shell",
        (
            "sh",
            "zsh",
            "run",
            "exec",
            "execute",
            "cmd",
            "command",
            "terminal",
            "powershell",
            "pwsh",
            "test",
            "run_command",
            "shell_command",
            "run_shell",
        ),
    ),
    # -- runs without a shell command line ------------------------------------------------
    (_X, _EXE, "generic", "", ("tests", "run_tests", "run_test", "pytest", "job")),
    (_X, _EXE, "cc", "", ("BashOutput", "KillShell", "KillBash")),
    # expand a prompt; the tool calls they lead to are gated one by one
    (_X, _NONE, "cc", "", ("SlashCommand", "Skill")),
    (_X, _EXE, "codex", "", ("write_stdin",)),
    # code interpreters run opaque code with the agent's rights: fail closed to modify
    (_M, _EXE, "agents", "", ("code_interpreter",)),
    (_M, _EXE, "smol", "", ("python_interpreter",)),
    (_M, _EXE, "openhands", "", ("execute_ipython_cell",)),
    # -- read ---------------------------------------------------------------------------
    (_R, _OBS, "cc opencode", "", ("Read", "NotebookRead", "LS", "list", "todoread")),
    (_R, _OBS, "cc", "", ("ListMcpResourcesTool", "ReadMcpResourceTool")),
    (_R, _OBS, "codex", "", ("view_image",)),
    (_R, _OBS, "gemini", "", ("read_file", "read_many_files", "list_directory")),
    (_R, _OBS, "cursor", "", ("list_dir",)),
    (_R, _OBS, "cline", "", ("list_files", "list_code_definition_names")),
    (
        _R,
        _OBS,
        "continue",
        "",
        (
            "read_currently_open_file",
            "view_subdirectory",
            "view_repo_map",
            "view_diff",
            "builtin_read_file",
            "builtin_read_currently_open_file",
            "builtin_view_subdirectory",
            "builtin_view_repo_map",
            "builtin_view_diff",
        ),
    ),
    (
        _R,
        _OBS,
        "mcp-fs",
        "",
        (
            "read_text_file",
            "read_media_file",
            "read_multiple_files",
            "list_directory_with_sizes",
            "directory_tree",
            "get_file_info",
            "list_allowed_directories",
        ),
    ),
    (
        _R,
        _OBS,
        "mcp-git",
        "",
        (
            "git_status",
            "git_diff_unstaged",
            "git_diff_staged",
            "git_diff",
            "git_log",
            "git_show",
            "git_branch",
        ),
    ),
    (
        _R,
        _OBS,
        "mcp-github",
        "",
        (
            "get_file_contents",
            "list_commits",
            "list_issues",
            "get_issue",
            "get_pull_request",
            "list_pull_requests",
            "get_pull_request_files",
            "get_pull_request_status",
            "get_pull_request_comments",
            "get_pull_request_reviews",
        ),
    ),
    (_R, _OBS, "mcp-memory", "", ("read_graph", "open_nodes")),
    (
        _R,
        _OBS,
        "mcp-everything",
        "",
        (
            "printEnv",
            "getTinyImage",
            "annotatedMessage",
            "getResourceReference",
            "getResourceLinks",
            "structuredContent",
            "listRoots",
        ),
    ),
    # they only compute (echo, add, wait): they run, and prove nothing about the project
    (_X, _NONE, "mcp-everything", "", ("echo", "add", "longRunningOperation")),
    (_R, _OBS, "goose", "", ("developer__list_windows", "developer__screen_capture")),
    (
        _R,
        _OBS,
        "generic",
        "",
        (
            "view",
            "cat",
            "tree",
            "head",
            "tail",
            "stat",
            "diff",
            "screenshot",
        ),
    ),
    # -- search -------------------------------------------------------------------------
    (_S, _OBS, "cc opencode", "", ("Grep", "Glob")),
    (_S, _OBS, "gemini", "", ("search_file_content",)),
    (_S, _OBS, "cursor", "", ("codebase_search", "grep_search")),
    (_S, _OBS, "cline mcp-fs", "", ("search_files",)),
    (
        _S,
        _OBS,
        "continue",
        "",
        ("exact_search", "file_glob_search", "glob_search", "builtin_exact_search"),
    ),
    (_S, _OBS, "cursor agents", "", ("file_search",)),
    (
        _S,
        _OBS,
        "mcp-github",
        "",
        ("search_repositories", "search_code", "search_issues", "search_users"),
    ),
    (_S, _OBS, "mcp-memory", "", ("search_nodes",)),
    (
        _S,
        _OBS,
        "generic",
        "",
        (
            "search",
            "codesearch",
            "codegraph",
            "find",
            "rg",
            "ripgrep",
            "lsp_diagnostics",
            "lsp_hover",
        ),
    ),
    # -- web ----------------------------------------------------------------------------
    (_W, _WEBEV, "cc opencode gemini", "", ("WebFetch",)),  # Gemini: web_fetch
    (_W, _WEBEV, "cc opencode cursor agents smol", "", ("WebSearch",)),  # also web_search
    (_W, _WEBEV, "gemini", "", ("google_web_search",)),
    (_W, _WEBEV, "cline", "", ("browser_action",)),
    (
        _W,
        _WEBEV,
        "continue",
        "",
        ("search_web", "fetch_url_content", "builtin_search_web"),
    ),
    (_W, _WEBEV, "openhands", "", ("web_read", "browser")),
    (_W, _WEBEV, "smol", "", ("visit_webpage", "wikipedia_search")),
    (_W, _WEBEV, "mcp-fetch", "", ("fetch",)),
    (_W, _WEBEV, "generic", "", ("browse", "http", "curl", "wget", "web")),
    # -- modify -------------------------------------------------------------------------
    # MultiEdit is also Continue's multi_edit
    (_M, _NONE, "cc opencode", "file creates", ("Write",)),
    (_M, _NONE, "cc opencode", "file", ("Edit", "MultiEdit", "NotebookEdit", "patch")),
    (_M, _NONE, "codex agents", "file creates", ("apply_patch",)),
    (_M, _NONE, "gemini mcp-fs", "file creates", ("write_file",)),
    (_M, _NONE, "gemini mcp-fs", "file", ("replace",)),
    (_M, _NONE, "cursor mcp-fs", "file", ("edit_file", "search_replace", "edit_notebook")),
    (_M, _NONE, "cursor", "", ("reapply",)),
    (_M, _NONE, "cline", "file creates", ("write_to_file",)),
    (
        _M,
        _NONE,
        "cline",
        "file",
        ("replace_in_file", "apply_diff", "insert_content", "search_and_replace"),
    ),
    (_M, _NONE, "continue", "file creates", ("create_new_file", "builtin_create_new_file")),
    (
        _M,
        _NONE,
        "continue",
        "file",
        ("edit_existing_file", "single_find_and_replace", "builtin_edit_existing_file"),
    ),
    (_M, _NONE, "mcp-fs", "file creates", ("create_directory",)),
    (_M, _NONE, "mcp-fs", "file", ("move_file",)),
    (
        _M,
        _NONE,
        "mcp-git",
        "",
        ("git_commit", "git_add", "git_reset", "git_create_branch", "git_checkout", "git_init"),
    ),
    (
        _M,
        _NONE,
        "mcp-github",
        "",
        (
            "create_or_update_file",
            "push_files",
            "create_repository",
            "fork_repository",
            "create_branch",
            "create_issue",
            "update_issue",
            "add_issue_comment",
            "create_pull_request",
            "create_pull_request_review",
            "update_pull_request_branch",
            "merge_pull_request",
        ),
    ),
    (_M, _NONE, "mcp-memory", "", ("create_entities", "create_relations", "add_observations")),
    (_M, _NONE, "gemini", "", ("save_memory",)),
    (_M, _NONE, "openhands goose", "editor file", ("str_replace_editor", "developer__text_editor")),
    (_M, _NONE, "goose", "", ("developer__image_processor",)),
    (
        _M,
        _NONE,
        "generic",
        "editor file",
        ("str_replace_based_edit_tool", "str_replace", "str_replace_edit_tool", "text_editor"),
    ),
    (_M, _NONE, "generic", "file creates", ("create", "mkdir", "create_file")),
    (_M, _NONE, "generic", "file", ("move", "rename", "insert")),
    # -- destructive --------------------------------------------------------------------
    (_D, _NONE, "cursor", "family=file file", ("delete_file",)),
    (_D, _NONE, "generic", "family=file file", ("delete", "remove", "rm")),
    (
        _D,
        _NONE,
        "mcp-memory",
        "family=mcp",
        ("delete_entities", "delete_observations", "delete_relations"),
    ),
    # -- delegation: a sub-agent or an isolated model call --------------------------------
    (_G, _NONE, "cc opencode", "", ("Task", "Agent")),
    (_G, _NONE, "cline", "", ("new_task",)),
    (_G, _NONE, "mcp-everything", "", ("sampleLLM",)),
    (_G, _NONE, "generic", "", ("aicall", "llm_call", "ask_model", "subagent")),
    # -- meta: plans, todo lists, questions to the user, "I am done" ----------------------
    (_L, _NONE, "cc opencode cursor", "", ("TodoWrite", "ExitPlanMode", "AskUserQuestion")),
    (_L, _NONE, "codex", "", ("update_plan",)),
    (_L, _NONE, "gemini", "", ("write_todos",)),
    (
        _L,
        _NONE,
        "cline",
        "",
        (
            "ask_followup_question",
            "attempt_completion",
            "plan_mode_respond",
            "update_todo_list",
            "switch_mode",
        ),
    ),
    (_L, _NONE, "openhands", "", ("think", "finish", "task_tracker")),
    (_L, _NONE, "smol", "", ("final_answer", "user_input")),
    (_L, _NONE, "mcp-everything", "", ("startElicitation",)),
)


def _spec(key: str, row: _Row, name: str) -> ToolSpec:
    cls, evidence, hosts, flags, _names = row
    words = flags.split()
    family = [w.removeprefix("family=") for w in words if w.startswith("family=")]
    return ToolSpec(
        name=key,
        spelling=name,
        tool_class=cls,
        evidence_class=evidence,
        hosts=tuple(hosts.split()),
        shell="shell" in words,
        editor="editor" in words,
        file="file" in words,
        creates="creates" in words,
        family=family[0] if family else "",
    )


_Row = tuple[ToolClass, EvidenceClass, str, str, tuple[str, ...]]


def _index() -> dict[str, tuple[_Row, str]]:
    index: dict[str, tuple[_Row, str]] = {}
    for row in _ROWS:
        for name in row[4]:
            key = normalise_tool_name(name)
            if key in index:
                raise RuntimeError(f"tool table: {name!r} is listed twice")  # a test pins this
            index[key] = (row, name)
    return index


def _build() -> dict[str, ToolSpec]:
    return {key: _spec(key, row, name) for key, (row, name) in _index().items()}


class _ToolTable(Mapping[str, ToolSpec]):
    """A read-only mapping whose rows are built on first lookup (hook start-up)."""

    __slots__ = ("_index", "_specs")

    def __init__(self, index: dict[str, tuple[_Row, str]]) -> None:
        self._index = index
        self._specs: dict[str, ToolSpec] = {}

    def __getitem__(self, key: str) -> ToolSpec:
        spec = self._specs.get(key)
        if spec is None:
            row, name = self._index[key]
            spec = self._specs[key] = _spec(key, row, name)
        return spec

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: object) -> bool:
        return key in self._index


_INDEX = _index()
#: every tool name infomark knows, normalised, with its class and evidence class
TOOL_TABLE: Mapping[str, ToolSpec] = _ToolTable(_INDEX)
#: the normalised names whose ``command`` input is a shell command line
SHELL_TOOL_NAMES: frozenset[str] = frozenset(
    k for k, (row, _) in _INDEX.items() if "shell" in row[3].split()
)


def tool_table_markdown() -> str:
    """The tool table as docs/gates.md shows it (a test keeps the two equal)."""
    lines = ["| class | evidence | tool names |", "|---|---|---|"]
    for cls in ToolClass:
        for ev in EvidenceClass:
            names = sorted(
                (
                    s.spelling
                    for s in TOOL_TABLE.values()
                    if s.tool_class is cls and s.evidence_class is ev
                ),
                key=str.lower,
            )
            if names:
                shown = ", ".join(f"`{n}`" for n in names)
                lines.append(f"| `{cls.value}` | `{ev.value}` | {shown} |")
    return "\n".join(lines) + "\n"


def lookup_tool(name: str) -> ToolSpec | None:
    """The row for ``name`` (an MCP name by its ``<tool>`` part), or None when unknown."""
    mcp = split_mcp_name(name)
    return TOOL_TABLE.get(normalise_tool_name(mcp[1] if mcp is not None else name))
