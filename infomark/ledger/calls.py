"""What an agent asks to run and what came back: the two values every integration builds."""

from __future__ import annotations

from collections.abc import Mapping

from infomark.kernel.records import dataclass, field, replace

TYPE_CHECKING = False
if TYPE_CHECKING:  # types only: typing costs a hook's start-up
    from typing import Any, TypedDict

    from infomark.kernel.spooled import LargeText

    class RecordOptions(TypedDict, total=False):
        """The keyword options of every ``record`` (the facade, the engine, the HTTP clients
        and the protocols they satisfy), written once: ``**opts: Unpack[RecordOptions]``.

        ``tool_class``: the class the integration declares for the tool (it decides the
        evidence class); ``call_id``: the pending call the result pairs with (default: the
        call's ``tool_call_id``); ``cwd``: the directory the tool ran in (default: the
        project root); ``background_id``: the host's id of a run started in the background.
        """

        tool_class: str | None
        call_id: str | None
        cwd: str | None
        background_id: str | None


__all__ = ["RECORD_OPTIONS", "ToolCall", "ToolOutcome", "check_options"]

#: The keys of :class:`RecordOptions` (a type only), for the run-time check of a public
#: ``record``: ``**opts`` takes any keyword, and a misspelt one must still be a TypeError.
RECORD_OPTIONS = ("tool_class", "call_id", "cwd", "background_id")


def check_options(method: str, opts: Mapping[str, object], known: tuple[str, ...]) -> None:
    """TypeError, as Python words it, for a keyword ``method`` does not take."""
    for key in opts:
        if key not in known:
            raise TypeError(f"{method}() got an unexpected keyword argument {key!r}")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call as the agent asked for it.

    ``annotations`` carries MCP tool annotations (``readOnlyHint`` …) when the host has them.
    ``cwd`` is the directory the agent's tool runs in (the host's session cwd), when the host
    says: shell paths and relative file paths are resolved from it. Not part of the evidence.
    """

    tool: str
    input: Mapping[str, Any] = field(default_factory=dict)
    tool_call_id: str | None = None
    annotations: Mapping[str, Any] | None = None
    cwd: str | None = None

    @property
    def command(self) -> str | None:
        """The shell command line, for tools that take one."""
        value = self.input.get("command")
        return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool returned.

    ``exit_code`` is None for tools with no exit status (a read, a search); ``error``
    is set when the tool itself failed or timed out. ``output`` is a
    :class:`~infomark.kernel.spooled.LargeText` when the command hook streamed a result too
    large to hold (it stands for the ``str`` of its parts).
    """

    output: str | bytes | LargeText = ""
    exit_code: int | None = None
    error: str | None = None
    duration_ms: float | None = None
    is_error: bool = False

    @property
    def failed(self) -> bool:
        return self.error is not None or self.is_error or (self.exit_code or 0) != 0

    def with_output(self, output: str | bytes | LargeText) -> ToolOutcome:
        return replace(self, output=output)
