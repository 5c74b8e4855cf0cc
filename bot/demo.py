"""`kibitz demo`: the bot plays one short game on a local sandbox, shown move by move.

Everything runs in this process: the sandbox server on a free loopback port,
a sandbox opponent (random moves, or a second copy of the built-in engine),
and the bot itself (`run_bot`, exactly as `kibitz play` runs it). The
terminal shows each move with both clocks, the bot's kibitz line (depth,
score, speed, PV: what spectators see in the chat), and the result; then
where the PGN was written. No account and no network are needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import chess

from bot.app import run_bot
from bot.engines.levels import GameLevel, Opponent, choose_level
from bot.engines.rules import EngineTable, GameFacts, pick_engine
from bot.features.pgn import pgn_path, write_pgn
from bot.ops.config import Config
from bot.ops.logs import setup_logging
from bot.watch.status import format_clock
from sandbox.games import ChatLine
from sandbox.opponent import ChallengeSpec
from sandbox.server import GameRecord, SandboxServer
from sandbox.timecontrol import TimeControl

log = logging.getLogger(__name__)

BOT_NAME = "kibitz"
OPPONENT_NAME = "sparring"
# A person of 1,200 in a casual game: the default strength rules play them at their level.
OPPONENT_RATING = 1200
# How often the game is looked at for new moves and chat lines.
WATCH_POLL_S = 0.1
# The engine is compiled on the very first run; the wait for the bot to be ready allows it.
READY_TIMEOUT_S = 1200.0
GAME_START_TIMEOUT_S = 60.0
# After the game: how long the bot may take to write its PGN and stop.
STOP_TIMEOUT_S = 60.0
# How long the chat is followed after the game, for the closing greetings.
GOODBYE_S = 1.0
# How long the next move waits for the bot's kibitz line of its previous move.
KIBITZ_HOLD_S = 1.0
# The opponent's thinking time per move when it is an engine: weak, and quick.
OPPONENT_MOVETIME_S = 0.05
MAX_CLOCK_MINUTES = 30
# Game statuses in words.
ENDINGS = {"mate": "checkmate", "resign": "resignation", "outoftime": "time",
           "timeout": "the opponent leaving", "draw": "agreement", "stalemate": "stalemate",
           "aborted": "the game was aborted"}


class DemoError(Exception):
    """The demo cannot start (bad --clock, for instance)."""


def parse_clock(text: str) -> tuple[int, int]:
    """"1+1" -> (60, 1): the initial time in seconds and the increment in seconds."""
    minutes, sep, increment = text.partition("+")
    try:
        base_s = round(float(minutes) * 60)
        increment_s = int(increment) if sep else 0
    except ValueError:
        raise DemoError(f"--clock {text!r}: expected MINUTES+INCREMENT, e.g. 1+1") from None
    if not 0 <= base_s <= MAX_CLOCK_MINUTES * 60 or not 0 <= increment_s <= 60 \
            or base_s + increment_s == 0:
        raise DemoError(f"--clock {text!r}: keep it short: up to {MAX_CLOCK_MINUTES} minutes "
                        "and 60 s increment, not 0+0")
    return base_s, increment_s


def demo_config(config: Config, games_dir: Path | None) -> Config:
    """The configuration the demo's bot runs with: the user's, fitted to one watched game."""
    return dataclasses.replace(
        config,
        # Ctrl-C ends the demo at once: resign the game rather than wait for it.
        game=dataclasses.replace(config.game, shutdown_grace_s=0.0, shutdown_action="resign"),
        # The demo draws its own view; the bot's summary and live view would interleave.
        log=dataclasses.replace(config.log, status_interval_s=0.0, live_view="never"),
        # Every move kibitzed, in the room the demo shows.
        chat=dataclasses.replace(config.chat, kibitz_every=1, kibitz_rooms=("spectator",)),
        pgn=dataclasses.replace(config.pgn, enabled=True,
                                dir=games_dir if games_dir is not None else config.pgn.dir),
    )


def demo_level(config: Config, base_s: int, increment_s: int) -> GameLevel:
    """The level the bot's strength rules give the demo's casual game against a person rated
    OPPONENT_RATING (the bot chooses it the same way at the game's start)."""
    speed = TimeControl(base_s, increment_s).speed
    facts = GameFacts("standard", speed, rated=False, bot=False, arena=False,
                      rating=OPPONENT_RATING)
    engine = pick_engine(EngineTable.from_config(config), facts)
    return choose_level(config.strength, facts, engine,
                        Opponent(OPPONENT_NAME, None, OPPONENT_RATING, bot=False))


class GameWatcher:
    """Prints a sandbox game as it goes: moves with clocks, the bot's chat lines, the result."""

    def __init__(self, server: SandboxServer, game_id: str, out: TextIO,
                 hold_s: float = KIBITZ_HOLD_S) -> None:
        self.server = server
        self.game_id = game_id
        self.out = out
        self.hold_s = hold_s
        self.shown_moves = 0
        self.shown_chat = 0
        # The bot's last move, as its kibitz line starts its PV ("14...Nd4+"), and since when
        # its line is awaited.
        self.awaiting: str | None = None
        self.awaiting_since = 0.0

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def header(self) -> None:
        record = self.server.game_record(self.game_id)
        self._print(f"\nGame {self.game_id}: {record.white} (white) vs {record.black} (black)\n")

    def _show_chat(self, lines: Sequence[ChatLine]) -> None:
        for line in lines:
            if line.username.lower() != "lichess":
                self._print(f"      {line.username} ({line.room}): {line.text}")
        self.shown_chat += len(lines)

    def _kibitz_arrived(self, record: GameRecord, now: float) -> bool:
        """Show the chat up to the awaited kibitz line; False while it is still awaited."""
        assert self.awaiting is not None
        pending = record.chat[self.shown_chat:]
        key = f"PV {self.awaiting}"
        for index, line in enumerate(pending):
            if line.username == BOT_NAME and key in line.text:
                self._show_chat(pending[: index + 1])
                self.awaiting = None
                return True
        if now - self.awaiting_since < self.hold_s:
            return False
        self.awaiting = None  # no line for this move (a book move, say): go on without it
        return True

    def poll(self) -> bool:
        """Show what is new, each kibitz line right below its move; True once all is shown
        of a finished game."""
        now = time.monotonic()
        record = self.server.game_record(self.game_id)
        game = self.server.game(self.game_id)
        clocks_ms = list(game.clock_ms_history)
        board = chess.Board(record.initial_fen or chess.STARTING_FEN,
                            chess960=game.board.chess960)
        for uci in record.moves[: self.shown_moves]:
            board.push_uci(uci)
        while True:
            if self.awaiting is not None and not self._kibitz_arrived(record, now):
                return False
            if self.shown_moves >= len(record.moves):
                break
            ply = self.shown_moves
            move = board.parse_uci(record.moves[ply])
            white = board.turn == chess.WHITE
            mover = record.white if white else record.black
            number, san = board.fullmove_number, board.san(move)
            board.push(move)
            clock = format_clock(clocks_ms[ply] / 1000) if ply < len(clocks_ms) else ""
            numbered = f"{number}. {san}" if white else f"{number}... {san}"
            self._print(f"  {numbered:<14} {mover:<10} {clock:>7}")
            self.shown_moves += 1
            if mover == BOT_NAME:
                self.awaiting = f"{number}. {san}" if white else f"{number}...{san}"
                self.awaiting_since = now
        self._show_chat(record.chat[self.shown_chat:])
        return record.finished

    def result(self) -> str:
        record = self.server.game_record(self.game_id)
        how = ENDINGS.get(record.status, record.status)
        if record.winner is None:
            score = "1/2-1/2" if record.status in ("draw", "stalemate") else "no result"
            return f"{score}, {how}"
        winner = record.white if record.winner == "white" else record.black
        score = "1-0" if record.winner == "white" else "0-1"
        return f"{score}, {winner} wins by {how}"


async def _first(*tasks: asyncio.Future[Any], timeout_s: float | None = None) -> None:
    await asyncio.wait(tasks, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)


async def run_demo(config: Config, *, clock: str = "1+1", opponent: str = "random",
                   games_dir: Path | None = None, log_level: str = "warning",
                   out: TextIO | None = None,
                   install_logging: bool = True) -> int:
    """Play one demo game and return an exit code (0 when the game was played to the end)."""
    show: TextIO = out or sys.stdout
    base_s, increment_s = parse_clock(clock)
    settings = demo_config(config, games_dir)
    if install_logging:
        setup_logging(log_level)

    def say(text: str) -> None:
        print(text, file=show, flush=True)

    server = SandboxServer()
    url = await server.start("127.0.0.1", 0)
    bot: asyncio.Task[int] | None = None
    try:
        token = server.add_account(BOT_NAME, bot=True)
        say(f"Kibitz demo: a local sandbox server is running at {url}.")
        say(f"The bot plays as {BOT_NAME!r} against {OPPONENT_NAME!r} "
            f"({'random moves' if opponent == 'random' else 'the built-in engine, quick'}), "
            f"at {clock}.")
        say(f"{OPPONENT_NAME!r} is a person rated {OPPONENT_RATING} and the game is casual: "
            f"the strength rules give it {demo_level(settings, base_s, increment_s)} "
            "(README \"Playing people at their level\").")
        say("Starting the engine (the very first run compiles it, which takes a while)...")
        ready = asyncio.Event()
        stop = asyncio.Event()
        bot = asyncio.create_task(run_bot(settings, url=url, token=token, stop=stop,
                                          on_ready=lambda _me: ready.set()), name="demo bot")
        waiting = asyncio.ensure_future(ready.wait())
        await _first(waiting, bot, timeout_s=READY_TIMEOUT_S)
        waiting.cancel()
        if bot.done():
            say("The bot stopped before it was ready; see the messages above.")
            return bot.result() or 1
        if not ready.is_set():
            say(f"The bot was not ready within {READY_TIMEOUT_S:.0f} s.")
            stop.set()
            return await bot or 1

        engine = [sys.executable, "-m", "engine"] if opponent == "engine" else None
        spec = ChallengeSpec(BOT_NAME, base_s, increment_s, repeat=False)
        await server.start_opponent(OPPONENT_NAME, engine=engine, challenge=spec,
                                    movetime_s=OPPONENT_MOVETIME_S, accept=False,
                                    rating=OPPONENT_RATING,
                                    greeting="Good luck, have fun!")
        game_id = await _wait_game(server, bot)
        if game_id is None:
            say("No game started; see the messages above.")
            stop.set()
            return await bot or 1
        watcher = GameWatcher(server, game_id, show)
        watcher.header()
        finished = await _watch(watcher, bot)
        say(f"\nResult: {watcher.result()}" if finished else "\nThe demo was stopped.")
        stop.set()
        code = 1
        with contextlib.suppress(TimeoutError):
            code = await asyncio.wait_for(asyncio.shield(bot), STOP_TIMEOUT_S)
        path = pgn_path(settings.pgn.dir, settings.pgn.grouping, game_id=game_id,
                        opponent=OPPONENT_NAME)
        if not path.exists():  # the bot did not write it: the server's export stands in
            await asyncio.to_thread(write_pgn, path, server.game_record(game_id).pgn)
        say(f"The game's PGN is in {path}")
        return code if finished else (code or 130)
    finally:
        if bot is not None and not bot.done():  # an error above, or a bot that would not stop
            bot.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await bot
        await server.stop()


async def _wait_game(server: SandboxServer, bot: asyncio.Task[int]) -> str | None:
    waiting = asyncio.ensure_future(server.wait_for_game(BOT_NAME, GAME_START_TIMEOUT_S))
    await _first(waiting, bot)
    if not waiting.done():
        waiting.cancel()
        return None
    try:
        return waiting.result()
    except TimeoutError:
        return None


async def _watch(watcher: GameWatcher, bot: asyncio.Task[int],
                 poll_s: float = WATCH_POLL_S) -> bool:
    """Show the game until it ends (True) or the bot stops first (False)."""
    while not bot.done():
        if watcher.poll():
            await asyncio.sleep(GOODBYE_S)  # the closing greetings follow the last move
            watcher.poll()
            return True
        await asyncio.sleep(poll_s)
    return watcher.poll()

