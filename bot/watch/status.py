"""Status at a glance: a one-line summary in the log, and a live view on a terminal.

The bot hands `run_status` a function that returns a `StatusSnapshot` (the
games in progress, challenges queued, games today); this module only reads
it, so it never touches a game's state.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sized
from dataclasses import dataclass
from typing import Protocol

import chess
import chess.engine

from bot.engines.searchline import pv_san, score_text
from bot.game.game import Game, GameSnapshot
from bot.game.metrics import Metrics
from bot.ops.logs import LiveHandler
from bot.ops.sdnotify import Notify

log = logging.getLogger(__name__)

# How often the live view is redrawn on a terminal.
LIVE_REFRESH_S = 0.5
# Below this a clock shows tenths of a second.
CLOCK_TENTHS_BELOW_S = 10.0
# The live view's columns for the opponent's name.
NAME_CHARS = 12
# How many moves of the PV the status shows.
PV_MOVES = 8


@dataclass(frozen=True)
class GameView:
    """One game in progress, as the status shows it (scores from our side)."""

    game_id: str
    opponent: str
    color: str                          # "white" | "black": the side we play
    our_clock_s: float | None = None
    their_clock_s: float | None = None
    score: str = ""                     # "+0.35", "#4", "" before our first search
    moves: str = ""                     # the last move, numbered: "23. Nf3" or "23... Nf6"
    pv: str = ""                        # our principal variation in SAN
    our_turn: bool = False
    engine: str = ""                    # the configured engine playing it, when several are
    strength: str = ""                  # the game's level: "full strength", "Elo 1250"


@dataclass(frozen=True)
class StatusSnapshot:
    games: tuple[GameView, ...] = ()
    challenges_queued: int = 0
    games_today: int = 0
    stopping: bool = False
    arenas: tuple[str, ...] = ()  # one line per arena we play (bot.tournaments.desk)


StatusSource = Callable[[], StatusSnapshot]


class GameTally:
    """Counts distinct games started per (local) day, for "games today"."""

    def __init__(self, today: Callable[[], datetime.date] = datetime.date.today) -> None:
        self._today = today
        self._day = today()
        self._seen: set[str] = set()

    def started(self, game_id: str) -> None:
        self._roll()
        self._seen.add(game_id)

    def count(self) -> int:
        self._roll()
        return len(self._seen)

    def _roll(self) -> None:
        if self._today() != self._day:
            self._day, self._seen = self._today(), set()


def format_clock(seconds: float | None) -> str:
    """m:ss (h:mm:ss from an hour; tenths under ten seconds); "-" when unknown."""
    if seconds is None:
        return "-"
    seconds = max(0.0, seconds)
    if seconds < CLOCK_TENTHS_BELOW_S:
        return f"0:{seconds:04.1f}"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _totals(snapshot: StatusSnapshot) -> str:
    parts = [_plural(snapshot.challenges_queued, "challenge") + " queued",
             _plural(snapshot.games_today, "game") + " today"]
    if snapshot.stopping:
        parts.append("stopping")
    return " | ".join(parts)


def summary_line(snapshot: StatusSnapshot) -> str:
    """The periodic one-line summary: each game with opponent, clocks and score, then
    each arena we play."""
    arenas = "".join(f" | {line}" for line in snapshot.arenas)
    if not snapshot.games:
        return f"no games in progress | {_totals(snapshot)}{arenas}"
    games = "; ".join(
        f"{g.game_id} vs {g.opponent} ({g.color}, {format_clock(g.our_clock_s)} v "
        f"{format_clock(g.their_clock_s)}{', ' + g.score if g.score else ''}"
        f"{', on ' + g.engine if g.engine else ''}"
        f"{', ' + g.strength if g.strength else ''})"
        for g in snapshot.games)
    return f"{_plural(len(snapshot.games), 'game')}: {games} | {_totals(snapshot)}{arenas}"


def live_lines(snapshot: StatusSnapshot) -> list[str]:
    """The live view: a header and one line per game (the handler cuts them to fit):
    `*Qa7bX1pz white vs alice           1:02/0:58     +0.35  23. Nf3  Nf3 Nc6 Bb5`,
    with `*` when it is our move, our clock first, `[name]` after the opponent when
    several engines are configured, and the game's level in brackets: `(Elo 1250)`."""
    header = f"── {_plural(len(snapshot.games), 'game')} in progress | {_totals(snapshot)} ──"
    lines = [header, *snapshot.arenas]
    for g in snapshot.games:
        turn = "*" if g.our_turn else " "
        clocks = f"{format_clock(g.our_clock_s):>7}/{format_clock(g.their_clock_s):<7}"
        engine = f" [{g.engine}]" if g.engine else ""
        engine += f" ({g.strength})" if g.strength else ""
        lines.append(f"{turn}{g.game_id:<8} {g.color:<5} vs {g.opponent[:NAME_CHARS]:<{NAME_CHARS}}"
                     f"{engine} {clocks} {g.score:>6}  {g.moves:<12} {g.pv}".rstrip())
    return lines


