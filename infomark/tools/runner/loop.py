"""The turn loop: model call → ingest → gated tools → finish gate, with the four turn hooks.

* ``before_model_call``: pending inbox messages become operator turns; the system message
  carries the gatekeeper's context view (packs, working memory, ledger summary with ranks).
* ``after_model_response``: the reply is ingested (claim_ledger, stamps, divergences); usage
  goes to ``host_report``.
* ``after_tool_batch``: each call went through authorize → run → record (``wrap_executor``),
  so evidence, metrics, packs and working memory are already updated.
* ``before_finalize``: a reply without tool calls asks ``can_finish``; a refusal or a fired
  trigger comes back as an operator turn and the loop re-enters.

Everything that a resume needs is a journal event of the session: ``run_started``, each
message (``runner_message``), each model call (``model_called``, idle or working), each
idle sleep (``waiting`` / ``woken`` / ``idle_settled``) and ``run_finished``.
:mod:`infomark.tools.runner.resume` rebuilds a :class:`Runner` from them. One module, one
job: the loop. The runner's other jobs are mixins, each in its module: the inbox lease
(:mod:`~infomark.tools.runner.lease`), the tool set (:mod:`~infomark.tools.runner.toolset`,
with :mod:`~infomark.tools.runner.fetch`, whose re-fetch is the gatekeeper's
``refetch``) and the idle cycle (:mod:`~infomark.tools.runner.idle`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypedDict, Unpack

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config, load_config
from infomark.kernel.contexts import Closing
from infomark.kernel.errors import UserError
from infomark.kernel.protocol import CONTEXT_HEADER, render_protocol
from infomark.ledger.calls import ToolCall, check_options
from infomark.ledger.inbox import Inbox, new_holder
from infomark.tools.attest_lazy import lazy_attester
from infomark.tools.runner.agentfile import AgentSpec
from infomark.tools.runner.fetch import page_refetch
from infomark.tools.runner.idle import IdleMixin, Stop, operator_text
from infomark.tools.runner.lease import LeaseMixin
from infomark.tools.runner.model import ChatResult, ModelClient, RawToolCall
from infomark.tools.runner.result import RunResult
from infomark.tools.runner.schedule import Clock, IdleSchedule, PendingSleep, SystemClock
from infomark.tools.runner.subagents import Supervisor
from infomark.tools.runner.textcalls import text_call_help
from infomark.tools.runner.toolset import ToolsMixin
from infomark.wrapping import GatedResult, ingest_note, wrap_executor

__all__ = ["RunResult", "Runner", "make_client"]

_INTERRUPTED = (
    "[infomark runner] interrupted: the runtime stopped before this call's result was "
    "recorded, so its effect is unknown. Check the state before relying on it."
)


def make_client(spec: AgentSpec) -> ModelClient:
    m = spec.model
    return ModelClient(
        m.url,
        m.name,
        api_key=m.api_key(),
        timeout=m.timeout_seconds,
        retries=m.retries,
        temperature=m.temperature,
        max_tokens=m.max_tokens,
    )


def _project_config(root: Path, home: Path) -> Config:
    from infomark.ledger.home import ensure_private_dir

    ensure_private_dir(home)  # load_config caches into the home
    return load_config(root, home)


def agent_config(spec: AgentSpec, config: Config) -> Config:
    """The project's configuration with the agent file's ``[policies]`` over it.

    A key the agent file sets replaces the project's (``adaptive_packs``, ``triggers`` …);
    ``pack_overrides`` merge pack by pack, the agent's winning.
    """
    mine = dict(spec.policies)
    merged = {**config.policies, **mine}
    if "pack_overrides" in mine:
        merged["pack_overrides"] = {
            **dict(config.policies.get("pack_overrides") or {}),
            **dict(mine["pack_overrides"]),
        }
    return replace(config, policies=merged)


class RunnerOptions(TypedDict, total=False):
    """How a :class:`Runner` runs, besides its agent, home, session and root: the keyword
    options of ``Runner(…)`` and :func:`~infomark.tools.runner.resume.resume_run`, written once.

    ``client``: the model client (default: one made from the agent file's model);
    ``clock``: the idle schedule's clock (default: the system's); ``parent``: the session
    that forked this one; ``echo``: where progress lines go (default: nowhere);
    ``profile`` and ``config``: the gatekeeper's, as in :meth:`Gatekeeper.open`.
    """

    client: ModelClient | None
    clock: Clock | None
    parent: str | None
    echo: Callable[[str], None] | None
    profile: str | None
    config: Config | None


RUNNER_OPTIONS = tuple(RunnerOptions.__optional_keys__)


class Runner(LeaseMixin, ToolsMixin, IdleMixin, Closing):
    """One agent session driven natively, with the gatekeeper inside every step."""

    def __init__(
        self,
        spec: AgentSpec,
        *,
        home: Path,
        session: str,
        root: Path,
        **options: Unpack[RunnerOptions],
    ) -> None:
        check_options("Runner", options, RUNNER_OPTIONS)
        self.spec = spec
        self.home = Path(home)
        self.root = Path(root)
        self.raw_session = session
        config = options.get("config")
        if spec.policies:
            config = agent_config(spec, config or _project_config(self.root, self.home))
        self.gk = Gatekeeper.open(
            self.home, session, root=self.root, profile=options.get("profile"), config=config
        )
        self.session = self.gk.session
        self.enforcing = self.gk.config.profile.enforcing
        self.inbox = Inbox(self.gk.store.journal)
        self.holder = new_holder("runner")
        self.client = options.get("client")
        self.clock: Clock = options.get("clock") or SystemClock()
        self.parent = options.get("parent")
        self.echo = options.get("echo") or (lambda _s: None)
        self.schedule = IdleSchedule(
            base=spec.idle.base_seconds, cap=spec.idle.cap_seconds, hold=spec.idle.hold
        )
        self.messages: list[dict[str, Any]] = []
        self._note = ""  # what the last reply's blocks came to (ingest_note), not yet told
        self.result = RunResult(self.session, "running")
        self.idle_wakes = 0
        self._idle_turn = False
        self._lease_lost = threading.Event()
        self._beat_stop = threading.Event()
        self._beater: threading.Thread | None = None
        self._watch: dict[str, tuple[int, int]] = self._snapshot()
        self.supervisor = Supervisor(self, self._child)
        self.tools = self._build_tools()
        self.gk.refetch = page_refetch(self.tools)  # the runner can re-fetch its own fetches
        lazy_attester(self.gk)  # the finish runs the oracles it needs, attested
        self._gated = {
            name: wrap_executor(self.gk, t.run, tool_class=t.tool_class)
            for name, t in self.tools.items()
        }

    # -- plumbing ---------------------------------------------------------------------------
    def emit(self, type_: str, payload: Mapping[str, Any]) -> int:
        with self.gk.store.transaction():
            return self.gk.store.emit(type_, payload)

    def _push(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.emit("runner_message", {"message": message, "idle": self._idle_turn})

    def _model(self) -> ModelClient:
        if self.client is None:
            self.client = make_client(self.spec)
        return self.client

    def close(self) -> None:
        self._beat_stop.set()
        if self._beater is not None:
            self._beater.join(timeout=5)
        self.supervisor.close()
        self.inbox.close()
        if self.client is not None:
            self.client.close()
        self.gk.close()

    def _child(self, spec: AgentSpec, session: str) -> Runner:
        return Runner(
            spec,
            home=self.home,
            session=session,
            root=self.root,
            clock=self.clock,
            parent=self.session,
        )

    # -- the four hooks ------------------------------------------------------------------------
    def _system(self) -> dict[str, Any]:
        # what never changes first, so a server's prompt cache keeps it from turn to turn and
        # from session to session; the session's own lines after it
        parts = [
            self.spec.instructions.strip()
            or "You are an agent with tools. Work in small steps and prove what you claim."
        ]
        show = self.spec.protocol  # the agent file's choice, else the profile's
        if show if show is not None else self.gk.config.profile.asks_protocol:
            parts.append(render_protocol())
        parts.append(f"infomark session: {self.raw_session}")
        return {"role": "system", "content": "\n\n".join(parts)}

    def _context(self) -> list[dict[str, Any]]:
        """The context view as the request's last message, never kept in the history: it
        changes every step, and in the system message it would void a server's prompt cache
        for everything after it (the tools and the whole conversation, every step)."""
        view = self.gk.context_view(self.spec.context_budget)
        return [{"role": "user", "content": CONTEXT_HEADER + view}] if view else []

    def _before_model_call(self) -> None:
        if self._lease_lost.is_set():
            raise Stop("lease_lost")
        got = self.inbox.read(self.session, self.holder)
        if got:
            self._push({"role": "user", "content": operator_text(got)})

    def _after_model_response(self, res: ChatResult) -> None:
        calls = {"idle" if self._idle_turn else "working"}
        tokens = res.total_tokens
        if self._idle_turn:
            self.result.idle_calls += 1
            self.result.idle_tokens += tokens
        else:
            self.result.working_calls += 1
            self.result.working_tokens += tokens
        self.emit(
            "model_called",
            {
                "kind": calls.pop(),
                "prompt_tokens": res.prompt_tokens,
                "completion_tokens": res.completion_tokens,
                "tool_calls": len(res.tool_calls),
                "attempts": res.attempts,
                "duration_ms": round(res.duration_ms, 1),
            },
        )
        msg: dict[str, Any] = {"role": "assistant", "content": res.content or None}
        if res.tool_calls:
            msg["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in res.tool_calls
            ]
        self._push(msg)
        said = (res.content or "").strip().splitlines()
        names = ", ".join(c.name for c in res.tool_calls)
        head = said[0][:100] if said else ""
        self.echo("model: " + (head + "  " if head else "") + (f"→ {names}" if names else ""))
        if res.content and res.tool_calls:  # a final reply is ingested by can_finish
            self._note = ingest_note(self.gk.ingest(res.content), packs=False)  # context has them
        if tokens:
            self.gk.host_report(tokens_used=tokens, context_window=self.spec.model.context_window)

    def _tool_batch(self, calls: tuple[RawToolCall, ...]) -> bool:
        """Run each call through the gate; True if any did real work (not ``wait``)."""
        work = False
        for raw in calls:
            self._push({"role": "tool", "tool_call_id": raw.id, "content": self._run_tool(raw)})
            work = work or raw.name != "wait"
        if self._note:  # what the reply's blocks came to: its own message, after the results
            self._push({"role": "user", "content": self._note})
            self._note = ""
        return work

    def _run_tool(self, raw: RawToolCall) -> str:
        gated = self._gated.get(raw.name)
        if gated is None:
            return f"[infomark runner] unknown tool {raw.name!r}; the tools are: " + ", ".join(
                self.tools
            )
        try:
            args = json.loads(raw.arguments or "{}")
        except ValueError as exc:
            return f"[infomark runner] {raw.name}: arguments are not JSON ({exc}); nothing ran"
        if not isinstance(args, dict):
            return f"[infomark runner] {raw.name}: arguments must be a JSON object; nothing ran"
        call = ToolCall(raw.name, args, tool_call_id=raw.id, cwd=str(self.root.resolve()))
        out: GatedResult = gated(call)  # the runner's tools run in its root
        text = out.text
        if out.error and out.error not in text:
            text = f"error: {out.error}{text if text.startswith(chr(10)) else chr(10) + text}"
        self.echo(f"  {raw.name}: {text.strip().splitlines()[0][:120] if text.strip() else ''}")
        return text

    def _before_finalize(self, content: str) -> bool:
        """True if the run may stop here; else the refusal is the next operator turn."""
        fin = self.gk.can_finish(content)
        self.result.finish = fin.to_dict()
        self.result.final_text = content
        if fin.allow:
            self.echo(f"finish allowed: {fin.reason[:200]}")
            return True
        first = fin.reason.strip().splitlines()[0] if fin.reason.strip() else ""
        self.echo(f"finish refused ({fin.code}): {first[:110]}")
        reason = fin.reason.removeprefix(f"Not finished: [{fin.code}] ")  # the code, once
        self._push({"role": "user", "content": f"[infomark] finish refused ({fin.code}): {reason}"})
        return False

    # -- the loop -------------------------------------------------------------------------------
    def _work(self, *, final_pending: str | None = None) -> tuple[str, bool]:
        """Run model/tool steps until the finish gate allows; ``(reason, did_work)``."""
        did_work = False
        if final_pending is not None and self._before_finalize(final_pending):
            return "finished", did_work
        for _ in range(self.spec.max_steps):
            self._before_model_call()
            res = self._model().chat(
                [self._system(), *self.messages, *self._context()],
                [t.schema() for t in self.tools.values()],
            )
            self._after_model_response(res)
            if res.tool_calls:
                did_work = self._tool_batch(res.tool_calls) or did_work
                continue
            if res.text_problems:  # a call written as text that could not be read
                self._push({"role": "user", "content": text_call_help(res.text_problems)})
                continue
            if self._before_finalize(res.content):
                return "finished", did_work
            if self.result.finish.get("code") == "trigger_fired":
                did_work = True  # a fired trigger is a real event
        self.emit("run_step_limit", {"max_steps": self.spec.max_steps})
        return "max_steps", did_work

    def _user_turn(self, prompt: str) -> None:
        context = self.gk.new_turn(prompt)
        self._push({"role": "user", "content": prompt + (("\n\n" + context) if context else "")})

    def start(self, task: str, *, persistent: bool | None = None) -> RunResult:
        """A new run of ``task`` in this session."""
        if not task.strip():
            raise UserError('infomark run needs a task: infomark run "fix the failing test"')
        self.open_inbox()
        return self.start_opened(task, persistent=persistent)

    def start_opened(self, task: str, *, persistent: bool | None = None) -> RunResult:
        """:meth:`start` for a runner whose inbox is already open (a spawned child)."""
        persistent = self.spec.idle.persistent if persistent is None else persistent
        self.spec = replace(self.spec, idle=replace(self.spec.idle, persistent=persistent))
        self.emit(
            "run_started",
            {
                "agent": self.spec.name,
                "agent_file": str(self.spec.source) if self.spec.source else None,
                "model_url": self.spec.model.url,
                "model_name": self.spec.model.name,
                "task": task,
                "persistent": persistent,
                "parent": self.parent,
                "holder": self.holder,
            },
        )
        self._user_turn(task)
        return self._drive()

    def _wake_turn(self, woke_by: str, prompt: str | None, final_pending: str | None) -> str:
        """One idle wake turn (``prompt`` None: resume the one a crash interrupted), settled."""
        self._idle_turn = True
        try:
            if prompt is not None:
                self._user_turn(prompt)
            reason, work = self._work(final_pending=final_pending)
        finally:
            self._idle_turn = False
        if work or woke_by != "timer":
            self.schedule.reset()
        else:
            self.schedule.empty_wake()
        self.emit("idle_settled", {"by": "idle", "work": work, **self.schedule.to_dict()})
        return reason

    def _drive(
        self,
        *,
        final_pending: str | None = None,
        pending_sleep: PendingSleep | None = None,
        resumed_wake: str | None = None,
    ) -> RunResult:
        reason = "error"
        try:
            if resumed_wake is not None and self.spec.idle.persistent:
                reason = self._wake_turn(resumed_wake, None, final_pending)
            elif pending_sleep is None:
                reason, _ = self._work(final_pending=final_pending)
            else:
                reason = "finished"  # the run was asleep: its last turn had ended
            while self.spec.idle.persistent and reason in ("finished", "max_steps"):
                wake = self._idle_cycle(pending_sleep)
                pending_sleep = None
                if wake is None:
                    reason = "idle_limit"
                    break
                reason = self._wake_turn(wake[0], wake[1], None)
        except Stop as stop:
            reason = stop.reason
        except KeyboardInterrupt:
            reason = "stopped"
        finally:
            self.result.reason = reason
            self.emit("run_finished", {"reason": reason, **self.result.to_dict()["cost"]})
            if reason != "lease_lost":
                self.supervisor.stop_all()
                self._release(reason)
        return self.result
