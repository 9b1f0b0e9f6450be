"""Instruction packs: short typed instructions that are active for a few turns.

The board keeps at most ``max_active`` packs whose rendered text together stays
within ``budget`` characters; severity decides which stay when they do not all
fit (a newer pack wins a tie). A pack expires ``expires_after`` turns after it
was added or last renewed, or is removed as soon as its policy reports the
condition resolved. A turn is a user prompt; within one long prompt every
:data:`CALLS_PER_TURN` tool calls count as a turn too, so packs also age in
hosts that never report prompts. Every add, renewal and removal is returned as
a journal event for the caller to emit. State is plain JSON in
``state.policy["packs"]``.
"""

from __future__ import annotations

from collections.abc import Mapping

from infomark.kernel.records import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

__all__ = ["CALLS_PER_TURN", "PACK_TEXT_MAX", "PackBoard", "PackOffer", "render_pack"]

#: The longest text one pack may carry (before the budget clips it further).
PACK_TEXT_MAX = 320
#: Tool calls that age a pack as much as one user prompt does.
CALLS_PER_TURN = 25

Event: TypeAlias = "tuple[str, dict[str, Any]]"


def render_pack(pack: Mapping[str, Any]) -> str:
    """How a pack reads in the agent's context: a tag, then the instruction."""
    return f"[infomark:pack {pack['name']}] {pack['text']}"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class PackOffer:
    """A policy asking for its pack to be active (added, or renewed with a new key)."""

    name: str
    text: str
    severity: int
    expires_after: int
    key: str
    reason: str = ""
    evidence: Mapping[str, Any] = field(default_factory=dict)


class PackBoard:
    """The active packs of one session, over the JSON kept in ``state.policy["packs"]``.

    ``turn`` (user prompts so far) and ``calls`` (tool calls so far) are the
    clock; the runtime sets them before changing anything. Changes collect in
    ``events`` (to journal), ``delivered`` (packs added or renewed) and ``notes``.
    """

    def __init__(self, data: Mapping[str, Any] | None, *, max_active: int, budget: int) -> None:
        d = dict(data or {})
        self.active: list[dict[str, Any]] = [dict(p) for p in d.get("active", [])]
        self.fired_keys: dict[str, str] = dict(d.get("fired_keys", {}))
        self.counter = int(d.get("counter", 0))
        self.max_active = max_active
        self.budget = budget
        self.turn = 0
        self.calls = 0
        self.events: list[Event] = []
        self.delivered: list[str] = []
        self.notes: list[str] = []

    def to_dict(self) -> dict[str, Any]:
        return {
            "active": [dict(p) for p in self.active],
            "fired_keys": dict(self.fired_keys),
            "counter": self.counter,
        }

    # -- queries ------------------------------------------------------------------------
    def get(self, name: str) -> dict[str, Any] | None:
        return next((p for p in self.active if p["name"] == name), None)

    def names(self) -> list[str]:
        return [p["name"] for p in self.active]

    def render(self, names: list[str] | None = None) -> str:
        """The active packs (or only ``names``) as context text, most severe first."""
        packs = [p for p in self._ordered(self.active) if names is None or p["name"] in names]
        return "\n".join(render_pack(p) for p in packs)

    # -- changes --------------------------------------------------------------------------
    def offer(self, offer: PackOffer) -> bool:
        """Fire a pack. True when it was added or renewed (its text is to be delivered)."""
        if self.fired_keys.get(offer.name) == offer.key:
            return False
        old = self.get(offer.name)
        tag = len(render_pack({"name": offer.name, "text": ""}))
        text = _clip(offer.text, min(PACK_TEXT_MAX, self.budget - tag))
        self.counter += 1
        pack = {
            "name": offer.name,
            "text": text,
            "severity": offer.severity,
            "reason": offer.reason,
            "evidence": dict(offer.evidence),
            "key": offer.key,
            "added_turn": old["added_turn"] if old else self.turn,
            "renewed_turn": self.turn,
            "renewed_call": self.calls,
            "expires_after": offer.expires_after,
            "renewals": old["renewals"] + 1 if old else 0,
            "order": self.counter,
        }
        candidates = [p for p in self.active if p["name"] != offer.name] + [pack]
        kept, dropped = self._fit(candidates)
        if pack not in kept:
            self.notes.append(
                f"pack {offer.name} not admitted: {self.max_active} active packs or "
                f"{self.budget} characters leave no room at severity {offer.severity}"
            )
            return False
        self.fired_keys[offer.name] = offer.key
        for p in dropped:
            self._remove(p, "evicted")
        self.active = sorted(kept, key=lambda p: int(p["order"]))
        self.events.append(
            (
                "instruction_pack_added",
                {
                    "name": offer.name,
                    "text": text,
                    "severity": offer.severity,
                    "reason": offer.reason,
                    "evidence": dict(offer.evidence),
                    "renewed": old is not None,
                    "expires_after": offer.expires_after,
                    "turn": self.turn,
                },
            )
        )
        self.delivered.append(offer.name)
        return True

    def rearm(self, name: str) -> None:
        """The condition no longer holds: its next firing counts as new."""
        self.fired_keys.pop(name, None)

    def resolve(self, name: str) -> None:
        """The condition cleared: re-arm, and remove the pack now."""
        self.rearm(name)
        pack = self.get(name)
        if pack is not None:
            self._remove(pack, "resolved")

    def expire(self) -> None:
        """Remove the packs whose ``expires_after`` turns have passed."""
        for pack in list(self.active):
            turns = self.turn - int(pack["renewed_turn"])
            turns += (self.calls - int(pack.get("renewed_call", self.calls))) // CALLS_PER_TURN
            if turns >= int(pack["expires_after"]):
                self._remove(pack, "expired")

    # -- helpers ----------------------------------------------------------------------------
    @staticmethod
    def _ordered(packs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(packs, key=lambda p: (-int(p["severity"]), -int(p["order"])))

    def _fit(
        self, packs: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        kept: list[dict[str, Any]] = []
        dropped: list[dict[str, Any]] = []
        length = -1  # joined with "\n": every pack after the first adds one character
        for p in self._ordered(packs):
            size = len(render_pack(p)) + 1
            if len(kept) < self.max_active and length + size <= self.budget:
                kept.append(p)
                length += size
            else:
                dropped.append(p)
        return kept, dropped

    def _remove(self, pack: dict[str, Any], why: str) -> None:
        if pack in self.active:
            self.active.remove(pack)
        self.events.append(
            (
                "instruction_pack_removed",
                {
                    "name": pack["name"],
                    "why": why,
                    "turn": self.turn,
                    "age": self.turn - int(pack["added_turn"]),
                },
            )
        )
