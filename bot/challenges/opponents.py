"""What the bot knows about its opponents and itself, for the challenge rules and matchmaking.

- Engagements: the games in progress and the challenges accepted, by id, with the opponent,
  whether it is a bot, and whether the game holds a real-time slot.
- History: when each game against each opponent started, kept in the state directory so
  "recent games per bot" survives a restart.
- Our ratings per perf, from `/api/account` (read rarely: Lichess limits that endpoint).
- Whether our daily bot-vs-bot games are used up (Lichess said so with `bot.vsBot.day`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bot.challenges.judging import Situation
from bot.lichess.client import BOT_DAY_KEY, AuthError, Lichess, LichessError, RateLimited
from bot.ops.statefile import load_state, number, save_state

log = logging.getLogger(__name__)

STATE_FILE: Final = "opponents.json"
# lila modules/bot/src/main/BotLimit.scala (`Max(100)`): games a BOT may play against bots
# in a day; arena games between bots count too.
BOT_GAMES_PER_DAY: Final = 100
ACCEPTED_TTL_S: Final = 30.0  # an accepted challenge with no game yet stops counting after this
HISTORY_KEEP_S: Final = 7 * 86400.0  # games older than this are forgotten
RATINGS_MIN_GAP_S: Final = 300.0  # /api/account allows 30 reads per 5 min: we take 1


@dataclass(frozen=True, slots=True)
class Engagement:
    opponent: str
    bot: bool
    realtime: bool
    since: float  # monotonic
    started: bool  # a game (not just an accepted challenge)


def ratelimit_of(body: str) -> tuple[str | None, float]:
    """(`ratelimit.key`, `ratelimit.seconds`) of a Lichess error body, if it has them."""
    try:
        data = json.loads(body)
    except ValueError:
        return None, 0.0
    limit = data.get("ratelimit") if isinstance(data, dict) else None
    if not isinstance(limit, dict):
        return None, 0.0
    key = limit.get("key")
    return (key if isinstance(key, str) else None), number(limit.get("seconds"))


def ratings_from_account(account: Mapping[str, Any]) -> dict[str, int]:
    """perf -> rating from a `/api/account` (or User) object; odd entries are skipped."""
    perfs = account.get("perfs")
    ratings: dict[str, int] = {}
    if not isinstance(perfs, Mapping):
        return ratings
    for perf, entry in perfs.items():
        if isinstance(entry, Mapping):
            rating = entry.get("rating")
            if isinstance(rating, int) and not isinstance(rating, bool):
                ratings[str(perf)] = rating
    return ratings


class OpponentBook:
    """Engagements, game history and our ratings; one per bot."""

    def __init__(self, state_dir: Path, recent_window_s: float) -> None:
        self.path = state_dir / STATE_FILE
        self.recent_window_s = recent_window_s
        self.engaged: dict[str, Engagement] = {}
        self.our_ratings: dict[str, int] = {}
        self.known_bots: set[str] = set()
        self.history: dict[str, tuple[str, float]] = {}  # game id -> (opponent, wall start)
        self.bots_capped_until = 0.0  # wall clock: our bot-vs-bot games are used up till then
        self._finished = asyncio.Event()
        self._load()

    def _load(self) -> None:
        raw = load_state(self.path)
        games = raw.get("games")
        if isinstance(games, dict):
            for game_id, entry in games.items():
                if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str):
                    self.history[str(game_id)] = (entry[0], number(entry[1]))
        bots = raw.get("bots")
        if isinstance(bots, list):
            self.known_bots = {b for b in bots if isinstance(b, str)}
        self.bots_capped_until = number(raw.get("bots_capped_until"))

    def _save(self) -> None:
        horizon = time.time() - max(HISTORY_KEEP_S, self.recent_window_s)
        self.history = {g: e for g, e in self.history.items() if e[1] >= horizon}
        save_state(self.path, {"games": {g: list(e) for g, e in self.history.items()},
                               "bots": sorted(self.known_bots),
                               "bots_capped_until": self.bots_capped_until})

    def note_refusal(self, error: LichessError) -> None:
        """A refused accept or challenge: if Lichess says our bot games for the day are
        used up, remember until when. Only a 429 is about us: lila's BotLimit answers our
        own cap with `JsonLimited` (429) and the opponent's with a 400 of the same key
        (app/controllers/Challenge.scala `eitherBotLimitResponse`)."""
        if not isinstance(error, RateLimited):
            return
        key, seconds = ratelimit_of(error.body)
        if key == BOT_DAY_KEY and seconds > 0:
            self.bots_capped_until = max(self.bots_capped_until, time.time() + seconds)
            log.info("our bot-vs-bot games for today are used up: bots declined for %.0f s",
                     seconds)
            self._save()

    # --- engagements ------------------------------------------------------------------

    def engage(self, game_id: str, opponent: str | None, *, bot: bool | None = None,
               realtime: bool = True, started: bool = True) -> None:
        """A challenge we accepted (started=False) or a game that started."""
        if not opponent:
            return
        opponent = opponent.lower()
        if bot:
            self.known_bots.add(opponent)
        is_bot = opponent in self.known_bots if bot is None else bot
        self.engaged[game_id] = Engagement(opponent, is_bot, realtime, time.monotonic(), started)
        if started and game_id not in self.history:
            self.history[game_id] = (opponent, time.time())
            self._save()

    def release(self, game_id: str) -> None:
        """The game finished (or the accepted challenge came to nothing)."""
        if self.engaged.pop(game_id, None) is not None:
            self._finished.set()

    def _current(self) -> list[Engagement]:
        now = time.monotonic()
        for key, entry in list(self.engaged.items()):
            if not entry.started and now - entry.since > ACCEPTED_TTL_S:
                del self.engaged[key]
        return list(self.engaged.values())

    def recent_games(self, now: float | None = None) -> dict[str, int]:
        """opponent id -> games started within the recent window."""
        horizon = (time.time() if now is None else now) - self.recent_window_s
        counts: dict[str, int] = {}
        for opponent, started in self.history.values():
            if started >= horizon:
                counts[opponent] = counts.get(opponent, 0) + 1
        return counts

    def situation(self, blocked: frozenset[str] = frozenset()) -> Situation:
        games_with: dict[str, int] = {}
        bot_games = 0
        for entry in self._current():
            games_with[entry.opponent] = games_with.get(entry.opponent, 0) + 1
            bot_games += entry.bot and entry.realtime
        return Situation(our_ratings=dict(self.our_ratings), games_with=games_with,
                         bot_games=bot_games, recent_games=self.recent_games(),
                         blocked=blocked, bot_day_capped=time.time() < self.bots_capped_until)

    # --- our ratings --------------------------------------------------------------------

    async def keep_ratings(self, client: Lichess) -> None:
        """Long-lived task: read our ratings at start, then after games (rarely)."""
        while True:
            try:
                self.our_ratings = ratings_from_account(await client.account())
            except AuthError:
                raise
            except LichessError as exc:
                log.warning("cannot read our ratings: %s", exc)
            await asyncio.sleep(RATINGS_MIN_GAP_S)
            await self._finished.wait()
            self._finished.clear()
