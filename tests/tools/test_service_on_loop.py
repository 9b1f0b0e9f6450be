"""Short pooled calls run on the service's event loop thread (issue 28, the warm path).

A hook call handed to a worker thread and back cost the service about a quarter of its CPU
under three clients (``python -m bench.http_concurrent --forward --cpu``); a short call of an
open session now runs on the loop itself, when nothing else runs in the lane. What must hold
whichever thread runs it: the same answers and the same journal; a slow disk's fsync never
holds the loop; no call runs on the loop while another runs in a thread (they would meet on
the process's write lock); a session that takes its baseline, or whose call overran the
lease, runs in the threads. Real gatekeepers on a real SQLite home, the pool's own threads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.requests import Request
from test_service_group_commit import durable_and_read

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config, load_config
from infomark.ledger.calls import ToolCall
from infomark.ledger.store.blobs import SMALL
from infomark.ledger.store.journal import Journal
from infomark.tools.checkpointer import Checkpointer
from infomark.tools.hooks.claude_code import handle
from infomark.tools.protocol import SessionLike
from infomark.tools.service import _Service, _short_hook_call, _small, declared_sandbox
from infomark.tools.service_lane import LEASE, Lane
from infomark.tools.service_pool import THREADED_FOR, SessionPool

pytestmark = pytest.mark.sqlite_only

GUARD = 30.0  # seconds: only a broken pool waits this long


def _pool(root: Path, lease: float = GUARD) -> SessionPool:
    home = root / ".infomark"

    def opener(session: str, at: Path, config: Config) -> SessionLike:
        return Gatekeeper.open(home, session, root=at, config=config)

    pool = SessionPool(home, root, load_config(root, home), opener, max_open=8)
    pool.checkpointer = Checkpointer(home / "ledger.db", every=10**9)  # never runs here
    pool.lane = Lane(lease=lease)
    return pool


def _journal(gk: SessionLike) -> Journal:
    journal = gk.store.journal
    assert isinstance(journal, Journal)
    return journal


def _payload(root: Path, sid: str, event: str, tool: str, arg: str, use: str) -> dict[str, Any]:
    tool_input: dict[str, Any] = (
        {"command": arg} if tool == "Bash" else {"file_path": str(root / arg)}
    )
    payload: dict[str, Any] = {"session_id": sid, "transcript_path": "", "cwd": str(root),
                               "hook_event_name": event, "tool_name": tool,
                               "tool_input": tool_input, "tool_use_id": use}  # fmt: skip
    if event == "PostToolUse":
        payload["tool_response"] = {"stdout": f"{use}: ok\n", "stderr": "", "interrupted": False}
    return payload


class Where:
    """Which thread ran each call: the loop's (the test's main coroutine runs on it) or
    another."""

    def __init__(self) -> None:
        self.loop: int | None = None
        self.ran: list[str] = []

    def mark(self) -> None:
        self.loop = threading.get_ident()

    def __call__(
        self, name: str, then: Callable[[SessionLike], Any] = lambda gk: gk.gate()
    ) -> Callable[[SessionLike], Any]:
        def go(gk: SessionLike) -> Any:
            on_loop = threading.get_ident() == self.loop
            self.ran.append(f"{name} {'loop' if on_loop else 'thread'}")
            return then(gk)

        return go


async def _opened(pool: SessionPool, *sessions: str) -> None:
    """Open ``sessions``, each with its first action (its baseline taken): their later short
    calls may run on the loop."""
    for sid in sessions:
        await pool.run(sid, lambda gk: gk.authorize(ToolCall("Read", {})))


class Hold:
    """A call that holds its thread until released."""

    def __init__(self) -> None:
        self.inside, self.release = threading.Event(), threading.Event()

    def __call__(self, gk: SessionLike) -> None:
        self.inside.set()
        assert self.release.wait(GUARD)


def _serve(pool: SessionPool, main: Callable[[], Any]) -> None:
    try:
        anyio.run(main)
    finally:
        pool.close()


def _service(pool: SessionPool) -> _Service:
    """The service's routes over ``pool`` (what ``create_app`` builds, without the app)."""
    return _Service(
        pool,
        max_body_bytes=1 << 20,
        poll_seconds=1.0,
        stopping=threading.Event(),
        agent_sandbox=declared_sandbox(None),
    )


