"""Builders for the web-source tests: fetches, reads and runs through the real facade.

Each call is authorized before it is recorded (the way every integration drives the facade),
so a record is always the result of a call infomark saw and allowed.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.evidence import Evidence

_ids = itertools.count(1)

PAGE = "The os module provides a portable way of using operating system functionality."


def ledger(*claims: tuple[str, str], premises: tuple[str, ...] = (), status: str = "Guess") -> str:
    """A claim_ledger of ``(id, text)`` claims, each with a falsifier and no oracle."""
    lines = ["claim_ledger:", "  claims:"]
    for cid, text in claims:
        lines += [
            f"    - id: {cid}",
            f'      text: "{text}"',
            f"      status: {status}",
            f'      falsifier: "the page says otherwise about {cid}"',
        ]
    lines.append(f"  premises_for_plan: [{', '.join(premises)}]")
    return "\n".join(lines) + "\n"


def call(
    gk: Gatekeeper,
    tool: str,
    inp: Mapping[str, Any],
    output: str | bytes = PAGE,
    exit_code: int | None = None,
) -> Evidence:
    """Authorize, then record one call (it must be allowed)."""
    tc = ToolCall(tool, dict(inp), tool_call_id=f"toolu_{next(_ids)}")
    decision = gk.authorize(tc)
    assert decision.allowed, decision.reason
    return gk.record(tc, ToolOutcome(output=output, exit_code=exit_code))


def fetch(gk: Gatekeeper, url: str, output: str | bytes = PAGE, tool: str = "WebFetch") -> Evidence:
    return call(gk, tool, {"url": url, "prompt": "what does it say?"}, output)


def search(gk: Gatekeeper, query: str = "python os module") -> Evidence:
    return call(gk, "WebSearch", {"query": query}, f"1. docs.python.org — {PAGE}")


def source_stamp(cid: str, ref: str, authority: str | None = "primary") -> str:
    tail = f" authority={authority}" if authority else ""
    return f"source_stamp: claim_id={cid} evidence_ref={ref}{tail}\n"
