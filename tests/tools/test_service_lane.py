"""The service's lane: pooled calls of different sessions run one at a time, and a call that
overstays its lease is passed over instead of holding up every other session."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import anyio

from infomark.gatekeeper import Gatekeeper
from infomark.gates.config import Config, load_config
from infomark.tools.protocol import SessionLike
from infomark.tools.service_lane import Lane
from infomark.tools.service_pool import SessionPool

GUARD = 30.0  # seconds: only a broken lane waits this long


class Overlap:
    """Counts the calls running at once; a call that starts while another runs sets
    ``crowded``, which ends the other's wait early (so an overlap shows at once)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.most = 0
        self.crowded = threading.Event()

    def call(self, name: str, hold: float = 0.05) -> str:
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
            if self.active > 1:
                self.crowded.set()
        self.crowded.wait(hold)  # a second call now would overlap this one
        with self.lock:
            self.active -= 1
        return name


def test_calls_run_one_at_a_time_in_arrival_order() -> None:
    lane, seen, done = Lane(lease=GUARD), Overlap(), []

    async def main() -> None:
        async def one(name: str) -> None:
            done.append(await lane.run(lambda _: seen.call(name)))

        async with anyio.create_task_group() as tg:
            for k in range(5):
                tg.start_soon(one, f"c{k}")
                await anyio.wait_all_tasks_blocked()  # c0 holds or waits before c1 arrives

    anyio.run(main)
    assert seen.most == 1
    assert done == [f"c{k}" for k in range(5)]
    assert lane.passed_over == 0


def test_a_call_past_its_lease_is_passed_over_and_the_others_run_beside_it() -> None:
    lane, release, order = Lane(lease=0.02), threading.Event(), []

    def long(_: object) -> str:
        assert release.wait(GUARD), "the quick call never ran: the long one blocked the lane"
        order.append("long")
        return "long"

    def quick(_: object) -> str:
        order.append("quick")
        release.set()  # only now may the long call end
        return "quick"

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lane.run, long)
            await anyio.wait_all_tasks_blocked()
            assert await lane.run(quick) == "quick"

    anyio.run(main)
    assert order == ["quick", "long"]
    assert lane.passed_over == 1


def test_a_passed_over_call_that_ends_does_not_free_the_lane_of_the_next() -> None:
    """A is passed over by B; A ends while B still holds the lane; C must wait for B (and
    pass it over at its lease), not take a lane that A's end wrongly freed."""
    lane = Lane(lease=0.05)
    end_a, end_b = threading.Event(), threading.Event()
    b_started, c_ran = threading.Event(), threading.Event()

    def a(_: object) -> None:
        assert end_a.wait(GUARD)

    def b(_: object) -> None:
        b_started.set()
        assert end_b.wait(GUARD)

    def c(_: object) -> None:
        c_ran.set()
        end_b.set()

    async def main() -> None:
        a_ended = anyio.Event()

        async def run_a() -> None:
            await lane.run(a)
            a_ended.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_a)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(lane.run, b)
            assert await anyio.to_thread.run_sync(b_started.wait, GUARD)  # B passed A over
            assert lane.passed_over == 1
            end_a.set()
            await a_ended.wait()
            await lane.run(c)

    anyio.run(main)
    assert c_ran.is_set()
    assert lane.passed_over == 2  # C passed B over: A's end left B the lane


def test_a_call_that_steps_aside_lets_the_next_run_before_it_ends() -> None:
    lane, b_ran, order = Lane(lease=GUARD), threading.Event(), []

    def a(step_aside: Callable[[], None]) -> None:
        step_aside()  # from here on it only waits (for the disk, in the service)
        assert b_ran.wait(GUARD), "B waited for A although A stepped aside"
        order.append("a")

    def b(_: object) -> None:
        order.append("b")
        b_ran.set()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lane.run, a)
            await anyio.wait_all_tasks_blocked()
            await lane.run(b)

    anyio.run(main)
    assert order == ["b", "a"]
    assert lane.passed_over == 0


def test_without_a_lease_every_call_runs_at_once() -> None:
    """``Lane(lease=None)`` (a PostgreSQL home): two calls overlap."""
    lane, both = Lane(lease=None), threading.Barrier(2, timeout=GUARD)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lane.run, lambda _: both.wait())
            tg.start_soon(lane.run, lambda _: both.wait())

    anyio.run(main)  # a lane that ran them one at a time would break the barrier


def test_a_waiting_call_that_is_cancelled_leaves_the_lane_working() -> None:
    lane, release = Lane(lease=GUARD), threading.Event()

    def hold(_: object) -> None:
        assert release.wait(GUARD)

    async def main() -> list[str]:
        ran: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(lane.run, hold)
            await anyio.wait_all_tasks_blocked()
            with anyio.move_on_after(0.01):  # the client went away while it waited
                await lane.run(lambda _: ran.append("cancelled"))
            release.set()
        ran.append(await lane.run(lambda _: "after"))
        return ran

    assert anyio.run(main) == ["after"]
    assert lane.passed_over == 0


