"""Real agent commands (issue 33): a labelled sample of the bash actions of a public
SWE-bench run (see bench/agent_sample.py for where they come from). Every real write is a
mutation, at most 2 % of the sampled mutation decisions are read-only commands, and the
read-only one-liners main used to refuse are execute.

SAFETY: the commands are DATA; they are classified, never run.
"""

from __future__ import annotations

from bench.agent_sample import SAMPLE, load, score, wilson

STRATA = {"modify-random", "execute-random", "changed", "modify-unmarked"}


def test_the_sample_is_labelled_and_big_enough() -> None:
    rows = load(SAMPLE)
    assert len(rows) >= 300
    assert len({str(r["command"]) + str(r["source"]) for r in rows}) == len(rows)
    for row in rows:
        assert set(row["strata"]) <= STRATA, row  # type: ignore[arg-type]
        assert row["label"] in ("read", "execute", "modify", "destructive"), row
        assert row["mutates"] is (row["label"] in ("modify", "destructive")), row
    random = [r for r in rows if "modify-random" in r["strata"]]  # type: ignore[operator]
    assert len(random) >= 250


def test_no_real_write_is_missed_and_false_modify_stays_under_two_percent() -> None:
    s = score(rounds=1)
    assert s.misses == [] and s.writes_caught == s.writes > 250
    assert s.random_false / s.random_modify <= 0.02, s.false
    assert s.changed_execute == s.changed  # main's read-only refusals are gone


def test_wilson_interval() -> None:
    lo, hi = wilson(1, 250)
    assert round(100 * lo, 2) == 0.07 and round(100 * hi, 2) == 2.23
    assert wilson(0, 0) == (0.0, 1.0)
    lo, hi = wilson(50, 100)
    assert lo < 0.5 < hi and abs((0.5 - lo) - (hi - 0.5)) < 1e-9
