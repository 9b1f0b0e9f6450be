"""What ranking the context view costs: tagged handles (issue 18) vs the plain view.

``python -m bench.context_view [REFS] [PAIRS]`` (default 8 recorded runs, 30 pairs). A session
with REFS recorded runs and one stamped claim; **ours** is ``Gatekeeper.context_view()`` (catch
up, verify each ref the view shows and check its blob, render with rank tags), the **baseline**
is the same catch-up and render without the handle check (what the view did before). Paired
B A B A (``bench/_timing.paired``); printed: both medians and the median of per-pair ratios.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench._timing import fmt, paired
from infomark.gatekeeper import Gatekeeper
from infomark.gates.policies.view import context_view
from infomark.ledger.calls import ToolCall, ToolOutcome

_LEDGER = (
    "claim_ledger:\n  claims:\n    - id: C1\n      text: t\n      status: Guess\n"
    '      falsifier: "f"\n      oracle: "pytest -q"\n  premises_for_plan: [C1]\n'
)


def main(argv: list[str]) -> int:
    refs = int(argv[0]) if argv else 8
    pairs = int(argv[1]) if len(argv) > 1 else 30
    with tempfile.TemporaryDirectory() as tmp:
        gk = Gatekeeper.open(Path(tmp) / ".infomark", "bench", root=Path(tmp))
        gk.ingest(_LEDGER)
        ref = ""
        for i in range(refs):
            call = ToolCall("bash", {"command": "pytest -q"}, tool_call_id=f"t{i}")
            gk.authorize(call)
            ref = gk.record(call, ToolOutcome("1 passed", exit_code=0)).ref
        gk.ingest(f"oracle_stamp: claim_id=C1 evidence_ref={ref} result=PASS")

        def plain() -> None:
            gk.store.refresh()
            context_view(gk.state, 1200)

        got = paired(gk.context_view, plain, pairs=pairs)
        print(
            f"context view with ranked handles: {fmt(got.ours)}; plain: {fmt(got.base)}; "
            f"ratio {got.ratio:.2f}× ({got.pairs} pairs, {refs} refs recorded)"
        )
        gk.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
