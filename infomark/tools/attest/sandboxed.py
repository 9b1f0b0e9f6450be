"""One sandboxed run of an oracle in a copy (shared by the attested check and the baseline run).

:func:`execute` asks the runner for its own report (:mod:`infomark.tools.attest_report`), builds
the sandbox's policy (the copy's private directory writable; the Python installations the
oracle needs read-only; the ledger home, keys, transcripts and infomark's installation hidden;
a clean environment; the operator's limits) and runs it; nothing is recorded here.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from infomark.gates.protect import installation_paths
from infomark.gates.surface import parse_oracle
from infomark.kernel import memtmp
from infomark.tools import attest_report, sandbox
from infomark.tools.attest import pycache, rewrites

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from infomark.gatekeeper import Gatekeeper
    from infomark.gates.surface import GradingSurface

__all__ = ["Sandboxed", "copy_dir", "execute", "oracle_argv", "private_paths", "workdir"]


def private_paths(home: str) -> tuple[str, ...]:
    """What a sandboxed run may not read: the ledger home (key, token, journal), the host's
    transcripts and settings, infomark's installation."""
    user = os.path.expanduser("~")
    out = [os.path.realpath(home), *installation_paths()]
    out += [os.path.join(user, ".claude"), os.path.join(user, ".infomark")]
    out += [os.path.join(user, ".config", "infomark")]
    return tuple(dict.fromkeys(out))


def _limits(cfg: dict[str, Any]) -> sandbox.Limits:
    return sandbox.Limits(
        cpu_seconds=int(cfg.get("cpu_seconds", 600)),
        memory_bytes=int(cfg.get("memory_mb", 4096)) << 20,
        wall_seconds=float(cfg.get("wall_seconds", 240)),
    )


@dataclass(frozen=True, slots=True)
class Sandboxed:
    """One sandboxed run of an oracle in a copy: what it ran under and what it reported."""

    prepared: attest_report.PreparedRun
    policy: sandbox.SandboxPolicy
    ran: sandbox.SandboxRun
    report: attest_report.RunnerReport


def execute(
    gk: Gatekeeper,
    oracle: str,
    grading: GradingSurface,
    copy: str,
    workdir: str,
    cfg: dict[str, Any],
    environments: Sequence[str] = (),
    sources: Mapping[str, bytes] | None = None,
    carried: Collection[str] = (),
    caches: Sequence[str] = (),
) -> Sandboxed:
    """Run ``oracle`` in ``copy`` (inside the private ``workdir``) under the sandbox, with
    its runner asked for its own report; nothing is recorded. ``sources``: the bytes the copy
    was written with (:attr:`infomark.tools.attest.carry.Carry.sources`), for its byte code;
    ``carried``: the copy's files the agent's change wrote, which may not run before the
    report's plugin; ``caches``: the linked environments' caches, hidden from the run."""
    prepared = attest_report.prepare(
        oracle_argv(oracle), grading, workdir, copy=copy, carried=carried
    )
    env = dict(sandbox.clean_env(tuple(cfg.get("env", ()))))
    # the user's own site directory (``~/.local/lib/python3.X/site-packages``) is writable by
    # the agent and its ``.pth`` files run at start-up, before the report plugin: not read
    # (an operator who needs it passes ``PYTHONNOUSERSITE`` through with ``[attest] env``)
    env.setdefault("PYTHONNOUSERSITE", "1")
    env.update(prepared.env)
    # the interpreters the oracle starts stay reachable where the sandbox's private /tmp
    # would hide them (a virtual environment under /tmp), read-only like the rest
    words = [prepared.argv[0], *(c.argv[0] for c in parse_oracle(oracle) if c.argv)]
    python = sandbox.interpreter_paths(words, path=env.get("PATH", ""), cwd=copy)
    real = os.path.realpath(workdir)  # a prefix that holds the copy would make it read-only
    python = tuple(p for p in python if not (real + "/").startswith(p.rstrip("/") + "/"))
    policy = sandbox.SandboxPolicy(
        cwd=copy,
        writable=(workdir,),
        read_only=(*prepared.readable, *python, *environments),
        hidden=(*private_paths(gk.store.home_dir), *gk.host_files, *caches),
        network=bool(cfg.get("network", False)),
        env=tuple(sorted(env.items())),
        limits=_limits(cfg),
    )
    # infomark's own byte code (and pytest's rewritten tests), just before the run
    words = [*prepared.argv, *oracle.split(), *(w for v in env.values() for w in v.split())]
    tests = rewrites.rewriter(gk.store.home_dir) if rewrites.usable(words) else None
    pycache.fill(copy, gk.store.home_dir, tests, sources)
    ran = sandbox.run(list(prepared.argv), policy)
    report = attest_report.read_report(prepared, ran.exit_code, ran.stdout)
    return Sandboxed(prepared, policy, ran, report)


#: the room ``/dev/shm`` must have for a copy to go there: twice the largest baseline infomark
#: records (512 MiB, :mod:`infomark.gates.baseline`), for the copy and what the run writes
SHM_MIN_FREE = 1 << 30


def workdir(prefix: str) -> str:
    """A new private (0700) directory for one run's copy and its report: in memory
    (``/dev/shm``) when it exists, is writable, ``$TMPDIR`` is not set and it has
    :data:`SHM_MIN_FREE` bytes free (:func:`infomark.kernel.memtmp.mkdtemp`), else in the
    temporary directory. Writing the copy's files costs a few microseconds each there
    against ~0.45 ms on an ext4 disk (docs/performance.md, "Attested runs")."""
    return memtmp.mkdtemp(prefix, min_free=SHM_MIN_FREE)


def copy_dir(gk: Gatekeeper, workdir: str, manifest: Mapping[str, Any]) -> str:
    """Where the copy goes inside ``workdir``: the project's own directory name, below as
    many of its real parents' names as the baseline recorded files above it (so
    ``../../conftest.py`` lands inside ``workdir`` too)."""
    depth = max((rel.count("../") for rel in manifest.get("above") or {}), default=0)
    parts = [p for p in os.path.realpath(gk.store.root_dir).split("/") if p] or ["project"]
    parts = ["up"] * max(0, depth + 1 - len(parts)) + parts
    copy = os.path.join(workdir, *parts[len(parts) - depth - 1 :])
    os.makedirs(copy)
    return copy


_SHELL = frozenset("|&;<>()$`\\\"'*?[]#~=%!{}\n")


def oracle_argv(oracle: str) -> list[str]:
    """The oracle as argv: its words when it is one plain command, else ``sh -c``."""
    try:
        words = shlex.split(oracle)
    except ValueError:
        words = []
    if words and not any(set(w) & _SHELL for w in words) and shlex.join(words) == oracle.strip():
        return words
    return ["/bin/sh", "-c", oracle]
