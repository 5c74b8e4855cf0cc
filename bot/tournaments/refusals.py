"""What a refused arena join means for the next try.

lila answers `POST /api/tournament/{id}/join` (app/controllers/Tournament.scala apiJoin) in
this order: a playban is 403 `{"error": "Banned from playing for N minutes. ...",
"minutes": N}` (LilaController `NoPlayban`, playbanJsonError); more than 30 joins or
resumes in 10 minutes is 429 (`limit.tourJoinOrResume`); then 400 with a JoinResult text
(modules/tournament Tournament.scala). Of those, "Your pause is not over yet" (Pause.scala,
at most 120 s) and "You are joining too many tournaments" (TournamentApi.initialJoin, key
`tournament.user.join`, 8 credits an hour and 30 a day) end by themselves; the others
(wrong entry code, restrictions, missing team, arena ban, no such arena) are final.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from bot.lichess.client import AuthError, RateLimited, RequestError

PAUSED_TEXT: Final = "Your pause is not over yet"
TOO_MANY_TEXT: Final = "You are joining too many tournaments"
PLAYBAN_TEXT: Final = "Banned from playing"
PAUSE_FALLBACK_S: Final = 10.0  # a pause with no `me.pauseDelay` shown: Pause.scala's least
# initialJoin's shorter window: a refusal is not tried again before it has passed.
TOO_MANY_WAIT_S: Final = 3600.0
PLAYBAN_MARGIN_S: Final = 60.0  # lila rounds the minutes left down: up to one more
_MINUTES = re.compile(r"for (\d+) minutes")


@dataclass(frozen=True)
class Refusal:
    kind: str  # playban | paused | too_many | rate_limited | final
    message: str
    wait_s: float = 0.0  # how long before the next try (0 for a final refusal)

    @property
    def final(self) -> bool:
        return self.kind == "final"


def playban_minutes(error: AuthError) -> int | None:
    """N of a playban's 403 (its `minutes`, else the text), None for another 401/403."""
    if error.status != 403 or PLAYBAN_TEXT not in error.message:
        return None
    try:
        data = json.loads(error.body)
    except ValueError:
        data = None
    minutes = data.get("minutes") if isinstance(data, Mapping) else None
    if isinstance(minutes, int) and not isinstance(minutes, bool) and minutes > 0:
        return minutes
    found = _MINUTES.search(error.message)
    return int(found.group(1)) if found else 1


def classify_join_error(error: RequestError | RateLimited | AuthError,
                        pause_delay_s: float) -> Refusal:
    """The meaning of a join refused with `error`; `pause_delay_s` is the pause the
    tournament JSON showed (0 if none)."""
    if isinstance(error, RateLimited):
        return Refusal("rate_limited", f"rate limited ({error})", max(error.wait_s, 1.0))
    if isinstance(error, AuthError):
        minutes = playban_minutes(error)
        if minutes is None:
            return Refusal("final", str(error))
        return Refusal("playban", error.message, minutes * 60 + PLAYBAN_MARGIN_S)
    if PAUSED_TEXT in error.message:
        return Refusal("paused", error.message, max(pause_delay_s, PAUSE_FALLBACK_S))
    if TOO_MANY_TEXT in error.message:
        return Refusal("too_many", error.message, TOO_MANY_WAIT_S)
    return Refusal("final", error.message)