def test_the_pool_runs_different_sessions_through_its_lane(tmp_path: Path) -> None:
    """Four sessions' calls through a real pool (real gatekeepers on a real SQLite home)
    never overlap, and each session still gets its own open gatekeeper."""
    home = tmp_path / ".infomark"

    def opener(session: str, root: Path, config: Config) -> SessionLike:
        return Gatekeeper.open(home, session, root=root, config=config)

    pool = SessionPool(home, tmp_path, load_config(tmp_path, home), opener, max_open=8)
    pool.lane = Lane(lease=GUARD)
    seen, opened = Overlap(), set()

    def call(gk: SessionLike) -> str:
        opened.add(id(gk))
        gk.gate()
        return seen.call(gk.session)

    async def main() -> list[str]:
        got: list[str] = []

        async def one(sid: str) -> None:
            got.append(await pool.run(sid, call))

        async with anyio.create_task_group() as tg:
            for sid in ("s1", "s2", "s3", "s4"):
                tg.start_soon(one, sid)
        return got

    try:
        got = anyio.run(main)
    finally:
        pool.close()
    assert sorted(got) == ["s1", "s2", "s3", "s4"]
    assert seen.most == 1
    assert len(opened) == 4


def test_a_call_that_raises_frees_the_lane_for_the_next() -> None:
    lane = Lane(lease=GUARD)

    def boom(_: object) -> None:
        raise ValueError("the call failed")

    async def main() -> str:
        try:
            await lane.run(boom)
        except ValueError as exc:
            assert str(exc) == "the call failed"
        with anyio.fail_after(GUARD / 2):  # a lane left held would wait out the lease
            return await lane.run(lambda _: "next")

    assert anyio.run(main) == "next"
    assert lane.passed_over == 0


# -- turns: first come first served, handed on after the loop has read its sockets ----------
def test_a_turn_is_handed_on_only_after_the_loop_has_read_what_arrived_meanwhile() -> None:
    """A runs on the loop while B waits; bytes reach a socket during A (a client's next
    request). The loop must read them before B's turn starts: handed on at once, B would run
    in the same pass, and a request arriving during A would queue behind every call the loop
    had already read (with three clients posting back to back, one was served every other
    time and the other two waited for three calls each)."""
    lane, order = Lane(lease=GUARD), []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        inbound, client = socket.socketpair()
        loop.add_reader(inbound, lambda: order.append(f"read {inbound.recv(64).decode()}"))

        async def a() -> None:
            async with lane.turn():
                order.append("a")
                client.send(b"next")  # arrives while A holds the loop

        async def b() -> None:
            async with lane.turn():
                order.append("b")

        try:
            await asyncio.gather(a(), b())
        finally:
            loop.remove_reader(inbound)
            inbound.close()
            client.close()

    asyncio.run(main())
    assert order == ["a", "read next", "b"]


def test_turns_are_taken_in_arrival_order_not_by_who_asks_right_after_a_release() -> None:
    """Calls that wait are served first come first served: one that asks for a turn just
    as the holder leaves queues behind them instead of taking the lane."""
    lane, order = Lane(lease=GUARD), []

    async def main() -> None:
        async def call(name: str, then: Callable[[], object] = lambda: None) -> None:
            async with lane.turn():
                order.append(name)
                then()

        late: list[asyncio.Task[None]] = []
        first = asyncio.create_task(
            call("first", lambda: late.append(asyncio.create_task(call("late"))))
        )
        waiting = [asyncio.create_task(call(f"w{k}")) for k in range(3)]
        await asyncio.gather(first, *waiting)
        await asyncio.gather(*late)

    asyncio.run(main())
    assert order == ["first", "w0", "w1", "w2", "late"]


def test_a_call_handed_the_lane_as_it_is_cancelled_passes_it_on() -> None:
    """B is handed the lane, then cancelled before it runs (its client went away): C must get
    the lane, not wait behind a holder that will never leave."""
    lane, order = Lane(lease=GUARD), []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        async def call(name: str) -> None:
            async with lane.turn():
                order.append(name)

        tasks: dict[str, asyncio.Task[None]] = {}

        async def a() -> None:
            async with lane.turn():
                order.append("a")
            loop.call_soon(tasks["b"].cancel)  # after the hand-over A's end scheduled

        tasks["a"] = asyncio.create_task(a())
        tasks["b"] = asyncio.create_task(call("b"))
        tasks["c"] = asyncio.create_task(call("c"))
        await asyncio.wait_for(asyncio.gather(*tasks.values(), return_exceptions=True), GUARD)
        assert tasks["b"].cancelled()

    asyncio.run(main())
    assert order == ["a", "c"]
