"""The Landlock rules of the agent's policy: an older ``landlock.py`` against this one.

``python -m bench.landlock_rules OLD.py [--crowd N] [--n K]`` loads ``OLD.py`` (an earlier
``infomark/tools/landlock.py``, e.g. ``git show 5ee58cf:infomark/tools/landlock.py > OLD.py``)
beside this tree's module and, for the agent's policy of a project in a temporary directory
that also holds N other directories (a crowded ``/tmp``), times K times, interleaved (old,
new, old, new …): drawing the rules, and drawing plus building the ruleset. For this tree it
also times what ``sandbox.run`` now pays per command (:func:`landlock.prepared` on a kept
ruleset). Medians, in milliseconds; nothing is written.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from infomark.tools import landlock
from infomark.tools.agent_sandbox import agent_policy


def _load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("old_landlock", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ms(step: Callable[[], object]) -> float:
    t0 = time.perf_counter_ns()
    step()
    return (time.perf_counter_ns() - t0) / 1e6


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 2
    old = _load(argv[0])
    crowd = int(argv[argv.index("--crowd") + 1]) if "--crowd" in argv else 0
    n = int(argv[argv.index("--n") + 1]) if "--n" in argv else 50
    with tempfile.TemporaryDirectory(prefix="bench-landlock-") as tmp:
        project = Path(tmp) / "project"
        (project / ".infomark").mkdir(parents=True)
        for i in range(crowd):
            (Path(tmp) / f"crowd-{i}").mkdir()
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp}
        policy = agent_policy(project / ".infomark", project, env=env)
        paths = (policy.writable, policy.read_only, policy.hidden)
        times: dict[str, list[float]] = {k: [] for k in ("od", "nd", "ob", "nb", "kept")}
        for _ in range(n):
            times["od"].append(_ms(lambda: old.rules(*paths)))
            times["nd"].append(_ms(lambda: landlock.rules(*paths)))
            times["ob"].append(_ms(lambda: old.preexec(old.rules(*paths), network=True).close()))
            times["nb"].append(
                _ms(lambda: landlock.preexec(landlock.rules(*paths), network=True).close())
            )
            times["kept"].append(_ms(lambda: landlock.prepared(*paths, network=True).close()))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(
            f"`python -m bench.landlock_rules OLD.py --crowd {crowd} --n {n}` · entries beside "
            f"the project: {len(os.listdir(tmp)) - 1} · /tmp entries: {len(os.listdir('/tmp'))} "
            f"· load {os.getloadavg()[0]:.1f}\n\n"
            "| | rules | drawn | drawn + built |\n|---|---|---|---|\n"
            f"| old | {len(old.rules(*paths))} | {med['od']:.2f} ms | {med['ob']:.2f} ms |\n"
            f"| new | {len(landlock.rules(*paths))} | {med['nd']:.2f} ms | {med['nb']:.2f} ms |\n"
            f"| new, kept ruleset checked and reused (sandbox.run) | | | {med['kept']:.2f} ms |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