@contextmanager
def _held_elsewhere(take: str, path: Path) -> Iterator[None]:
    """A real second process runs ``take`` (Python that takes a lock on ``sys.argv[1]``, the
    file ``path``) and holds it until the block ends."""
    code = f"import os, sqlite3, sys\n{take}\nprint('held', flush=True)\nsys.stdin.read()\n"
    other = subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert other.stdout is not None and other.stdout.readline() == "held\n"
        yield
    finally:
        assert other.stdin is not None
        other.stdin.close()  # it reads to the end, then exits: the kernel drops its locks
        assert other.wait(GUARD) == 0


# -- the same answers and journal on either thread ------------------------------------------
_CALLS = st.lists(
    st.tuples(
        st.sampled_from(["PreToolUse", "PostToolUse"]),
        st.sampled_from(
            [
                ("Bash", "echo hi"),
                ("Bash", "rm -rf build"),
                ("Read", "a.py"),
                ("Edit", "a.py"),
                ("Bash", "infomark check C1"),
            ]
        ),
    ),
    min_size=1,
    max_size=6,
)


def _drive(
    root: Path, calls: list[tuple[str, tuple[str, str]]], short: bool
) -> tuple[list[Any], list[str], int]:
    (root / "a.py").write_text("x = 1\n")
    pool = _pool(root)
    answers: list[Any] = []

    async def main() -> None:
        await _opened(pool, "s1")
        for k, (event, (tool, arg)) in enumerate(calls):
            payload = _payload(root, "s1", event, tool, arg, f"u{k}")

            def go(gk: SessionLike, payload: dict[str, Any] = payload) -> Any:
                return handle(payload, home=root / ".infomark", root=root, gatekeeper=gk)

            answer = await pool.run("s1", go, short=short)
            answers.append((answer.exit_code, _decision(answer.stdout)))

    try:
        anyio.run(main)
        with Gatekeeper.open(root / ".infomark", "s1", root=root) as gk:
            kinds = [e.type for e in gk.events()]
    finally:
        pool.close()
    return answers, kinds, pool.ran_on_loop


def _decision(stdout: Any) -> Any:
    """The answer without what differs between two homes (ids, digests, MACs, times)."""
    if not isinstance(stdout, dict):
        return stdout
    out = stdout.get("hookSpecificOutput", {})
    return (
        out.get("permissionDecision"),
        out.get("hookEventName"),
        bool(out.get("additionalContext")),
    )


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=_CALLS)
def test_a_call_answers_and_journals_the_same_on_the_loop_as_in_a_thread(
    calls: list[tuple[str, tuple[str, str]]],
) -> None:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        threaded = _drive(Path(a), calls, short=False)
        looped = _drive(Path(b), calls, short=True)
    assert looped[:2] == threaded[:2]
    assert (threaded[2], looped[2]) == (0, len(calls))


def test_a_short_call_of_an_open_session_runs_on_the_loop_and_others_in_threads(
    tmp_path: Path,
) -> None:
    pool, where = _pool(tmp_path), Where()

    async def main() -> None:
        where.mark()
        await pool.run("s1", where("open"), short=True)  # not open yet: a thread opens it
        await pool.run("s1", where("act", lambda gk: gk.authorize(ToolCall("Read", {}))))
        await pool.run("s1", where("short"), short=True)
        await pool.run("s1", where("long"))  # not said to be short
        await pool.run("s2", where("other open"), short=True)

    _serve(pool, main)
    assert where.ran == ["open thread", "act thread", "short loop", "long thread",
                         "other open thread"]  # fmt: skip
    assert pool.ran_on_loop == 1


