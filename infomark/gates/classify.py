"""Tool classification: which class of action a tool call is, by tool name and input.

The names and their classes are the kernel's one table (:data:`infomark.kernel.tools.TOOL_TABLE`);
this module applies it: config overrides, infomark's own MCP server, the table, MCP
annotations (the stricter of name and annotation wins), and the shell classifier for shell
tools. Hot path (hook start-up): standard library only. Shell commands are handed to
:mod:`infomark.gates.shell`, imported lazily so classifying a non-shell tool costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

from infomark.kernel.records import replace
from infomark.kernel.tools import (
    INFOMARK_SERVER,
    INFOMARK_TOOL_NAMES,
    SHELL_TOOL_NAMES,
    Classification,
    ToolClass,
    ToolSpec,
    lookup_tool,
    normalise_tool_name,
    split_mcp_name,
)

__all__ = [
    "SHELL_TOOLS",
    "Classification",
    "ToolClass",
    "classify_tool",
    "declare_class",
    "normalise_tool_name",
    "unknown_tool_reason",
]

#: normalised names whose ``command`` input is a shell command line (from the kernel table)
SHELL_TOOLS: frozenset[str] = SHELL_TOOL_NAMES

_OVERRIDE_ALIASES: dict[str, ToolClass] = {"meta": ToolClass.LEDGER}
_OWN_TOOLS = frozenset(normalise_tool_name(n) for n in INFOMARK_TOOL_NAMES)


def unknown_tool_reason(raw: str) -> str:
    """The reason an unknown tool carries: what it counts as and how to classify it."""
    return (
        f"tool `{raw}` is not in infomark's tool table, so it counts as modify in the ledger "
        f'and strict profiles; classify it under [tools] in infomark.toml (e.g. `"{raw}" = '
        '"read"`; classes: read, search, web, execute, delegation, modify, destructive, ledger)'
    )


def declare_class(c: Classification, tool_class: str) -> Classification:
    """``c`` with the class an integration declared for the call (``"meta"`` is ``ledger``;
    a name that is no class is ``unknown``): the class only, never the families or paths."""
    declared = _OVERRIDE_ALIASES.get(tool_class)
    if declared is None:
        try:
            declared = ToolClass(tool_class)
        except ValueError:
            declared = ToolClass.UNKNOWN
    return replace(c, tool_class=declared, reasons=(f"declared class {tool_class}",))


def classify_tool(
    name: str,
    tool_input: Mapping[str, object] | None,
    *,
    overrides: Mapping[str, str] | None = None,
    mcp_annotations: Mapping[str, object] | None = None,
    cwd: str | None = None,
) -> Classification:
    """Classify one tool call. Never raises.

    ``cwd``: the directory a shell command starts in (default: this process's cwd).

    Order: a config override for the (normalised) tool name wins over everything. An MCP
    name ``mcp__infomark__<tool>`` naming one of infomark's own tools is ``ledger`` (no other
    name is trusted for that, whatever it starts with). Otherwise the kernel table by name
    (an MCP name by its ``<tool>`` part; shell tools get their ``command`` classified by
    :func:`infomark.gates.shell.classify_shell`) and the MCP annotations each give a class,
    and the stricter wins; neither → ``unknown``.
    """
    try:
        return _classify(name, tool_input, overrides, mcp_annotations, cwd)
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
    cwd: str | None = None,
) -> Classification:
    if not isinstance(mcp_annotations, Mapping):
        mcp_annotations = None
    raw = name if isinstance(name, str) else str(name)
    key = normalise_tool_name(raw)
    if overrides:
        hit = _override(raw, key, overrides)
        if hit is not None:
            return hit
    mcp = split_mcp_name(raw)
    if mcp is not None:
        server, tool = mcp
        if normalise_tool_name(server) == INFOMARK_SERVER and (
            normalise_tool_name(tool) in _OWN_TOOLS
        ):
            return Classification(ToolClass.LEDGER, (), (f"`{raw}` is an infomark ledger tool",))
    spec = lookup_tool(raw)
    by_name = _from_spec(raw, spec, tool_input, cwd) if spec is not None else None
    by_annotation = _from_annotations(raw, mcp_annotations) if mcp_annotations else None
    if by_name is not None and by_annotation is not None:
        if by_annotation.tool_class.severity > by_name.tool_class.severity:
            # the stricter class wins, but what the call names (families such as
            # `infomark`, paths, opacity) still counts for self-protection
            return replace(
                by_annotation,
                families=tuple(dict.fromkeys(by_annotation.families + by_name.families)),
                paths=tuple(dict.fromkeys(by_annotation.paths + by_name.paths)),
                opaque=by_annotation.opaque or by_name.opaque,
            )
        return by_name
    if by_name is not None:
        return by_name
    if by_annotation is not None:
        return by_annotation
    if mcp_annotations:
        return Classification(
            ToolClass.MODIFY,
            (),
            (f"`{raw}` is annotated neither read-only nor destructive: treated as modify",),
        )
    return Classification(ToolClass.UNKNOWN, (), (unknown_tool_reason(raw),))


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


def _from_spec(
    raw: str, spec: ToolSpec, tool_input: Mapping[str, object] | None, cwd: str | None = None
) -> Classification:
    cls = spec.tool_class
    if spec.shell:
        return _shell(raw, tool_input, cwd)
    if spec.editor:
        command = tool_input.get("command") if isinstance(tool_input, Mapping) else None
        if command == "view":
            return Classification(ToolClass.READ, (), (f"`{raw}` with command `view` reads",))
        return Classification(ToolClass.MODIFY, (), (f"`{raw}` edits files",))
    if cls is ToolClass.DESTRUCTIVE:
        family = spec.family or "file"
        return Classification(cls, (family,), (f"`{raw}` deletes ({family})",))
    if cls is ToolClass.DELEGATION:
        return Classification(
            cls, (), (f"`{raw}` delegates to a sub-agent or a model call (delegation)",)
        )
    return Classification(cls, (), (f"`{raw}` is a {cls.value} tool",))


def _shell(
    raw: str, tool_input: Mapping[str, object] | None, cwd: str | None = None
) -> Classification:
    command = tool_input.get("command") if isinstance(tool_input, Mapping) else None
    if isinstance(command, list | tuple) and command and all(isinstance(a, str) for a in command):
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

    return classify_shell(command, cwd=cwd)


def _hint(annotations: Mapping[str, object], camel: str, snake: str) -> bool | None:
    """True / False when the hint is given as such, None when absent or unreadable."""
    for k in (camel, snake):
        v = annotations.get(k)
        if v is True or (isinstance(v, str) and v.strip().lower() == "true"):
            return True
        if v is False or (isinstance(v, str) and v.strip().lower() == "false"):
            return False
    return None


def _from_annotations(raw: str, annotations: Mapping[str, object]) -> Classification | None:
    """The class the MCP hints state, or None when they state nothing."""
    read_only = _hint(annotations, "readOnlyHint", "read_only_hint")
    destructive = _hint(annotations, "destructiveHint", "destructive_hint")
    if destructive is True:
        return Classification(
            ToolClass.DESTRUCTIVE, ("mcp",), (f"`{raw}` is annotated destructiveHint (mcp)",)
        )
    if read_only is True:
        return Classification(ToolClass.READ, (), (f"`{raw}` is annotated readOnlyHint",))
    if read_only is False or destructive is False:
        return Classification(
            ToolClass.MODIFY,
            (),
            (f"`{raw}` is annotated neither read-only nor destructive: treated as modify",),
        )
    return None
