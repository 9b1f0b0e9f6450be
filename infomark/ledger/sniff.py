"""Could this text hold a block? The hot path's pre-check, with nothing to import.

Every message a hook reads passes here first, and most are prose; a module of its own,
with no import and outside the parser's package (whose ``__init__`` is one more import), so
that prose costs its caller no more than the check (it lived in
:mod:`~infomark.ledger.parse.locate_keys`, whose import, ~0.4 ms a hook process, a call
after prose paid for this alone: ``python -X importtime``, ``bench.icount --real``).
:func:`may_contain_blocks` over-approximates everything
:mod:`infomark.ledger.parse.locate` can report (blocks, and the "looks like a ledger"
diagnostics): ``tests/ledger/test_parser_properties.py`` holds the two together.
"""

from __future__ import annotations

__all__ = ["may_contain_blocks"]

_LINE_PREFIX = frozenset("#>{\"'*` \t")

# Searched in the lower-cased text. The rare words count alone (they may start a
# "looks like" diagnostic); common words only with a colon after them (or a closing
# decoration and a colon, probed only when the text holds such a pair at all), so
# that prose full of "gate" and "claims" stays a few str.find calls.
_RARE_PROBES: tuple[str, ...] = (
    "claim_ledger",
    "claim ledger",
    "claim-ledger",
    "oracle_stamp",
    "inference_stamp",
    "source_stamp",
    "divergence_event",
    "premises_for_plan",
    "open_questions",
    "done_when",
)
_COLON_WORDS = ("gate", "claims")
_DECORATED_COLONS = ("*:", "`:", '":', "':")
_QUESTION_PROBES = ("question:", 'question":', "question':")


def may_contain_blocks(text: str) -> bool:
    """Cheap check: False when no block keyword (or ledger-like key) starts a line of ``text``.

    True does not promise a valid block; it only means :func:`~infomark.ledger.parse.locate.locate`
    is worth running. Linear in ``len(text)``; imports nothing beyond the stdlib.
    """
    if not isinstance(text, str):
        return False
    if any(_line_start_probe(text, probe) for probe in _QUESTION_PROBES):
        return True
    lowered = text.lower()
    if any(_line_start_probe(lowered, probe) for probe in _RARE_PROBES):
        return True
    suffixes = [":"] + [pair[0] + ":" for pair in _DECORATED_COLONS if pair in lowered]
    suffixes = [s.replace("*", "**") for s in suffixes]
    return any(
        _line_start_probe(lowered, word + suffix) for word in _COLON_WORDS for suffix in suffixes
    )


def _line_start_probe(text: str, probe: str) -> bool:
    """Does ``probe`` occur at the start of a line (after spaces, quotes, braces, bold, ``#``)?

    Linear: a walk back stops at the first character that is not a line prefix, and
    the probe itself ends with such a character, so no two walks cover the same text.
    """
    at = text.find(probe)
    while at != -1:
        start = at
        while start > 0 and text[start - 1] in _LINE_PREFIX:
            start -= 1
        if start == 0 or text[start - 1] == "\n":
            return True
        at = text.find(probe, at + 1)
    return False
