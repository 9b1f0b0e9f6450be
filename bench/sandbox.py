"""What the agent's OS sandbox costs per command (issue 27): sandboxed against bare.

``python -m bench.sandbox [--quick] [--crowd N]`` runs ``true`` and ``pytest -q`` (two tests
in a temporary project) bare, under bubblewrap with
:func:`infomark.tools.agent_sandbox.agent_policy`, and under the Landlock backend with the same
policy (applied by a thread that restricts itself and starts the program, as ``sandbox.run``
does for ``infomark run``, with the ruleset kept between commands as ``sandbox.run`` keeps it
and, apart, forgotten before each command; and by the helper script, as ``mcp-proxy
--sandbox`` starts its server), interleaved (bare, sandboxed, bare, …) so both see the same
load; it reports medians, the added milliseconds (median of the per-pair differences) and the
ratio (median of the per-pair ratios). The goal is at most 15 ms added per command. The table
goes into docs/performance.md between ``<!-- sandbox:begin -->`` and ``<!-- sandbox:end -->``
(a full run; ``--quick`` only prints). ``--crowd N`` puts N empty directories beside the
project (in the directory the rules must split on the way to the home, as a crowded ``/tmp``
does), to show what the Landlock rules cost there; its table goes between
``<!-- sandbox-crowd:begin -->`` and ``<!-- sandbox-crowd:end -->``.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from infomark.tools import landlock, sandbox
from infomark.tools.agent_sandbox import agent_policy

DOC = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
BEGIN, END = "<!-- sandbox:begin -->", "<!-- sandbox:end -->"
CROWD_BEGIN, CROWD_END = "<!-- sandbox-crowd:begin -->", "<!-- sandbox-crowd:end -->"
LANDLOCK_CHILD = "landlock (restricted thread: infomark run)"
LANDLOCK_FRESH = "landlock (restricted thread, ruleset not kept)"
TEST = "def test_a():\n    assert 1 + 1 == 2\n\ndef test_b():\n    assert 'x'.upper() == 'X'\n"


def _landlocked_wall(
    argv: Sequence[str],
    cwd: Path,
    env: dict[str, str],
    policy: sandbox.SandboxPolicy,
    *,
    fresh: bool,
) -> float:
    """``argv`` started as ``sandbox.run`` starts it under Landlock: the kept ruleset checked
    (``fresh``: forgotten first, so the rules are drawn and built again), a thread restricted
    that starts the program (timed from the ruleset on)."""
    if fresh:
        landlock.clear_cache()
    t0 = time.perf_counter_ns()
    prepared = landlock.prepared(policy.writable, policy.read_only, policy.hidden, network=True)

    def popen() -> subprocess.Popen[bytes]:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)  # fmt: skip

    try:
        proc = sandbox._restricted_thread(prepared, popen)
    finally:
        prepared.close()
    _out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{argv[-1]!r} failed ({proc.returncode}): {err[-500:]!r}")
    return (time.perf_counter_ns() - t0) / 1e6


def _wall(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter_ns()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{argv[-1]!r} failed ({done.returncode}): {done.stderr[-500:]!r}")
    return (time.perf_counter_ns() - t0) / 1e6


def _pairs(
    bare: Callable[[], float], boxed: Callable[[], float], n: int
) -> tuple[float, float, float, float]:
    for _ in range(2):
        bare(), boxed()
    a, b = [], []
    for _ in range(n):
        a.append(bare())
        b.append(boxed())
    added = statistics.median(y - x for x, y in zip(a, b, strict=True))
    ratio = statistics.median(y / x for x, y in zip(a, b, strict=True))
    return statistics.median(a), statistics.median(b), added, ratio


def _parts(policy: sandbox.SandboxPolicy, n: int) -> str:
    """The Landlock ruleset's parts, each measured alone in this process (medians of ``n``):
    drawing the rules, building the ruleset from them, and checking and reusing the kept one."""
    paths = (policy.writable, policy.read_only, policy.hidden)

    def median_ms(step: Callable[[], object]) -> float:
        times = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            step()
            times.append((time.perf_counter_ns() - t0) / 1e6)
        return statistics.median(times)

    rule_list = landlock.rules(*paths)
    drawn = median_ms(lambda: landlock.rules(*paths))
    built = median_ms(lambda: os.close(landlock.ruleset(rule_list, network=True)))
    landlock.prepared(*paths, network=True).close()
    kept = median_ms(lambda: landlock.prepared(*paths, network=True).close())
    return (
        f"Landlock, measured apart (median of {n}): {len(rule_list)} rules, drawn in "
        f"{drawn:.2f} ms, built in {built:.2f} ms; the kept ruleset checked and reused in "
        f"{kept:.2f} ms.\n"
    )


def run(quick: bool, crowd: int = 0) -> str:
    counts = {"true": 8 if quick else 30, "pytest -q (2 tests)": 4 if quick else 8}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        project = Path(tmp) / "project"
        for i in range(crowd):
            (Path(tmp) / f"crowd-{i}").mkdir()
        (project / ".infomark").mkdir(parents=True)
        (project / "test_x.py").write_text(TEST)
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": tmp}
        policy = agent_policy(project / ".infomark", project, env=env)
        status = sandbox.probe()
        backends: list[tuple[str, Callable[[Sequence[str]], list[str]]]] = []
        if status.backend is sandbox.SandboxBackend.BWRAP:
            backends.append(("bubblewrap", lambda argv: sandbox.command(argv, policy)))
        if landlock.abi() >= 1:

            def landlocked(argv: Sequence[str]) -> list[str]:
                rules = landlock.rules(policy.writable, policy.read_only, policy.hidden)
                return landlock.script_argv(argv, cwd=str(project), rule_list=rules, network=True)

            backends.append(("landlock (script: mcp-proxy --sandbox)", landlocked))
            backends.append((LANDLOCK_CHILD, lambda argv: list(argv)))
            backends.append((LANDLOCK_FRESH, lambda argv: list(argv)))
        commands = {
            "true": ["bash", "-c", "true"],
            "pytest -q (2 tests)": [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        }
        for name, argv in commands.items():
            for backend, wrap in backends:

                def bare(argv: Sequence[str] = argv) -> float:
                    return _wall(argv, project, env)

                def boxed(
                    argv: Sequence[str] = argv,
                    wrap: Callable[..., list[str]] = wrap,
                    child: bool = backend in (LANDLOCK_CHILD, LANDLOCK_FRESH),
                    fresh: bool = backend == LANDLOCK_FRESH,
                ) -> float:
                    if child:  # as sandbox.run does it: the ruleset, a restricted thread
                        return _landlocked_wall(argv, project, env, policy, fresh=fresh)
                    return _wall(wrap(argv), project, env)  # building the argv counts too

                med_a, med_b, added, ratio = _pairs(bare, boxed, counts[name])
                rows.append(
                    f"| `{name}` | {backend} | {med_a:.1f} ms | {med_b:.1f} ms | "
                    f"{added:+.1f} ms | {ratio:.2f}x |"
                )
        parts = _parts(policy, 20 if quick else 50) if landlock.abi() >= 1 else ""
    load = os.getloadavg()[0]
    head = (
        f"`python -m bench.sandbox{' --quick' if quick else ''}"
        f"{f' --crowd {crowd}' if crowd else ''}` · Python "
        f"{platform.python_version()} · {platform.machine()} · interleaved pairs "
        f"({', '.join(f'{k}: {v}' for k, v in counts.items())}) · "
        f"load {load:.1f}\n\n"
        "| command | sandbox | bare (median) | sandboxed (median) | added (median of pairs) | "
        "ratio |\n|---|---|---|---|---|---|\n"
    )
    return head + "\n".join(rows) + "\n" + (f"\n{parts}" if parts else "")


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    crowd = int(argv[argv.index("--crowd") + 1]) if "--crowd" in argv else 0
    text = run(quick, crowd)
    print(text)
    if not quick:
        doc = DOC.read_text("utf-8")
        begin, end_mark = (CROWD_BEGIN, CROWD_END) if crowd else (BEGIN, END)
        start, end = doc.index(begin) + len(begin), doc.index(end_mark)
        DOC.write_text(doc[:start] + "\n" + text + doc[end:], "utf-8")
        print(f"table written to {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
