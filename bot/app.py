"""The bot's lifecycle: token check, engine warm-up, the event stream, challenges, games,
signals and shutdown.

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
import signal
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from http import HTTPStatus
from typing import Final

from bot.challenges.blocklists import BlockLists
from bot.challenges.matchmaking import Matchmaker
from bot.challenges.opponents import OpponentBook, ratelimit_of
from bot.challenges.policy import finer_verdict, judge, sort_queue
from bot.challenges.rules import DeclineReason, Verdict, is_own_challenge
from bot.engines.cores import cores_report
from bot.engines.engineset import EngineSet, challenge_facts, game_facts, uses_host
from bot.engines.host import EngineHost, EngineHostError, socket_path
from bot.engines.memory import memory_report
from bot.engines.pool import WARM_UP_TIMEOUT_S, EngineFailure
from bot.engines.rules import EngineTable, reachable
from bot.features.wiring import FeatureError, Features
from bot.game.conduct import TakebackLedger
from bot.game.correspondence import CorrespondenceDesk
from bot.game.game import EngineChoice, Game, Me
from bot.game.hooks import GameHooks
from bot.game.metrics import Metrics, ThinkingLoad
from bot.lichess.client import (
    BOT_DAY_KEY,
    AuthError,
    ClientTimings,
    Lichess,
    LichessError,
    RateLimited,
    RequestError,
    StreamOpened,
    Unavailable,
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
from bot.tournaments.control import ControlDir
from bot.tournaments.desk import ArenaDesk
from bot.tournaments.rules import is_mandatory
from bot.watch.server import Watch, WatchError, WatchSettings
from bot.watch.status import bot_status, run_status

log = logging.getLogger(__name__)

EXIT_OK: Final = 0
EXIT_FATAL: Final = 1
EXIT_CONFIG: Final = 3  # a configured file (book, tablebase) cannot be used: a person must fix it
EXIT_ACCOUNT: Final = 4  # the token or the account cannot play: a restart would not help
EXIT_INTERRUPTED: Final = 130
ACCEPTED_TTL_S: Final = 30.0  # an accepted challenge holds a slot until its gameStart, at most
MAX_QUEUE: Final = 50  # challenges waiting for a slot; more are declined "later"
REMEMBERED_CHALLENGES: Final = 2000  # ids answered already (reconnects re-send them)
QUEUE_TICK_S: Final = 5.0  # the challenge queue looks at expired accepts this often
# lila sweeps a real-time challenge "offline" once unseen for 20 s, silently, and it can still
# be accepted (modules/challenge/src/main/ChallengeApi.scala `sweep`): a game nobody plays.
# A challenge queued longer than this is accepted only while its challenger is online.
STALE_CHALLENGE_S: Final = 15.0
LEAVE_TIMEOUT_S: Final = 15.0  # after the grace period: resign (or abort) and see the games end
NOTIFY_INTERVAL_S: Final = 5.0  # systemd status/watchdog heartbeat
CRASH_RESIGN_TIMEOUT_S: Final = 10.0  # a crashed game's resign gets at most this
# An arena game whose opponent we have never met waits at most this for its title (the
# engine rules' `bot` condition); the first move's deadline is many times longer.


def holds_slot(challenge: Challenge) -> bool:
    """Does the game of this challenge take one of the real-time slots (concurrency)?
    Correspondence and unlimited games (speed correspondence) are visited, never held."""
    return challenge.speed != "correspondence"


class FatalError(Exception):
    """The bot cannot run: bad token, wrong account type, engine that does not start."""


class AccountProblem(FatalError):
    """The token or the account cannot play (a person must fix it)."""


class ConfigProblem(FatalError):
    """A configured feature cannot be used, e.g. a missing book file (a person must fix it)."""


class Bot:
    """One running bot: owns the games, the challenge queue and the shutdown sequence."""

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
        if hooks.challenge_queue is None:
            hooks = dataclasses.replace(hooks, challenge_queue=self._queued_names)
        self.hooks = hooks
        self.metrics = metrics
        self.notify = notify
        self.ledger = TakebackLedger(config.state_dir, config.takeback.max_per_game)
        self.load = ThinkingLoad()
        self.games: dict[str, Game] = {}
        self.accepted: dict[str, float] = {}  # challenge id -> when we accepted it
        self.queue: deque[Challenge] = deque()
        self.queued_at: dict[str, float] = {}  # challenge id -> when it was queued
        self.answered: OrderedDict[str, None] = OrderedDict()
        self.accepting = True
        self.stop_requested = asyncio.Event()
        self.connected = asyncio.Event()  # the event stream is open (the bot is ready)
        self._slot_freed = asyncio.Event()
        self._tg: asyncio.TaskGroup | None = None
        self.book = OpponentBook(config.state_dir, config.challenge.recent_window_s)
        self.arenas = ArenaDesk(config.tournaments, client, me.name,
                                control=ControlDir(config.state_dir),
                                on_change=self._slot_freed.set, clock=arena_clock)
        self.block_lists = BlockLists(config.challenge.online_block_lists, config.state_dir)
        self.matchmaker = Matchmaker(config, client, me.id, self.book, is_idle=self._idle,
                                     blocked=lambda: self.block_lists.names,
                                     playable=lambda: self.engines.variants)
        self.desk = CorrespondenceDesk(config.correspondence, client, self._visit,
                                       self.stop_requested,
                                       finished_unwatched=hooks.finished_unwatched)

    # --- the whole life -------------------------------------------------------------------

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            self._tg = tg
            long_lived = [
                tg.create_task(self._follow_events(), name="event stream"),
                tg.create_task(self._take_challenges(), name="challenge queue"),
                tg.create_task(self.engines.keep_spare(), name="spare engine"),
                tg.create_task(self._heartbeat(), name="status"),
                tg.create_task(self.book.keep_ratings(self.client), name="ratings"),
                tg.create_task(self.block_lists.run(self.config.challenge.block_list_refresh_s),
                               name="block lists"),
                tg.create_task(self.matchmaker.run(), name="matchmaking"),
                tg.create_task(self.desk.run(), name="correspondence"),
                tg.create_task(self.arenas.run(), name="arenas"),
            ]
            await self.stop_requested.wait()
            await self._shut_down()
            for task in long_lived:
                task.cancel()

    def _queued_names(self) -> list[str]:
        return [challenge.challenger.name for challenge in self.queue]

    def busy(self) -> int:
        """Games in progress plus challenges accepted whose game has not started yet."""
        now = time.monotonic()
        for challenge_id, at in list(self.accepted.items()):
            if now - at > ACCEPTED_TTL_S:
                log.info("challenge %s was accepted but no game started", challenge_id)
                del self.accepted[challenge_id]
        return (len(self.games) + len(self.accepted)
                + self.matchmaker.pending_count)

    def _idle(self) -> bool:
        """Nothing to play and nothing waiting: matchmaking may look for a game (not while
        one of our arenas runs, unless tournaments.pause_matchmaking is off)."""
        return self.accepting and not (self.games or self.queue or self.accepted) \
            and not self.arenas.pauses_matchmaking()

    def _challenge_limit(self) -> int:
        """Real-time slots for challenges: the concurrency less the slots kept free for
        arena pairings while one of our arenas runs (arena games take slots of their own)."""
        arena_games = sum(1 for game in self.games.values() if is_mandatory(game.info))
        return self.config.challenge.concurrency - self.arenas.reserved_slots(arena_games)

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
                self._on_challenge(event.challenge)
            elif isinstance(event, ChallengeCanceled):
                self._forget_challenge(event.challenge_id, "canceled")
                self.matchmaker.on_canceled(event.challenge_id)
            elif isinstance(event, ChallengeDeclined):
                log.info("our challenge %s was declined (%s)", event.challenge_id,
                         event.reason_key)
                self.matchmaker.on_declined(event.challenge_id, event.reason_key)
            elif isinstance(event, UnknownEvent):
                log.info("ignored event of unknown type %r", event.type)

    def _on_game_start(self, info: GameInfo) -> None:
        self.accepted.pop(info.game_id, None)
        if info.game_id in self.games:
            return  # re-sent after a reconnect
        if not is_ongoing(info.status):
            return
        self._start_game(info)

    def _title_matters(self, info: GameInfo) -> bool:
        """An arena pairing against someone we have never met, while an engine rule asks
        whether the opponent is a bot: lila's gameStart names the opponent without a title,
        its gameFull with one, so the engine is chosen there (Game.choose_engine)."""
        return (info.tournament_id is not None and info.opponent_id is not None
                and info.opponent_id.lower() not in self.book.known_bots
                and any(rule.bot is not None for rule in self.engines.table.rules))

    def _engine_at_full(self, info: GameInfo) -> Callable[[bool], EngineChoice]:
        """The engine chooser a game calls at its first gameFull, with the opponent's
        title: no lookup and no wait before the game starts."""
        def choose(opponent_is_bot: bool) -> EngineChoice:
            if opponent_is_bot and info.opponent_id is not None:
                self.book.known_bots.add(info.opponent_id.lower())
            name = self.engines.choose_playable(game_facts(info, opponent_is_bot))
            log.info("game %s: %s is %s: engine %s", info.game_id, info.opponent_name,
                     "a bot" if opponent_is_bot else "no bot", name)
            several = len(self.engines.pools) > 1
            return EngineChoice(name if several else "", self.engines.pool(name),
                                dataclasses.replace(self.config,
                                                    engine=self.engines.entry(name)))
        return choose

    def _start_game(self, info: GameInfo) -> None:
        self.matchmaker.on_game_start(info)
        self.book.engage(info.game_id, info.opponent_id,
                         realtime=not self.desk.is_correspondence(info))
        if self.desk.is_correspondence(info):
            self.desk.on_game_event(info)  # visited on our turn; it holds no slot
            return
        game = self._visit(info.game_id, None, info)
        self.games[info.game_id] = game
        assert self._tg is not None
        self._tg.create_task(self._game_boundary(game), name=f"game {info.game_id}")

    def _visit(self, game_id: str, think_s: float | None, info: GameInfo | None = None) -> Game:
        """A game to play to its end (think_s None) or a correspondence visit, on the
        engine the `engines` rules pick for it (a visit with no gameStart: the default)."""
        name = self.engines.table.default
        if info is not None:
            # lila's gameStart names the opponent without a title: a bot is one we know of
            # (a challenge, matchmaking); a game not from a challenge (an arena) may be either.
            opponent = (info.opponent_id or "").lower()
            known = opponent in self.book.known_bots
            bot = True if known else (False if info.tournament_id is None else None)
            name = self.engines.choose_playable(game_facts(info, bot))
        pool = self.engines.pool(name)
        several = len(self.engines.pools) > 1
        deferred = info is not None and think_s is None and self._title_matters(info)
        if think_s is None:
            log.info("game %s starts against %s%s", game_id,
                     info.opponent_name if info is not None else "?",
                     " (its engine chosen at gameFull)" if deferred
                     else f" on engine {name} ({pool.name})" if several else "")
        config = dataclasses.replace(self.config, engine=self.engines.entry(name))
        return Game(
            game_id, client=self.client, config=config, engines=pool,
            me=self.me, hooks=self.hooks, load=self.load, metrics=self.metrics,
            ledger=self.ledger, info=info, think_s=think_s, alarm_clock=self.alarm_clock,
            engine_label=name if several else "",
            choose_engine=self._engine_at_full(info) if deferred and info is not None
            else None,
        )

    def _on_game_finish(self, info: GameInfo) -> None:
        self.accepted.pop(info.game_id, None)
        self.book.release(info.game_id)
        game = self.games.get(info.game_id)
        if game is not None:
            game.server_finished(info)
        elif self.desk.is_correspondence(info):
            self.desk.on_game_finish(info)  # it may have ended between visits
        self.arenas.on_game_finish(info)
        self._slot_freed.set()

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
            self._slot_freed.set()

    # --- challenges ----------------------------------------------------------------------

    def _on_challenge(self, challenge: Challenge) -> None:
        if is_own_challenge(challenge, self.me.id):
            return
        cid = challenge.id
        if answer_key(challenge) in self.answered or cid in self.accepted \
                or any(c.id == cid for c in self.queue):
            return  # re-sent after a reconnect
        verdict = judge(challenge, self.config.challenge,
                        self.book.situation(self.block_lists.names),
                        self.engines.variants_for(challenge_facts(challenge)))
        if verdict.accept and not self.accepting:
            verdict = Verdict(DeclineReason.LATER, "shutting down")
        elif verdict.accept and len(self.queue) >= MAX_QUEUE:
            verdict = Verdict(DeclineReason.LATER, "the queue is full")
        who = f"{challenge.challenger.name} ({challenge.variant}, {challenge.speed}, " \
              f"{'rated' if challenge.rated else 'casual'})"
        self._decided(challenge, verdict, "queued" if verdict.accept else "declined")
        if verdict.accept:
            log.info("challenge %s from %s: queued", cid, who)
            self.queue.append(challenge)
            self.queued_at[cid] = time.monotonic()
            self._slot_freed.set()
            return
        log.info("challenge %s from %s: declining (%s: %s)", cid, who, verdict.reason, verdict.why)
        self._remember(answer_key(challenge))
        assert self._tg is not None and verdict.reason is not None
        self._tg.create_task(self._decline(cid, verdict.reason), name=f"decline {cid}")

    def _decided(self, challenge: Challenge, verdict: Verdict, decision: str) -> None:
        """Counted for /metrics and shown on the status page."""
        rated = "rated" if challenge.rated else "casual"
        self.metrics.challenge_decided(
            challenge.id, challenge.challenger.name,
            f"{challenge.variant} {challenge.speed} {rated}", decision,
            verdict.reason.value if verdict.reason is not None else "", verdict.why)

    async def _decline(self, challenge_id: str, reason: DeclineReason) -> None:
        try:
            await self.client.decline_challenge(challenge_id, reason.value)
        except (RequestError, Unavailable) as exc:
            log.warning("decline %s: %s", challenge_id, exc)

    def _remember(self, key: str) -> None:
        self.answered[key] = None
        while len(self.answered) > REMEMBERED_CHALLENGES:
            self.answered.popitem(last=False)

    def _forget_challenge(self, challenge_id: str, why: str) -> None:
        self.queued_at.pop(challenge_id, None)
        before = len(self.queue)
        self.queue = deque(c for c in self.queue if c.id != challenge_id)
        if len(self.queue) != before:
            log.info("challenge %s %s while queued", challenge_id, why)
        self.accepted.pop(challenge_id, None)

    async def _take_challenges(self) -> None:
        """Accept queued challenges in order whenever a slot is free."""
        while True:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow the shutdown's
            # cancellation when the slot frees at the same moment, and the loop never ends.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(QUEUE_TICK_S):
                    await self._slot_freed.wait()
            self._slot_freed.clear()
            limit = self._challenge_limit()
            if self.accepting and any(holds_slot(c) for c in self.queue) \
                    and self.busy() >= limit:
                await self.matchmaker.yield_slot()  # an incoming game beats our challenge
            self.queue = deque(sort_queue(self.queue, self.config.challenge.sort))
            while self.accepting:
                # Correspondence games hold no real-time slot: they never wait for one.
                challenge = next((c for c in self.queue
                                  if not holds_slot(c) or self.busy() < limit), None)
                if challenge is None:
                    break
                self.queue.remove(challenge)
                self._remember(answer_key(challenge))
                if not await self._still_open(challenge):
                    continue
                verdict = finer_verdict(challenge, self.config.challenge,
                                        self.book.situation(self.block_lists.names))
                if verdict.reason is not None:  # the situation changed while it waited
                    log.info("challenge %s: declining (%s)", challenge.id, verdict.why)
                    self._decided(challenge, verdict, "declined")
                    await self._decline(challenge.id, verdict.reason)
                    continue
                if holds_slot(challenge):
                    self.accepted[challenge.id] = time.monotonic()
                try:
                    await self.client.accept_challenge(challenge.id)
                except (RequestError, Unavailable) as exc:
                    self.accepted.pop(challenge.id, None)
                    if isinstance(exc, RequestError) and exc.status == HTTPStatus.NOT_FOUND:
                        # Canceled, or accepted elsewhere, while it waited: lila answers 404
                        # (Challenge.scala apiAccept); nothing is lost.
                        log.info("challenge %s is gone (404 on accept)", challenge.id)
                        continue
                    log.warning("accept %s: %s", challenge.id, exc)
                    self._on_accept_refused(challenge, exc)
                    continue
                log.info("accepted challenge %s from %s", challenge.id,
                         challenge.challenger.name)
                self._decided(challenge, verdict, "accepted")
                self.book.engage(challenge.id, challenge.challenger.id,
                                 bot=challenge.challenger.is_bot, started=False,
                                 realtime=holds_slot(challenge))

    async def _still_open(self, challenge: Challenge) -> bool:
        """A real-time challenge queued for a while may have gone offline on lila with no
        event (ChallengeApi.scala `sweep`: its challenger unseen for 20 s); accepted, it
        starts a game nobody plays, and frequent aborts break Lichess's rules for bots.

        It is judged by the challenger's presence (`GET /api/users/status`, public), not by
        `GET /api/challenge/{id}/show`: lila answers that only to a token with
        challenge:read (Challenge.scala `apiShow`, AnonOrScoped(_.Challenge.Read)), which
        a bot does not otherwise need, and it has no stored challenge to show for a rematch
        offer (apiAccept's `tryRematch`). A rematch offer is fresh (its sender just played
        us); an anonymous challenger, or a failed look-up, leaves the challenge to be
        accepted: it is answered either way, never dropped."""
        queued_at = self.queued_at.pop(challenge.id, time.monotonic())
        waited_s = time.monotonic() - queued_at
        if not holds_slot(challenge) or waited_s < STALE_CHALLENGE_S \
                or challenge.rematch_of is not None or challenge.challenger.anonymous:
            return True
        try:
            online = await self.client.online_users([challenge.challenger.id])
        except (RequestError, Unavailable, LichessError) as exc:
            log.info("challenge %s: cannot see whether %s is online (%s); accepting it",
                     challenge.id, challenge.challenger.name, exc)
            return True
        if challenge.challenger.id in online:
            return True
        log.info("challenge %s: %s left after %.0f s in the queue: declining", challenge.id,
                 challenge.challenger.name, waited_s)
        self._decided(challenge, Verdict(DeclineReason.LATER, "gone offline"), "declined")
        await self._decline(challenge.id, DeclineReason.LATER)
        return False

    def _on_accept_refused(self, challenge: Challenge, exc: RequestError | Unavailable) -> None:
        """lila's BotLimit (app/controllers/Challenge.scala `eitherBotLimitResponse`): 429
        `bot.vsBot.day` is our own cap, so this and further bot challenges are declined
        until it lifts; 400 with that key is the challenger's cap, so only this challenger
        is turned away. Either way the challenge is answered, never left hanging."""
        key, _seconds = ratelimit_of(exc.body)
        if key != BOT_DAY_KEY:
            return
        self.book.note_refusal(exc)
        why = ("our games against bots for today are used up" if isinstance(exc, RateLimited)
               else f"{challenge.challenger.name} played its games against bots for today")
        log.info("challenge %s: declining (%s)", challenge.id, why)
        self._decided(challenge, Verdict(DeclineReason.LATER, why), "declined")
        assert self._tg is not None
        self._tg.create_task(self._decline(challenge.id, DeclineReason.LATER),
                             name=f"decline {challenge.id}")

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
        self.accepting = False
        await self.matchmaker.stop()
        await self.arenas.stop()
        grace_s = self.config.game.shutdown_grace_s
        for challenge in self.queue:
            assert self._tg is not None
            self._tg.create_task(self._decline(challenge.id, DeclineReason.LATER),
                                 name=f"decline {challenge.id}")
        self.queue.clear()
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
            self._slot_freed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._slot_freed.wait(), deadline - time.monotonic())


def answer_key(challenge: Challenge) -> str:
    """What an answered challenge is remembered by. A rematch offer carries the finished
    game's id (lila#7718), which is also the id of the challenge that started that game,
    already answered: the offer is a new question."""
    return challenge.id if challenge.rematch_of is None else f"rematch {challenge.id}"


async def check_account(client: Lichess) -> Me:
    """The token must carry bot:play and belong to a BOT account; FatalError says what is wrong."""
    try:
        scopes = await client.token_scopes()
        if scopes is not None and "bot:play" not in scopes:
            raise AccountProblem("the token lacks the bot:play scope (it has: "
                             f"{', '.join(sorted(scopes)) or 'none'}); create a token with "
                             "bot:play at /account/oauth/token")
        account = await client.account()
    except AuthError as exc:
        raise AccountProblem(f"the server rejected the token ({exc.message})") from exc
    except (Unavailable, RequestError) as exc:
        raise FatalError(f"cannot check the account: {exc}") from exc
    name = str(account.get("username") or account.get("id") or "")
    if not name:
        raise FatalError("/api/account returned no user name")
    if account.get("title") != "BOT":
        raise AccountProblem(f"{name} is not a BOT account; upgrade it first "
                         "(`kibitz upgrade`, irreversible, only for an account with no games)")
    return Me(str(account.get("id") or name).lower(), name)


def _install_signals(bot: Bot, hard_stop: Callable[[], None]) -> Callable[[], None]:
    """SIGTERM/SIGINT: graceful stop; a second SIGINT: stop at once. Returns the uninstaller."""
    loop = asyncio.get_running_loop()
    interrupts = 0

    def on_signal(signum: int) -> None:
        nonlocal interrupts
        if signum == signal.SIGINT:
            interrupts += 1
            if interrupts >= 2:
                log.warning("second interrupt: quitting now")
                hard_stop()
                return
        if not bot.stop_requested.is_set():
            log.info("%s: no new games; running games may finish within %.0f s "
                     "(Ctrl-C again to quit now)", signal.Signals(signum).name,
                     bot.config.game.shutdown_grace_s)
            if bot.notify is not None:
                bot.notify("STOPPING=1")
            bot.stop_requested.set()

    installed = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(signum, on_signal, signum)
            installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):
            log.debug("cannot handle %s here", signum)

    def uninstall() -> None:
        for signum in installed:
            loop.remove_signal_handler(signum)

    return uninstall


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
    table = EngineTable.from_config(config)
    hosted = [table.entries[name] for name in reachable(table) if uses_host(table.entries[name])]
    # The host loads one net before it forks (the first built-in entry's EvalFile): the games
    # whose EvalFile is that file share its pages; another file is loaded by its own game.
    nets = [str(entry.options.get("EvalFile", "")) for entry in hosted]
    host = (EngineHost(socket_path(config.state_dir), next((n for n in nets if n), ""))
            if hosted else None)
    engines = EngineSet.from_config(config, host.engine_command if host is not None else None)
    client = Lichess(url, token, timings=timings)
    features: Features | None = None
    uninstall: Callable[[], None] = lambda: None  # noqa: E731
    try:
        if watch is None and config.watch.enabled:
            try:
                watch = Watch(WatchSettings.resolve(config.watch, os.environ), base_url=url,
                              token=token)
            except WatchError as exc:
                raise ConfigProblem(str(exc)) from exc
        me = await check_account(client)
        log.info("logged in as %s on %s", me.name, url)
        if hooks is None:
            try:
                features = Features(config, url=url, token=token)
            except FeatureError as exc:
                raise ConfigProblem(str(exc)) from exc
            hooks = features.hooks()
        if watch is not None:
            hooks = watch.hooks(hooks)
        bot = Bot(config, client, engines, me, hooks=hooks, metrics=metrics, notify=notify,
                  alarm_clock=alarm_clock, arena_clock=arena_clock)
        if watch is not None:
            watch.attach(bot)
            await watch.start()
        if handle_signals:
            uninstall = _install_signals(bot, hard_stop)
        usage, warning = memory_report(config)
        log.info("%s", usage)
        if warning is not None:
            log.warning("%s", warning)
        cores_warning = cores_report(config)
        if cores_warning is not None:
            log.warning("%s", cores_warning)
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
        async with asyncio.TaskGroup() as tg:
            runner = tg.create_task(bot.run(), name="bot")
            forward = (tg.create_task(_forward(stop, bot.stop_requested), name="stop request")
                       if stop is not None else None)
            keeper = (tg.create_task(host.keep_running(WARM_UP_TIMEOUT_S), name="engine host")
                      if host is not None else None)
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
    finally:
        uninstall()
        if watch is not None:
            await watch.close()
        await engines.close()
        if host is not None:
            await host.close()
        await client.close()
        if features is not None:
            await features.close()


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
