"""The bot's lifecycle: `run_bot` assembles the parts (token check, engine host and
engines, client, status page, features), runs the bot and closes them; `Bot` follows the
event stream, starts and ends the games, and shuts down.

What it hands on: challenges to the queue (bot.challenges.queue), the slots they wait for to
one busy rule (bot.challenges.slots), each game's engine to the chooser
(bot.engines.choice), whether the token may play to bot.lichess.account, the stop signals
to bot.ops.signals.

One event loop. The long-lived tasks (event stream, challenge queue, spare engine, status)
and every game live in one TaskGroup; each game runs inside its own error boundary, so one
broken game never takes the others down. Only `AuthError` (the token stopped working) is
fatal for the whole bot.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Callable, Collection, Coroutine
from typing import Any, Final

from bot.challenges.blocklists import BlockLists
from bot.challenges.matchmaking import Matchmaker
from bot.challenges.opponents import OpponentBook
from bot.challenges.queue import ChallengeQueue
from bot.challenges.slots import Slots
from bot.challenges.terms import Verdict
from bot.engines.choice import Chooser, engine_host
from bot.engines.cores import cores_report
from bot.engines.engineset import EngineSet
from bot.engines.host import EngineHost, EngineHostError
from bot.engines.memory import memory_report
from bot.engines.pool import WARM_UP_TIMEOUT_S, EngineFailure
from bot.features.wiring import FeatureError, Features
from bot.game.conduct import TakebackLedger
from bot.game.correspondence import CorrespondenceVisitor
from bot.game.game import Game, Me
from bot.game.hooks import GameHooks
from bot.game.metrics import Metrics, ThinkingLoad
from bot.lichess.account import AccountError, play_problems, read_account
from bot.lichess.client import (
    AuthError,
    ClientTimings,
    Lichess,
    LichessError,
    StreamOpened,
)
from bot.lichess.events import (
    Challenge,
    ChallengeCanceled,
    ChallengeDeclined,
    ChallengeEvent,
    EventError,
    GameFinish,
    GameInfo,
    GameStart,
    UnknownEvent,
    is_ongoing,
    parse_event,
)
from bot.ops.config import Config
from bot.ops.logs import live_view_handler
from bot.ops.sdnotify import Notify
from bot.ops.signals import install_stop_signals
from bot.tournaments.control import ControlDir
from bot.tournaments.desk import ArenaDesk
from bot.watch.server import Watch, WatchError, WatchSettings
from bot.watch.status import bot_status, run_status

log = logging.getLogger(__name__)

EXIT_OK: Final = 0
EXIT_FATAL: Final = 1
EXIT_CONFIG: Final = 3  # a configured file (book, tablebase) cannot be used: a person must fix it
EXIT_ACCOUNT: Final = 4  # the token or the account cannot play: a restart would not help
EXIT_INTERRUPTED: Final = 130
LEAVE_TIMEOUT_S: Final = 15.0  # after the grace period: resign (or abort) and see the games end
NOTIFY_INTERVAL_S: Final = 5.0  # systemd status/watchdog heartbeat
CRASH_RESIGN_TIMEOUT_S: Final = 10.0  # a crashed game's resign gets at most this


class FatalError(Exception):
    """The bot cannot run: bad token, wrong account type, engine that does not start."""


class AccountProblem(FatalError):
    """The token or the account cannot play (a person must fix it)."""


class ConfigProblem(FatalError):
    """A configured feature cannot be used, e.g. a missing book file (a person must fix it)."""


class Bot:
    """One running bot: owns the games and the shutdown sequence; the challenges wait in
    `challenges`, the slots they wait for are `slots`."""

    def __init__(
        self,
        config: Config,
        client: Lichess,
        engines: EngineSet,
        me: Me,
        *,
        hooks: GameHooks,
        metrics: Metrics,
        notify: Notify | None = None,
        alarm_clock: Callable[[], float] = time.monotonic,
        arena_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.alarm_clock = alarm_clock  # the clock of each game's alarms
        self.client = client
        self.engines = engines
        self.me = me
        self.metrics = metrics
        self.notify = notify
        self.ledger = TakebackLedger(config.state_dir, config.takeback.max_per_game)
        self.load = ThinkingLoad()
        self.games: dict[str, Game] = {}
        self.stop_requested = asyncio.Event()
        self.connected = asyncio.Event()  # the event stream is open (the bot is ready)
        self._tg: asyncio.TaskGroup | None = None
        self.book = OpponentBook(config.state_dir, config.challenge.recent_window_s)
        self.chooser = Chooser(config, engines, self.book.known_bots)
        self.arenas = ArenaDesk(config.tournaments, client, me.name,
                                control=ControlDir(config.state_dir),
                                on_change=lambda: self.slots.changed.set(), clock=arena_clock)
        self.slots = Slots(config.challenge.concurrency, self.arenas,
                           playing=lambda: [game.info for game in self.games.values()],
                           waiting=lambda: self.challenges.queue,
                           pending=lambda: self.matchmaker.pending_count)
        self.block_lists = BlockLists(config.challenge.online_block_lists, config.state_dir)
        self.matchmaker = Matchmaker(config, client, me.id, self.book, is_idle=self.slots.idle,
                                     blocked=lambda: self.block_lists.names,
                                     playable=lambda: self.engines.variants)
        self.challenges = ChallengeQueue(config.challenge, client, me.id, self.slots,
                                         book=self.book, block_lists=self.block_lists,
                                         engines=engines, matchmaker=self.matchmaker,
                                         decided=self._decided, spawn=self._spawn)
        if hooks.challenge_queue is None:
            hooks = dataclasses.replace(hooks, challenge_queue=self.challenges.names)
        self.hooks = hooks
        self.correspondence = CorrespondenceVisitor(config.correspondence, client, self._visit,
                                                 self.stop_requested,
                                                 finished_unwatched=hooks.finished_unwatched)

    @property
    def queue(self) -> Collection[Challenge]:
        """The challenges waiting for a slot, in order (what the status page shows)."""
        return self.challenges.queue

    @property
    def accepting(self) -> bool:
        return self.slots.accepting

    # --- the whole life -------------------------------------------------------------------

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            self._tg = tg
            long_lived = [
                tg.create_task(self._follow_events(), name="event stream"),
                tg.create_task(self.challenges.run(), name="challenge queue"),
                tg.create_task(self.engines.keep_spare(), name="spare engine"),
                tg.create_task(self._heartbeat(), name="status"),
                tg.create_task(self.book.keep_ratings(self.client), name="ratings"),
                tg.create_task(self.block_lists.run(self.config.challenge.block_list_refresh_s),
                               name="block lists"),
                tg.create_task(self.matchmaker.run(), name="matchmaking"),
                tg.create_task(self.correspondence.run(), name="correspondence"),
                tg.create_task(self.arenas.run(), name="arenas"),
            ]
            await self.stop_requested.wait()
            await self._shut_down()
            for task in long_lived:
                task.cancel()

    def _spawn(self, coroutine: Coroutine[Any, Any, None], name: str) -> None:
        assert self._tg is not None
        self._tg.create_task(coroutine, name=name)

    def _decided(self, challenge: Challenge, verdict: Verdict, decision: str) -> None:
        """Counted for /metrics and shown on the status page."""
        rated = "rated" if challenge.rated else "casual"
        self.metrics.challenge_decided(
            challenge.id, challenge.challenger.name,
            f"{challenge.variant} {challenge.speed} {rated}", decision,
            verdict.reason.value if verdict.reason is not None else "", verdict.why)

    # --- events -----------------------------------------------------------------------------

    async def _follow_events(self) -> None:
        async for item in self.client.follow_events():
            if isinstance(item, StreamOpened):
                if item.attempt:
                    log.info("event stream reopened (attempt %d)", item.attempt)
                    self.metrics.stream_reconnects += 1
                self.connected.set()
                continue
            try:
                event = parse_event(item)
            except EventError as exc:
                log.warning("skipped a malformed event: %s", exc)
                continue
            if isinstance(event, GameStart):
                self._on_game_start(event.game)
            elif isinstance(event, GameFinish):
                self._on_game_finish(event.game)
            elif isinstance(event, ChallengeEvent):
                self.challenges.on_challenge(event.challenge)
            elif isinstance(event, ChallengeCanceled):
                self.challenges.forget(event.challenge_id, "canceled")
                self.matchmaker.on_canceled(event.challenge_id)
            elif isinstance(event, ChallengeDeclined):
                log.info("our challenge %s was declined (%s)", event.challenge_id,
                         event.reason_key)
                self.matchmaker.on_declined(event.challenge_id, event.reason_key)
            elif isinstance(event, UnknownEvent):
                log.info("ignored event of unknown type %r", event.type)

    def _on_game_start(self, info: GameInfo) -> None:
        self.slots.accepted.pop(info.game_id, None)
        if info.game_id in self.games:
            return  # re-sent after a reconnect
        if not is_ongoing(info.status):
            return
        self.matchmaker.on_game_start(info)
        correspondence = self.correspondence.is_correspondence(info)
        self.book.engage(info.game_id, info.opponent_id, realtime=not correspondence)
        if correspondence:
            self.correspondence.on_game_event(info)  # visited on our turn; it holds no slot
            return
        game = self._visit(info.game_id, None, info)
        self.games[info.game_id] = game
        self._spawn(self._game_boundary(game), f"game {info.game_id}")

    def _visit(self, game_id: str, think_s: float | None, info: GameInfo | None = None) -> Game:
        """A game to play to its end (think_s None) or a correspondence visit, on the
        engine the `engines` rules pick for it."""
        name = self.chooser.at_start(info)
        choice = self.chooser.choice(name)
        deferred = info is not None and think_s is None and self.chooser.title_matters(info)
        if think_s is None:
            log.info("game %s starts against %s%s", game_id,
                     info.opponent_name if info is not None else "?",
                     " (its engine chosen at gameFull)" if deferred
                     else f" on engine {name} ({choice.pool.name})" if choice.label else "")
        return Game(
            game_id, client=self.client, config=choice.config, engines=choice.pool,
            me=self.me, hooks=self.hooks, load=self.load, metrics=self.metrics,
            ledger=self.ledger, info=info, think_s=think_s, alarm_clock=self.alarm_clock,
            engine_label=choice.label,
            choose_engine=self.chooser.at_full(info) if deferred and info is not None
            else None,
        )

    def _on_game_finish(self, info: GameInfo) -> None:
        self.slots.accepted.pop(info.game_id, None)
        self.book.release(info.game_id)
        game = self.games.get(info.game_id)
        if game is not None:
            game.server_finished(info)
        elif self.correspondence.is_correspondence(info):
            self.correspondence.on_game_finish(info)  # it may have ended between visits
        self.arenas.on_game_finish(info)
        self.slots.changed.set()

    async def _game_boundary(self, game: Game) -> None:
        """One game's error boundary: whatever breaks in it stays in it (except a dead token)."""
        try:
            await game.run()
        except* AuthError:
            raise
        except* Exception as group:
            log.error("game %s crashed: %r", game.id, group.exceptions[0],
                      exc_info=group.exceptions[0])
            with contextlib.suppress(LichessError, TimeoutError):
                await asyncio.wait_for(self.client.resign(game.id), CRASH_RESIGN_TIMEOUT_S)
        finally:
            self.games.pop(game.id, None)
            self.book.release(game.id)  # in case its gameFinish never came
            self.slots.changed.set()

    # --- status and shutdown ---------------------------------------------------------------

    def status_line(self) -> str:
        return (f"{len(self.games)} games, {len(self.queue)} queued, "
                f"{self.load.thinking} thinking, {self.engines.running} engines")

    async def _heartbeat(self) -> None:
        """The status summary in the log and for systemd, and the live view on a terminal."""
        await run_status(bot_status(self, arenas=self.arenas.status_lines),
                         interval_s=self.config.log.status_interval_s,
                         live=live_view_handler(self.config.log.live_view),
                         notify=self.notify, notify_every_s=NOTIFY_INTERVAL_S)

    async def _shut_down(self) -> None:
        self.slots.accepting = False
        await self.matchmaker.stop()
        await self.arenas.stop()
        grace_s = self.config.game.shutdown_grace_s
        self.challenges.decline_all()
        if self.games:
            log.info("stopping: %d games may finish within %.0f s", len(self.games), grace_s)
            await self._wait_games(grace_s)
        if self.games:
            action = self.config.game.shutdown_action
            log.info("grace period over: %s %d games", action, len(self.games))
            # One deadline for the requests and the games' ends, so a server that hangs
            # cannot stretch the stop past systemd's TimeoutStopSec.
            deadline = time.monotonic() + LEAVE_TIMEOUT_S
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(LEAVE_TIMEOUT_S):
                    await asyncio.gather(*(game.leave(action)
                                           for game in list(self.games.values())))
            await self._wait_games(max(0.0, deadline - time.monotonic()))

    async def _wait_games(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.games and time.monotonic() < deadline:
            self.slots.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.slots.changed.wait(), deadline - time.monotonic())