def short_score(score: chess.engine.PovScore | None, color: chess.Color) -> str:
    """A search score from `color`'s side ("+0.35", "#3"), "" when there is none."""
    return score_text(score, color) if score is not None else ""


def view_of(game: GameSnapshot) -> GameView:
    """What the status shows of one game."""
    context, board = game.context, game.board
    moves = ""
    if board.move_stack:
        before = board.copy()
        last = before.pop()
        moves = " ".join(pv_san(before, [last]))  # "12. Nf3", "12...Nc6"
    score, pv = "", ""
    if game.last_search is not None:
        searched, line = game.last_search
        score = short_score(line.score, context.color)
        pv = " ".join(pv_san(searched, line.pv, numbered=False, max_moves=PV_MOVES))
    return GameView(
        game_id=game.game_id, opponent=context.opponent.name,
        color="white" if context.color == chess.WHITE else "black",
        our_clock_s=game.our_clock_s, their_clock_s=game.their_clock_s, score=score,
        moves=moves, pv=pv, our_turn=game.our_turn, engine=game.engine,
        strength=game.strength)


class BotState(Protocol):
    """What the status reads of the running bot (bot.app.Bot)."""

    @property
    def games(self) -> Mapping[str, Game]: ...
    @property
    def queue(self) -> Sized: ...
    @property
    def metrics(self) -> Metrics: ...
    @property
    def accepting(self) -> bool: ...


def bot_status(bot: BotState, tally: GameTally | None = None,
               arenas: Callable[[], list[str]] | None = None) -> StatusSource:
    """A StatusSource for a running bot: its games, queue, the games started today, and
    the lines of its arenas."""
    games_today = tally or GameTally()
    counted = 0

    def snapshot() -> StatusSnapshot:
        nonlocal counted
        finished = bot.metrics.games_finished
        for outcome in bot.metrics.latest_games(finished - counted):
            games_today.started(outcome.game_id)
        counted = finished
        views = []
        for game in list(bot.games.values()):
            games_today.started(game.id)
            shown = game.snapshot()
            if shown is not None:
                views.append(view_of(shown))
        return StatusSnapshot(games=tuple(views), challenges_queued=len(bot.queue),
                              games_today=games_today.count(), stopping=not bot.accepting,
                              arenas=tuple(arenas()) if arenas is not None else ())

    return snapshot


class _Latest:
    """The last snapshot taken; a failure to take one is logged and never stops the bot."""

    def __init__(self, source: StatusSource) -> None:
        self.source = source
        self.snapshot = StatusSnapshot()
        self._failed = False

    def refresh(self) -> StatusSnapshot:
        try:
            self.snapshot = self.source()
            self._failed = False
        except Exception:
            if not self._failed:  # once per run of failures, not at every tick
                log.exception("cannot take the status snapshot; showing the last one")
            self._failed = True
        return self.snapshot


async def run_status(source: StatusSource, *, interval_s: float,
                     live: LiveHandler | None = None,
                     notify: Notify | None = None, notify_every_s: float = 0.0,
                     live_refresh_s: float = LIVE_REFRESH_S,
                     now: Callable[[], float] | None = None,
                     sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
    """Until cancelled: log the summary every `interval_s` (0 = never); send it to systemd
    as STATUS= through `notify` every `notify_every_s` (0 = with the log line); keep the
    live view on `live` redrawn. A broken snapshot is logged, never raised: the status
    must not take the bot down. `now` and `sleep` are the loop's clock unless a test
    injects its own."""
    notify_every_s = notify_every_s or interval_s
    if interval_s <= 0 and live is None and (notify is None or notify_every_s <= 0):
        return
    clock_s = now or asyncio.get_running_loop().time
    next_log = clock_s() + interval_s if interval_s > 0 else math.inf
    next_notify = clock_s() if notify is not None and notify_every_s > 0 else math.inf
    latest = _Latest(source)
    if live is not None:
        live.overlay = lambda: live_lines(latest.snapshot)
    try:
        while True:
            now_s = clock_s()
            if live is not None or now_s >= next_log or now_s >= next_notify:
                latest.refresh()
            if now_s >= next_log or now_s >= next_notify:
                line = summary_line(latest.snapshot)
                if now_s >= next_log:
                    log.info("%s", line)
                    next_log = now_s + interval_s
                if notify is not None and now_s >= next_notify:
                    notify(f"STATUS={line}")
                    next_notify = now_s + notify_every_s
            if live is not None:
                live.redraw()
            wait_s = min(next_log, next_notify) - clock_s()
            if live is not None:
                wait_s = min(wait_s, live_refresh_s)
            await sleep(max(0.0, wait_s))
    finally:
        if live is not None:
            live.clear_overlay()
