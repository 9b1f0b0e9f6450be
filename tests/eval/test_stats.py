"""The paired bootstrap and the promotion gate on hand-built records (no runs)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from infomark.tools.eval.observer import RunRecord
from infomark.tools.eval.stats import bootstrap, compare, promote


def rec(
    task: str,
    policy: str,
    *,
    solved: bool,
    false_done: int = 0,
    turns: int = 5,
    short: bool = False,
    repeat: int = 0,
) -> RunRecord:
    return RunRecord(
        task, policy, repeat, 0, short, solved=solved, false_done_accepted=false_done, turns=turns
    )


def runs(n: int, better: int, *, short_turns_b: int = 5) -> list[RunRecord]:
    """n tasks; B solves `better` tasks A ends with a false "done"; the rest tie."""
    out = []
    for i in range(n):
        t = f"t{i}"
        if i < better:
            out += [rec(t, "A", solved=False, false_done=1), rec(t, "B", solved=True)]
        else:
            out += [
                rec(t, "A", solved=True, short=True),
                rec(t, "B", solved=True, short=True, turns=short_turns_b),
            ]
    return out


def test_a_clear_improvement_is_promoted() -> None:
    p = promote(runs(12, 8), "A", "B", seed=1)
    assert p.promote, p.reasons
    assert p.numbers["improvement"]["low"] > 0 and p.numbers["resamples"] == 10_000
    assert p.numbers["tasks"] == 12 and p.numbers["short_slowdown"] == 1.0


def test_fewer_than_six_paired_tasks_are_never_promoted() -> None:
    p = promote(runs(5, 5), "A", "B", seed=1)
    assert not p.promote and any("at least 6" in r for r in p.reasons)


def test_an_interval_touching_zero_is_refused() -> None:
    p = promote(runs(12, 1), "A", "B", seed=1)
    assert not p.promote and any("lower bound" in r for r in p.reasons)


def test_slower_short_tasks_are_refused_even_when_better() -> None:
    p = promote(runs(12, 8, short_turns_b=7), "A", "B", seed=1, tolerance=0.2)
    assert not p.promote and any("1.40x" in r for r in p.reasons)
    assert promote(runs(12, 8, short_turns_b=7), "A", "B", seed=1, tolerance=0.5).promote


def test_cuts_and_differences() -> None:
    c = compare(runs(12, 6), "A", "B", seed=2)
    assert c["false_done_cut"]["value"] == 1.0 and c["solved_diff"]["value"] == 0.5
    assert c["ungrounded_cut"]["value"] is None  # nothing to cut


def test_the_bootstrap_is_seeded() -> None:
    xs = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0]

    def mean(ix: object) -> float:
        idx = list(ix)  # type: ignore[call-overload]
        return sum(xs[i] for i in idx) / len(idx)

    assert bootstrap(len(xs), mean, seed=5) == bootstrap(len(xs), mean, seed=5)
    assert bootstrap(0, mean, seed=5).value is None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=1, max_size=15), st.integers(0, 2**16))
def test_the_interval_holds_the_estimate_of_a_mean(xs: list[float], seed: int) -> None:
    def mean(ix: object) -> float:
        idx = list(ix)  # type: ignore[call-overload]
        return sum(xs[i] for i in idx) / len(idx)

    iv = bootstrap(len(xs), mean, seed=seed, resamples=300)
    assert iv.low is not None and iv.high is not None and iv.value is not None
    assert min(xs) - 1e-9 <= iv.low <= iv.high <= max(xs) + 1e-9
