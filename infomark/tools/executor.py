"""Wrap any tool executor (re-exported from :mod:`infomark.wrapping`, the facade layer)."""

from __future__ import annotations

from infomark.wrapping import GatedSession, denied_outcome, gated_tool, tagged, wrap_executor

__all__ = ["GatedSession", "denied_outcome", "gated_tool", "tagged", "wrap_executor"]
