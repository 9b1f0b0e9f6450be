"""The shell classifier over the labelled agent-command corpus (tests/corpus/): recall of
mutations and the rate of read-only commands classed as mutations.

``python -m bench.corpus`` prints the numbers and every miss; ``python -m bench corpus`` adds
them to the benchmark table.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "agent_commands.jsonl"


@dataclass
class Score:
    total: int = 0
    mutations: int = 0
    caught: int = 0
    read_only: int = 0
    false_mutations: int = 0
    destructive: int = 0
    destructive_caught: int = 0
    seconds: float = 0.0
    misses: list[str] = field(default_factory=list)
    false: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.caught / self.mutations if self.mutations else 1.0

    @property
    def false_rate(self) -> float:
        return self.false_mutations / self.read_only if self.read_only else 0.0


def score(path: Path = CORPUS) -> Score:
    from infomark.gates.shell import classify_shell

    out = Score()
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    start = time.perf_counter()
    for row in rows:
        result = classify_shell(row["command"])
        mutates = result.tool_class.mutates
        out.total += 1
        if row["mutates"]:
            out.mutations += 1
            out.caught += mutates
            if not mutates:
                out.misses.append(row["command"])
        else:
            out.read_only += 1
            out.false_mutations += mutates
            if mutates:
                out.false.append(row["command"])
        if row["label"] == "destructive":
            out.destructive += 1
            out.destructive_caught += result.tool_class.value == "destructive"
    out.seconds = time.perf_counter() - start
    return out


def bench_corpus() -> None:
    from bench.core import ROWS

    s = score()
    lines = [
        (f"corpus: mutation recall ({s.caught}/{s.mutations})", f"{100 * s.recall:.1f} %"),
        (
            f"corpus: read-only classed as mutation ({s.false_mutations}/{s.read_only})",
            f"{100 * s.false_rate:.2f} %",
        ),
        (
            f"corpus: destructive classed destructive ({s.destructive_caught}/{s.destructive})",
            f"{100 * s.destructive_caught / max(s.destructive, 1):.1f} %",
        ),
        (f"corpus: classify {s.total} commands", f"{1000 * s.seconds:.0f} ms"),
    ]
    for name, value in lines:
        ROWS.append((name, value, "-", "-"))
        print(f"{name:<48} {value:>12} {'-':>12}  -", flush=True)


ALL = [bench_corpus]


def main() -> int:
    s = score()
    print(f"{s.total} commands · {s.mutations} mutate · {s.read_only} read-only")
    print(f"mutation recall      {100 * s.recall:6.2f} %  ({s.caught}/{s.mutations})")
    print(f"false-mutation rate  {100 * s.false_rate:6.2f} %  ({s.false_mutations}/{s.read_only})")
    for command in s.misses:
        print("  missed:", command.splitlines()[0])
    for command in s.false:
        print("  false: ", command.splitlines()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
