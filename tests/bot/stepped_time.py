"""A clock for timer loops under test: time moves only when the loop sleeps."""

from __future__ import annotations

import asyncio

from tests.bot.e2e_support import GUARD_S


class SteppedTime:
    """Each `sleep(s)` jumps `now()` forward by `s` at once. When time reaches `until_s` the
    sleeper is held there until cancelled and `reached` is set: the test then knows exactly
    how much time the loop has lived through, however busy the machine is."""

    def __init__(self, until_s: float) -> None:
        self.now_s = 0.0
        self.until_s = until_s
        self.sleeps: list[float] = []
        self.reached = asyncio.Event()

    def now(self) -> float:
        return self.now_s

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now_s += seconds
        if self.now_s >= self.until_s:
            self.reached.set()
            await asyncio.Event().wait()  # held until the test cancels the loop
        await asyncio.sleep(0)  # a real sleep yields to the loop too

    async def run_until_reached(self, task: asyncio.Task[None]) -> None:
        """Wait for `until_s`, then cancel the loop."""
        await asyncio.wait_for(self.reached.wait(), GUARD_S)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