# -- the disk ------------------------------------------------------------------------------
def test_on_a_fast_disk_the_fsync_is_done_on_the_loop_before_the_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Handing a 0.1 ms fsync to a thread costs more than it: on a fast disk the loop waits
    for it itself, before the call returns."""
    pool, where = _pool(tmp_path), Where()
    synced: list[bool] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("ledger.db-wal"):
            synced.append(threading.get_ident() == where.loop)
        real_fsync(fd)

    async def main() -> None:
        where.mark()
        await pool.run("s1", lambda gk: gk.authorize(ToolCall("Read", {})))
        gate = await pool.run("s1", lambda gk: _journal(gk)._gate)
        assert gate is not None and not gate.slow()
        monkeypatch.setattr(os, "fsync", fsync)
        durable = where("bash", lambda gk: gk.authorize(ToolCall("Bash", {"command": "echo"})))
        await pool.run("s1", durable, short=True)
        assert synced == [True]  # on the loop, and done when the call returned

    _serve(pool, main)
    assert where.ran == ["bash loop"]


def test_a_slow_disk_fsync_is_waited_off_the_loop_and_the_answer_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow disk: session A's durable commit, made on the loop, waits for the WAL's fsync
    in a worker thread; session B's short call runs on the loop meanwhile; A answers only
    once the fsync has finished."""
    pool, where = _pool(tmp_path), Where()
    in_fsync, b_ran = threading.Event(), threading.Event()
    order: list[str] = []
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("ledger.db-wal") and not in_fsync.is_set():
            assert threading.get_ident() != where.loop, "the loop waited for a slow disk"
            in_fsync.set()
            assert b_ran.wait(GUARD), "B never ran while A waited for the disk"
            real_fsync(fd)
            order.append("a on the disk")
            return
        real_fsync(fd)

    a, b = durable_and_read(order, b_ran)

    async def main() -> None:
        where.mark()
        await _opened(pool, "sa", "sb")
        gate = await pool.run("sa", lambda gk: _journal(gk)._gate)
        assert gate is not None
        gate.fsync_seconds = 0.05  # as measured on a slow disk
        monkeypatch.setattr(os, "fsync", slow_fsync)
        async with anyio.create_task_group() as tg:

            async def run_a() -> None:
                await pool.run("sa", where("a", a), short=True)
                order.append("a answered")

            tg.start_soon(run_a)
            assert await anyio.to_thread.run_sync(in_fsync.wait, GUARD)
            await pool.run("sb", where("b", b), short=True)

    _serve(pool, main)
    assert where.ran == ["a loop", "b loop"]
    assert order == ["a committed", "b ran", "a on the disk", "a answered"]


def test_a_call_that_fails_on_the_loop_still_reaches_the_disk_and_frees_the_lane(
    tmp_path: Path,
) -> None:
    """A call on the loop commits a durable decision, then fails: the error reaches the
    caller only after the commit is on the disk (as in a thread), and the next call takes
    the lane and runs on the loop."""
    pool, where = _pool(tmp_path), Where()

    def commit_then_fail(gk: SessionLike) -> None:
        assert gk.authorize(ToolCall("Bash", {"command": "echo a"})).allowed  # durable
        assert not _journal(gk).last_commit_synced  # owed until the call ends
        raise ValueError("the call failed after its commit")

    async def main() -> None:
        where.mark()
        await _opened(pool, "s1", "s2")
        with pytest.raises(ValueError, match="after its commit"):
            await pool.run("s1", where("fails", commit_then_fail), short=True)
        gk = await pool.run("s1", lambda gk: gk)
        gate = _journal(gk)._gate
        assert gate is not None and gate._synced == gate._written
        assert _journal(gk).last_commit_synced
        with anyio.fail_after(GUARD / 2):  # a lane left held would never hand on
            await pool.run("s2", where("next"), short=True)

    _serve(pool, main)
    assert where.ran == ["fails loop", "next loop"]


# -- what keeps a call off the loop --------------------------------------------------------
def test_no_call_runs_on_the_loop_while_another_runs_in_a_thread(tmp_path: Path) -> None:
    """Session A's call (not short) runs in a thread; session B's short call, arriving
    meanwhile, must not run on the loop beside it (both would take the write lock): it waits
    for its turn, which comes when A has ended."""
    pool, where, hold = _pool(tmp_path), Where(), Hold()

    async def main() -> None:
        where.mark()
        await _opened(pool, "sa", "sb")
        async with anyio.create_task_group() as tg:
            tg.start_soon(pool.run, "sa", where("a", hold))
            assert await anyio.to_thread.run_sync(hold.inside.wait, GUARD)
            tg.start_soon(partial(pool.run, "sb", where("b"), short=True))
            await anyio.wait_all_tasks_blocked()
            assert where.ran == ["a thread"]  # B waits: not on the loop beside A
            hold.release.set()

    _serve(pool, main)
    assert where.ran == ["a thread", "b loop"]
    assert pool.ran_on_loop == 1


def test_a_thread_call_whose_waiter_was_cancelled_still_keeps_calls_off_the_loop(
    tmp_path: Path,
) -> None:
    """The lane counts a thread's call as running until the thread itself ends it, not until
    its waiter stops waiting: a cancelled request's call still runs."""
    pool, where, hold = _pool(tmp_path), Where(), Hold()

    async def main() -> None:
        where.mark()
        await _opened(pool, "sa", "sb")
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(pool.run, "sa", where("a", hold))
                assert await anyio.to_thread.run_sync(hold.inside.wait, GUARD)
                scope.cancel()  # the client went away; A's thread runs on
        assert not pool.lane.threads_idle()
        await pool.run("sb", where("b"), short=True)
        hold.release.set()

    _serve(pool, main)
    assert where.ran == ["a thread", "b thread"]


