"""The tool vocabulary: what class of action a tool call is, and what its evidence can back.

This module is the one place these words are defined; the gates, the ledger, the hook, the
MCP proxy and the docs import them from here. Standard library only.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Classification", "EvidenceClass", "ToolClass", "normalise_tool_name"]


class ToolClass(enum.StrEnum):
    """What a tool call may do, from harmless to irreversible (plus meta and unknown)."""

    READ = "read"
    SEARCH = "search"
    WEB = "web"
    EXECUTE = "execute"
    MODIFY = "modify"
    DESTRUCTIVE = "destructive"
    LEDGER = "ledger"  # meta: the ledger's own tools, todo lists, plan mode
    UNKNOWN = "unknown"

    @property
    def mutates(self) -> bool:
        """Whether a call of this class may change the project (the gate's question)."""
        return self in _MUTATING


_MUTATING = frozenset({ToolClass.MODIFY, ToolClass.DESTRUCTIVE, ToolClass.UNKNOWN})


class EvidenceClass(enum.StrEnum):
    """What the recorded result of a tool call may back."""

    EXECUTION = "execution"  # may back oracle_stamp (→ Exact) and inference_stamp
    OBSERVATION = "observation"  # may back inference_stamp only (→ Inferred)
    WEB = "web"  # backs neither: a fetched page is Hypothetical at best
    INELIGIBLE = "ineligible"

    @property
    def eligible_for(self) -> tuple[str, ...]:
        if self is EvidenceClass.EXECUTION:
            return ("oracle_stamp", "inference_stamp")
        if self is EvidenceClass.OBSERVATION:
            return ("inference_stamp",)
        return ()


@dataclass(frozen=True, slots=True)
class Classification:
    """The class of one tool call, the destructive families it touches, and why.

    ``paths`` are the filesystem paths the call names, as far as they could be resolved
    statically (globs, quotes, escapes, ``cd`` chains); ``opaque`` is True when some word
    that may name a path could not be resolved (a variable, a substitution), so a check of
    protected paths must fail closed.
    """

    tool_class: ToolClass
    families: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    opaque: bool = False


_DROP = str.maketrans("", "", "_-. ")


def normalise_tool_name(name: str) -> str:
    """Lower-case ``name`` and drop ``_ - .`` and spaces: ``Notebook-Read`` → ``notebookread``."""
    return name.lower().translate(_DROP)
