"""One game, orchestrated: its stream, its end, and the parts that do the rest.

A game runs as tasks in its own TaskGroup: the reader follows the game stream (reopened on
silence, drops, or a resync request) and hands each event to the part it concerns:
- `position.Position` keeps the board in step with the server's move list;
- `mover.Mover` thinks and sends our move on our turn, and ponders on the opponent's time;
- `talk.Talk` answers draw and takeback offers and chat commands, greets and kibitzes;
- `alarms.Alarms` says when to abort, claim victory, resync, or end a finished game.
Nothing here may hang a game: an engine failure restarts the engine, a rejected move or an
unreadable server state reopens the stream, and when that does not help the game is aborted
or resigned, with the reason logged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final

import chess

from bot.engines.choice import EngineChoice
from bot.engines.levels import GameLevel, Opponent, choose_level
from bot.engines.pool import EngineFailure, EnginePool
from bot.engines.rules import SINGLE_ENGINE, GameFacts
from bot.engines.searchline import SearchLine
from bot.game import chat
from bot.game.alarms import Alarms, Due
from bot.game.conduct import Conduct, TakebackLedger
from bot.game.hooks import (
    CommandAction,
    GameContext,
    GameHooks,
    GameObserver,
    LastSearch,
    SourcedMove,
)
from bot.game.metrics import GameOutcome, Metrics, ThinkingLoad
from bot.game.mover import Mover
from bot.game.position import Position, common_prefix
from bot.game.talk import Talk
from bot.lichess.client import (
    AuthError,
    Lichess,
    RequestError,
    StreamOpened,
    Unavailable,
    attempt,
)
from bot.lichess.events import (
    ChatLine,
    EventError,
    GameFull,
    GameInfo,
    GameState,
    GameStatus,
    OpponentGone,
    UnknownEvent,
    is_ongoing,
    parse_game_event,
)
from bot.ops.config import Config, ShutdownAction
from bot.ops.logs import MoveLog, game_context
from bot.tournaments.rules import first_draw_move, is_mandatory

log = logging.getLogger(__name__)

CHAT_KEPT: Final = 20  # the latest chat lines of a game, for the status page
ALARM_INTERVAL_S: Final = 0.25  # how often the alarms look at the game
FINISHED: Final = "finished"  # the reason of a game that ended on the board or by the server
BOT_TITLE: Final = "BOT"  # gameFull's title of a bot player


@dataclass(frozen=True, slots=True)
class Me:
    id: str  # lower-case user id
    name: str


@dataclass(frozen=True, slots=True)
class GameSnapshot:
    """What others may read of a game in progress (the status view)."""

    game_id: str
    context: GameContext
    board: chess.Board  # a copy
    our_clock_s: float
    their_clock_s: float
    last_search: LastSearch | None
    our_turn: bool
    engine: str = ""  # the configured engine's name, when several are configured
    strength: str = ""  # the level the game is played at ("full strength", "Elo 1250")


def describe(line: SearchLine | None, board: chess.Board, move: chess.Move, source: str) -> str:
    """A log line for our move: SAN, source, and the search line."""
    text = chat.kibitz_line(board, line, max_chars=1000) if line is not None else ""
    return f"{board.san(move)} ({source})" + (f" {text}" if text else "")


class Game:
    """One game from its gameStart to its end."""

    def __init__(
        self,
        game_id: str,
        *,
        client: Lichess,
        config: Config,
        engines: EnginePool,
        me: Me,
        hooks: GameHooks,
        load: ThinkingLoad,
        metrics: Metrics,
        ledger: TakebackLedger,
        info: GameInfo | None = None,
        think_s: float | None = None,
        alarm_clock: Callable[[], float] = time.monotonic,
        engine_label: str = "",
        choose_engine: Callable[[bool], EngineChoice] | None = None,
    ) -> None:
        self.id = game_id
        self.engine_label = engine_label  # which configured engine plays (several configured)
        # Called at the first gameFull with whether the opponent is a BOT (its title), when
        # the engine depends on it and gameStart did not say: the seat is taken then.
        self.choose_engine = choose_engine
                # the alarms' time (abort, claims, resync): injectable, so a test can move it
        self.alarm_clock = alarm_clock
        self.client = client
        self.config = config
        self.me = me
        self.hooks = hooks
        self.load = load
        self.metrics = metrics
        self.ledger = ledger
        self.info = info
        self.think_s = think_s  # set: a correspondence visit (think this long, move, leave)
        self.abandoned = False  # left at shutdown: the game goes on without us
        self.conduct = Conduct(config.draw, config.resign,
                               first_draw_move=first_draw_move(info))
        self.move_log = MoveLog(game_id, config.log)
        self.position: Position | None = None  # from the first gameFull on
        self.status: str = GameStatus.STARTED
        self.winner: str | None = None
        self.reason = FINISHED
        self.started_at = time.time()
        self.alarms = Alarms(abort_after_s=config.game.abort_after_s,
                                 claim_victory=config.game.claim_victory, now=alarm_clock())
        self.mover = Mover(game_id, self, client=client, config=config, engines=engines,
                           conduct=self.conduct, alarms=self.alarms, load=load,
                           metrics=metrics, think_s=think_s)
        self.talk = Talk(game_id, client=client, config=config, me=me.name,
                         conduct=self.conduct, ledger=ledger,
                         commands=hooks.chat_commands() if hooks.chat_commands else None,
                         challenge_queue=hooks.challenge_queue, metrics=metrics,
                         spawn=self.spawn)
        self._tg: asyncio.TaskGroup | None = None
        self._over = asyncio.Event()
        self._wake = asyncio.Event()
        self._resync_wanted = False
        self._greeted = False
        self.level: GameLevel | None = None  # chosen at the first gameFull
        self._observers: list[GameObserver] = []
        self.chat: deque[ChatLine] = deque(maxlen=CHAT_KEPT)  # others' lines, the latest

    # --- public --------------------------------------------------------------------------

    @property
    def over(self) -> bool:
        return self._over.is_set()

    @property
    def moves(self) -> tuple[str, ...]:
        return self.position.moves if self.position is not None else ()

    def snapshot(self) -> GameSnapshot | None:
        """The game as of now, for the status; None before its first full state."""
        position = self.position
        if position is None:
            return None
        ours_s, theirs_s = position.clocks_s(time.monotonic())
        return GameSnapshot(game_id=self.id, context=position.context,
                            board=position.board.copy(), our_clock_s=ours_s,
                            their_clock_s=theirs_s, last_search=self.mover.last_search,
                            our_turn=self._our_turn(), engine=self.engine_label,
                            strength=str(self.level) if self.level is not None else "")

    def server_finished(self, info: GameInfo) -> None:
        """gameFinish arrived on the event stream: the second end signal."""
        self.info = info
        self.alarms.server_finished(self.alarm_clock())

    async def leave(self, action: ShutdownAction) -> None:
        """Shutdown: resign (or abort, while abortable) or simply abandon the game. The game
        ends here even when the shutdown's deadline cuts the request short (cancelled)."""
        if self.over:
            return
        try:
            if action == "resign":
                await self._end_by_request("shutdown")
            else:
                self.abandoned = True
        finally:
            self._finish("shutdown", status=self.status)

    async def run(self) -> GameOutcome:
        with game_context(self.id):
            self.load.games += 1
            try:
                if self.choose_engine is None:
                    await self.mover.acquire()
                async with asyncio.TaskGroup() as tg:
                    self._tg = tg
                    alarms = tg.create_task(self._ring_alarms(), name=f"game {self.id} alarms")
                    while not self.over:
                        self._resync_wanted = False
                        self._wake.clear()
                        reader = tg.create_task(self._read(), name=f"game {self.id} stream")
                        await self._wake.wait()
                        reader.cancel()
                        await asyncio.wait({reader})
                    alarms.cancel()
                    self.mover.stop()
            except EngineFailure as exc:
                log.error("no engine for this game: %s", exc)
                self.reason = f"gave up: {exc}"
                await self._end_by_request(self.reason)
            finally:
                self.load.games -= 1
                await self.mover.release()
                self.move_log.close()
            await self._after_end()
        position = self.position
        outcome = GameOutcome(self.id, self.status, self.winner,
                              position.context.color if position else None, self.moves,
                              self.reason)
        self.metrics.finished(outcome)
        return outcome

    # --- helper tasks (the mover's and the talk's requests) --------------------------------

    def spawn(self, coro: Coroutine[Any, Any, object], what: str) -> asyncio.Task[None]:
        assert self._tg is not None
        task = self._tg.create_task(self._guard(coro, what), name=f"game {self.id} {what}")
        # A task cancelled before it ever ran (the game ending as it was spawned) never awaits
        # its coroutine; closing it spares the "never awaited" warning.  A no-op otherwise.
        task.add_done_callback(lambda _: coro.close())
        return task

    async def _guard(self, coro: Coroutine[Any, Any, object], what: str) -> None:
        """A game's helper task: an error is logged and never escapes into the game."""
        try:
            await coro
        except AuthError:
            raise
        except Exception:
            log.exception("%s failed", what)

    # --- the stream ------------------------------------------------------------------------

    async def _read(self) -> None:
        try:
            async for item in self.client.follow_game(self.id):
                if isinstance(item, StreamOpened):
                    if item.attempt:
                        log.info("game stream reopened (attempt %d)", item.attempt)
                    continue
                received = time.monotonic()
                try:
                    event = parse_game_event(item)
                except EventError as exc:
                    log.warning("skipped a malformed game event: %s", exc)
                    continue
                self._dispatch(event, received)
                if self.over or self._resync_wanted:
                    return
        except RequestError as exc:
            # 404 and friends: the server will not show us this game (any more).
            log.error("game stream refused: %s", exc)
            self._finish(f"stream refused: {exc.message}", status=self._status_from_info())

    def _dispatch(self, event: object, received: float) -> None:
        if isinstance(event, GameFull):
            self._on_full(event, received)
        elif isinstance(event, GameState):
            self._on_state(event, received)
        elif isinstance(event, ChatLine):
            self._on_chat(event)
        elif isinstance(event, OpponentGone):
            self._on_opponent_gone(event)
        elif isinstance(event, UnknownEvent):
            log.debug("ignored game event of type %r", event.type)

    def _on_full(self, full: GameFull, received: float) -> None:
        me = self.me.id
        if full.white.id is not None and full.white.id.lower() == me:
            color = chess.WHITE
        elif full.black.id is not None and full.black.id.lower() == me:
            color = chess.BLACK
        else:
            log.error("we play neither side of this game (%s vs %s)", full.white.name,
                      full.black.name)
            self._finish("not our game", status=full.state.status)
            return
        if self.choose_engine is not None:
            opponent = full.black if color == chess.WHITE else full.white
            choice = self.choose_engine(opponent.title == BOT_TITLE)
            self.choose_engine = None
            self.config = choice.config
            self.engine_label = choice.label
            self.mover.seat(choice.pool, choice.config)
        if self.level is None:
            self._choose_level(full, color)
        context = GameContext(
            game_id=self.id, variant=full.variant, speed=full.speed, rated=full.rated,
            me=self.me.name, color=color, white=full.white, black=full.black,
            initial_fen=full.initial_fen, clock_initial_s=full.clock_initial_s,
            clock_increment_s=full.clock_increment_s,
        )
        try:
            position = Position(context)
        except ValueError as exc:
            self.give_up(f"cannot set up the initial position {full.initial_fen!r}: {exc}")
            return
        self.conduct.take_back(common_prefix(full.state.moves, self.moves))  # while away
        self.position = position
        self.mover.rethink()  # a fresh full state: think again if it is our turn
        if not self._greeted:
            self._greeted = True
            self._join(full, position)
        log.info("%s %s vs %s, %s, %s (%s to play)",
                 "rated" if full.rated else "casual", full.white.name, full.black.name,
                 full.variant, full.speed, "we" if color == chess.WHITE else "they")
        self._on_state(full.state, received)

    def _choose_level(self, full: GameFull, color: chess.Color) -> None:
        """The game's level, by the strength rules, from the first gameFull (the opponent's
        title and rating); the draw and resign rules learn the opponent's rating."""
        mine, theirs = (full.white, full.black) if color == chess.WHITE else \
            (full.black, full.white)
        bot = theirs.title == BOT_TITLE
        facts = GameFacts(full.variant, full.speed, full.rated, bot,
                          arena=self.info is not None and self.info.tournament_id is not None)
        opponent = Opponent(theirs.name, theirs.title, theirs.rating, bot)
        self.level = choose_level(self.config.strength, facts,
                                  self.engine_label or SINGLE_ENGINE, opponent, mine.rating)
        self.mover.level = self.level
        self.conduct.opponent_rating = theirs.rating
        rule = f"strength.rules[{self.level.rule}]" if self.level.rule is not None \
            else "no strength rule"
        log.info("level: %s against %s (%s, %s; %s)", self.level, theirs.name,
                 theirs.rating if theirs.rating is not None else "unrated",
                 "rated" if full.rated else "casual", rule)

    def _on_state(self, state: GameState, received: float) -> None:
        position = self.position
        if position is None:
            log.warning("gameState before gameFull: waiting for a fresh stream")
            self._request_resync("state before gameFull")
            return
        if not self._sync(position, state.moves):
            return
        position.record(state, received)
        for observer in self._observers:
            self._observe(observer.game_state, state)
        if state.is_over:
            self._finish(FINISHED, status=state.status, winner=state.winner)
            return
        self.talk.answer_offers(state, position)
        ours = self._our_turn()
        self.mover.follow(state, received, our_turn=ours)
        if self.think_s is not None and not ours and not self.mover.awaiting_echo:
            self._finish("left until our turn", status=state.status)

    def _sync(self, position: Position, moves: tuple[str, ...]) -> bool:
        """Bring the board to `moves`; False (and a resync) if they are not legal."""
        try:
            step = position.sync(moves)
        except ValueError as exc:
            log.error("the server's moves do not replay (%s): %s", " ".join(moves[-4:]), exc)
            self._request_resync("illegal move in the server state")
            return False
        if step.kept is not None:  # a takeback: its moves' scores go too
            self.conduct.take_back(step.kept)
        if step.new_ply:
            self.alarms.new_ply(self.alarm_clock())
            self.mover.new_ply(len(moves))
        return True

    def _our_turn(self) -> bool:
        return self.position is not None and self.position.our_turn and not self.over

    def _on_chat(self, line: ChatLine) -> None:
        if line.username.lower() != self.me.name.lower():  # ours: the PV, shown already
            self.chat.append(line)
        position = self.position
        if position is None:
            log.debug("chat %s <%s> %r", line.room, line.username, line.text)
            return
        action = self.talk.on_chat(line, context=position.context,
                                   abortable=self._abortable(position),
                                   engine=self.mover.engine_name,
                                   last_search=self.mover.last_search)
        if action is CommandAction.WAIT:
            self.alarms.grant_wait()

    def _on_opponent_gone(self, event: OpponentGone) -> None:
        if event.gone:
            wait_s = event.claim_win_in_s if event.claim_win_in_s is not None else 0.0
            log.log(logging.INFO if not self.alarms.claims.pending else logging.DEBUG,
                    "opponent gone; victory claimable in %.0f s", wait_s)
        else:
            log.info("opponent is back")
        self.alarms.opponent_gone(event.gone, event.claim_win_in_s)

    # --- our move, played ------------------------------------------------------------------

    def played(self, board: chess.Board, chosen: SourcedMove, offered_draw: bool) -> None:
        """The server took our move from `board`: observers, the move log, the kibitz line."""
        ply = len(board.move_stack)  # the 0-based index of the move in the game's list
        for observer in self._observers:
            self._observe(observer.our_move, ply, board, chosen)
        self.move_log.write(describe(chosen.line, board, chosen.move, chosen.source)
                            + (" (draw offered)" if offered_draw else ""))
        self.talk.kibitz(board, chosen.line, self.mover.moves_played)

    def _observe(self, method: Any, *args: Any) -> None:
        try:
            method(*args)
        except Exception:
            log.exception("game observer %s failed", getattr(method, "__qualname__", method))

    def _join(self, full: GameFull, position: Position) -> None:
        """First gameFull: per-game sources and observers, and hello (at the game's start)."""
        context = position.context
        if self.hooks.move_sources is not None:
            try:
                self.mover.sources = tuple(self.hooks.move_sources(context))
            except Exception:
                log.exception("move sources could not be set up; the engine plays alone")
        for factory in self.hooks.observers:
            try:
                self._observers.append(factory(full, context))
            except Exception:
                log.exception("game observer could not be set up")
        first_visit = self.think_s is None or len(full.state.moves) == int(
            position.board.turn != context.color)
        if len(full.state.moves) < 2 and not full.state.is_over and first_visit:
            self.talk.greet(context, self.mover.engine_name, str(self.level or ""))

    # --- alarms, resync, ending ------------------------------------------------------------

    async def _ring_alarms(self) -> None:
        while not self.over:
            await asyncio.sleep(ALARM_INTERVAL_S)
            position = self.position
            playing = position is not None and position.state is not None
            for due in self.alarms.due(
                    self.alarm_clock(), playing=playing,
                    abortable=self._abortable(position),
                    our_turn=self._our_turn(), mover_idle=self.mover.idle):
                if due is Due.END:
                    log.info("gameFinish seen but the stream did not end: ending the game")
                    winner = self.info.winner if self.info else None
                    self._finish(FINISHED, status=self._status_from_info(), winner=winner)
                    return
                if due is Due.ABORT:
                    log.info("the opponent has not moved in %.0f s: aborting",
                             self.config.game.abort_after_s)
                    if not await attempt("abort", self.client.abort(self.id)):
                        self.alarms.abort_failed(self.alarm_clock())
                elif due is Due.CLAIM_VICTORY:
                    log.info("claiming victory: the opponent is gone")
                    await self._claim_victory()
                elif due is Due.RESYNC:
                    self._request_resync("our turn, but no move is on its way")

    async def _claim_victory(self) -> None:
        try:
            await self.client.claim_victory(self.id)
        except RequestError as exc:
            log.warning("claim victory refused: %s; trying again later if still gone", exc)
            self.alarms.claims.sent(refused=True)
        except Unavailable as exc:
            log.warning("claim victory: %s", exc)
            self.alarms.claims.sent(refused=False)
        else:
            self.alarms.claims.sent(refused=False)

    def _request_resync(self, why: str) -> None:
        """Reopen the game stream and re-read the game's state; the mover starts over from
        it. Never gives the game up: while the server fails, our clock runs and lila ends
        the game by its rules (a flag), not by our resignation."""
        self.metrics.resyncs += 1
        in_a_row = self.alarms.resync()
        log.warning("resync %d in a row (%s): reopening the game stream", in_a_row, why)
        self.mover.rethink(drop_sent=True)
        self._resync_wanted = True
        self._wake.set()

    def give_up(self, why: str) -> None:
        """The game cannot go on: abort or resign it, and end it here."""
        log.error("giving up the game: %s", why)
        self.reason = f"gave up: {why}"
        self.spawn(self._end_by_request(why), "give up")

    async def _end_by_request(self, why: str) -> None:
        """Abort (while abortable) or resign, then end the game whatever the server says."""
        if self.think_s is not None:  # a correspondence visit leaves; the next one retries
            self._finish(f"left: {why}", status=self.status)
            return
        if len(self.moves) < 2 and not is_mandatory(self.info) \
                and await attempt("abort", self.client.abort(self.id)):
            log.info("aborted: %s", why)
        elif await attempt("resign", self.client.resign(self.id)):
            log.info("resigned: %s", why)
        self._finish(self.reason if self.reason != FINISHED else why, status=self.status)

    def _abortable(self, position: Position | None) -> bool:
        """Lichess lets us abort until both sides moved, never in a tournament game."""
        return position is not None and position.abortable and not is_mandatory(self.info)

    def _status_from_info(self) -> str:
        return self.info.status if self.info is not None else self.status

    def _finish(self, reason: str, *, status: str, winner: str | None = None) -> None:
        if self.over:
            return
        self.status = status
        self.winner = winner
        if self.reason == FINISHED:
            self.reason = reason
        self._over.set()
        self._wake.set()
        if is_ongoing(status):  # a visit or a shutdown leaves a game that goes on
            log.info("leaving the game (%s)", reason)
            return
        log.info("game over: %s%s (%s)", status, f", {winner} wins" if winner else "", reason)

    async def _after_end(self) -> None:
        """Goodbye line, observers (PGN), the takeback ledger."""
        if self.position is None:
            return
        if (self.think_s is not None or self.abandoned) and is_ongoing(self.status):
            return  # a visit or a shutdown left a game that goes on: nothing has ended
        if len(self.moves) >= 2 and self.reason == FINISHED:
            await self.talk.say_goodbye(self.position.context, self.mover.engine_name,
                                        str(self.level or ""))
        for observer in self._observers:
            try:
                await observer.game_finished(self.status, self.winner)
            except Exception:
                log.exception("game observer %s failed at the end", type(observer).__name__)
        self.ledger.forget(self.id)
