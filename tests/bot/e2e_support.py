"""Running the real bot against the in-process sandbox: real HTTP on loopback, real engines."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import chess
import pytest

from bot.app import run_bot
from bot.game.game import Me
from bot.game.hooks import GameHooks
from bot.game.metrics import Metrics
from bot.lichess.client import ClientTimings
from bot.ops.config import Config, parse_config
from bot.watch.server import Watch
from sandbox.ratelimit import RateLimits
from sandbox.server import GameRecord, SandboxServer
from sandbox.timecontrol import variant_board

BOT = "kibitz"
# How long a test waits for an event before it fails: only a guard against a hang, so
# generous enough for a machine where other work takes most of the cores.
GUARD_S = 60.0
# How long a bot may take to be ready: its engine compiles on the first start of a checkout.
READY_TIMEOUT_S = 120.0
STOCKFISH = shutil.which("stockfish") or "/usr/games/stockfish"
ROOT = Path(__file__).resolve().parents[2]

# Fast reactions for tests: short silences, short backoffs, a 1 s "minute" after a 429.
FAST_TIMINGS = ClientTimings(
    request_timeout_s=3.0, event_stream_silence_s=1.5, game_stream_silence_s=1.5,
    rate_limit_pause_s=1.0,
    backoff_base_s=0.05, backoff_cap_s=0.4, retry_deadline_s=20.0,
)

# For tests about something else than Lichess's request budget: quick games at once ask more
# than it allows, and PV lines would be held and answers wait (the budget has its own tests).
UNBUDGETED = dataclasses.replace(FAST_TIMINGS, requests_per_minute=100_000, request_burst=1000)
UNLIMITED = RateLimits(requests_per_minute=100_000)

# Debian's engines for variants and XBoard (`make fairy-stockfish xboard-engines`).
FAIRY_STOCKFISH = shutil.which("fairy-stockfish") or "/usr/games/fairy-stockfish"
HAVE_FAIRY_STOCKFISH = Path(FAIRY_STOCKFISH).exists()
NEEDS_FAIRY_STOCKFISH = pytest.mark.skipif(
    not HAVE_FAIRY_STOCKFISH,
    reason="Debian's fairy-stockfish is not installed (`make fairy-stockfish` installs it)")
PHALANX = shutil.which("phalanx") or "/usr/games/phalanx"
NEEDS_PHALANX = pytest.mark.skipif(
    not Path(PHALANX).exists(),
    reason="Debian's phalanx is not installed (`make xboard-engines` installs it)")

BUILTIN = [sys.executable, "-m", "engine"]
FAKE_ENGINE = str(Path(__file__).with_name("fake_engine.py"))  # misbehaves on request
HAVE_STOCKFISH = Path(STOCKFISH).exists()


def engine_command() -> list[str]:
    """The engine most end-to-end tests play with: KIBITZ_TEST_ENGINE=builtin|stockfish.

    The built-in engine by default, the one the bot ships with, so every machine runs the
    same suite; KIBITZ_TEST_ENGINE=stockfish (after `make stockfish`) plays it with Debian's
    Stockfish instead, to tell a bot fault from an engine fault."""
    choice = os.environ.get("KIBITZ_TEST_ENGINE", "builtin")
    return [STOCKFISH] if choice == "stockfish" and HAVE_STOCKFISH else list(BUILTIN)


def strong_opponent() -> list[str]:
    """A sandbox opponent that does not lose quickly."""
    return [STOCKFISH] if HAVE_STOCKFISH else list(BUILTIN)


# The end-to-end tests play at full strength (no strength rule) unless they ask for levels:
# the levels have tests of their own (tests/bot/test_levels_e2e.py), the others want the
# engine's own play.
FULL_STRENGTH = "{rules: []}"


def make_config(tmp_path: Path, extra: str = "", *, concurrency: int = 4,
                max_move_s: float = 0.05, strength: str = FULL_STRENGTH) -> Config:
    """A test configuration: quick moves, quick aborts, PV in both rooms, files in tmp_path;
    `strength`: the `strength` section (full strength by default)."""
    command = ", ".join(f'"{part}"' for part in engine_command())
    text = f"""
state_dir: "{tmp_path / 'state'}"
engine:
  command: [{command}]
  options: {{Hash: 16}}
  move_overhead_s: 0.05
  first_move_s: 0.2
  max_move_s: {max_move_s}
challenge:
  concurrency: {concurrency}
game:
  abort_after_s: 2
  shutdown_grace_s: 5
strength: {strength}
chat:
  kibitz_every: 1
  kibitz_rooms: [spectator, player]
pgn:
  dir: "{tmp_path / 'games'}"
log:
  status_interval_s: 0
