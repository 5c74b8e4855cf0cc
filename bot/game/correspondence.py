"""Correspondence games (days per move): visit, think, move, leave.

A correspondence game never holds a real-time slot. The visitor learns where it is our turn
from `GET /api/account/playing` (every `checkin_interval_s`, and whenever the event stream
mentions a correspondence game), then visits those games one at a time, the one closest to
its deadline first. A visit is a `Game` in visit mode: it opens the game stream, thinks for
`think_s`, sends the move and leaves once the move is echoed (or at once when it is not our
turn). After a restart the visitor simply checks in again: nothing is lost. A game that ends
between visits (the opponent resigns, say) is recorded on its gameFinish, once the visit
under way is over, unless a visit saw it end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from bot.lichess.client import AuthError, Lichess, LichessError
from bot.lichess.events import GameInfo, is_ongoing
from bot.ops.config import CorrespondenceConfig

log = logging.getLogger(__name__)

PLAYING_NB: Final = 50  # the most `GET /api/account/playing` returns
MIN_CHECKIN_GAP_S: Final = 2.0  # event-driven check-ins are spaced at least this much
VISIT_MARGIN_S: Final = 60.0  # a visit gets think_s plus this before it is cut off
RECORD_TIMEOUT_S: Final = 60.0  # recording a game that ended between visits (export + file)
VISITS_KEPT: Final = 100  # the latest visits remembered (for the log and tests)


class Visit(Protocol):
    """A game in visit mode (`bot.game.game.Game` with `think_s`)."""

    status: str  # after the visit: "started" unless the game ended while we watched

    async def run(self) -> object: ...


@dataclass(frozen=True, slots=True)
class Waiting:
    """A correspondence game where it is our turn."""

    game_id: str
    seconds_left: float
    opponent: str


def our_turns(playing: Any) -> list[Waiting]:
    """Correspondence games waiting for our move, closest to the deadline first."""
    games = playing.get("nowPlaying") if isinstance(playing, Mapping) else None
    waiting = []
    for game in games if isinstance(games, list) else []:
        if not isinstance(game, Mapping) or game.get("speed") != "correspondence":
            continue
        game_id = game.get("gameId")
        left = game.get("secondsLeft")
        if not isinstance(game_id, str) or game.get("isMyTurn") is not True:
            continue
        opponent = game.get("opponent")
        name = opponent.get("username") if isinstance(opponent, Mapping) else None
        waiting.append(Waiting(game_id, float(left) if isinstance(left, int | float)
                               and not isinstance(left, bool) else float("inf"),
                               str(name or "?")))
    return sorted(waiting, key=lambda w: w.seconds_left)


class CorrespondenceVisitor:
    """Visits correspondence games when it is our turn; one per bot."""

    def __init__(self, config: CorrespondenceConfig, client: Lichess,
                 make_visit: Callable[[str, float], Visit], stop: asyncio.Event, *,
                 finished_unwatched: Callable[[GameInfo], Awaitable[object]] | None = None
                 ) -> None:
        self.config = config
        self.client = client
        self.make_visit = make_visit
        self.stop = stop
        self.finished_unwatched = finished_unwatched  # records a game that ended unwatched
        self._finished: deque[GameInfo] = deque()  # gameFinish events not yet handled
        self._seen_end: set[str] = set()  # games whose end a visit saw (and recorded)
        self.visits: deque[str] = deque(maxlen=VISITS_KEPT)  # game ids visited, latest last
        self._wake = asyncio.Event()
        self._last_checkin = 0.0

    @staticmethod
    def is_correspondence(info: GameInfo) -> bool:
        return info.speed == "correspondence"

    def on_game_event(self, info: GameInfo) -> None:
        """A gameStart for a correspondence game: the opponent may have moved."""
        log.info("correspondence game %s against %s: checking in", info.game_id,
                 info.opponent_name)
        self._wake.set()

    def on_game_finish(self, info: GameInfo) -> None:
        """A gameFinish for a correspondence game: recorded after the visit under way."""
        log.info("correspondence game %s is over (%s)", info.game_id, info.status)
        self._finished.append(info)
        self._wake.set()

    async def check_in(self) -> list[Waiting]:
        self._last_checkin = time.monotonic()
        try:
            playing = await self.client.playing(PLAYING_NB)
        except AuthError:
            raise
        except LichessError as exc:
            log.warning("correspondence check-in failed: %s", exc)
            return []
        return our_turns(playing)

    async def run(self) -> None:
        """Long-lived task: check in, visit what waits for us, sleep until the next reason."""
        while not self.stop.is_set():
            self._wake.clear()
            for waiting in await self.check_in():
                if self.stop.is_set():
                    return
                await self.visit(waiting)
            await self.record_finished()
            if self.stop.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.config.checkin_interval_s)
            gap_s = MIN_CHECKIN_GAP_S - (time.monotonic() - self._last_checkin)
            if gap_s > 0:
                await asyncio.sleep(gap_s)

    async def visit(self, waiting: Waiting) -> None:
        """One visit, in its own error boundary (a dead token still stops the bot)."""
        log.info("correspondence: our turn in %s against %s (%.0f s left)", waiting.game_id,
                 waiting.opponent, waiting.seconds_left)
        self.visits.append(waiting.game_id)
        visit = self.make_visit(waiting.game_id, self.config.think_s)
        try:
            async with asyncio.timeout(self.config.think_s + VISIT_MARGIN_S):
                await visit.run()
        except* AuthError:
            raise
        except* Exception as group:
            log.error("correspondence visit to %s failed: %r", waiting.game_id,
                      group.exceptions[0], exc_info=group.exceptions[0])
        if not is_ongoing(visit.status):
            self._seen_end.add(waiting.game_id)

    async def record_finished(self) -> None:
        """Record the games whose gameFinish came and whose end no visit saw (each once)."""
        while self._finished:
            info = self._finished.popleft()
            if info.game_id in self._seen_end or self.finished_unwatched is None:
                continue
            self._seen_end.add(info.game_id)
            try:
                async with asyncio.timeout(RECORD_TIMEOUT_S):
                    await self.finished_unwatched(info)
            except Exception as exc:  # the record is lost, the bot goes on
                log.error("recording finished game %s failed: %s: %s", info.game_id,
                          type(exc).__name__, exc)
