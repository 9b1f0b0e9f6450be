"""The idle schedule (headlong's timer) on an injected clock: nothing here sleeps."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from infomark.tools.runner import AgentSpec, FakeClock, IdleSchedule, IdleSpec, ModelSpec, Runner
from infomark.tools.runner.schedule import schedule_from_events, sleep_until
from infomark.tools.runner.scripted import ScriptedModelServer, call, reply
from infomark.tools.runner.send import send_message
from tests.runner.conftest import events


def test_the_default_is_the_seeds_5s_doubling_to_a_300s_cap() -> None:
    """Seed 003: "5s doubling to a 300s cap, reset by any real event": 7 sleeps to the cap."""
    s = IdleSchedule()
    seen = []
    for _ in range(10):
        seen.append(s.delay())
        s.empty_wake()
    assert seen == [5, 10, 20, 40, 80, 160, 300, 300, 300, 300]
    s.reset()
    assert s.delay() == 5 and (s.level, s.ticks) == (0, 0)
    assert IdleSpec() == IdleSpec(base_seconds=5.0, cap_seconds=300.0, hold=1)


def test_hold_and_base_are_configurable() -> None:
    s = IdleSchedule(base=2, cap=10, hold=2)
    seen = []
    for _ in range(8):
        seen.append(s.delay())
        s.empty_wake()
    assert seen == [2, 2, 4, 4, 8, 8, 10, 10]


@given(
    st.lists(st.sampled_from(["empty", "event"]), max_size=200),
    st.integers(min_value=1, max_value=4),
)
def test_schedule_properties(moves: list[str], hold: int) -> None:
    s = IdleSchedule(base=5, cap=300, hold=hold)
    empties = 0
    for move in moves:
        before = s.delay()
        if move == "event":
            s.reset()
            empties = 0
            assert s.delay() == 5 and s.ticks == 0
        else:
            s.empty_wake()
            empties += 1
            assert s.delay() >= before  # empty wakes never shorten the sleep
        assert 5 <= s.delay() <= 300
        assert s.delay() == min(5 * 2 ** (empties // hold), 300)


def test_restart_restores_level_ticks_and_the_interrupted_sleep() -> None:
    s = IdleSchedule()
    rows = [
        (1, "waiting", {"by": "idle", "level": 0, "ticks": 0, "delay": 0, "until": 1}),
        (2, "woken", {"by": "idle", "reason": "timer", "level": 0, "ticks": 0}),
        (3, "idle_settled", {"by": "idle", "level": 2, "ticks": 1}),
        (4, "waiting", {"by": "wait_tool", "delay": 9, "until": 99}),  # the model's own wait
        (5, "waiting", {"by": "idle", "level": 2, "ticks": 1, "delay": 10, "until": 500.0}),
    ]
    pending = schedule_from_events(s, rows)
    assert (s.level, s.ticks) == (2, 1)
    assert pending is not None and pending.until == 500.0 and pending.seq == 5
    assert schedule_from_events(IdleSchedule(), [*rows, (6, "woken", {"by": "idle"})]) is None


def test_sleep_until_wakes_on_the_first_reason_and_beats_the_lease() -> None:
    clock = FakeClock(0.0)
    beats: list[float] = []
    reason = sleep_until(
        clock,
        100.0,
        lambda: "inbox" if clock.now() >= 42 else None,
        poll=1.0,
        beat=lambda: beats.append(clock.now()),
        beat_every=10.0,
    )
    assert reason == "inbox" and clock.now() == 42
    assert beats == [10.0, 20.0, 30.0, 40.0]
    assert sleep_until(clock, 50.0, lambda: None, poll=3.0) == "timer" and clock.now() == 50.0


class _SendAt(FakeClock):
    """A fake clock that delivers an operator message when virtual time passes ``at``."""

    def __init__(self, home: Path, session: str, at: float) -> None:
        super().__init__(0.0)
        self.home, self.session, self.at, self.sent = home, session, at, False

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        if not self.sent and self.t >= self.at:
            self.sent = True
            send_message(self.home, self.session, "wake up: new work")


def test_persistent_run_backs_off_and_an_inbox_message_resets_it(project: Path, home: Path) -> None:
    clock = _SendAt(home, "p", at=50.0)  # during the fourth sleep: 5 + 10 + 20, then 40
    with ScriptedModelServer() as server:
        # working turn, then every wake turn replies without tools (empty wakes), except the
        # one the operator message triggers, which does real work (a glob)
        server.add("p", reply("nothing to do yet"))
        server.state.default = lambda req: (
            reply("", call("glob", pattern="*"))
            if "wake up: new work" in str(req.last.get("content"))
            else reply("idle")
        )
        spec = AgentSpec(
            name="p",
            model=ModelSpec(url=server.url, name="scripted", retries=0),
            idle=IdleSpec(persistent=True, max_wakes=8, poll_seconds=1.0),
        )
        with Runner(spec, home=home, session="p", root=project, clock=clock) as runner:
            result = runner.start("stay around")
    assert result.reason == "idle_limit"
    rows = events(home, "p")
    delays = [p["delay"] for _, t, p in rows if t == "waiting" and p["by"] == "idle"]
    wakes = [p["reason"] for _, t, p in rows if t == "woken" and p["by"] == "idle"]
    assert delays[:4] == [5, 10, 20, 40]
    assert wakes[:4] == ["timer", "timer", "timer", "inbox"] and wakes.count("inbox") == 1
    assert delays[4:8] == [5, 10, 20, 40]  # reset by the message, then backing off again
    # idle cost kept apart: 8 wake turns, one of them with a tool call (two model calls)
    assert result.idle_calls == 9 and result.working_calls == 1
    finished = next(p for _, t, p in rows if t == "run_finished")
    assert (finished["idle_calls"], finished["working_calls"]) == (9, 1)
    assert clock.sleeps and all(s <= 1.0 for s in clock.sleeps)  # polled every second


class _TouchAt(FakeClock):
    """A fake clock that changes a watched file when virtual time passes ``at``."""

    def __init__(self, path: Path, at: float) -> None:
        super().__init__(0.0)
        self.path, self.at, self.done = path, at, False

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        if not self.done and self.t >= self.at:
            self.done = True
            self.path.write_text("changed\n")


def test_a_watched_file_change_wakes_the_run_and_resets_the_schedule(
    project: Path, home: Path
) -> None:
    (project / "src").mkdir()
    watched = project / "src" / "app.py"
    watched.write_text("v1\n")
    (project / "notes.txt").write_text("not watched\n")
    clock = _TouchAt(watched, at=12.0)  # during the second sleep (5, then 10)
    with ScriptedModelServer() as server:
        server.state.default = reply("ok")
        spec = AgentSpec(
            name="w",
            model=ModelSpec(url=server.url, name="scripted", retries=0),
            idle=IdleSpec(persistent=True, max_wakes=7, poll_seconds=1.0, watch=("src/*.py",)),
        )
        with Runner(spec, home=home, session="w", root=project, clock=clock) as runner:
            runner.start("watch src")
        prompts = [str(r.last.get("content")) for r in server.requests]
    rows = events(home, "w")
    wakes = [p["reason"] for _, t, p in rows if t == "woken" and p["by"] == "idle"]
    delays = [p["delay"] for _, t, p in rows if t == "waiting" and p["by"] == "idle"]
    assert wakes[:2] == ["timer", "file_change"]
    assert delays[:3] == [5, 10, 5]  # the change reset the schedule
    assert any("a watched file changed" in p for p in prompts)


def test_the_wait_tool_sleeps_on_the_clock_and_says_why_it_woke(project: Path, home: Path) -> None:
    clock = FakeClock(0.0)
    with ScriptedModelServer() as server:
        server.add("t", reply("", call("wait", seconds=30)), reply("", call("wait", seconds=1e9)))
        server.state.default = reply("done")
        spec = AgentSpec(
            name="t",
            model=ModelSpec(url=server.url, name="scripted", retries=0),
            idle=IdleSpec(cap_seconds=120, poll_seconds=10),
        )
        with Runner(spec, home=home, session="t", root=project, clock=clock) as runner:
            runner.start("sleep")
        results = [r for r in server.requests if r.last.get("role") == "tool"]
    assert clock.now() == 150.0  # 30 s, then the 120 s cap: no real time passed
    assert str(results[0].last["content"]).startswith("woke after 30.0s: timer")
    waits = [p for _, t, p in events(home, "t") if t == "waiting"]
    assert [(w["by"], w["delay"]) for w in waits] == [("wait_tool", 30.0), ("wait_tool", 120.0)]
