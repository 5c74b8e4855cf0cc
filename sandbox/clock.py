"""Server-side game clocks: Fischer clocks in milliseconds and correspondence deadlines."""

from __future__ import annotations

import time
from collections.abc import Callable

import chess

# Int.MaxValue: what lila reports as remaining time in games without a clock.
UNLIMITED_MS = 2_147_483_647
DAY_S = 86_400.0
# A clock with no base time starts with the increment, but never under this (lila initTime).
MIN_INITIAL_S = 3


class FischerClock:
    """A real-time clock with increment, as lila runs it.

    The clock does not run until both sides have made their first move; until then
    both sides see the initial time and no increment is added.
    """

    def __init__(
        self, limit_s: int, increment_s: int, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.initial_ms = (limit_s if limit_s > 0 else max(increment_s, MIN_INITIAL_S)) * 1000
        self.increment_ms = increment_s * 1000
        self._now = now
        self._remaining_ms = {chess.WHITE: float(self.initial_ms),
                              chess.BLACK: float(self.initial_ms)}
        self._running: chess.Color | None = None
        self._turn_started_s = 0.0

    @property
    def running(self) -> bool:
        return self._running is not None

    def start(self, side_to_move: chess.Color) -> None:
        """Start the clock of the side to move (after both first moves)."""
        self._running = side_to_move
        self._turn_started_s = self._now()

    def stop(self) -> None:
        """Freeze both clocks, charging the side to move for its time so far."""
        if self._running is not None:
            self._remaining_ms[self._running] = self.remaining_ms(self._running)
            self._running = None

    def remaining_ms(self, color: chess.Color) -> float:
        left = self._remaining_ms[color]
        if self._running == color:
            left -= (self._now() - self._turn_started_s) * 1000.0
        return max(left, 0.0)

    def flagged(self, color: chess.Color) -> bool:
        return self.running and self._running == color and self.remaining_ms(color) <= 0.0

    def press(self, mover: chess.Color) -> None:
        """The mover has completed a move: charge its time, add the increment, switch."""
        if self._running != mover:
            return
        self._remaining_ms[mover] = self.remaining_ms(mover) + self.increment_ms
        self._running = not mover
        self._turn_started_s = self._now()

    def give(self, color: chess.Color, ms: int) -> None:
        """Add time to one side's clock (a gift from the opponent)."""
        self._remaining_ms[color] += ms

    def switch(self, side_to_move: chess.Color) -> None:
        """Run the clock of `side_to_move` (after a takeback), charging the other side."""
        if self._running is not None and self._running != side_to_move:
            self._remaining_ms[self._running] = self.remaining_ms(self._running)
            self._running = side_to_move
            self._turn_started_s = self._now()

    def seconds_to_flag(self) -> float | None:
        if self._running is None:
            return None
        return self.remaining_ms(self._running) / 1000.0


class CorrespondenceClock:
    """Days per move: the side to move must move before its deadline."""

    def __init__(
        self, days: int, to_move: chess.Color, now: Callable[[], float] = time.monotonic
    ) -> None:
        self.days = days
        self._now = now
        self._turn_started_s = now()
        self._to_move = to_move
        self._stopped_left_s: float | None = None

    @property
    def per_move_s(self) -> float:
        return self.days * DAY_S

    def press(self, next_to_move: chess.Color) -> None:
        self._to_move = next_to_move
        self._turn_started_s = self._now()

    def stop(self) -> None:
        self._stopped_left_s = self._left_s()

    def _left_s(self) -> float:
        if self._stopped_left_s is not None:
            return self._stopped_left_s
        return max(self.per_move_s - (self._now() - self._turn_started_s), 0.0)

    def remaining_ms(self, color: chess.Color) -> float:
        return self._left_s() * 1000.0 if color == self._to_move else self.per_move_s * 1000.0

    def seconds_to_flag(self) -> float:
        return self._left_s()
