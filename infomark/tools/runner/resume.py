"""Crash and resume: continue a run from its journal (transcript, pending turn, idle schedule).

The journal is the only state. :func:`resume_run` takes the latest ``run_started`` of the
session and replays what followed: ``runner_message`` rows rebuild the transcript; a tool
call with no result row gets an explicit *interrupted* result (it is never re-run: its
effect is unknown); ``waiting`` / ``woken`` / ``idle_settled`` restore the schedule, and a
``waiting`` with no ``woken`` after it is an interrupted sleep that continues until its
original deadline. A reply that ended the transcript without a finish decision goes to the
finish gate first. The resumed run takes the inbox over (the dead holder's lease) and
journals ``run_resumed``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Unpack

from infomark.kernel.errors import UserError
from infomark.ledger.calls import check_options
from infomark.tools.runner.agentfile import AgentSpec, load_agent
from infomark.tools.runner.loop import _INTERRUPTED, RUNNER_OPTIONS, Runner, RunnerOptions
from infomark.tools.runner.result import RunResult
from infomark.tools.runner.schedule import interrupted_wake, schedule_from_events

__all__ = ["resume_run", "run_record"]

_RESUME_OPTIONS = tuple(k for k in RUNNER_OPTIONS if k != "parent")  # the journal's parent


def run_record(runner: Runner) -> tuple[int, dict[str, Any], list[tuple[int, str, dict[str, Any]]]]:
    """``(seq of run_started, its payload, the rows after it)``; UserError if none."""
    rows = [(r.seq, r.type, r.payload) for r in runner.gk.events()]
    starts = [i for i, (_, t, _) in enumerate(rows) if t == "run_started"]
    if not starts:
        raise UserError(
            f"session {runner.raw_session!r} has no run to resume; start one with "
            f'infomark run --session {runner.raw_session} "task"'
        )
    i = starts[-1]
    return rows[i][0], rows[i][2], rows[i + 1 :]


def resume_run(
    *,
    home: Path,
    session: str,
    root: Path,
    spec: AgentSpec | None = None,
    model_url: str | None = None,
    model_name: str | None = None,
    **options: Unpack[RunnerOptions],
) -> RunResult:
    """Continue the latest run of ``session``; its agent file, model (unless ``model_url`` or
    ``model_name`` replace it) and parent come from the journal; ``options`` are the
    :class:`~infomark.tools.runner.loop.RunnerOptions` but ``parent``."""
    check_options("resume_run", options, _RESUME_OPTIONS)
    probe = Runner(spec or AgentSpec(), home=home, session=session, root=root)
    try:
        _, started, after = run_record(probe)
    finally:
        probe.close()
    finished = [p for _, t, p in after if t == "run_finished"]
    if finished:
        raise UserError(
            f"the last run of session {session!r} already ended ({finished[-1].get('reason')}); "
            f'nothing to resume: start a new one with infomark run --session {session} "task"'
        )
    if spec is None:
        agent_file = started.get("agent_file")
        spec = load_agent(agent_file) if agent_file else AgentSpec()
    spec = spec.with_model(
        model_url or started.get("model_url") or None, model_name or started.get("model_name")
    )
    spec = replace(spec, idle=replace(spec.idle, persistent=bool(started.get("persistent"))))
    options = options | {"parent": started.get("parent")}  # the journal's
    runner = Runner(spec, home=home, session=session, root=root, **options)
    try:
        return _continue(runner, after)
    finally:
        runner.close()


def _continue(runner: Runner, after: list[tuple[int, str, dict[str, Any]]]) -> RunResult:
    messages: list[dict[str, Any]] = []
    for _, type_, payload in after:
        if type_ == "runner_message" and isinstance(payload.get("message"), dict):
            messages.append(payload["message"])
        elif type_ == "model_called":
            idle = payload.get("kind") == "idle"
            tokens = int(payload.get("prompt_tokens", 0)) + int(payload.get("completion_tokens", 0))
            if idle:
                runner.result.idle_calls += 1
                runner.result.idle_tokens += tokens
            else:
                runner.result.working_calls += 1
                runner.result.working_tokens += tokens
        elif type_ == "woken" and payload.get("by") == "idle":
            runner.idle_wakes += 1
    pending_sleep = schedule_from_events(runner.schedule, after)
    resumed_wake = interrupted_wake(after)
    runner.messages = messages
    runner.open_inbox()
    interrupted = _interrupted_calls(messages)
    runner.emit(
        "run_resumed",
        {
            "messages": len(messages),
            "interrupted_calls": interrupted,
            "pending_sleep_until": pending_sleep.until if pending_sleep else None,
            "interrupted_wake": resumed_wake,
            "idle_wakes": runner.idle_wakes,
            **runner.schedule.to_dict(),
        },
    )
    for call_id in interrupted:
        runner._push({"role": "tool", "tool_call_id": call_id, "content": _INTERRUPTED})
    last = messages[-1] if messages else None
    final_pending = None
    if (
        pending_sleep is None
        and last is not None
        and last.get("role") == "assistant"
        and not last.get("tool_calls")
    ):
        final_pending = str(last.get("content") or "")
    if pending_sleep is not None and not runner.spec.idle.persistent:
        pending_sleep = None
    return runner._drive(
        final_pending=final_pending, pending_sleep=pending_sleep, resumed_wake=resumed_wake
    )


def _interrupted_calls(messages: list[dict[str, Any]]) -> list[str]:
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") == "assistant":
            calls = [c.get("id") for c in m.get("tool_calls") or [] if isinstance(c, dict)]
            answered = {x.get("tool_call_id") for x in messages[i + 1 :] if x.get("role") == "tool"}
            return [str(c) for c in calls if c not in answered]
    return []
