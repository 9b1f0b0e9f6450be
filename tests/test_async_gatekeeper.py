"""AsyncGatekeeper: the facade's methods as coroutines, journaling off the event loop.

The drift tests read the synchronous facade's members at run time: a public member added to
:class:`Gatekeeper` without its async counterpart (or with another signature) fails here.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import EDIT, GROUND_ORACLE, OWN_RUNS, ledger_text, stamp

from infomark.async_gatekeeper import AsyncGatekeeper
from infomark.gatekeeper import Gatekeeper
from infomark.ledger.calls import ToolCall, ToolOutcome
from infomark.ledger.evidence import Outcome
from infomark.wrapping import GatedResult

#: Sync members the async facade keeps synchronous, and why.
SYNC_HERE = {
    "after_tool_text": "pops in-memory text left by record(); reads no journal",
    "use_policies": "installs Python policy objects in this process; no I/O",
    "wrap": "returns a gated async executor (the call is what awaits)",
    "tool": "returns a decorator of gated async tools",
}
#: Sync properties that do I/O, so the async facade has a coroutine method instead.
PROPERTY_BECOMES_COROUTINE = {"state": "refreshes the projection from the journal"}
#: Members the async facade adds as properties (instance attributes on the sync one).
ASYNC_EXTRAS = {
    "sync",
    "run_sync",
    "config",
    "unattended",
    "host_files",
    "refetch",
    "attester",
    "check_attester",
}


def _public(cls: type) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_")}


def _params(fn: Any) -> list[tuple[str, Any, Any]]:
    sig = inspect.signature(fn)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values() if p.name != "self"]


def test_every_facade_member_has_an_async_counterpart() -> None:
    missing = _public(Gatekeeper) - _public(AsyncGatekeeper)
    assert not missing, f"AsyncGatekeeper lacks {sorted(missing)}: add them (same signature)"
    extra = _public(AsyncGatekeeper) - _public(Gatekeeper) - ASYNC_EXTRAS
    assert not extra, f"AsyncGatekeeper has members the facade lacks: {sorted(extra)}"


def test_instance_attributes_are_mirrored(gk: Gatekeeper) -> None:
    for name in (n for n in vars(gk) if not n.startswith("_")):
        prop = inspect.getattr_static(AsyncGatekeeper, name, None)
        assert isinstance(prop, property) and prop.fset is not None, name


@pytest.mark.parametrize("name", sorted(_public(Gatekeeper)))
def test_each_member_has_the_same_signature_and_kind(name: str) -> None:
    sync = inspect.getattr_static(Gatekeeper, name)
    mine = inspect.getattr_static(AsyncGatekeeper, name)
    if isinstance(sync, property):
        if name in PROPERTY_BECOMES_COROUTINE:
            assert inspect.iscoroutinefunction(mine), name
            assert _params(mine) == [], name
        else:
            assert isinstance(mine, property), name
        return
    if isinstance(sync, classmethod):
        assert isinstance(mine, classmethod), name
        sync, mine = sync.__func__, mine.__func__
    assert _params(mine) == _params(sync), name
    if name in SYNC_HERE:
        assert not inspect.iscoroutinefunction(mine), name
    elif name == "events":
        assert inspect.isasyncgenfunction(mine)
    else:
        assert inspect.iscoroutinefunction(mine), f"{name} must be a coroutine function"


def test_the_lists_name_real_members() -> None:
    assert set(SYNC_HERE) <= _public(Gatekeeper)
    assert set(PROPERTY_BECOMES_COROUTINE) <= _public(Gatekeeper)


# -- behaviour ---------------------------------------------------------------------------------


def _script(results: list[Any]) -> list[str]:
    """What a session answered, comparable across the two facades."""
    out = []
    for r in results:
        if isinstance(r, GatedResult):
            out.append(f"{r.decision.verdict.value}:{r.code}:{r.outcome}")
        else:
            out.append(repr(r))
    return out


def test_the_async_facade_answers_as_the_sync_one(home: Path, project: Path) -> None:
    ledger = ledger_text(("C1", "Hypothetical", GROUND_ORACLE), premises=("C1",))
    bash = ToolCall("bash", {"command": GROUND_ORACLE})

    def executor(call: ToolCall) -> ToolOutcome:
        return ToolOutcome("ok", exit_code=0 if call.tool == "bash" else None)

    sync_results: list[Any] = []
    with Gatekeeper.open(home, "sync", root=project, config=OWN_RUNS) as gk:
        run = gk.wrap(executor)
        gk.ingest(ledger)
        sync_results.append(run(EDIT))
        passed = run(bash)
        sync_results.append(passed)
        gk.ingest(stamp("C1", passed.ref))
        sync_results.append(gk.ledger().status("C1"))
        sync_results.append(run(EDIT))
        sync_results.append(gk.can_finish("Done.").code)

    async def scenario() -> list[Any]:
        got: list[Any] = []
        async with await AsyncGatekeeper.open(home, "async", root=project, config=OWN_RUNS) as agk:
            run = agk.wrap(executor)
            await agk.ingest(ledger)
            got.append(await run(EDIT))
            passed = await run(bash)
            got.append(passed)
            await agk.ingest(stamp("C1", passed.ref))
            got.append((await agk.ledger()).status("C1"))
            got.append(await run(EDIT))
            got.append((await agk.can_finish("Done.")).code)
        return got

    async_results = asyncio.run(scenario())
    assert _script(async_results) == _script(sync_results)
    assert _script(async_results)[:3] == [
        "deny:ungrounded_premises:None",
        "allow:allowed:PASS",
        "'Exact'",
    ]


def test_journaling_runs_off_the_event_loop_thread(home: Path, project: Path) -> None:
    writers: set[int] = set()

    async def scenario() -> int:
        agk = await AsyncGatekeeper.open(home, "threads", root=project)
        emit = agk.store.emit

        def spy(*args: Any, **kwargs: Any) -> Any:
            writers.add(threading.get_ident())
            return emit(*args, **kwargs)

        agk.store.emit = spy  # type: ignore[method-assign]
        await agk.ingest(ledger_text(("C1", "Guess", None), premises=("C1",)))
        await agk.authorize(EDIT)
        run_true = ToolCall("bash", {"command": "true"})
        allowed = await agk.authorize(run_true)
        await agk.record(run_true, ToolOutcome("", exit_code=0), call_id=allowed.call_id)
        await agk.can_finish("Done.")
        await agk.close()
        return threading.get_ident()

    loop_thread = asyncio.run(scenario())
    assert writers and loop_thread not in writers
    assert len(writers) == 1  # one worker: the session's calls stay in order


def test_concurrent_records_commit_in_the_order_they_were_awaited(
    home: Path, project: Path
) -> None:
    async def scenario() -> tuple[list[int], list[int]]:
        async with await AsyncGatekeeper.open(home, "order", root=project) as agk:
            calls = [ToolCall("bash", {"command": f"echo {i}"}) for i in range(40)]
            ids = [(await agk.authorize(c)).call_id for c in calls]
            evs = await asyncio.gather(
                *(
                    agk.record(c, ToolOutcome(str(i), exit_code=0), call_id=ids[i])
                    for i, c in enumerate(calls)
                )
            )
            seqs = [e.seq for e in evs]
            journal = [e.seq async for e in agk.events() if e.type == "evidence_recorded"]
            return seqs, journal

    seqs, journal = asyncio.run(scenario())
    assert seqs == sorted(seqs) and seqs == journal and len(set(seqs)) == 40


def test_async_tools_report_outcomes_and_classes(home: Path, project: Path) -> None:
    async def scenario() -> list[GatedResult]:
        async with await AsyncGatekeeper.open(home, "tools", root=project) as agk:

            @agk.tool(tool_class="execute")
            async def check() -> ToolOutcome:
                return ToolOutcome("1 failed", exit_code=1)

            @agk.tool(tool_class="execute")
            def says() -> str:
                return "1 passed"

            @agk.tool(tool_class="execute")
            def boom() -> str:
                raise RuntimeError("no runner")

            return [await check(), await says(), await boom()]

    failed, said, boom = asyncio.run(scenario())
    assert failed.outcome is Outcome.FAIL and failed.evidence is not None
    assert failed.evidence.evidence_class.value == "execution"
    assert said.outcome is Outcome.OBSERVED
    assert boom.outcome is Outcome.ERROR and boom.error == "RuntimeError: no runner"


def test_events_state_fork_and_the_rest(home: Path, project: Path) -> None:
    async def scenario() -> None:
        async with await AsyncGatekeeper.open(home, "rest", root=project) as agk:
            await agk.new_turn("fix it")
            assert (await agk.gate()).position == "G0"
            state = await agk.state()
            rows = [r async for r in agk.events()]
            assert state.seq == rows[-1].seq
            assert [r async for r in agk.events(after=state.seq)] == []
            doc = await agk.state_document()
            assert doc["session"] == agk.session
            assert (await agk.audit()).verified
            child = await agk.fork("rest-child")
            assert isinstance(child, AsyncGatekeeper) and child.session.endswith("rest-child")
            await child.close()
            agk.unattended = "test"
            assert agk.sync.unattended == "test"
            assert await agk.run_sync(lambda gk: gk.session) == agk.session

    asyncio.run(scenario())


def test_open_refuses_a_bad_session_before_creating_anything(tmp_path: Path) -> None:
    from infomark.kernel.errors import UserError

    with pytest.raises(UserError, match="session id"):
        asyncio.run(AsyncGatekeeper.open(tmp_path / "home", "../etc"))
    assert not (tmp_path / "home").exists()
