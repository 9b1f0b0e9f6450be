"""Tool classification: which class of action a tool call is, by tool name and input.

Hot path (hook start-up): standard library only. Shell commands are handed to
:mod:`infomark.gates.shell`, imported lazily so classifying a non-shell tool costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from infomark.kernel.tools import Classification, ToolClass, normalise_tool_name

__all__ = [
    "SHELL_TOOLS",
    "Classification",
    "ToolClass",
    "classify_tool",
    "normalise_tool_name",
]


SHELL_TOOLS: frozenset[str] = frozenset(
    {
        "bash",
        "shell",
        "sh",
        "zsh",
        "run",
        "exec",
        "cmd",
        "terminal",
        "powershell",
        "test",
        "runcommand",
    }
)

_BY_NAME: dict[str, ToolClass] = {
    **dict.fromkeys(
        ("read", "view", "cat", "notebookread", "ls", "list", "readfile"), ToolClass.READ
    ),
    **dict.fromkeys(
        ("grep", "glob", "search", "codesearch", "codegraph", "find", "rg"), ToolClass.SEARCH
    ),
    **dict.fromkeys(("webfetch", "websearch", "fetch", "browse"), ToolClass.WEB),
    **dict.fromkeys(
        (
            "write",
            "edit",
            "multiedit",
            "applypatch",
            "notebookedit",
            "create",
            "patch",
            "move",
            "rename",
            "mkdir",
            # common spellings of the same tools (MCP file servers)
            "writefile",
            "editfile",
            "createfile",
        ),
        ToolClass.MODIFY,
    ),
    **dict.fromkeys(("delete", "remove", "rm", "deletefile"), ToolClass.DESTRUCTIVE),
    **dict.fromkeys(("todowrite", "exitplanmode"), ToolClass.LEDGER),
    **dict.fromkeys(("task", "agent"), ToolClass.EXECUTE),
}

_OVERRIDE_ALIASES: dict[str, ToolClass] = {"meta": ToolClass.LEDGER}


def classify_tool(
    name: str,
    tool_input: Mapping[str, object] | None,
    *,
    overrides: Mapping[str, str] | None = None,
    mcp_annotations: Mapping[str, object] | None = None,
) -> Classification:
    """Classify one tool call. Never raises.

    Order: a config override for the (normalised) tool name wins over everything. MCP names
    (``mcp__<server>__<tool>``): the infomark server's own tools are ``ledger``; otherwise the
    annotations decide when given (non-empty), else the ``<tool>`` part's default, else
    ``unknown``. Other names: the defaults by name (shell tools get their ``command``
    classified by :func:`infomark.gates.shell.classify_shell`); an unknown name with
    annotations is classified by them; anything else is ``unknown``.
    """
    try:
        return _classify(name, tool_input, overrides, mcp_annotations)
    except Exception as exc:  # defensive: a classifier bug must not open the gate
        return Classification(
            ToolClass.MODIFY,
            (),
            (f"internal error while classifying ({type(exc).__name__}): failing closed to modify",),
        )


def _classify(
    name: str,
    tool_input: Mapping[str, object] | None,
    overrides: Mapping[str, str] | None,
    mcp_annotations: Mapping[str, object] | None,
) -> Classification:
    if not isinstance(mcp_annotations, Mapping):
        mcp_annotations = None
    raw = name if isinstance(name, str) else str(name)
    key = normalise_tool_name(raw)
    if overrides:
        hit = _override(raw, key, overrides)
        if hit is not None:
            return hit
    if raw.lower().startswith("mcp__"):
        return _classify_mcp(raw, tool_input, mcp_annotations)
    by_name = _classify_by_name(raw, key, tool_input)
    if by_name is not None:
        return by_name
    if mcp_annotations:
        return _from_annotations(raw, mcp_annotations)
    return Classification(
        ToolClass.UNKNOWN,
        (),
        (f"tool `{raw}` has no default class; map it under [tools] in the infomark config",),
    )


def _override(raw: str, key: str, overrides: Mapping[str, str]) -> Classification | None:
    for tool, value in overrides.items():
        if not isinstance(tool, str) or normalise_tool_name(tool) != key:
            continue
        wanted = value.strip().lower() if isinstance(value, str) else ""
        cls = _OVERRIDE_ALIASES.get(wanted)
        if cls is None:
            try:
                cls = ToolClass(wanted)
            except ValueError:
                return Classification(
                    ToolClass.UNKNOWN,
                    (),
                    (
                        f"config override for `{raw}` names {value!r}, which is not a tool "
                        f"class (one of: {', '.join(c.value for c in ToolClass)})",
                    ),
                )
        return Classification(cls, (), (f"config override: `{raw}` is {cls.value}",))
    return None


def _classify_by_name(
    raw: str, key: str, tool_input: Mapping[str, object] | None
) -> Classification | None:
    if key in SHELL_TOOLS:
        command = tool_input.get("command") if isinstance(tool_input, Mapping) else None
        if (
            isinstance(command, list | tuple)
            and command
            and all(isinstance(a, str) for a in command)
        ):
            import shlex

            command = shlex.join(command)  # argv form (Codex-style): classify the same line
        if not isinstance(command, str):
            return Classification(
                ToolClass.MODIFY,
                (),
                (
                    f"shell tool `{raw}` was called without a `command` to classify; "
                    "treated as modify (fail-closed)",
                ),
            )
        from infomark.gates.shell import classify_shell  # lazy: parser only for shell tools

        return classify_shell(command)
    if key.startswith("infomark"):
        return Classification(ToolClass.LEDGER, (), (f"`{raw}` is an infomark ledger tool",))
    if key.startswith("strreplace"):
        command = tool_input.get("command") if isinstance(tool_input, Mapping) else None
        if command == "view":
            return Classification(ToolClass.READ, (), (f"`{raw}` with command `view` reads",))
        return Classification(ToolClass.MODIFY, (), (f"`{raw}` edits files",))
    cls = _BY_NAME.get(key)
    if cls is None:
        return None
    if key in ("task", "agent"):
        return Classification(cls, ("subagent",), (f"`{raw}` starts a sub-agent",))
    if cls is ToolClass.DESTRUCTIVE:
        return Classification(cls, ("file",), (f"`{raw}` deletes files (file)",))
    return Classification(cls, (), (f"`{raw}` is a {cls.value} tool",))


def _classify_mcp(
    raw: str,
    tool_input: Mapping[str, object] | None,
    annotations: Mapping[str, object] | None,
) -> Classification:
    server, _, tool = raw[5:].partition("__")
    if normalise_tool_name(server) == "infomark" or normalise_tool_name(tool).startswith(
        "infomark"
    ):
        return Classification(ToolClass.LEDGER, (), (f"`{raw}` is an infomark ledger tool",))
    if annotations:
        return _from_annotations(raw, annotations)
    key = normalise_tool_name(tool)
    if key:
        by_name = _classify_by_name(tool, key, tool_input)
        if by_name is not None:
            return by_name
    return Classification(
        ToolClass.UNKNOWN,
        (),
        (
            f"MCP tool `{raw}` has no annotations and `{tool}` is not a known tool name; "
            "map it under [tools] in the infomark config",
        ),
    )


def _hint(annotations: Mapping[str, object], camel: str, snake: str) -> bool:
    for k in (camel, snake):
        v = annotations.get(k)
        if v is True or (isinstance(v, str) and v.strip().lower() == "true"):
            return True
    return False


def _from_annotations(raw: str, annotations: Mapping[str, object]) -> Classification:
    if _hint(annotations, "readOnlyHint", "read_only_hint"):
        return Classification(ToolClass.READ, (), (f"`{raw}` is annotated readOnlyHint",))
    if _hint(annotations, "destructiveHint", "destructive_hint"):
        return Classification(
            ToolClass.DESTRUCTIVE, ("mcp",), (f"`{raw}` is annotated destructiveHint (mcp)",)
        )
    return Classification(
        ToolClass.MODIFY,
        (),
        (f"`{raw}` is annotated neither read-only nor destructive: treated as modify",),
    )
