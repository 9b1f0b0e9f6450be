"""The idle schedule of a persistent run (headlong's timer) and the clock it runs on.

Seed 003 (headlong): "5 s doubling to a 300 s cap, reset by any real event". ``delay(n) =
min(base · 2^n, cap)``: 5, 10, 20, 40, 80, 160, 300 … s with the defaults; each level is held
for ``hold`` empty wakes (default 1), then the next level starts; any real event (an inbox
message, a watched file change, a fired trigger, real work by the model) resets it to level
0. The
state ``{level, ticks}`` is journaled with every ``waiting`` / ``woken`` event, so a
restarted runtime resumes the schedule where it stopped (:func:`schedule_from_events`).

Time comes from a :class:`Clock`: :class:`SystemClock` in production, :class:`FakeClock`
in tests (its ``sleep`` advances ``now`` at once, so a schedule test never sleeps).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "Clock",
    "FakeClock",
    "IdleSchedule",
    "PendingSleep",
    "SystemClock",
    "interrupted_wake",
    "schedule_from_events",
    "sleep_until",
]

_MAX_LEVEL = 32  # 2^31 · base is far past any cap: the level stops growing there


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """Wall-clock time (shared by processes: leases and ``until`` use it)."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FakeClock:
    """A clock for tests: ``sleep`` advances ``now`` immediately and records the call."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.t = start
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += max(0.0, seconds)


@dataclass(slots=True)
class IdleSchedule:
    """The backoff state: ``level`` and the empty wakes (``ticks``) spent at it."""

    base: float = 5.0
    cap: float = 300.0
    hold: int = 1
    level: int = 0
    ticks: int = 0

    def delay(self) -> float:
        """Seconds to sleep at the current level."""
        return float(min(self.base * 2.0 ** max(self.level, 0), self.cap))

    def empty_wake(self) -> None:
        """A wake that brought nothing: count it; after ``hold`` of them, back off a level."""
        self.ticks += 1
        if self.ticks >= self.hold:
            self.ticks = 0
            if self.delay() < self.cap:
                self.level = min(self.level + 1, _MAX_LEVEL)

    def reset(self) -> None:
        """A real event: back to level 0."""
        self.level = 0
        self.ticks = 0

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "ticks": self.ticks, "delay": self.delay()}


@dataclass(frozen=True, slots=True)
class PendingSleep:
    """A ``waiting`` event with no ``woken`` after it: the sleep a crash interrupted."""

    until: float
    delay: float
    seq: int


def schedule_from_events(
    schedule: IdleSchedule, events: Iterable[tuple[int, str, Mapping[str, Any]]]
) -> PendingSleep | None:
    """Restore ``schedule`` from ``(seq, type, payload)`` rows; return an interrupted sleep.

    Only idle sleeps (``by == "idle"``) count; a ``wait`` tool call is the model's choice and
    is resumed with its turn, not with the schedule.
    """
    pending: PendingSleep | None = None
    for seq, type_, payload in events:
        if payload.get("by", "idle") != "idle":
            continue
        if type_ == "waiting":
            schedule.level = int(payload.get("level", 0))
            schedule.ticks = int(payload.get("ticks", 0))
            pending = PendingSleep(
                float(payload.get("until", 0.0)), float(payload.get("delay", 0.0)), seq
            )
        elif type_ in ("woken", "idle_settled"):
            schedule.level = int(payload.get("level", schedule.level))
            schedule.ticks = int(payload.get("ticks", schedule.ticks))
            pending = None
    return pending


def interrupted_wake(events: Iterable[tuple[int, str, Mapping[str, Any]]]) -> str | None:
    """The reason of an idle ``woken`` whose wake turn never settled (a crash in that turn).

    A resume finishes that wake turn as an idle turn and settles the schedule on it, so a
    run killed while backing off continues at its level instead of restarting the backoff.
    """
    reason: str | None = None
    for _seq, type_, payload in events:
        if payload.get("by", "idle") != "idle":
            continue
        if type_ == "woken":
            reason = str(payload.get("reason", "timer"))
        elif type_ in ("waiting", "idle_settled"):
            reason = None
    return reason


def sleep_until(
    clock: Clock,
    until: float,
    check: Callable[[], str | None],
    *,
    poll: float = 0.2,
    beat: Callable[[], None] | None = None,
    beat_every: float = 10.0,
) -> str:
    """Sleep until ``until`` or until ``check()`` names a reason; returns ``"timer"`` or it.

    ``check`` runs before the first sleep and after every ``poll`` seconds; ``beat`` (the
    lease heartbeat) runs at least every ``beat_every`` seconds.
    """
    last_beat = clock.now()
    while True:
        reason = check()
        if reason is not None:
            return reason
        now = clock.now()
        if now >= until:
            return "timer"
        if beat is not None and now - last_beat >= beat_every:
            beat()
            last_beat = now
        clock.sleep(min(poll, until - now))
