"""The status page's live feed: the bot's state sampled on its loop, changes sent to every
open page as server-sent events (a page never polls).

A page that connects gets the whole state at once (`hello`), then only what changed: a
`game` card when its position, search or chat moved (with the board's SVG only when the
board changed), `gone` when a finished game's card is dropped, `service` when the service
panel changed. Clocks tick on the page from the last state sent, so a card is not resent
for its clocks. With no page open the cards are still kept, less often and without their
boards (drawn when a page opens), so a page opened later shows the games just finished;
each move's evaluation is recorded as the game plays it (an observer of the game).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import chess

from bot.challenges.opponents import BOT_GAMES_PER_DAY, OpponentBook
from bot.game.game import Game
from bot.game.hooks import SourcedMove
from bot.lichess.client import EVENT_STREAM_KIND, Lichess, export_path, version
from bot.lichess.events import Challenge, GameState
from bot.tournaments.desk import ArenaDesk
from bot.watch import proctree, view
from bot.watch.status import BotState, GameTally
from bot.watch.warnings import WarningRing

log = logging.getLogger(__name__)

FEED_INTERVAL_S: Final = 0.25  # how often the state is sampled while a page is open
IDLE_INTERVAL_S: Final = 1.0  # and with none: the cards a page opened later shows
MEMORY_EVERY_S: Final = 5.0  # /proc is read this often at most (it costs a few ms)
FINISHED_KEPT_S: Final = 600.0  # a finished game's card stays this long...
FINISHED_KEPT: Final = 12  # ...and at most this many of them
EVALS_KEPT: Final = 1000  # plies of evaluation kept per game (a long game's graph)
PAGE_QUEUE: Final = 256  # messages waiting for a slow page; beyond, it is disconnected


class WatchedBot(BotState, Protocol):
    """What the feed reads of the running bot (bot.app.Bot): what the status line reads, and
    the queued challenges themselves, the client, the opponents and the arenas."""

    @property
    def queue(self) -> Collection[Challenge]: ...
    @property
    def client(self) -> Lichess: ...
    @property
    def book(self) -> OpponentBook: ...
    @property
    def arenas(self) -> ArenaDesk: ...


def sse(event: str, data: Any) -> str:
    """One server-sent event; JSON never holds a raw newline, so one data line."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


class EvalRecorder:
    """A game observer: the evaluation after each of our searched moves, by ply; and the
    game's last state for its card when it ends (however short it was)."""

    def __init__(self, evals: dict[int, int],
                 on_finished: Callable[[], None] = lambda: None) -> None:
        self.evals = evals
        self.on_finished = on_finished

    def game_state(self, state: GameState) -> None:
        return None

    def our_move(self, ply: int, board: chess.Board, chosen: SourcedMove) -> None:
        cp = view.white_cp(chosen.line.score) if chosen.line is not None else None
        if cp is not None and len(self.evals) < EVALS_KEPT:
            self.evals[ply + 1] = cp  # the position after our move

    async def game_finished(self, status: str, winner: str | None) -> None:
        self.on_finished()


@dataclass
class _Card:
    data: dict[str, Any]
    board: chess.Board | None = None  # the last position seen (a copy)
    orientation: chess.Color = chess.WHITE  # our side at the bottom
    drawn_key: str = ""  # the position `svg` shows
    svg: str = ""
    sent_key: str = ""  # what the pages were last sent, without the clocks
    until_s: float = 0.0  # a finished card: dropped then


@dataclass
class _Memory:
    at_s: float = -1e9
    sizes: dict[int, int] = field(default_factory=dict)


