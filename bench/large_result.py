"""A 100 MB Bash result through the installed hook: ``python -m bench.large_result [MB]``.

A grounded session (``bench/session.py``), the PreToolUse of ``python3 check.py 4``, then
its PostToolUse with MB megabytes of stdout, fed from a file to the real launcher process;
prints the payload's size, the hook's wall time, its own peak RSS and its answer. Issue
28's goal: peak RSS ≤ 64 MiB at 100 MB.

The payload is written to its file piece by piece and never held by this process, and the
hook is forked from a small measuring interpreter (:func:`bench._timing.run_own_rss`): a
child's ``ru_maxrss`` otherwise includes the peak RSS of the process that spawned it, and
this bench's earlier versions, which built the 100 MB payload in memory, reported their own
peak (~300 MiB) as the hook's.

``--base DIR`` runs another checkout too (``git worktree add DIR main``), alternated with
this one round by round (``--rounds N``, default 3); each round's output differs, so every
blob is new (a stored blob is not written again). Medians per tree.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench._timing import OwnRun, run_own_rss
from bench.session import RealSession

_LINE = "check 4: ok " * 8 + "\n"
_MARK = "@@stdout@@"


def write_post(s: RealSession, path: Path, mb: int, tag: str) -> tuple[int, str]:
    """The PreToolUse of ``python3 check.py 4`` (run now), and its PostToolUse with ``mb``
    MB of stdout written to ``path`` piece by piece: ``(bytes written, sha256 of stdout)``."""
    use = s.next_use()
    tool_input = {"command": "python3 check.py 4"}
    s.run(s.payload("PreToolUse", "Bash", tool_input, use))
    response = {"stdout": _MARK, "stderr": "", "interrupted": False}
    head, tail = s.payload("PostToolUse", "Bash", tool_input, use, response).split(
        json.dumps(_MARK).encode()
    )
    first = f"{tag}\n"
    block = _LINE * 1000
    count = (mb * 1_000_000 - len(first)) // len(block)
    h = hashlib.sha256(first.encode())
    with path.open("wb") as f:
        f.write(head + json.dumps(first)[:-1].encode())
        piece = json.dumps(block)[1:-1].encode()
        for _ in range(count):
            f.write(piece)
            h.update(block.encode())
        f.write(b'"' + tail)
        return f.tell(), h.hexdigest()


def run_once(s: RealSession, mb: int, tag: str) -> tuple[int, OwnRun]:
    with tempfile.NamedTemporaryFile(prefix="infomark-post-", suffix=".json") as feed:
        size, _digest = write_post(s, Path(feed.name), mb, tag)
        run = run_own_rss(s.argv, stdin_path=feed.name, env=s.env, cwd=str(s.project))
    return size, run


def main(argv: list[str]) -> int:
    base = Path(argv[argv.index("--base") + 1]) if "--base" in argv else None
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
    rest = [a for i, a in enumerate(argv) if a not in ("--base", "--rounds")
            and (i == 0 or argv[i - 1] not in ("--base", "--rounds"))]  # fmt: skip
    mb = int(rest[0]) if rest else 100
    with tempfile.TemporaryDirectory(prefix="infomark-large-") as tmp:
        trees: dict[str, Path | None] = {"this": None}
        if base is not None:
            trees = {"base": base.resolve(), **trees}
        sessions = {}
        for name, tree in trees.items():
            sessions[name] = RealSession(Path(tmp) / name, tree=tree)
            sessions[name].ground()
        runs: dict[str, list[OwnRun]] = {name: [] for name in trees}
        size = 0
        for k in range(rounds):
            for name, s in sessions.items():
                size, run = run_once(s, mb, f"round {k} of {name}")
                runs[name].append(run)
    load = os.getloadavg()[0]
    print(f"payload {size / 1e6:.1f} MB, {rounds} rounds, load average {load:.1f}")
    for name, got in runs.items():
        walls = [r.wall for r in got]
        peaks = [r.peak_kib / 1024 for r in got]
        codes = sorted({r.returncode for r in got})
        wall, peak = statistics.median(walls), statistics.median(peaks)
        print(f"  {name}: hook exit {codes}, wall median {wall:.2f} s "
              f"({min(walls):.2f}-{max(walls):.2f}), own peak RSS median {peak:.1f} MiB "
              f"({min(peaks):.1f}-{max(peaks):.1f})")  # fmt: skip
        last = got[-1]
        print(f"    answer: {last.stdout[:300].decode(errors='replace')} "
              f"{last.stderr[-300:].decode(errors='replace')}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
