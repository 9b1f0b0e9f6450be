"""Wrap any tool executor (re-exported from :mod:`infomark.wrapping`, the facade layer)."""

from __future__ import annotations

from infomark.wrapping import (
    GatedResult,
    GatedSession,
    denied_outcome,
    gated_tool,
    outcome_of,
    result_of,
    tagged,
    wrap_executor,
)

__all__ = [
    "GatedResult",
    "GatedSession",
    "denied_outcome",
    "gated_tool",
    "outcome_of",
    "result_of",
    "tagged",
    "wrap_executor",
]
