"""The labelled corpus of agent shell commands (issue 12 acceptance): every mutation is caught,
and at most 2 % of read-only commands are classed as mutations.

SAFETY: the commands are DATA; they are classified, never run.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.corpus import CORPUS, score

LABELS = {"read", "execute", "modify", "destructive"}


def test_the_corpus_is_big_labelled_and_unique() -> None:
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 1000
    assert len({r["command"] for r in rows}) == len(rows), "duplicate commands"
    for row in rows:
        assert row["label"] in LABELS, row
        assert row["mutates"] is (row["label"] in ("modify", "destructive")), row
    assert {r["label"] for r in rows} == LABELS


def test_every_mutation_in_the_corpus_is_caught() -> None:
    s = score()
    assert s.misses == [], s.misses
    assert s.recall == 1.0


def test_read_only_commands_are_rarely_classed_as_mutations() -> None:
    s = score()
    assert s.false_rate <= 0.02, (s.false_rate, s.false)


def test_destructive_commands_are_classed_destructive() -> None:
    s = score()
    assert s.destructive_caught == s.destructive


def test_the_score_counts_what_it_sees(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    rows = [
        {"command": "rm notes.txt", "label": "modify", "mutates": True},
        {"command": "ls", "label": "read", "mutates": False},
        {"command": "echo hi > f", "label": "read", "mutates": False},  # mislabelled on purpose
        {"command": "pytest", "label": "modify", "mutates": True},  # mislabelled on purpose
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = score(corpus)
    assert (s.mutations, s.caught, s.read_only, s.false_mutations) == (2, 1, 2, 1)
    assert s.misses == ["pytest"] and s.false == ["echo hi > f"]
