"""Every example in docs/blocks.md parses as the document says.

Convention (see the top of docs/blocks.md): a fence preceded by
``<!-- example: kind, kind -->`` must parse with no error diagnostic into exactly
those block kinds, in order (``none`` = no block); ``<!-- example-error: … -->``
must yield those kinds and at least one error diagnostic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from infomark.ledger.parse.parser import parse_message

DOC = Path(__file__).resolve().parents[2] / "docs" / "blocks.md"
_MARKER = re.compile(r"<!--\s*(example|example-error):\s*([^>]*?)\s*-->")
_FENCE = re.compile(r"(`{3,}|~{3,})\s*([A-Za-z0-9_-]*)")
_KINDS = {
    "claim_ledger",
    "oracle_stamp",
    "inference_stamp",
    "source_stamp",
    "divergence_event",
    "gate",
    "question",
}


@dataclass(frozen=True)
class Example:
    line: int  # 1-based line of the opening fence in docs/blocks.md
    info: str  # the fence's language tag
    marker: str | None  # "example" | "example-error" | None (unmarked)
    kinds: tuple[str, ...]
    text: str


def _examples() -> list[Example]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    found: list[Example] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.fullmatch(lines[i])
        if opening is None:
            i += 1
            continue
        fence = opening.group(1)
        j = i + 1
        while j < len(lines):
            closing = lines[j].strip()
            if len(closing) >= len(fence) and closing == fence[0] * len(closing):
                break
            j += 1
        previous = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        marker = _MARKER.fullmatch(previous.strip())
        kinds: tuple[str, ...] = ()
        if marker is not None and marker.group(2) != "none":
            kinds = tuple(kind.strip() for kind in marker.group(2).split(","))
        found.append(
            Example(
                line=i + 1,
                info=opening.group(2).lower(),
                marker=marker.group(1) if marker is not None else None,
                kinds=kinds,
                text="\n".join(lines[i + 1 : j]) + "\n",
            )
        )
        i = j + 1
    return found


EXAMPLES = _examples()
MARKED = [example for example in EXAMPLES if example.marker is not None]


@pytest.mark.parametrize("example", MARKED, ids=[f"line{e.line}" for e in MARKED])
def test_documented_example_parses_as_documented(example: Example) -> None:
    assert set(example.kinds) <= _KINDS, f"line {example.line}: unknown kind in marker"
    parsed = parse_message(example.text)
    assert tuple(block.kind for block in parsed.blocks) == example.kinds, (
        f"docs/blocks.md line {example.line}",
        parsed.diagnostics,
    )
    if example.marker == "example":
        assert parsed.errors == [], f"docs/blocks.md line {example.line}: {parsed.errors}"
    else:
        assert parsed.errors, f"docs/blocks.md line {example.line} should show an error"


def test_every_yaml_or_markdown_fence_is_a_checked_example() -> None:
    unmarked = [e.line for e in EXAMPLES if e.info in {"yaml", "yml", "markdown"} and not e.marker]
    assert unmarked == [], f"docs/blocks.md fences without an example marker at lines {unmarked}"


def test_examples_cover_every_block_kind_and_both_outcomes() -> None:
    shown = {kind for example in MARKED if example.marker == "example" for kind in example.kinds}
    assert shown == _KINDS
    assert any(example.marker == "example-error" for example in MARKED)
    assert len(MARKED) >= 15
