"""The paired eval harness: every task of a suite under each policy, same seed, graded outside.

Each run gets a fresh copy of the task's tree and a fresh ledger home next to it (never inside
it), and is driven by ``infomark run``'s runner: the same turn loop, tools, gatekeeper and
finish gate as a real run. The model side is a real HTTP server on 127.0.0.1 whose answers
come from the agent under test through a :class:`RunObserver`, which measures the run. The
agent is a scripted stochastic agent (``scripted``) or a real OpenAI-compatible endpoint
(``openai:URL``), whose answers are forwarded unchanged. With ``claude-code[:PATH]`` the run is
the real Claude Code CLI with infomark's hooks instead of the runner, its model the same
scripted agent (:mod:`infomark.tools.eval.claude_code`).
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx

from infomark.kernel import memtmp
from infomark.kernel.errors import InfomarkError, UserError
from infomark.tools.eval import claude_code
from infomark.tools.eval.agents import FailureRates, ScriptedAgent
from infomark.tools.eval.grade import copy_tree
from infomark.tools.eval.observer import RunObserver, RunRecord
from infomark.tools.eval.policy import Policy
from infomark.tools.eval.suite import Suite, Task
from infomark.tools.runner.agentfile import AgentSpec, ModelSpec
from infomark.tools.runner.loop import Runner
from infomark.tools.runner.model import ModelClient
from infomark.tools.runner.scripted import Request, ScriptedModelServer

__all__ = ["EvalResult", "run_eval", "scratch_dir"]

# the same for every policy: what a policy adds (the protocol, packs, refusals) is its own
_INSTRUCTIONS = (
    "You fix one bug in a small project. Work in small steps with the tools: read the code, "
    "edit it, run the task's test, and finish only when the task's test passes."
)


@dataclass(slots=True)
class EvalResult:
    suite: str
    suite_digest: str
    agent: str
    seed: int
    repeat: int
    policies: list[dict[str, Any]]
    rates: dict[str, float]
    runs: list[RunRecord] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    #: the bounds every run had: ``max_steps`` (model calls), ``max_tokens`` (per reply)
    caps: dict[str, int | None] = field(default_factory=dict)
    #: where and how long: platform, CPUs, load averages at the start and the end, wall time
    machine: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "suite_digest": self.suite_digest,
            "agent": self.agent,
            "seed": self.seed,
            "repeat": self.repeat,
            "policies": self.policies,
            "rates": self.rates,
            "skipped": self.skipped,
            "caps": self.caps,
            "machine": self.machine,
            "runs": [r.to_dict() for r in self.runs],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EvalResult:
        return cls(
            suite=str(d["suite"]),
            suite_digest=str(d["suite_digest"]),
            agent=str(d["agent"]),
            seed=int(d["seed"]),
            repeat=int(d["repeat"]),
            policies=list(d["policies"]),
            rates=dict(d["rates"]),
            runs=[RunRecord.from_dict(r) for r in d["runs"]],
            skipped=dict(d.get("skipped", {})),
            caps=dict(d.get("caps", {})),
            machine=dict(d.get("machine", {})),
        )


class _RecordingRunner(Runner):
    """A runner whose finish gate only records (``[eval] finish = "record"``)."""

    def _before_finalize(self, content: str) -> bool:
        fin = self.gk.can_finish(content)  # journaled as usual, never refused
        self.result.finish = fin.to_dict()
        self.result.final_text = content
        return True


class _Forward:
    """An OpenAI-compatible endpoint as the agent: each request is forwarded unchanged."""

    def __init__(self, url: str, model: str, api_key: str | None) -> None:
        base = url.rstrip("/")
        self.url = base if base.endswith("/chat/completions") else base + "/chat/completions"
        self.model = model
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(timeout=300.0, headers=headers)

    def __call__(self, req: Request) -> Mapping[str, Any]:
        body = {**req.body, "model": self.model or req.body.get("model", "")}
        res = self.client.post(self.url, json=body)
        if res.status_code != 200:
            raise InfomarkError(f"upstream {self.url}: HTTP {res.status_code}")
        msg = res.json()["choices"][0]["message"]
        out: dict[str, Any] = {"content": msg.get("content")}
        if msg.get("tool_calls"):
            out["tool_calls"] = msg["tool_calls"]
        return out

    def close(self) -> None:
        self.client.close()


def _machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_start": [round(x, 2) for x in os.getloadavg()],
    }


def scratch_dir() -> Path:
    """A new directory for the runs' trees and homes, removed after the eval.

    In memory (``/dev/shm``) when it exists and ``$TMPDIR`` is not set
    (:func:`infomark.kernel.memtmp.mkdtemp`): the runs' journals are throwaway, and each of
    their commits is an fsync on a disk (hundreds per run).
    """
    return Path(memtmp.mkdtemp("infomark-eval-"))


def _session(task: Task, policy: Policy, repeat: int) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", f"{task.name}.{policy.name}")[:60] + f".r{repeat}"


def _check_args(
    policies: Sequence[Policy], *, repeat: int, jobs: int, max_steps: int, max_tokens: int | None
) -> None:
    if len(policies) < 2:
        raise UserError("infomark eval needs two policies to compare: --policy A --policy B")
    names = [p.name for p in policies]
    if len(set(names)) != len(names):
        raise UserError(f"--policy names must differ: {', '.join(names)}")
    for flag, value in (("--repeat", repeat), ("--jobs", jobs), ("--max-steps", max_steps)):
        if value < 1:
            raise UserError(f"{flag} must be 1 or more")
    if max_tokens is not None and max_tokens < 1:
        raise UserError("--max-tokens must be 1 or more")


def _plan(
    suite: Suite, policies: Sequence[Policy], repeat: int, skipped: dict[str, str]
) -> list[tuple[Task, int, Policy]]:
    """Every run, interleaved (A B A B, the same seed per pair); a task this machine cannot
    run goes to ``skipped`` with what it needs."""
    plan: list[tuple[Task, int, Policy]] = []
    for task in suite.tasks:
        missing = task.missing()
        if missing:
            skipped[task.name] = "needs " + ", ".join(missing)
            continue
        for r in range(repeat):
            plan += [(task, r, p) for p in policies]
    return plan


def run_eval(
    suite: Suite,
    policies: Sequence[Policy],
    *,
    agent: str = "scripted",
    seed: int = 0,
    repeat: int = 1,
    rates: FailureRates | None = None,
    max_steps: int = 60,
    max_tokens: int | None = None,
    model_name: str = "",
    api_key: str | None = None,
    workdir: Path | None = None,
    progress: Callable[[RunRecord], None] | None = None,
    jobs: int = 1,
) -> EvalResult:
    """Run every task under every policy ``repeat`` times; the records, in run order."""
    _check_args(policies, repeat=repeat, jobs=jobs, max_steps=max_steps, max_tokens=max_tokens)
    rates = rates or FailureRates()
    claude, forward, label = _agent(agent, model_name, api_key)
    result = EvalResult(
        suite=str(suite.path),
        suite_digest=suite.digest(),
        agent=label,
        seed=seed,
        repeat=repeat,
        policies=[p.to_dict() for p in policies],
        rates=rates.to_dict() if forward is None else {},
        caps={"max_steps": max_steps, "max_tokens": max_tokens},
        machine=_machine(),
    )
    started = time.perf_counter()
    observers: dict[str, RunObserver] = {}
    lock = threading.Lock()
    base = Path(workdir) if workdir is not None else scratch_dir()
    server = ScriptedModelServer(default=_dispatcher(observers, lock)).start()
    plan = _plan(suite, policies, repeat, result.skipped)

    def one(item: tuple[Task, int, Policy]) -> RunRecord:
        task, r, policy = item
        if claude is not None:
            return _run_claude(task, policy, r, seed, rates, claude, base, max_steps)
        return _run_one(
            task, policy, r, seed, rates, forward, server, observers, lock, base,
            (max_steps, max_tokens),
        )  # fmt: skip

    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="eval") if jobs > 1 else None
    try:
        # runs are independent (own tree, home, session); results keep the plan's order
        for rec in pool.map(one, plan) if pool is not None else map(one, plan):
            result.runs.append(rec)
            if progress is not None:
                progress(rec)
    finally:
        result.machine["load_end"] = [round(x, 2) for x in os.getloadavg()]
        result.machine["wall_s"] = round(time.perf_counter() - started, 1)
        _close(pool, server, forward, base if workdir is None else None)
    return result


def _agent(
    agent: str, model_name: str, api_key: str | None
) -> tuple[Path | None, _Forward | None, str]:
    """``--agent``: the Claude Code binary it names, or the OpenAI-compatible endpoint to
    forward to (neither: the scripted agent), and the label the result records."""
    claude: Path | None = None
    if agent == claude_code.AGENT or agent.startswith(claude_code.AGENT + ":"):
        claude = claude_code.claude_binary(agent)
    elif agent != "scripted" and not agent.startswith("openai:"):
        raise UserError(f"--agent {agent!r}: use scripted, openai:URL or claude-code[:PATH]")
    forward = (
        _Forward(agent[len("openai:") :], model_name, api_key)
        if agent.startswith("openai:")
        else None
    )
    label = "scripted" if claude is None else f"{claude_code.AGENT}:{claude}"
    if forward is not None:
        label = f"openai:{forward.url}" + (f" model {model_name}" if model_name else "")
    return claude, forward, label


def _dispatcher(
    observers: dict[str, RunObserver], lock: threading.Lock
) -> Callable[[Request], Mapping[str, Any]]:
    """The model server's answer to a request: the observer of the run whose session it is."""

    def dispatch(req: Request) -> Mapping[str, Any]:
        with lock:
            obs = observers.get(req.session)
        if obs is None:
            raise InfomarkError(f"no run for session {req.session!r}")
        return obs.respond(req)

    return dispatch


