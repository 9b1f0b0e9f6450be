"""Results of ledger operations, as plain data with a stable JSON shape."""

from __future__ import annotations

from infomark.kernel.records import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:  # types only: typing costs a hook's start-up
    from typing import Any, TypedDict

    class IngestOptions(TypedDict, total=False):
        """The keyword options of every ``ingest`` (the facade, the engine, the HTTP
        clients), written once: ``**opts: Unpack[IngestOptions]``.

        ``source`` (default ``"assistant"``): where the text came from (``transcript``,
        ``final``, ``mcp`` …); ``cursor``: ``(file, offset)`` of a transcript read up to
        here, journaled with it; ``dedupe`` (default False): skip a text already ingested.
        """

        source: str
        cursor: tuple[str, int] | None
        dedupe: bool


__all__ = ["INGEST_OPTIONS", "IngestReport"]

#: The keys of :class:`IngestOptions` (a type only), for the run-time check of ``ingest``.
INGEST_OPTIONS = ("source", "cursor", "dedupe")


@dataclass(slots=True)
class IngestReport:
    """What one ingested message changed. ``to_dict()`` is the stable CLI/HTTP shape."""

    ledger_updated: bool = False
    claims: list[dict[str, Any]] = field(default_factory=list)
    demoted: list[str] = field(default_factory=list)
    stamps_applied: list[dict[str, Any]] = field(default_factory=list)
    stamps_rejected: list[dict[str, Any]] = field(default_factory=list)
    invalidated: list[dict[str, Any]] = field(default_factory=list)
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    gate_moves: list[dict[str, Any]] = field(default_factory=list)
    skipped: bool = False  # the same text was already ingested
    instructions: str = ""  # instruction packs fired by this message (policy layer)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ledger_updated": self.ledger_updated,
            "claims": self.claims,
            "demoted": self.demoted,
            "stamps_applied": self.stamps_applied,
            "stamps_rejected": self.stamps_rejected,
            "invalidated": self.invalidated,
            "diagnostics": self.diagnostics,
            "gate_moves": self.gate_moves,
            "instructions": self.instructions,
        }

    @property
    def changed(self) -> bool:
        return bool(
            self.ledger_updated
            or self.stamps_applied
            or self.stamps_rejected
            or self.invalidated
            or self.gate_moves
        )
