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
from collections.abc import Callable
from dataclasses import dataclass

from bot import sdnotify
from bot.logs import LiveHandler

log = logging.getLogger(__name__)

# How often the live view is redrawn on a terminal.
LIVE_REFRESH_S = 0.5
# Below this a clock shows tenths of a second.
CLOCK_TENTHS_BELOW_S = 10.0
# The live view's columns for the opponent's name and the PV.
NAME_CHARS = 16


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


@dataclass(frozen=True)
class StatusSnapshot:
    games: tuple[GameView, ...] = ()
    challenges_queued: int = 0
    games_today: int = 0
    stopping: bool = False


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
    """The periodic one-line summary: each game with opponent, clocks and score."""
    if not snapshot.games:
        return f"no games in progress | {_totals(snapshot)}"
    games = "; ".join(
        f"{g.game_id} vs {g.opponent} ({g.color}, {format_clock(g.our_clock_s)} v "
        f"{format_clock(g.their_clock_s)}{', ' + g.score if g.score else ''})"
        for g in snapshot.games)
    return f"{_plural(len(snapshot.games), 'game')}: {games} | {_totals(snapshot)}"


def live_lines(snapshot: StatusSnapshot) -> list[str]:
    """The live view: a header and one line per game (the handler cuts them to fit)."""
    header = f"── {_plural(len(snapshot.games), 'game')} in progress | {_totals(snapshot)} ──"
    lines = [header]
    for g in snapshot.games:
        turn = "*" if g.our_turn else " "
        lines.append(
            f"{turn}{g.game_id:<8}  vs {g.opponent[:NAME_CHARS]:<{NAME_CHARS}} {g.color:<5}  "
            f"{format_clock(g.our_clock_s):>7} v {format_clock(g.their_clock_s):<7}  "
            f"{g.score or '':>6}  {g.moves:<12} {g.pv}")
    return lines


async def run_status(source: StatusSource, *, interval_s: float,
                     live: LiveHandler | None = None,
                     live_refresh_s: float = LIVE_REFRESH_S) -> None:
    """Log the summary every `interval_s` (0 = never, and also tell systemd's STATUS=),
    and keep the live view on `live` redrawn; runs until cancelled."""
    if interval_s <= 0 and live is None:
        return
    loop = asyncio.get_running_loop()
    next_summary = loop.time() + interval_s
    if live is not None:
        live.overlay = lambda: live_lines(source())
    try:
        while True:
            wait_s = next_summary - loop.time() if interval_s > 0 else math.inf
            if live is not None:
                wait_s = min(wait_s, live_refresh_s)
            await asyncio.sleep(max(0.0, wait_s))
            if live is not None:
                live.redraw()
            if interval_s > 0 and loop.time() >= next_summary:
                line = summary_line(source())
                log.info("%s", line)
                sdnotify.notify_status(line)
                next_summary = loop.time() + interval_s
    finally:
        if live is not None:
            live.clear_overlay()
