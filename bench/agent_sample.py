"""The shell classifier on real agent commands: a labelled sample of the bash actions of a
public agent run (tests/corpus/agent_sample.jsonl), and optionally the whole run.

The run: mini-swe-agent with Gemini 3 Pro on SWE-bench Verified (500 tasks, 19,479 bash
actions), as published in the public repository ``gruckion/mini-swe-agent`` (commit d12a71a,
``swebench_results/20251118_gemini-3-pro-74pct/trajs``). Only the labelled sample is kept in
this repository; ``--full DIR`` reads the actions from a local clone or bare snapshot of it.

``python -m bench.agent_sample`` prints the table of docs/gates.md; ``--full DIR`` adds the
whole run (class counts, throughput).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SAMPLE = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "agent_sample.jsonl"
TRAJS = "swebench_results/20251118_gemini-3-pro-74pct/trajs"
_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.S)


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95 % by default) of the proportion ``hits / n``."""
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class SampleScore:
    rows: int = 0
    writes: int = 0
    writes_caught: int = 0
    misses: list[str] = field(default_factory=list)
    random_modify: int = 0  # modify-random rows the classifier still classes as mutations
    random_false: int = 0  # … of which the label says read-only
    unmarked_false: int = 0  # exhaustive: mutations without a syntactic write, read-only
    unmarked_modify: int = 0
    changed: int = 0  # rows main classed modify, read-only by label
    changed_execute: int = 0
    false: list[str] = field(default_factory=list)
    per_second: float = 0.0


def load(path: Path = SAMPLE) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def score(path: Path = SAMPLE, rounds: int = 3) -> SampleScore:
    from infomark.gates.shell import classify_shell

    rows = load(path)
    out = SampleScore(rows=len(rows))
    rates = []
    classes: list[bool] = []
    for _ in range(rounds):
        start = time.perf_counter()
        classes = [classify_shell(str(r["command"])).tool_class.mutates for r in rows]
        rates.append(len(rows) / (time.perf_counter() - start))
    out.per_second = statistics.median(rates)
    for row, mutates in zip(rows, classes, strict=True):
        strata = list(row["strata"])  # type: ignore[call-overload]
        command = str(row["command"])
        if row["mutates"]:
            out.writes += 1
            out.writes_caught += mutates
            if not mutates:
                out.misses.append(command)
        if "modify-random" in strata and mutates:
            out.random_modify += 1
            if not row["mutates"]:
                out.random_false += 1
                out.false.append(command)
        if "modify-unmarked" in strata and mutates:
            out.unmarked_modify += 1
            out.unmarked_false += not row["mutates"]
        if "changed" in strata:
            out.changed += 1
            out.changed_execute += not mutates
    return out


def full_run(snapshot: Path) -> list[str]:
    """Every bash action of the run, from a clone or bare snapshot (``git show``)."""
    names = subprocess.run(
        ["git", "-C", str(snapshot), "ls-tree", "-r", "--name-only", "HEAD", TRAJS],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    commands: list[str] = []
    for name in sorted(n for n in names if n.endswith(".traj.json")):
        text = subprocess.run(
            ["git", "-C", str(snapshot), "show", f"HEAD:{name}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        data = json.loads(text)
        if not isinstance(data, dict):
            continue
        for message in data["messages"]:
            if message["role"] == "assistant" and isinstance(message["content"], str):
                blocks = _BASH_BLOCK.findall(message["content"])
                if len(blocks) == 1:  # the agent's rule: exactly one action per turn
                    commands.append(blocks[0])
    return commands


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agent_sample")
    parser.add_argument("--full", type=Path, help="a clone or snapshot of gruckion/mini-swe-agent")
    args = parser.parse_args(argv)
    s = score()
    lo, hi = wilson(s.random_false, s.random_modify)
    print(f"labelled decisions                {s.rows}")
    print(f"real writes caught                {s.writes_caught}/{s.writes} (plain misses: "
          f"{len(s.misses)})")  # fmt: skip
    print(f"false modify, random sample       {s.random_false}/{s.random_modify} = "
          f"{100 * s.random_false / max(s.random_modify, 1):.2f} % (95 % Wilson "
          f"{100 * lo:.2f}-{100 * hi:.2f} %)")  # fmt: skip
    print(
        f"false modify, no write marker     {s.unmarked_false}/{s.unmarked_modify} "
        "(exhaustive over the run)"
    )
    print(f"main's false modify, now execute  {s.changed_execute}/{s.changed}")
    print(f"throughput (sample)               {s.per_second:,.0f} commands/s")
    for command in s.misses:
        print("  missed:", command.splitlines()[0])
    for command in s.false:
        print("  false: ", command.splitlines()[0])
    if args.full is not None:
        from infomark.gates.shell import classify_shell

        commands = full_run(args.full)
        start = time.perf_counter()
        mutating = sum(classify_shell(c).tool_class.mutates for c in commands)
        seconds = time.perf_counter() - start
        print(f"whole run                         {len(commands)} commands, {mutating} "
              f"mutations, {len(commands) / seconds:,.0f} commands/s")  # fmt: skip
        print(f"false modify, whole run (est.)    {s.unmarked_false}/{mutating} = "
              f"{100 * s.unmarked_false / max(mutating, 1):.2f} % + the random sample's "
              "rate among commands with a write marker")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