async def check_account(client: Lichess, token: str) -> Me:
    """The token must be fit to play (bot.lichess.account decides); FatalError says why not."""
    try:
        info = await read_account(client, token)
    except AuthError as exc:
        raise AccountProblem(f"the server rejected the token ({exc.message})") from exc
    except AccountError as exc:
        raise (FatalError if exc.unreachable else AccountProblem)(str(exc)) from exc
    problems = play_problems(info)
    if problems:
        raise AccountProblem("; ".join(problems))
    return Me(info.user_id, info.username)


async def run_bot(
    config: Config,
    *,
    url: str,
    token: str,
    stop: asyncio.Event | None = None,
    handle_signals: bool = True,
    hooks: GameHooks | None = None,
    metrics: Metrics | None = None,
    timings: ClientTimings | None = None,
    on_ready: Callable[[Me], object] | None = None,
    notify: Notify | None = None,
    alarm_clock: Callable[[], float] = time.monotonic,
    watch: Watch | None = None,
    arena_clock: Callable[[], float] = time.monotonic,
) -> int:
    """Run the bot until stopped; the exit code (0 after a clean stop).

    `stop` (tests, embedding) asks for the same graceful stop as SIGTERM. `hooks` plugs in the
    game features (default: from the config). `on_ready` is called once the engine is warm
    and the event stream is open; `notify` receives systemd notify lines. `alarm_clock` is the
    time of the games' alarms (abort, claims), which a test may drive itself, and
    `arena_clock` the arenas' (pauses, playbans, the next look). `watch` serves the status
    page instead of the one `config.watch` describes.
    """
    main = asyncio.current_task()
    hard_stopped = False

    def hard_stop() -> None:
        nonlocal hard_stopped
        hard_stopped = True
        if main is not None:
            main.cancel()

    metrics = metrics if metrics is not None else Metrics()
    # Closed in the reverse order of their making, after the exit code is known.
    async with contextlib.AsyncExitStack() as parts:
        host = engine_host(config)
        if host is not None:
            parts.push_async_callback(host.close)
        engines = EngineSet.from_config(config, host.engine_command if host is not None else None)
        parts.push_async_callback(engines.close)
        client = Lichess(url, token, timings=timings)
        parts.push_async_callback(client.close)
        try:
            if watch is None and config.watch.enabled:
                try:
                    watch = Watch(WatchSettings.resolve(config.watch, os.environ), base_url=url,
                                  token=token)
                except WatchError as exc:
                    raise ConfigProblem(str(exc)) from exc
            if watch is not None:
                parts.push_async_callback(watch.close)
            me = await check_account(client, token)
            log.info("logged in as %s on %s", me.name, url)
            if hooks is None:
                try:
                    features = Features(config, url=url, token=token)
                except FeatureError as exc:
                    raise ConfigProblem(str(exc)) from exc
                parts.push_async_callback(features.close)
                hooks = features.hooks()
            if watch is not None:
                hooks = watch.hooks(hooks)
            bot = Bot(config, client, engines, me, hooks=hooks, metrics=metrics, notify=notify,
                      alarm_clock=alarm_clock, arena_clock=arena_clock)
            if watch is not None:
                watch.attach(bot)
                await watch.start()
            if handle_signals:
                parts.callback(install_stop_signals(
                    bot.stop_requested, hard_stop, grace_s=config.game.shutdown_grace_s,
                    notify=notify))
            _report_resources(config)
            await _warm_up(engines, host)
            async with asyncio.TaskGroup() as tg:
                runner = tg.create_task(bot.run(), name="bot")
                forward = (tg.create_task(_forward(stop, bot.stop_requested),
                                          name="stop request") if stop is not None else None)
                keeper = (tg.create_task(host.keep_running(WARM_UP_TIMEOUT_S),
                                         name="engine host") if host is not None else None)
                await _announce_ready(bot, runner, me, on_ready, notify)
                await asyncio.wait({runner})
                for task in (forward, keeper):
                    if task is not None:
                        task.cancel()
            log.info("stopped")
            return EXIT_OK
        except FatalError as exc:
            log.critical("%s", exc)
            if isinstance(exc, AccountProblem):
                return EXIT_ACCOUNT
            return EXIT_CONFIG if isinstance(exc, ConfigProblem) else EXIT_FATAL
        except BaseExceptionGroup as group:
            auth = group.subgroup(AuthError)
            if auth is not None:
                log.critical("the server rejected the token: %s", auth.exceptions[0])
                return EXIT_ACCOUNT
            if group.subgroup(asyncio.CancelledError) is not None and hard_stopped:
                return _interrupted(main)
            failure = group.subgroup(Exception)
            if failure is None:
                raise
            log.critical("the bot stopped on an unexpected error", exc_info=failure)
            return EXIT_FATAL
        except asyncio.CancelledError:
            if hard_stopped:
                return _interrupted(main)
            raise


