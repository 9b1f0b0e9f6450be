"""Parse the blocks of an assistant message into :mod:`infomark.ledger.blocks` models.

The entry point, :func:`parse_message`, runs four stages, each in its own module:

1. :mod:`infomark.ledger.locate` finds candidate blocks (stdlib, linear time).
2. :mod:`infomark.ledger.parse_scan` (with :mod:`infomark.ledger.parse_scalars`)
   turns one block's lines into tokens: an indenter emits ``_INDENT`` /
   ``_DEDENT`` / ``_NL``; scalars are unquoted, unescaped and folded, each token
   keeping its line and column in the original message.
3. :mod:`infomark.ledger.parse_tree`: the LALR grammar ``blocks.lark`` (loaded
   once, lazily, with a lexer that replays those tokens) decides the structure.
4. :mod:`infomark.ledger.parse_model` maps the tree onto the models and judges
   keys, ids and values; :mod:`infomark.ledger.parse_diagnose` words the problems.

Nothing here raises on any ``str`` input: every failure becomes a
:class:`~infomark.ledger.blocks.Diagnostic`. A block with an error diagnostic
is left out of :attr:`ParsedMessage.blocks`; the rest of the message is still
parsed. Prose without any block keyword never loads lark.
"""

from __future__ import annotations

from typing import cast

from infomark.ledger.blocks import Block, Diagnostic, ParsedMessage
from infomark.ledger.locate import Candidate, Suspect, locate, may_contain_blocks
from infomark.ledger.parse_diagnose import Problem, internal_error, syntax_diagnostic
from infomark.ledger.parse_model import MAX_BLOCK_DIAGNOSTICS, Builder
from infomark.ledger.parse_scalars import MAX_BLOCK_TOKENS
from infomark.ledger.parse_scan import MAX_DEPTH, Tokenizer
from infomark.ledger.parse_tree import Top, machinery

__all__ = [
    "MAX_BLOCKS",
    "MAX_BLOCK_DIAGNOSTICS",
    "MAX_BLOCK_TOKENS",
    "MAX_DEPTH",
    "MAX_DIAGNOSTICS",
    "parse_message",
]

MAX_BLOCKS = 1_000  # per message; more is an error diagnostic, never a silent drop
MAX_DIAGNOSTICS = 200  # per message (then one summary line)


def parse_message(text: str) -> ParsedMessage:
    """Every block of ``text`` in textual order, with diagnostics. Never raises."""
    if not isinstance(text, str):
        return ParsedMessage(
            diagnostics=[
                Diagnostic(
                    line=1,
                    column=1,
                    message=f"expected the message as str, got {type(text).__name__}",
                )
            ]
        )
    try:
        if not may_contain_blocks(text):
            return ParsedMessage()
        located = locate(text)
    except Exception as exc:  # last resort: the contract is "never raise"
        return ParsedMessage(diagnostics=[internal_error(1, 1, exc, None)])
    candidates = located.candidates
    # bounded work: at most MAX_DIAGNOSTICS suspects become diagnostics, the rest are counted
    suspects = [_suspect_diagnostic(suspect) for suspect in located.suspects[:MAX_DIAGNOSTICS]]
    blocks: list[Block] = []
    diagnostics: list[Diagnostic] = []
    dropped = 0
    for index, candidate in enumerate(candidates):
        while suspects and suspects[0].line < candidate.line:
            diagnostics.append(suspects.pop(0))
        if index >= MAX_BLOCKS:
            diagnostics.append(
                Diagnostic(
                    line=candidate.line,
                    column=candidate.column,
                    message=(
                        f"this message holds more than {MAX_BLOCKS} blocks; this one and the "
                        f"{len(candidates) - index - 1} after it were not applied — split it"
                    ),
                    block=candidate.keyword,
                )
            )
            break
        try:
            parsed, found = _parse_candidate(candidate)
        except Exception as exc:  # last resort: one broken block never hides the others
            parsed, found = (
                [],
                [internal_error(candidate.line, candidate.column, exc, candidate.keyword)],
            )
        room = MAX_DIAGNOSTICS - len(diagnostics)
        found = sorted(found, key=lambda d: (d.line, d.column))
        diagnostics.extend(found[: max(room, 0)])
        if len(found) > room:
            dropped += len(found) - max(room, 0)
        blocks.extend(parsed)
    room = MAX_DIAGNOSTICS - len(diagnostics)
    diagnostics.extend(suspects[: max(room, 0)])
    dropped += max(len(suspects) - max(room, 0), 0)
    dropped += max(len(located.suspects) - MAX_DIAGNOSTICS, 0)
    if dropped:
        diagnostics.append(
            Diagnostic(
                line=diagnostics[-1].line if diagnostics else 1,
                column=1,
                message=f"{dropped} more diagnostics in this message were not listed",
                severity="warning",
            )
        )
    return ParsedMessage(blocks=blocks, diagnostics=diagnostics)


def _suspect_diagnostic(suspect: Suspect) -> Diagnostic:
    return Diagnostic(
        line=suspect.line,
        column=suspect.column,
        message=suspect.message,
        expected=[f"{suspect.keyword}:"],
        text=suspect.text,
        block=suspect.keyword,
    )


def _parse_candidate(candidate: Candidate) -> tuple[list[Block], list[Diagnostic]]:
    machine = machinery()
    try:
        tokens = Tokenizer(candidate, machine.token).run()
    except Problem as problem:
        return [], [problem.diagnostic(candidate.keyword)]
    try:
        tree = machine.parser.parse(tokens)
    except machine.unexpected_input as exc:
        return [], [syntax_diagnostic(exc, candidate)]
    try:
        top = cast(Top, machine.transformer.transform(tree))
    except machine.visit_error as exc:
        original = exc.orig_exc
        if isinstance(original, Problem):
            return [], [original.diagnostic(candidate.keyword)]
        raise original from None
    builder = Builder(candidate)
    return builder.build(top), builder.diagnostics