def test_without_a_lane_no_call_runs_on_the_loop(tmp_path: Path) -> None:
    """A pool without a lane (a PostgreSQL home: a commit waits for the server inside the
    call) runs every call in a thread, short or not."""
    pool, where = _pool(tmp_path), Where()
    pool.lane = Lane(lease=None)

    async def main() -> None:
        where.mark()
        await pool.run("s1", lambda gk: gk.authorize(ToolCall("Read", {})))
        await pool.run("s1", where("short"), short=True)

    _serve(pool, main)
    assert where.ran == ["short thread"]
    assert pool.ran_on_loop == 0


def test_a_session_that_still_takes_its_baseline_runs_in_a_thread(tmp_path: Path) -> None:
    pool, where = _pool(tmp_path), Where()

    async def main() -> None:
        where.mark()
        pending = await pool.run("s1", lambda gk: gk.baseline_pending)  # opened, no action yet
        assert pending is True  # the default profile requires attested runs
        await pool.run("s1", where("first action", lambda gk: gk.authorize(ToolCall("Read", {}))),
                       short=True)  # fmt: skip
        assert await pool.run("s1", lambda gk: gk.baseline_pending) is False
        await pool.run("s1", where("second"), short=True)

    _serve(pool, main)
    assert where.ran == ["first action thread", "second loop"]


def test_while_another_process_holds_the_writer_queue_calls_run_in_threads(
    tmp_path: Path,
) -> None:
    """Another process (a command hook, the CLI) holds the ledger's writer queue: a call's
    commits would wait for it, and on the loop every session would wait with it. The call
    runs in a thread instead; once the other process lets go, calls come back to the loop.
    A real second process holds the real lock file."""
    pool, where = _pool(tmp_path), Where()
    take = "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\nos.lockf(fd, os.F_LOCK, 0)"

    async def main() -> None:
        where.mark()
        await _opened(pool, "s1")
        with _held_elsewhere(take, tmp_path / ".infomark" / "ledger.db-writer"):
            await pool.run("s1", where("held elsewhere", lambda gk: gk.session), short=True)
        await pool.run("s1", where("let go"), short=True)

    _serve(pool, main)
    assert where.ran == ["held elsewhere thread", "let go loop"]


