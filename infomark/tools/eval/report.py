"""The eval report: per-policy summaries, paired comparisons and promotion decisions."""

from __future__ import annotations

from typing import Any

from infomark.tools.eval.harness import EvalResult
from infomark.tools.eval.stats import (
    RESAMPLES,
    SHORT_TOLERANCE,
    Promotion,
    compare,
    promote,
    summarize,
)

__all__ = ["build_report"]


def build_report(
    result: EvalResult,
    *,
    resamples: int = RESAMPLES,
    tolerance: float = SHORT_TOLERANCE,
) -> tuple[dict[str, Any], list[Promotion]]:
    """The report dict (``--json``) and the promotion decisions: each policy after the first
    is compared with the first (the baseline)."""
    names = [p["name"] for p in result.policies]
    base = names[0]
    seed = result.seed
    promotions = [
        promote(result.runs, base, b, seed=seed, resamples=resamples, tolerance=tolerance)
        for b in names[1:]
    ]
    report = {
        "eval": {
            "suite": result.suite,
            "suite_digest": result.suite_digest,
            "agent": result.agent,
            "seed": seed,
            "repeat": result.repeat,
            "rates": result.rates,
            "skipped": result.skipped,
            "caps": result.caps,
            "machine": result.machine,
        },
        "policies": result.policies,
        "summaries": [summarize(result.runs, n, seed=seed) for n in names],
        "comparisons": [compare(result.runs, base, b, seed=seed) for b in names[1:]],
        "promotions": [p.to_dict() for p in promotions],
        "runs": [r.to_dict() for r in result.runs],
    }
    return report, promotions
