"""What a run ended with: the reason, the final text and decision, and its cost split."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunResult"]


@dataclass(slots=True)
class RunResult:
    session: str
    reason: str  # finished | max_steps | stopped | idle_limit | error
    final_text: str = ""
    finish: dict[str, Any] = field(default_factory=dict)
    working_calls: int = 0
    idle_calls: int = 0
    working_tokens: int = 0
    idle_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "reason": self.reason,
            "final_text": self.final_text,
            "finish": self.finish,
            "cost": {
                "working_calls": self.working_calls,
                "idle_calls": self.idle_calls,
                "working_tokens": self.working_tokens,
                "idle_tokens": self.idle_tokens,
            },
        }