class Feed:
    """Samples the bot (often while a page is open, seldom otherwise) and sends the open
    pages what changed."""

    def __init__(self, bot: WatchedBot, ring: WarningRing, *, base_url: str,
                 interval_s: float = FEED_INTERVAL_S,
                 idle_interval_s: float = IDLE_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time,
                 memory: Callable[[], dict[int, int]] = proctree.tree_pss_bytes,
                 evals: dict[str, dict[int, int]] | None = None) -> None:
        self.bot = bot
        self.ring = ring
        self.base_url = base_url.rstrip("/")
        self.interval_s = interval_s
        self.idle_interval_s = idle_interval_s
        self._clock = clock
        self._wall = wall
        self._memory_source = memory
        self.started_s = clock()
        self.evals = evals if evals is not None else {}  # filled by the EvalRecorders
        self.tally = GameTally()
        self._counted = 0
        self._cards: OrderedDict[str, _Card] = OrderedDict()
        self._service: dict[str, Any] = {}
        self._service_key = ""
        self._pages: set[asyncio.Queue[str | None]] = set()
        self._wanted = asyncio.Event()  # a page is open
        self._pages_open = False  # the boards are drawn
        self._memory = _Memory()

    # --- observers and pages -------------------------------------------------------------------

    @property
    def pages(self) -> int:
        return len(self._pages)

    def subscribe(self) -> asyncio.Queue[str | None]:
        """A new page: its queue starts with the whole state. None in it means "go away"."""
        self._pages_open = True
        for message in self.sample():  # what changed since the last sample: for the others
            self._send(message)
        page: asyncio.Queue[str | None] = asyncio.Queue(PAGE_QUEUE)
        page.put_nowait(sse("hello", self.state()))
        self._pages.add(page)
        self._wanted.set()
        return page

    def unsubscribe(self, page: asyncio.Queue[str | None]) -> None:
        self._pages.discard(page)
        if not self._pages:
            self._wanted.clear()
            self._pages_open = False

    def close(self) -> None:
        for page in list(self._pages):
            with contextlib.suppress(asyncio.QueueFull):
                page.put_nowait(None)
        self._pages.clear()

    def state(self) -> dict[str, Any]:
        """Everything a new page shows."""
        for held in self._cards.values():
            self._draw(held)
        return {"games": [self._payload(card, with_board=True) for card in self._cards.values()],
                "service": self._service}

    # --- sampling ----------------------------------------------------------------------------

    async def run(self) -> None:
        """Until cancelled: sample, and send the changes to the open pages."""
        while True:
            try:
                # One game at a time, the loop free in between: a game's state that arrives
                # meanwhile is answered before the next board is drawn (a few ms each).
                for messages in self._sample_steps():
                    for message in messages:
                        self._send(message)
                    await asyncio.sleep(0)
            except Exception:  # a broken sample must never take the bot down
                log.exception("status page: cannot sample the bot's state")
            if not self._wanted.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.idle_interval_s):
                        await self._wanted.wait()
                continue
            await asyncio.sleep(self.interval_s)

    def _send(self, message: str) -> None:
        for page in list(self._pages):
            try:
                page.put_nowait(message)
            except asyncio.QueueFull:  # a page that does not read: let it reconnect
                self.unsubscribe(page)
                with contextlib.suppress(asyncio.QueueEmpty):
                    page.get_nowait()
                page.put_nowait(None)

    def sample(self) -> list[str]:
        """Bring the cards and the service panel up to date; the events for the pages."""
        return [message for messages in self._sample_steps() for message in messages]

    def _sample_steps(self) -> Iterator[list[str]]:
        """`sample` in steps, one per game, then the finished cards and the service."""
        live = self.bot.games
        for game_id, game in list(live.items()):
            message = self._sample_game(game_id, game)
            yield [message] if message is not None else []
        now_s = self._clock()
        messages = self._finish_cards(live, now_s)
        if not self._pages_open:
            yield []  # the service panel is looked at only when a page opens
            return
        service = self._service_state(now_s)
        key = json.dumps({k: v for k, v in service.items() if k != "uptime_s"}, sort_keys=True)
        self._service = service
        if key != self._service_key:
            self._service_key = key
            messages.append(sse("service", service))
        yield messages

    def capture(self, game_id: str) -> None:
        """Take one game's state now (it is ending) and send it to the pages."""
        game = self.bot.games.get(game_id)
        if game is None:
            return
        try:
            message = self._sample_game(game_id, game)
        except Exception:
            log.exception("status page: cannot take the state of game %s", game_id)
            return
        if message is not None:
            self._send(message)

    def _sample_game(self, game_id: str, game: Game) -> str | None:
        self.tally.started(game_id)
        snapshot = game.snapshot()
        if snapshot is None:
            return None
        data = view.card(snapshot, base_url=self.base_url, chat=list(game.chat))
        data["evals"] = sorted(self.evals.get(game_id, {}).items())
        held = self._cards.get(game_id)
        if held is None:
            held = self._cards[game_id] = _Card(data)
        held.data = data
        held.board, held.orientation = snapshot.board, snapshot.context.color
        board_changed = self._pages_open and self._draw(held)
        message = self._changed(held, with_board=board_changed)
        return message if self._pages else None

    @staticmethod
    def _draw(held: _Card) -> bool:
        """Draw the card's board if it moved since it was drawn; whether it did."""
        if held.board is None:
            return False
        key = view.board_key(held.board)
        if key == held.drawn_key:
            return False
        held.drawn_key = key
        held.svg = view.board_svg(held.board, held.orientation)
        return True

    def _changed(self, held: _Card, *, with_board: bool) -> str | None:
        without_clocks = {k: v for k, v in held.data.items() if k != "clocks"}
        key = json.dumps(without_clocks, sort_keys=True, default=str)
        if key == held.sent_key and not with_board:
            return None
        held.sent_key = key
        return sse("game", self._payload(held, with_board=with_board))

    @staticmethod
    def _payload(held: _Card, *, with_board: bool) -> dict[str, Any]:
        return {**held.data, "svg": held.svg} if with_board else held.data

    def _finish_cards(self, live: Mapping[str, Game], now_s: float) -> list[str]:
        messages: list[str] = []
        finished = self.bot.metrics.games_finished
        for done in self.bot.metrics.latest_games(finished - self._counted):
            self.tally.started(done.game_id)
        self._counted = finished
        for game_id, held in list(self._cards.items()):
            if game_id in live and held.data["finished"] is None:
                continue
            if held.data["finished"] is None:
                outcome = next((o for o in reversed(self.bot.metrics.games)
                                if o.game_id == game_id), None)
                held.data = {**held.data, "our_turn": False,
                             "clocks": {**held.data["clocks"], "running": None},
                             "finished": view.finished(outcome, base_url=self.base_url,
                                                       export_path=export_path(game_id))}
                held.until_s = now_s + FINISHED_KEPT_S
                message = self._changed(held, with_board=False)
                if message is not None:
                    messages.append(message)
        ended = [gid for gid, held in self._cards.items() if held.data["finished"] is not None]
        excess = len(ended) - FINISHED_KEPT  # the oldest go first
        for index, game_id in enumerate(ended):
            if index < excess or self._cards[game_id].until_s <= now_s:
                del self._cards[game_id]
                self.evals.pop(game_id, None)
                messages.append(sse("gone", {"id": game_id}))
        return messages

    def _memory_sizes(self, now_s: float) -> dict[int, int]:
        if now_s - self._memory.at_s >= MEMORY_EVERY_S:
            self._memory = _Memory(now_s, self._memory_source())
        return self._memory.sizes

    def _service_state(self, now_s: float) -> dict[str, Any]:
        bot = self.bot
        client = bot.client
        metrics = bot.metrics
        queue = list(bot.queue)
        engine_pids = {gid: pid for gid, game in list(bot.games.items())
                       if (pid := game.mover.engine_pid) is not None}
        capped = bot.book.bots_capped_until
        return {
            "version": version(),
            "uptime_s": round(now_s - self.started_s, 1),
            "event_stream": ("connected" if EVENT_STREAM_KIND in client.open_streams
                             else "disconnected"),
            "stream_reconnects": metrics.stream_reconnects,
            "accepting": bot.accepting,
            "games_in_progress": len(bot.games),
            "queue": [{"id": c.id, "challenger": c.challenger.name,
                       "description": f"{c.variant} {c.speed} "
                                      f"{'rated' if c.rated else 'casual'}"} for c in queue],
            "challenges": view.decisions(list(metrics.recent_challenges)),
            "games_today": self.tally.count(),
            "bot_games_per_day": BOT_GAMES_PER_DAY,
            "bot_games_capped_until": capped if capped > self._wall() else None,
            "requests_last_minute": client.tally.last_minute(),
            "requests_per_minute": round(client.budget.rate_per_s * 60),
            "rate_limited": sum(client.tally.rate_limited.values()),
            # PV lines replaced unsent: moves first took the whole request budget.
            "pv_lines_dropped": client.budget.dropped_chat,
            "rate_limit_pauses": [{"kind": kind, "left_s": round(left_s, 1)}
                                  for kind, left_s in sorted(client.pauses_s().items())],
            "memory": view.memory(self._memory_sizes(now_s), engine_pids),
            "engine_restarts": metrics.engine_restarts,
            "moves": metrics.moves_sent,
            "games_finished": metrics.games_finished,
            "warnings": view.warnings(self.ring.entries),
            "tournaments": bot.arenas.summaries(),
        }
