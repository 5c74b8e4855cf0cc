"""The pause after a withdrawal from a running arena, as lila counts it.

lila modules/tournament/src/main/Pause.scala: a player in the top 7 who withdraws
(TournamentApi.scala `withdraw` with isPause, the ranking's index < 7), or one withdrawn for
sitting (isStalling), is paused: the first pause lasts 10 s, each later one the arena's
estimated game length / 15 x (pauses - 1), within 10 to 120 s. The record is forgotten 20
minutes after the last pause (a cache that expires after write). A join during the pause to
an arena that has started is refused with JoinResult.Paused (`canJoin`: `tour.isCreated ||
remainingDelay.isEmpty`); the tournament JSON shows the rest as `me.pauseDelay`
(JsonView.scala `myInfoJson`) while more than a second remains.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

PAUSE_MIN_S = 10
PAUSE_MAX_S = 120
PAUSE_DIVISOR = 15  # the estimated game length is divided by this
PAUSE_MEMORY_S = 20 * 60  # Pause.scala: expireAfterWrite(20 minutes)
PAUSE_SHOWN_ABOVE_S = 1  # remainingDelay: `seconds > 1 option Delay(seconds)`
TOP_PAUSED = 7  # TournamentApi.withdraw: the ranking index `< 7` is paused
# chess Clock.Config.estimateTotalSeconds: limit + 40 x increment.
ESTIMATE_MOVES = 40


def estimate_total_s(limit_s: int, increment_s: int) -> int:
    return limit_s + ESTIMATE_MOVES * increment_s


@dataclass
class _Record:
    pauses: int
    paused_at_s: float


class Pauses:
    """Every player's pause record of one sandbox (lila keeps one per user, not per arena)."""

    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._records: dict[str, _Record] = {}

    def _record(self, user_id: str) -> _Record | None:
        record = self._records.get(user_id)
        if record is not None and self._now() - record.paused_at_s >= PAUSE_MEMORY_S:
            del self._records[user_id]
            return None
        return record

    def add(self, user_id: str) -> None:
        record = self._record(user_id)
        self._records[user_id] = _Record(record.pauses + 1 if record else 1, self._now())

    def remaining_s(self, user_id: str, estimate_s: int) -> int | None:
        """Whole seconds of pause left, None when the player may join."""
        record = self._record(user_id)
        if record is None:
            return None
        base_s = estimate_s // PAUSE_DIVISOR
        delay_s = min(max(base_s * (record.pauses - 1), PAUSE_MIN_S), PAUSE_MAX_S)
        # `pausedAt.toSeconds - nowSeconds + delay`: whole seconds of each instant.
        seconds = math.floor(record.paused_at_s) - math.floor(self._now()) + delay_s
        return seconds if seconds > PAUSE_SHOWN_ABOVE_S else None
