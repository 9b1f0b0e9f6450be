"""Timing helpers: medians, and paired runs that interleave a baseline (A B A B …).

Two noisy cores make a ratio of two separately measured medians swing; :func:`paired`
alternates the measured command with its baseline and reports the median of the per-pair
ratios, so both sides see the same load.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OwnRun",
    "Paired",
    "cpu_seconds",
    "fmt",
    "median_seconds",
    "paired",
    "rounds",
    "run_measured",
    "run_own_rss",
]


def median_seconds(fn: Callable[[], object], *, repeat: int = 50, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples) / 1e9


@dataclass(frozen=True, slots=True)
class Paired:
    ours: float  # median seconds
    base: float  # median seconds
    ratio: float  # median of the per-pair ratios ours_i / base_i
    pairs: int


def paired(
    ours: Callable[[], Any],
    base: Callable[[], Any],
    *,
    pairs: int = 20,
    warmup: int = 2,
    measure: Callable[[Callable[[], Any]], float] | None = None,
) -> Paired:
    """Run ``base`` and ``ours`` alternately (B A B A …); medians and the per-pair ratio.

    ``measure(fn)`` returns one sample (default: wall time of one call).
    """

    def wall(fn: Callable[[], Any]) -> float:
        t0 = time.perf_counter_ns()
        fn()
        return (time.perf_counter_ns() - t0) / 1e9

    m = measure or wall
    for _ in range(warmup):
        base()
        ours()
    a: list[float] = []
    b: list[float] = []
    for _ in range(pairs):
        b.append(m(base))
        a.append(m(ours))
    ratios = [x / y for x, y in zip(a, b, strict=True) if y > 0]
    return Paired(statistics.median(a), statistics.median(b), statistics.median(ratios), pairs)


def cpu_seconds(*, children: bool = True) -> float:
    """CPU seconds of this process, and of its waited-for children when ``children`` (not
    what runs in a bubblewrap PID namespace: its init does not pass that on)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    total = me.ru_utime + me.ru_stime
    if children:
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        total += kids.ru_utime + kids.ru_stime
    return total


def rounds(
    fns: dict[str, Callable[[], Any]],
    n: int,
    *,
    warmup: int = 1,
    cpu: dict[str, list[float]] | None = None,
) -> dict[str, list[float]]:
    """Run every function of ``fns`` in turn, ``n`` rounds after ``warmup``, the order rotated
    each round (A B C, B C A, C A B …: each in each place as often, so none always follows the
    same one): the samples per name, in order. A sample is the call's wall time, or what it
    returns when that is a float (a function that times only its own part). ``cpu``, when
    given, receives each call's CPU seconds of this process alone per name."""
    out: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for i in range(warmup + n):
        turn = i % len(names)
        for name in names[turn:] + names[:turn]:
            fn = fns[name]
            c0 = cpu_seconds(children=False)
            t0 = time.perf_counter_ns()
            got = fn()
            took = (time.perf_counter_ns() - t0) / 1e9
            if i >= warmup:
                out[name].append(got if isinstance(got, float) else took)
                if cpu is not None:
                    cpu.setdefault(name, []).append(cpu_seconds(children=False) - c0)
    return out


def run_measured(
    argv: Sequence[str], *, stdin: bytes = b"", env: dict[str, str] | None = None, cwd: str = "."
) -> tuple[float, int]:
    """Run a process to completion: (wall seconds, peak RSS in KiB) of that one child."""
    t0 = time.perf_counter_ns()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    assert proc.stdin is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = (time.perf_counter_ns() - t0) / 1e9
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}")
    return elapsed, int(usage.ru_maxrss)


# Run argv[3:] with stdin from argv[2], forked from this small interpreter; its exit code,
# peak RSS (KiB) and wall time go to the fd argv[1].
_OWN_RSS = """
import os, sys, time
fd, path, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.close(fd)
    os.dup2(os.open(path, os.O_RDONLY), 0)
    os.execvp(argv[0], argv)
_, status, usage = os.wait4(pid, 0)
os.write(fd, f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss} "
             f"{time.perf_counter() - t0:.6f} {usage.ru_utime + usage.ru_stime:.6f}".encode())
"""


@dataclass(frozen=True, slots=True)
class OwnRun:
    returncode: int
    stdout: bytes
    stderr: bytes
    peak_kib: int  # the process's own peak RSS
    wall: float  # seconds, fork to exit
    cpu: float  # seconds of CPU, user + system, of the process


def run_own_rss(
    argv: Sequence[str], *, stdin_path: str, env: dict[str, str] | None = None, cwd: str = "."
) -> OwnRun:
    """Run ``argv`` with stdin read from ``stdin_path``; its own peak RSS and CPU time.

    A child's ``ru_maxrss`` is at least the high-water RSS of the process that spawned it:
    ``subprocess`` spawns with vfork (or posix_spawn), and at ``exec`` the kernel folds the
    spawner's peak into the child's (measured: a parent that once held 200 MB, freed it,
    then ran ``/bin/true``: 204 MiB). So a bench that built a 100 MB payload reports its own
    peak as the hook's. Here the child is forked from a fresh ``python -I -S`` (~9 MiB),
    which reports the child's ``wait4`` usage.
    """
    import sys

    r, w = os.pipe()
    try:
        proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _OWN_RSS, str(w), stdin_path,
                                 *argv],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                cwd=cwd, pass_fds=(w,))  # fmt: skip
        os.close(w)
        w = -1
        out, err = proc.communicate()
        report = os.read(r, 200).decode().split()
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    if proc.returncode != 0 or len(report) != 4:
        raise RuntimeError(f"the measuring process failed: {err[-400:]!r}")
    code, peak, wall, cpu = report
    return OwnRun(int(code), out, err, int(peak), float(wall), float(cpu))


def fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"