watch:
  port: 0
{extra}
"""
    return parse_config(text, "test config")


class AlarmClock:
    """The games' alarms time, moved by the test: abort and claim timers without waiting.

    Each read is counted, so a test can wait until the alarms have looked at the time
    after it moved it (every read after `advance` is the alarms looking at the game)."""

    def __init__(self) -> None:
        self.now_s = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds

    async def looked_at(self, times: int = 2) -> None:
        """Wait until the alarms have read the time `times` more times."""
        target = self.reads + times
        await wait_for(lambda: self.reads >= target, GUARD_S)


@dataclass
class BotRun:
    server: SandboxServer
    token: str
    task: asyncio.Task[int]
    stop: asyncio.Event
    metrics: Metrics
    ready: asyncio.Event
    me: list[Me] = field(default_factory=list)

    async def finish(self, timeout_s: float = 30.0) -> int:
        self.stop.set()
        return await asyncio.wait_for(self.task, timeout_s)

    async def done_with(self, game_ids: Iterable[str], timeout_s: float = 30.0) -> None:
        """Wait until the bot is through with these games: a game records its outcome in the
        metrics last, after its kibitz lines, its goodbye and its PGN file."""
        wanted = set(game_ids)
        await wait_for(lambda: wanted <= {o.game_id for o in self.metrics.games}, timeout_s)


@contextlib.asynccontextmanager
async def running_bot(server: SandboxServer, config: Config, *, token: str | None = None,
                      timings: ClientTimings = FAST_TIMINGS, hooks: GameHooks | None = None,
                      url: str | None = None,
                      alarm_clock: Callable[[], float] = time.monotonic,
                      watch: Watch | None = None,
                      arena_clock: Callable[[], float] = time.monotonic,
                      ) -> AsyncIterator[BotRun]:
    """The bot running on `server` (or at `url`, a proxy in front of it) until the block ends,
    then stopped gracefully."""
    if token is None:
        token = server.add_account(BOT, bot=True)
    stop = asyncio.Event()
    ready = asyncio.Event()
    metrics = Metrics()
    me: list[Me] = []

    def on_ready(who: Me) -> None:
        me.append(who)
        ready.set()

    task = asyncio.create_task(run_bot(
        config, url=url or server.url, token=token, stop=stop, handle_signals=False, hooks=hooks,
        metrics=metrics, timings=timings, on_ready=on_ready, alarm_clock=alarm_clock,
        watch=watch, arena_clock=arena_clock,
    ))
    run = BotRun(server, token, task, stop, metrics, ready, me)
    try:
        waiter = asyncio.ensure_future(ready.wait())
        await asyncio.wait({waiter, task}, timeout=READY_TIMEOUT_S,
                           return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if task.done():
            raise AssertionError(f"the bot stopped before it was ready: {task.result()}")
        if not ready.is_set():  # a slow start must fail here, not as an unclear later check
            raise AssertionError(f"the bot was not ready after {READY_TIMEOUT_S:.0f} s: its "
                                 "engine not warm or its event stream not open")
        yield run
    finally:
        stop.set()
        if not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 30)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task


async def bot_games(server: SandboxServer, count: int, timeout_s: float = GUARD_S) -> list[str]:
    """Ids of the bot's games as they start, until `count` have started."""
    account = server.account(BOT)
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while len(seen) < count:
        for game, _color in server.lobby.ongoing(account):
            if game.id not in seen:
                seen.append(game.id)
        for record in server.game_records():
            if BOT in (record.white.lower(), record.black.lower()) and record.id not in seen:
                seen.append(record.id)
        if time.monotonic() > deadline:
            raise AssertionError(f"only {len(seen)} of {count} games started")
        await asyncio.sleep(0.05)
    return seen[:count]


def assert_legal(record: GameRecord) -> chess.Board:
    """Replays the server's record: every move legal, none repeated by a stale request."""
    board = variant_board(record.variant, record.initial_fen)
    for uci in record.moves:
        move = board.parse_uci(uci)
        assert board.is_legal(move), f"{record.id}: illegal {uci} in {board.fen()}"
        board.push(move)
    return board


async def post_as(server: SandboxServer, token: str, path: str) -> int:
    """A command sent as another account (the opponent resigns, offers a draw, ...)."""
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as session, \
            session.post(server.url + path) as resp:
        await resp.read()
        return resp.status


def quiet_logs() -> None:
    logging.getLogger("sandbox").setLevel(logging.WARNING)


async def wait_for(condition: Callable[[], bool], timeout_s: float = GUARD_S) -> None:
    """Poll the sandbox's state (it has no event to wait on) until `condition` holds."""
    async with asyncio.timeout(timeout_s):
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.05)