def _close(
    pool: ThreadPoolExecutor | None,
    server: ScriptedModelServer,
    forward: _Forward | None,
    scratch: Path | None,
) -> None:
    """After the runs: the pool, the model server and the forwarding closed, and the scratch
    directory (when the eval made it) removed."""
    if pool is not None:
        pool.shutdown(cancel_futures=True)
    server.stop()
    if forward is not None:
        forward.close()
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_one(
    task: Task,
    policy: Policy,
    repeat: int,
    seed: int,
    rates: FailureRates,
    forward: _Forward | None,
    server: ScriptedModelServer,
    observers: dict[str, RunObserver],
    lock: threading.Lock,
    base: Path,
    caps: tuple[int, int | None],
) -> RunRecord:
    max_steps, max_tokens = caps
    session = _session(task, policy, repeat)
    run_dir = base / session
    root = run_dir / "tree"
    copy_tree(task.tree, root)
    record = RunRecord(task.name, policy.name, repeat, seed, task.spec.short)
    respond: Callable[[Request], Mapping[str, Any]]
    if forward is None:
        scripted = ScriptedAgent(task, rates, seed, repeat)
        record.modes = list(scripted.modes)
        respond = scripted.respond
    else:
        respond = forward
    obs = RunObserver(task, root, record, respond)
    with lock:
        observers[session] = obs
    spec = AgentSpec(
        name="eval",
        instructions=_INSTRUCTIONS,
        protocol=policy.protocol,
        max_steps=max_steps,
        model=ModelSpec(
            url=server.url, name="eval", retries=0, timeout_seconds=300, max_tokens=max_tokens
        ),
    )
    cls = Runner if policy.finish_gate else _RecordingRunner
    config = policy.config
    if config.profile.judges_checks and not config.oracle_require:
        # the check a team would name for this project: the task's own test command
        config = replace(config, oracle_require=(task.spec.test_command,))
    # plain HTTP to the harness's own server: no TLS context (loading the CA bundle costs
    # 0.2 s of CPU per run)
    client = ModelClient(
        server.url,
        "eval",
        retries=0,
        timeout=300,
        max_tokens=max_tokens,
        transport=httpx.HTTPTransport(verify=False),
    )
    started = time.perf_counter()
    end = "error"
    try:
        with cls(
            spec,
            home=run_dir / "home",
            session=session,
            root=root,
            config=config,
            client=client,
        ) as runner:
            runner.gk.unattended = "eval harness: nobody answers"
            out = runner.start(task.spec.prompt)
            end = out.reason
    except InfomarkError as exc:
        record.error = str(exc)[:500]
    finally:
        record.wall_ms = round((time.perf_counter() - started) * 1000, 1)
        with lock:
            observers.pop(session, None)
    obs.close(end)
    return record


def _run_claude(
    task: Task,
    policy: Policy,
    repeat: int,
    seed: int,
    rates: FailureRates,
    binary: Path,
    base: Path,
    max_steps: int,
) -> RunRecord:
    """One run through the real Claude Code CLI; the scripted agent plays its model."""
    session = _session(task, policy, repeat)
    run_dir = base / session
    root = run_dir / "tree"
    copy_tree(task.tree, root)
    record = RunRecord(task.name, policy.name, repeat, seed, task.spec.short)
    started = time.perf_counter()
    end = "error"
    obs: RunObserver | None = None
    try:
        env = claude_code.prepare(root, run_dir, policy)  # before the observer's first look
        scripted = ScriptedAgent(task, rates, seed, repeat)
        record.modes = list(scripted.modes)
        obs = RunObserver(task, root, record, scripted.respond)
        translator = claude_code.Translator(root, session, obs.respond)
        end = claude_code.run_claude(binary, task, root, env, translator, record, max_steps)
    except InfomarkError as exc:
        record.error = str(exc)[:500]
    finally:
        record.wall_ms = round((time.perf_counter() - started) * 1000, 1)
    if obs is not None:
        obs.close(end)
    return record
