"""The sandbox's time: one monotonic clock and the timers that run on it.

The server runs on `LoopClock` (time.monotonic and the event loop's call_later). Every timer
of the sandbox goes through it: game clocks and flags, first-move aborts, challenge expiry,
opponentGone and the claim delay. A test that checks one of them runs the sandbox on a
`ManualClock` and moves time forward itself, so the result does not depend on how busy the
machine is."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class SandboxClock(Protocol):
    """Seconds on a monotonic scale, and callbacks run after a delay on that scale."""

    def now(self) -> float: ...

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> Timer: ...


class LoopClock:
    """Real time: what the server uses outside tests."""

    def now(self) -> float:
        return time.monotonic()

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(delay_s, callback)


@dataclass(order=True)
class _ManualTimer:
    due_s: float
    seq: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """Time that stands still until `advance` moves it; due timers fire in order of their
    deadline, each seeing `now()` at its own deadline."""

    def __init__(self, start_s: float = 1_000.0) -> None:
        self._now_s = start_s
        self._due: list[_ManualTimer] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now_s

    def call_later(self, delay_s: float, callback: Callable[[], None]) -> Timer:
        timer = _ManualTimer(self._now_s + max(delay_s, 0.0), next(self._seq), callback)
        heapq.heappush(self._due, timer)
        return timer

    def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`, firing every timer that falls due on the way
        (including timers those callbacks arm within the span)."""
        target_s = self._now_s + seconds
        while self._due and self._due[0].due_s <= target_s:
            timer = heapq.heappop(self._due)
            if timer.cancelled:
                continue
            self._now_s = max(self._now_s, timer.due_s)
            timer.callback()
        self._now_s = target_s

    @property
    def pending(self) -> int:
        """Timers armed and not yet fired or cancelled."""
        return sum(not timer.cancelled for timer in self._due)