def test_a_call_meeting_sqlites_own_lock_held_elsewhere_fails_closed_then_leaves_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack the writer-queue look does not see: another process (the agent's, where
    the home is reachable) takes SQLite's own write lock with ``BEGIN IMMEDIATE``, not the
    queue. An Edit's PreToolUse on the loop cannot journal its decision: it is denied (the
    default profile enforces), not allowed, and since it overran the lease its session's
    calls go to the threads, where a wait holds up no other session."""
    from infomark.ledger.store import journal as journal_mod

    monkeypatch.setattr(journal_mod, "_BUSY_MS", 20)  # the store's wait: 0.1 s, not 50 s
    (tmp_path / "a.py").write_text("a = 1\n")
    pool = _pool(tmp_path, lease=LEASE)  # the service's own lease
    service = _service(pool)
    take = "db = sqlite3.connect(sys.argv[1], isolation_level=None)\ndb.execute('BEGIN IMMEDIATE')"
    edit = _payload(tmp_path, "s1", "PreToolUse", "Edit", "a.py", "u1")
    edit["tool_input"].update(old_string="a = 1", new_string="a = 2")
    answer: dict[str, Any] = {}

    async def main() -> None:
        await _opened(pool, "s1")
        with _held_elsewhere(take, tmp_path / ".infomark" / "ledger.db"):
            raw = json.dumps(edit).encode()
            answer.update(json.loads(await service.hook_answer(raw, str(tmp_path))))
        on_loop = pool.ran_on_loop
        await pool.run("s1", lambda gk: gk.gate(), short=True)
        assert pool.ran_on_loop == on_loop  # sent to the threads

    _serve(pool, main)
    out = answer["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny", answer
    assert pool.ran_on_loop == 1 and pool.sent_back == 1


def test_a_call_that_overran_the_lease_sends_its_session_to_the_threads(tmp_path: Path) -> None:
    """A call on the loop that took longer than the lease (here: a lease of a microsecond,
    which every call overruns) sends its session's calls to the threads for
    :data:`THREADED_FOR` seconds; other sessions still run on the loop, and the session
    comes back once the time is over."""
    pool, where = _pool(tmp_path, lease=1e-6), Where()
    now = [1000.0]
    pool.clock = lambda: now[0]

    def slow(gk: SessionLike) -> None:
        gk.gate()
        now[0] += 0.5  # the call took half a second by the pool's clock

    async def main() -> None:
        where.mark()
        await _opened(pool, "s1", "s2")
        await pool.run("s1", where("s1 slow", slow), short=True)
        await pool.run("s1", where("s1 next"), short=True)
        await pool.run("s2", where("s2"), short=True)
        now[0] += THREADED_FOR
        await pool.run("s1", where("s1 later"), short=True)

    _serve(pool, main)
    assert where.ran == ["s1 slow loop", "s1 next thread", "s2 loop", "s1 later loop"]
    assert pool.sent_back == 1


# -- which hook calls the route calls short ------------------------------------------------
@pytest.mark.parametrize(
    ("event", "tool_input", "size", "short"),
    [
        ("PreToolUse", {"command": "echo hi"}, 400, True),
        ("PostToolUse", {"command": "echo hi"}, SMALL, True),
        ("PostToolUse", {"command": "echo hi"}, SMALL + 1, False),  # a blob file, an fsync
        ("PreToolUse", {"command": "infomark check C1"}, 400, False),  # an attested run
        ("PreToolUse", {"command": "infomark  check  C1 "}, 400, False),
        ("PreToolUse", {"command": "echo infomark check C1"}, 400, True),  # denied, at once
        ("Stop", {}, 400, False),  # the finish runs the checks
        ("SessionStart", {}, 400, False),  # the baseline
        ("UserPromptSubmit", {}, 400, False),
    ],
)
def test_the_hook_route_calls_short_only_what_is_short(
    event: str, tool_input: dict[str, Any], size: int, short: bool
) -> None:
    payload = {"hook_event_name": event, "tool_name": "Bash", "tool_input": tool_input}
    assert _short_hook_call(event, payload, size) is short


@pytest.mark.parametrize(
    ("length", "short"),
    [
        ("120", True),
        (str(SMALL), True),
        (str(SMALL + 1), False),
        (None, False),  # chunked: no length to go by
        ("\u00b2", False),  # a digit to str.isdigit, latin-1 in a header, not to int()
        ("-1", False),
        ("1e3", False),
    ],
)
def test_an_api_call_is_short_by_its_content_length(length: str | None, short: bool) -> None:
    headers = [] if length is None else [(b"content-length", length.encode("latin-1"))]
    request = Request({"type": "http", "method": "POST", "path": "/", "headers": headers})
    assert _small(request) is short


def test_the_api_runs_a_small_authorize_on_the_loop(tmp_path: Path) -> None:
    """Through the whole app (the bearer check, the router, the route): the second
    ``authorize`` of a session, a small body, runs on the loop; one over 32 KiB does not."""
    import httpx

    from infomark.ledger.init import ensure_token
    from infomark.tools.service import create_app

    home = tmp_path / ".infomark"
    app = create_app(home, root=tmp_path)
    token = ensure_token(home)
    counted: list[int] = []

    async def main() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as h:
            for command in ("echo 1", "echo 2", "echo " + "x" * SMALL):
                r = await h.post(
                    "/v1/sessions/s1/authorize",
                    json={"tool": "Bash", "input": {"command": command}},
                    headers={"authorization": f"Bearer {token}"},
                )
                assert r.status_code == 200, r.text
                counted.append(app.state.pool.ran_on_loop)

    try:
        anyio.run(main)
    finally:
        app.state.pool.close()
    assert counted == [0, 1, 1]


def test_the_hook_route_runs_a_tool_call_on_the_loop_and_infomark_check_in_a_thread(
    tmp_path: Path,
) -> None:
    """Through the route's own answer (what uvicorn calls): a PreToolUse of an open session
    runs on the loop; ``infomark check C1`` (the hook runs the attested check itself, which
    can take minutes) runs in a thread."""
    pool = _pool(tmp_path)
    service = _service(pool)
    counted: list[int] = []
    answers: list[str] = []

    async def main() -> None:
        for k, command in enumerate(["echo 1", "echo 2", "infomark check C1", "echo 3"]):
            raw = json.dumps(_payload(tmp_path, "s1", "PreToolUse", "Bash", command, f"u{k}"))
            body = json.loads(await service.hook_answer(raw.encode(), str(tmp_path)))
            answers.append(body.get("hookSpecificOutput", {}).get("permissionDecisionReason", ""))
            counted.append(pool.ran_on_loop)

    _serve(pool, main)
    # the first opens the session; the check runs in a thread; the others on the loop
    assert counted == [0, 1, 1, 2]
    assert answers[2].startswith("infomark ran this check itself"), answers
