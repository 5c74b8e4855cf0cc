"""The join credits the bot has spent, kept in the state directory across restarts.

lila charges a first join to an arena before it checks anything else (modules/tournament/
src/main/TournamentApi.scala `join`: `initialJoin.test(me, cost = if tour.byLichess then 1
else 2)`, then the entry code, the conditions, the pause and the team), on a composite limit
`tournament.user.join` of an hour's and a day's window. Each window of lila's RateLimit
(modules/memo/src/main/RateLimit.scala) opens at the first charge and closes its length
later, whatever came after. So "You are joining too many tournaments" clears when the
window opened by the bot's first charge closes, not an hour after the refusal. The credit
counts have changed over lila's history; only the windows' lengths are kept here.

The file `<state_dir>/tournaments/join_charges.json` holds `[[unix seconds, credits], ...]`
of the last day.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

log = logging.getLogger(__name__)

CHARGES_FILE: Final = "join_charges.json"
WINDOWS_S: Final = (3600.0, 86400.0)  # initialJoin's windows: an hour, a day


def window_end(charges: list[tuple[float, int]], length_s: float) -> float | None:
    """When the window holding the last charge closes (RateLimit: a window opens at the
    first charge after the previous one closed); None without charges."""
    opened: float | None = None
    for at, _ in sorted(charges):
        if opened is None or at >= opened + length_s:
            opened = at
    return None if opened is None else opened + length_s


class JoinLedger:
    """The bot's own initialJoin charges; `path` None keeps them in memory only."""

    def __init__(self, path: Path | None, wall: Callable[[], float] = time.time) -> None:
        self.path = path
        self.wall = wall  # unix seconds (a test may drive it)
        self.charges: list[tuple[float, int]] = self._load()

    def _load(self) -> list[tuple[float, int]]:
        if self.path is None:
            return []
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("%s cannot be read (%s): the join credits spent are not known",
                        self.path, exc)
            return []
        charges = []
        for item in raw if isinstance(raw, list) else []:
            if isinstance(item, list) and len(item) == 2 \
                    and all(isinstance(x, int | float) for x in item):
                charges.append((float(item[0]), int(item[1])))
        return charges

    def charge(self, credits: int) -> None:
        now = self.wall()
        self.charges = [(at, c) for at, c in self.charges if now - at < max(WINDOWS_S)]
        self.charges.append((now, credits))
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_suffix(".tmp")
            temporary.write_text(json.dumps([[at, c] for at, c in self.charges]))
            temporary.replace(self.path)
        except OSError as exc:
            log.warning("cannot write %s: %s", self.path, exc)

    def clears_in_s(self) -> float | None:
        """Seconds until the earliest of lila's windows holding our charges closes that
        is still open; None when none is open (the refusal came from charges we did not
        make: the caller waits a whole window)."""
        now = self.wall()
        for length_s in WINDOWS_S:
            end = window_end(self.charges, length_s)
            if end is not None and end > now:
                return end - now
        return None
