"""Playbans, as far as the arena routes see them.

lila modules/playban (PlaybanApi.scala, TempBan): a ban lasts some minutes; while it runs
`NoPlayban` (app/controllers/LilaController.scala) answers the tournament join with 403
`{"error": "Banned from playing for N minutes. Reason: Too many aborts, unplayed games, or
rage quits.", "minutes": N}` (playbanJsonError, N is TempBan.remainingMinutes, at least 1),
and the ban withdraws the player from every arena it is in (TournamentApi.scala
`pausePlaybanned`: playerRepo.withdraw, with no pause). lila decides a ban from the player's
record of aborts, noStarts and rage quits; the sandbox imposes one when told to
(`Arenas.playban`), as a test needs.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from sandbox.errors import ApiError

BAN_REASON = "Reason: Too many aborts, unplayed games, or rage quits."


def playban_error(minutes: int) -> ApiError:
    return ApiError(403, f"Banned from playing for {minutes} minutes. {BAN_REASON}",
                    minutes=minutes)


class Playbans:
    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self._until_s: dict[str, float] = {}

    def ban(self, user_id: str, minutes: float) -> None:
        if minutes <= 0:
            raise ValueError(f"a playban lasts a positive number of minutes, got {minutes}")
        self._until_s[user_id] = self._now() + minutes * 60

    def remaining_minutes(self, user_id: str) -> int | None:
        """TempBan.remainingMinutes: whole minutes, at least 1 (rounded down, so a client
        that waits exactly N minutes may find a part of one left); None when not banned."""
        until_s = self._until_s.get(user_id)
        if until_s is None or until_s <= self._now():
            self._until_s.pop(user_id, None)
            return None
        return max(1, math.floor((until_s - self._now()) / 60))
