"""Text that looks like a ledger the agent meant to write, but is not one (standard library only).

A ledger must never be ignored in silence (issue 12): :mod:`infomark.ledger.parse.locate`
hands every line outside a block to :class:`Suspects`, which reports a block
keyword without its colon (``claim_ledger = {…}``, ``Oracle stamp: …``), a
heading that names a ledger when no block follows it, and ledger-only keys
(``premises_for_plan:``, ``claims:`` with a list of claims …) with no
``claim_ledger:`` above them. Each becomes an error diagnostic at its line.
"""

from __future__ import annotations

from infomark.kernel.records import dataclass
from infomark.ledger.parse.locate_keys import BLOCK_KEYWORDS, LEDGER_HINT_KEYS, loose_key

__all__ = ["Suspect", "Suspects"]

_SUSPECT_KEYWORDS = frozenset(BLOCK_KEYWORDS) - {"gate", "question"}
_OBJECT_LOOKAHEAD = 3  # non-blank lines searched after "claims:" for its first item


@dataclass(frozen=True, slots=True)
class Suspect:
    """Text that looks like a block the agent meant to write, but is not one."""

    line: int
    column: int
    message: str
    keyword: str  # the block it looks like
    text: str


def _text(raw: list[str], index: int) -> str:
    line = raw[index]
    return line[:-1] if line.endswith("\r") else line


class Suspects:
    """Lines outside any block that look like a ledger the agent meant to write."""

    def __init__(self, raw: list[str]) -> None:
        self.raw = raw
        self.found: list[Suspect] = []
        self.pending: Suspect | None = None  # a heading: reported unless a block follows
        self.keys_reported = False  # one "ledger keys without claim_ledger:" per region

    def block_found(self) -> None:
        self.pending = None
        self.keys_reported = False

    def region_ends(self) -> None:
        """A fence opens or closes: ledger keys after it are reported again."""
        self.keys_reported = False

    def flush(self) -> None:
        """A new heading or the end of the message: a pending heading suspect stands."""
        if self.pending is not None:
            self.found.append(self.pending)
            self.pending = None

    def check(self, index: int, line: str, column: int) -> None:
        body = line[column:]
        if not body:
            return
        if body[0] == "#":
            self.flush()
            self.region_ends()
        loose = loose_key(line, column)
        if loose is None:
            return
        name, raw_name, end = loose
        rest = line[end:].lstrip(" \t")
        if name in _SUSPECT_KEYWORDS:
            if body[0] == "#":
                self.pending = self._suspect(
                    index,
                    column,
                    name,
                    f"this heading names a {name} but no {name} block follows it; "
                    f"write the block itself: a line '{name}:' and its keys indented under it",
                )
            elif not rest or rest[0] in "=:({[":
                self.found.append(
                    self._suspect(
                        index,
                        column,
                        name,
                        f"this looks like a {name} but it is not written '{name}:' at the "
                        'start of a line (or as a JSON object {"' + name + '": …}); '
                        "it was not applied",
                    )
                )
            return
        if (
            name in LEDGER_HINT_KEYS
            and raw_name.lower() == name  # "Open questions:" is prose, open_questions: a key
            and rest.startswith(":")
            and not self.keys_reported
        ):
            if name == "claims" and not self._claims_follow(index, rest):
                return
            self.keys_reported = True
            self.found.append(
                self._suspect(
                    index,
                    column,
                    "claim_ledger",
                    "this looks like a claim_ledger but has no 'claim_ledger:' line above it; "
                    "put 'claim_ledger:' first and indent these keys under it. It was not applied",
                )
            )

    def _claims_follow(self, index: int, rest: str) -> bool:
        """``claims:`` is a ledger's only when a list of claims follows it."""
        value = rest[1:].strip(" \t")
        if value:
            return value.replace(" ", "").startswith("[{")
        for later in range(index + 1, min(index + 1 + _OBJECT_LOOKAHEAD, len(self.raw))):
            body = _text(self.raw, later).lstrip(" \t")
            if body:
                if not body.startswith("- "):
                    return False
                key = loose_key(body, 2)
                return key is not None and key[0] == "id"
        return False

    def _suspect(self, index: int, column: int, keyword: str, message: str) -> Suspect:
        text = _text(self.raw, index)[column : column + 60].rstrip()
        return Suspect(index + 1, column + 1, message, keyword, text)