def _report_resources(config: Config) -> None:
    """The memory the engines are expected to take, and warnings about memory and cores."""
    usage, warning = memory_report(config)
    log.info("%s", usage)
    if warning is not None:
        log.warning("%s", warning)
    cores_warning = cores_report(config)
    if cores_warning is not None:
        log.warning("%s", cores_warning)


async def _warm_up(engines: EngineSet, host: EngineHost | None) -> None:
    """Start the engine host (games play on without it) and warm every engine up."""
    log.info("warming up the engine (%s)", engines.name)
    try:
        if host is not None:
            try:
                await host.start(WARM_UP_TIMEOUT_S)
            except EngineHostError as exc:  # each game's engine then runs on its own
                log.error("%s: engines run in processes of their own", exc)
        name = await engines.warm_up()
    except EngineFailure as exc:
        raise FatalError(f"the engine does not work: {exc}") from exc
    log.info("engine ready: %s", name)


def _interrupted(main: asyncio.Task[object] | None) -> int:
    if main is not None:
        main.uncancel()
    log.warning("interrupted: engines closed, running games left as they are")
    return EXIT_INTERRUPTED


async def _forward(source: asyncio.Event, target: asyncio.Event) -> None:
    await source.wait()
    target.set()


async def _announce_ready(bot: Bot, runner: asyncio.Task[None], me: Me,
                          on_ready: Callable[[Me], object] | None, notify: Notify | None) -> None:
    """Wait for the event stream to open (or the bot to end first), then say we are ready."""
    connected = asyncio.ensure_future(bot.connected.wait())
    try:
        await asyncio.wait({connected, runner}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        connected.cancel()
    if not bot.connected.is_set():
        return
    log.info("ready: accepting challenges (up to %d games at once)",
             bot.config.challenge.concurrency)
    if notify is not None:
        notify("READY=1")
    if on_ready is not None:
        on_ready(me)
