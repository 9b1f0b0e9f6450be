"""InfoMark: the epistemic rank of a claim.

Exact > Inferred > Hypothetical > Guess > Unknown. The grounding set
G = {Exact, Inferred}. Parsing is case-insensitive and any unrecognised word is
Unknown: an agent cannot talk its way up the ladder with a creative spelling.
"""

from __future__ import annotations

from infomark.kernel.enums import IntEnum

__all__ = ["GROUNDING_SET", "InfoMark"]


class InfoMark(IntEnum):
    """Epistemic rank, ordered: a larger value is a stronger claim."""

    UNKNOWN = 0
    GUESS = 1
    HYPOTHETICAL = 2
    INFERRED = 3
    EXACT = 4

    @classmethod
    def parse(cls, word: str | None) -> InfoMark:
        """Parse a rank name case-insensitively; anything unrecognised is Unknown."""
        if not word:
            return cls.UNKNOWN
        return _BY_NAME.get(word.strip().strip("\"'[]").strip().lower(), cls.UNKNOWN)

    @property
    def label(self) -> str:
        """The canonical spelling (``Exact``, ``Inferred`` …)."""
        return self.name.capitalize()

    @property
    def grounded(self) -> bool:
        """True when the rank is in the grounding set G = {Exact, Inferred}."""
        return self >= InfoMark.INFERRED

    def at_least(self, other: InfoMark) -> bool:
        return self >= other

    @classmethod
    def strongest(cls, *marks: InfoMark) -> InfoMark:
        return max(marks, default=cls.UNKNOWN)

    @classmethod
    def weakest(cls, *marks: InfoMark) -> InfoMark:
        return min(marks, default=cls.UNKNOWN)

    def __str__(self) -> str:
        return self.label


_BY_NAME: dict[str, InfoMark] = {m.name.lower(): m for m in InfoMark}

GROUNDING_SET: frozenset[InfoMark] = frozenset({InfoMark.EXACT, InfoMark.INFERRED})
