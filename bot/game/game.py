"""One game: its stream, board, clock, engine, chat, and the decisions on draws and takebacks.

A game runs as three kinds of task in its own TaskGroup:
- the reader follows the game stream (reopened on silence, drops, or a resync request);
- a mover thinks and sends our move when it is our turn (cancelled if the position changes,
  e.g. by a takeback, while it thinks), so the stream is read all the while;
- the watchdog aborts a game the opponent never started, claims victory when the opponent is
  gone, and resyncs a game that looks stuck;
- with engine.ponder, a search of the reply the PV expects runs on the opponent's time.
Nothing here may hang a game: an engine failure restarts the engine, a rejected move or an
unreadable server state reopens the stream, and when that does not help the game is aborted
or resigned, with the reason logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import chess
import chess.engine

from bot.features import chat
from bot.features.commands import CommandAction, CommandContext
from bot.features.greetings import ChatMessage, GamePhase, greetings
from bot.game.clock import LatencyMeter, ThinkPlan, plan_move
from bot.game.conduct import Conduct, TakebackLedger
from bot.game.engines import Engine, EngineFailure, EnginePool
from bot.game.hooks import (
    ChatCommandHandler,
    GameContext,
    GameHooks,
    GameObserver,
    MoveSource,
    RootRestriction,
    SourcedMove,
)
from bot.lichess.client import (
    AuthError,
    Lichess,
    LichessError,
    RequestError,
    StreamOpened,
    Unavailable,
)
from bot.lichess.events import (
    ChatLine,
    EventError,
    GameFull,
    GameInfo,
    GameState,
    OpponentGone,
    UnknownEvent,
    parse_game_event,
)
from bot.lichess.variants import new_board
from bot.ops.config import Config
from bot.ops.logs import MoveLog, game_context

log = logging.getLogger(__name__)

WATCH_INTERVAL_S: Final = 0.25  # how often the watchdog looks at the game
ENGINE_ATTEMPTS: Final = 3  # engine starts/searches tried for one move before giving up
MAX_RESYNCS: Final = 3  # stream reopens for an unreadable state before giving up
STUCK_AFTER_FAILURE_S: Final = 2.0  # our turn, last move request failed: resync after this
STUCK_AFTER_SENT_S: Final = 10.0  # our turn, move sent but never echoed: resync after this
FINISH_GRACE_S: Final = 3.0  # gameFinish seen, stream still open: end the game after this
CLAIM_RETRY_S: Final = 5.0  # retry claim-victory this often while the opponent stays gone
SOURCE_TIMEOUT_S: Final = 3.0  # a move source (book, tablebase, online) gets at most this
CHAT_TIMEOUT_S: Final = 10.0  # the goodbye line gets at most this
MOVE_REQUEST_MAX_S: Final = 30.0  # a move request never retries longer than this
MIN_MOVE_REQUEST_S: Final = 2.0  # ... nor shorter than this
CORES: Final = os.cpu_count() or 1
VISIT_SLACK_S: Final = 5.0  # a correspondence visit's search may overrun think_s by this


@dataclass(frozen=True, slots=True)
class Me:
    id: str  # lower-case user id
    name: str


@dataclass(slots=True)
class ThinkingLoad:
    """How busy the bot is (shared by all games): games in progress, games searching now."""

    thinking: int = 0
    games: int = 0


@dataclass(frozen=True, slots=True)
class MoveTiming:
    """One of our moves: the bot's own overhead (state arrival -> move request sent, minus
    the engine's thinking) and the thinking itself."""

    game_id: str
    ply: int
    overhead_s: float
    think_s: float
    source: str


@dataclass(frozen=True, slots=True)
class GameOutcome:
    game_id: str
    status: str
    winner: str | None
    color: chess.Color | None
    moves: tuple[str, ...]
    reason: str  # why the game task ended: "finished", "gave up: ...", "shutdown", ...


@dataclass
class Metrics:
    """What the bot measured, for tests and the benchmark."""

    moves: list[MoveTiming] = field(default_factory=list)
    games: list[GameOutcome] = field(default_factory=list)
    rejected_moves: int = 0
    engine_restarts: int = 0
    resyncs: int = 0
    ponders: int = 0  # searches started on the opponent's time
    chat_lines: list[tuple[str, str, str]] = field(default_factory=list)  # game, room, text


def initial_board(variant: str, initial_fen: str) -> chess.Board:
    """The start position, on python-chess's board for the variant (its rules: legality, SAN,
    game end; crazyhouse pockets follow from the moves replayed on it)."""
    return new_board(variant, initial_fen)


def replay(board: chess.Board, moves: tuple[str, ...]) -> chess.Board:
    """`board` with `moves` (UCI, either castling notation) played; ValueError on a bad move."""
    for uci in moves:
        board.push(board.parse_uci(uci))
    return board


def common_prefix(moves: tuple[str, ...], other: tuple[str, ...]) -> int:
    """How many moves two move lists share from the start."""
    shared = 0
    for ours, theirs in zip(moves, other, strict=False):
        if ours != theirs:
            break
        shared += 1
    return shared


def wire_uci(board: chess.Board, move: chess.Move, variant: str) -> str:
    """The move as we send it: king-to-rook castling for chess960, e1g1 otherwise."""
    if variant != "chess960" and board.is_castling(move):
        king_file = chess.square_file(move.from_square)
        if king_file == 4:  # the standard king square: the e1g1/e1c1 form is unambiguous
            kingside = board.is_kingside_castling(move)
            rank = chess.square_rank(move.from_square)
            return chess.Move(move.from_square, chess.square(6 if kingside else 2, rank)).uci()
    return move.uci()


def describe(info: Mapping[str, Any], board: chess.Board, move: chess.Move, source: str) -> str:
    """A log line for our move: SAN, source, and the search info."""
    line = chat.kibitz_line(board, info, max_chars=1000) if info else ""
    return f"{board.san(move)} ({source})" + (f" {line}" if line else "")


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
    ) -> None:
        self.id = game_id
        self.client = client
        self.config = config
        self.engines = engines
        self.me = me
        self.hooks = hooks
        self.load = load
        self.metrics = metrics
        self.ledger = ledger
        self.info = info
        self.think_s = think_s  # set: a correspondence visit (think this long, move, leave)
        self.abandoned = False  # left at shutdown: the game goes on without us
        self.conduct = Conduct(config.draw, config.resign)
        self.latency = LatencyMeter()
        self.lag = LatencyMeter()  # clock charged per move beyond the engine's thinking
        self._charge: tuple[int, float, float] | None = None  # (ply, our clock, thinking)
        self.move_log = MoveLog(game_id, config.log)

        self.context: GameContext | None = None
        self.board: chess.Board | None = None
        self.moves: tuple[str, ...] = ()
        self.state: GameState | None = None
        self.state_received = 0.0
        self.status = "started"
        self.winner: str | None = None
        self.reason = "finished"
        self.started_at = time.time()

        self._engine: Engine | None = None
        self._tg: asyncio.TaskGroup | None = None
        self._over = asyncio.Event()
        self._wake = asyncio.Event()
        self._resync_wanted = False
        self._resyncs = 0
        self._mover: asyncio.Task[None] | None = None
        self._mover_moves: tuple[str, ...] | None = None
        self._mover_thinking = False  # the mover may be cancelled only before it sends
        self._ponder: asyncio.Task[None] | None = None
        self._ponder_plies = -1  # the move count that pondering goes on through
        self._sent: tuple[int, float] | None = None  # (ply of our move, when it was sent)
        self._move_failed = False
        self._idle_since = time.monotonic()  # when the current turn began
        self._our_moves = 0
        self._comments: dict[int, str] = {}
        self._answered_draw: int | None = None
        self._answered_takeback: int | None = None
        self._claim_at: float | None = None
        self._server_finished_at: float | None = None
        self._abort_sent = False
        self._abort_extra_s = 0.0  # granted by the opponent's !wait
        self._greeted = False
        self._kibitz_on = config.chat.kibitz_every > 0
        self._last_search: tuple[chess.Board, dict[str, Any]] | None = None
        self._sources: tuple[MoveSource, ...] = ()
        self._observers: list[GameObserver] = []
        self._commands: ChatCommandHandler | None = (
            hooks.chat_commands() if hooks.chat_commands is not None else None
        )

    # --- public --------------------------------------------------------------------------

    @property
    def over(self) -> bool:
        return self._over.is_set()

    def server_finished(self, info: GameInfo) -> None:
        """gameFinish arrived on the event stream: the second end signal."""
        self.info = info
        if self._server_finished_at is None:
            self._server_finished_at = time.monotonic()

    async def leave(self, action: str) -> None:
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
                self._engine = await self.engines.acquire()
                async with asyncio.TaskGroup() as tg:
                    self._tg = tg
                    watchdog = tg.create_task(self._watch(), name=f"game {self.id} watchdog")
                    while not self.over:
                        self._resync_wanted = False
                        self._wake.clear()
                        reader = tg.create_task(self._read(), name=f"game {self.id} stream")
                        await self._wake.wait()
                        reader.cancel()
                        await asyncio.wait({reader})
                    watchdog.cancel()
                    self._cancel_mover()
                    self._stop_pondering()
            except EngineFailure as exc:
                log.error("no engine for this game: %s", exc)
                self.reason = f"gave up: {exc}"
                await self._end_by_request(self.reason)
            finally:
                self.load.games -= 1
                if self._engine is not None:
                    await self.engines.release(self._engine)
                    self._engine = None
                self.move_log.close()
            await self._after_end()
        outcome = GameOutcome(self.id, self.status, self.winner,
                              self.context.color if self.context else None, self.moves,
                              self.reason)
        self.metrics.games.append(outcome)
        return outcome

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
        self.context = GameContext(
            game_id=self.id, variant=full.variant, speed=full.speed, rated=full.rated,
            me=self.me.name, color=color, white=full.white, black=full.black,
            initial_fen=full.initial_fen, clock_initial_s=full.clock_initial_s,
            clock_increment_s=full.clock_increment_s,
        )
        try:
            self.board = initial_board(full.variant, full.initial_fen)
        except ValueError as exc:
            self._give_up(f"cannot set up the initial position {full.initial_fen!r}: {exc}")
            return
        self.conduct.take_back(common_prefix(full.state.moves, self.moves))  # while away
        self.moves = ()
        self._mover_moves = None  # a fresh full state: think again if it is our turn
        if not self._greeted:
            self._greeted = True
            self._join(full)
        log.info("%s %s vs %s, %s, %s (%s to play)",
                 "rated" if full.rated else "casual", full.white.name, full.black.name,
                 full.variant, full.speed, "we" if color == chess.WHITE else "they")
        self._on_state(full.state, received)

    def _on_state(self, state: GameState, received: float) -> None:
        if self.context is None or self.board is None:
            log.warning("gameState before gameFull: waiting for a fresh stream")
            self._request_resync("state before gameFull")
            return
        if not self._sync(state.moves):
            return
        self.state = state
        self.state_received = received
        for observer in self._observers:
            self._observe(observer.game_state, state)
        if state.is_over:
            self._finish("finished", status=state.status, winner=state.winner)
            return
        if self._sent is not None and len(state.moves) > self._sent[0]:
            self.latency.add(received - self._sent[1])
            self._sent = None
        self._measure_lag(state)
        ours = self._our_turn()
        self._answer_offers(state)
        in_flight = self._sent is not None and self._sent[0] == len(state.moves)
        if ours and self._mover_moves != state.moves and not in_flight:
            self._start_mover(state.moves, received)
        elif not ours and self._mover_moves != state.moves:
            self._cancel_mover()
        if self.think_s is not None and not ours and self._sent is None:
            self._finish("left until our turn", status=state.status)

    def _measure_lag(self, state: GameState) -> None:
        """Our clock before and after our move: what the move cost beyond the thinking
        (transit both ways, the bot's own work, waiting for a core), for the allocation."""
        if self._charge is None or self.context is None or len(state.moves) <= self._charge[0]:
            return
        ply, before_s, think_s = self._charge
        self._charge = None
        if len(state.moves) != ply + 1:
            return  # the opponent moved too: the clock snapshot is no longer ours alone
        white = self.context.color == chess.WHITE
        after_s = state.wtime_s if white else state.btime_s
        increment_s = state.winc_s if white else state.binc_s
        self.lag.add(max(0.0, before_s - after_s + increment_s - think_s))

    def _sync(self, moves: tuple[str, ...]) -> bool:
        """Bring the board to `moves`; False (and a resync or give-up) if they are not legal."""
        assert self.context is not None and self.board is not None
        if moves == self.moves:
            return True
        try:
            if moves[: len(self.moves)] == self.moves:
                board = replay(self.board.copy(), moves[len(self.moves):])
            else:
                board = replay(initial_board(self.context.variant, self.context.initial_fen),
                               moves)
        except ValueError as exc:
            log.error("the server's moves do not replay (%s): %s", " ".join(moves[-4:]), exc)
            self._request_resync("illegal move in the server state")
            return False
        if moves[: len(self.moves)] != self.moves:  # a takeback: its moves' scores go too
            self.conduct.take_back(common_prefix(moves, self.moves))
        if len(moves) != len(self.moves):
            self._idle_since = time.monotonic()
            self._move_failed = False
            self._resyncs = 0  # back in step: MAX_RESYNCS counts resyncs in a row, not per game
            if len(moves) != self._ponder_plies:
                self._stop_pondering()
        self.board = board
        self.moves = moves
        return True

    def _our_turn(self) -> bool:
        return (self.context is not None and self.board is not None
                and self.board.turn == self.context.color and not self.over)

    # --- offers, chat, opponent gone ---------------------------------------------------------

    def _answer_offers(self, state: GameState) -> None:
        assert self.context is not None and self.board is not None
        white = self.context.color == chess.WHITE
        their_draw = state.bdraw if white else state.wdraw
        their_takeback = state.btakeback if white else state.wtakeback
        ply = len(state.moves)
        if their_draw and self._answered_draw != ply:
            self._answered_draw = ply
            accept = self.conduct.should_accept_draw(self.board.fullmove_number)
            log.info("draw offered: %s", "accepting" if accept else "declining")
            self._spawn(self._command("draw answer", self.client.answer_draw(self.id, accept)),
                        "draw")
        if their_takeback and self._answered_takeback != ply:
            self._answered_takeback = ply
            accept = self.ledger.request(self.id)
            log.info("takeback requested: %s", "accepting" if accept else "declining")
            self._spawn(
                self._command("takeback answer", self.client.answer_takeback(self.id, accept)),
                "takeback")

    def _on_chat(self, line: ChatLine) -> None:
        log.debug("chat %s <%s> %r", line.room, line.username, line.text)
        if self._commands is None or self.context is None or self.board is None:
            return
        context = CommandContext(
            me=self.me.name, engine=self._engine_name(), opponent=self.context.opponent.name,
            eval_for_opponent=self.config.chat.eval_for_opponent,
            abortable=len(self.moves) < 2, wait_s=self.config.game.abort_after_s,
            kibitz_on=self._kibitz_on, last_search=self._last_search,
            queue=self.hooks.challenge_queue() if self.hooks.challenge_queue else None,
        )
        try:
            reply = self._commands.respond(room=line.room, username=line.username,
                                           text=line.text, context=context)
        except Exception as exc:
            log.warning("chat command %.40r failed: %s: %s", line.text, type(exc).__name__, exc)
            return
        if reply is None:
            return
        if reply.action is CommandAction.PV_ON:
            self._kibitz_on = True
        elif reply.action is CommandAction.PV_OFF:
            self._kibitz_on = False
        elif reply.action is CommandAction.WAIT:
            self._abort_extra_s += self.config.game.abort_after_s
        self._spawn(self._send_chat(ChatMessage(reply.room, reply.text)), "chat reply")

    def _on_opponent_gone(self, event: OpponentGone) -> None:
        if event.gone:
            wait_s = event.claim_win_in_s if event.claim_win_in_s is not None else 0.0
            log.info("opponent gone; victory claimable in %.0f s", wait_s)
            self._claim_at = time.monotonic() + wait_s
        else:
            log.info("opponent is back")
            self._claim_at = None

    # --- our move -----------------------------------------------------------------------

    def _start_mover(self, moves: tuple[str, ...], received: float) -> None:
        self._cancel_mover()
        self._mover_moves = moves
        self._mover = self._spawn(self._play(moves, received), "move")

    def _cancel_mover(self) -> None:
        """Stop a search for a position that is gone; a move already on its way completes."""
        if self._mover is not None and not self._mover.done() and self._mover_thinking:
            self._mover.cancel()
        self._mover = None

    def _clocks(self) -> tuple[float, float]:
        """(ours, theirs) in seconds as of now."""
        state, context = self.state, self.context
        if state is None or context is None:
            return (0.0, 0.0)
        white_s, black_s = state.wtime_s, state.btime_s
        if len(state.moves) >= 2 and self.board is not None:
            elapsed = time.monotonic() - self.state_received
            if self.board.turn == chess.WHITE:
                white_s -= elapsed
            else:
                black_s -= elapsed
        return (white_s, black_s) if context.color == chess.WHITE else (black_s, white_s)

    def _plan(self, board: chess.Board, moves: tuple[str, ...], received: float) -> ThinkPlan:
        assert self.state is not None and self.context is not None
        if self.think_s is not None:  # a correspondence visit: a fixed budget, no clock
            return ThinkPlan(chess.engine.Limit(time=self.think_s),
                             self.think_s + VISIT_SLACK_S, 0.0)
        state = self.state
        white = self.context.color == chess.WHITE
        return plan_move(
            turn=board.turn,
            our_clock_s=state.wtime_s if white else state.btime_s,
            their_clock_s=state.btime_s if white else state.wtime_s,
            our_increment_s=state.winc_s if white else state.binc_s,
            their_increment_s=state.binc_s if white else state.winc_s,
            elapsed_s=time.monotonic() - received,
            clock_running=len(moves) >= 2,
            overhead_s=self.config.engine.move_overhead_s,
            latency_s=self.latency.estimate_s,
            lag_s=self.lag.mean_s,
            first_move=len(moves) < 2,
            first_move_s=self.config.engine.first_move_s,
            thinking_games=self.load.thinking + 1,
            cores=CORES,
            max_move_s=self.config.engine.max_move_s,
        )

    async def _choose(self, board: chess.Board, moves: tuple[str, ...],
                      received: float) -> tuple[SourcedMove, float]:
        """Our move and the engine's time: its thinking, plus any failed attempt and restart
        (0 for a move source's answer)."""
        assert self.context is not None
        restriction: RootRestriction | None = None
        for source in self._sources:
            try:
                async with asyncio.timeout(SOURCE_TIMEOUT_S):
                    answer = await source.choose(board, self.context)
            except Exception as exc:
                log.warning("move source %s failed: %s: %s", source.name, type(exc).__name__, exc)
                continue
            if isinstance(answer, RootRestriction):
                legal = tuple(m for m in answer.moves if board.is_legal(m))
                if legal and restriction is None:
                    restriction = RootRestriction(legal, answer.source, answer.tablebase_wdl)
                continue
            if answer is not None and board.is_legal(answer.move):
                return answer, 0.0
            if answer is not None:
                log.warning("move source %s offered an illegal move %s", source.name, answer.move)
        root_moves = restriction.moves if restriction is not None else None
        if root_moves is not None and len(root_moves) == 1:
            return SourcedMove(root_moves[0], restriction.source if restriction else "root",
                               tablebase_wdl=restriction.tablebase_wdl if restriction else None
                               ), 0.0
        engine_start = time.monotonic()
        for attempt in range(1, ENGINE_ATTEMPTS + 1):
            if self._engine is None or not self._engine.alive:
                await self._replace_engine("not running")
            assert self._engine is not None
            plan = self._plan(board, moves, received)
            self.load.thinking += 1
            try:
                thought = await self._engine.think(board, plan.limit,
                                                   hard_limit_s=plan.hard_limit_s, game=self.id,
                                                   root_moves=root_moves,
                                                   ponder=self._may_ponder())
            except EngineFailure as exc:
                log.error("engine failure (attempt %d of %d): %s; position: %s moves %s",
                          attempt, ENGINE_ATTEMPTS, exc, self.context.initial_fen,
                          " ".join(moves) or "-")
                await self._replace_engine(str(exc))
                continue
            finally:
                self.load.thinking -= 1
            if thought.timed_out:
                log.warning("the engine overran its hard limit but answered to stop")
            wdl = restriction.tablebase_wdl if restriction is not None else None
            return (SourcedMove(thought.move, "engine", thought.info, wdl),
                    time.monotonic() - engine_start)
        raise EngineFailure(f"no move after {ENGINE_ATTEMPTS} engine attempts")

    async def _replace_engine(self, why: str) -> None:
        self.metrics.engine_restarts += 1
        old, self._engine = self._engine, None
        log.warning("restarting the engine: %s", why)
        if old is not None:
            await self.engines.release(old)
        self._engine = await self.engines.acquire()

    async def _play(self, moves: tuple[str, ...], received: float) -> None:
        board = self.board.copy() if self.board is not None else None
        assert board is not None and self.context is not None
        self._mover_thinking = True
        try:
            chosen, think_s = await self._choose(board, moves, received)
        except EngineFailure as exc:
            self._give_up(str(exc))
            return
        finally:
            self._mover_thinking = False
        self._record_verdict(chosen, len(moves))
        ours, theirs = self._clocks()
        their_increment_s = 0.0
        if self.state is not None:
            white = self.context.color == chess.WHITE
            their_increment_s = self.state.binc_s if white else self.state.winc_s
        if self.conduct.should_resign(abortable=len(moves) < 2, our_clock_s=ours,
                                      their_clock_s=theirs, their_increment_s=their_increment_s):
            log.info("resigning: the score has been lost for %d moves", self.config.resign.moves)
            await self._command("resign", self.client.resign(self.id))
            return
        offer = self.conduct.should_offer_draw(board.fullmove_number)
        uci = wire_uci(board, chosen.move, self.context.variant)
        sent_at = time.monotonic()
        self.metrics.moves.append(MoveTiming(self.id, len(moves), sent_at - received - think_s,
                                             think_s, chosen.source))
        self._sent = (len(moves), sent_at)
        if len(moves) >= 2 and self.state is not None:  # the clock runs: measure its charge
            white = self.context.color == chess.WHITE
            clock_s = self.state.wtime_s if white else self.state.btime_s
            self._charge = (len(moves), clock_s, think_s)
        deadline_s = min(MOVE_REQUEST_MAX_S, max(MIN_MOVE_REQUEST_S, ours))
        try:
            await self.client.move(self.id, uci, offering_draw=offer, deadline_s=deadline_s)
        except (RequestError, Unavailable) as exc:
            self.metrics.rejected_moves += 1
            self._move_failed = True
            self._sent = None
            log.warning("move %s not accepted: %s", uci, exc)
            return
        self._our_moves += 1
        self._after_move(board, chosen, offer)

    def _record_verdict(self, chosen: SourcedMove, ply: int) -> None:
        score = chosen.info.get("score")
        if isinstance(score, chess.engine.PovScore) and self.context is not None:
            self.conduct.record(score.pov(self.context.color),
                                tablebase_wdl=chosen.tablebase_wdl, ply=ply)
        else:
            self.conduct.record(None, tablebase_wdl=chosen.tablebase_wdl, ply=ply)

    def _after_move(self, board: chess.Board, chosen: SourcedMove, offered_draw: bool) -> None:
        info = dict(chosen.info)
        if info:
            self._last_search = (board, info)
        ply = self._ply_of(board)
        for observer in self._observers:
            self._observe(observer.our_move, ply, board, chosen)
        line = chat.kibitz_line(board, info) if info else ""
        self.move_log.write(describe(info, board, chosen.move, chosen.source)
                            + (" (draw offered)" if offered_draw else ""))
        self._start_pondering(board, chosen)
        every = self.config.chat.kibitz_every
        if line and self._kibitz_on and every > 0 and self._our_moves % every == 0:
            for room in self.config.chat.kibitz_rooms:
                self._spawn(self._send_chat(ChatMessage(room, line)), "kibitz")

    def _start_pondering(self, board: chess.Board, chosen: SourcedMove) -> None:
        """Think on the opponent's time about the reply the PV expects, when configured and
        every game has a core to itself (pondering would slow the others' searches)."""
        pv = chosen.info.get("pv")
        if (not self._may_ponder() or self._engine is None
                or not isinstance(pv, list) or len(pv) < 2):
            return
        if len(self.moves) > len(board.move_stack) + 1:
            return  # the opponent has replied already: a search for it may be running
        expected = board.copy(stack=True)
        for move in pv[:2]:
            if not expected.is_legal(move):
                return
            expected.push(move)
        if expected.is_game_over():
            return
        self._stop_pondering()
        self.metrics.ponders += 1
        self._ponder_plies = len(board.move_stack) + 1  # our move echoed: keep pondering
        self._ponder = self._spawn(self._engine.ponder(expected, game=self.id), "ponder")

    def _may_ponder(self) -> bool:
        """engine.ponder, while every game has a core to itself (pondering would slow the
        others' searches)."""
        return self.config.engine.ponder and self.load.games < CORES

    def _stop_pondering(self) -> None:
        if self._ponder is not None and not self._ponder.done():
            self._ponder.cancel()
        self._ponder = None

    def _ply_of(self, board: chess.Board) -> int:
        """The 0-based index in the game's move list of the move played from `board`."""
        return len(board.move_stack)

    def _observe(self, method: Any, *args: Any) -> None:
        try:
            method(*args)
        except Exception:
            log.exception("game observer %s failed", getattr(method, "__qualname__", method))

    # --- commands and chat ------------------------------------------------------------------

    def _spawn(self, coro: Any, what: str) -> asyncio.Task[None]:
        assert self._tg is not None
        return self._tg.create_task(self._guard(coro, what), name=f"game {self.id} {what}")

    async def _guard(self, coro: Any, what: str) -> None:
        """A game's helper task: an error is logged and never escapes into the game."""
        try:
            await coro
        except AuthError:
            raise
        except Exception:
            log.exception("%s failed", what)
            if what == "move":
                self._move_failed = True

    async def _command(self, what: str, request: Any) -> bool:
        try:
            await request
        except (RequestError, Unavailable) as exc:
            log.warning("%s: %s", what, exc)
            return False
        return True

    async def _send_chat(self, message: ChatMessage) -> None:
        text = chat.sanitize(message.text)
        if not text:
            return
        self.metrics.chat_lines.append((self.id, message.room, text))
        await self._command(f"chat to {message.room}",
                            self.client.chat(self.id, message.room, text))

    def _engine_name(self) -> str:
        return self._engine.name if self._engine is not None else self.engines.name

    def _greetings(self, phase: GamePhase) -> list[ChatMessage]:
        if self.context is None:
            return []
        return greetings(self.config.chat, phase, me=self.me.name,
                         opponent=self.context.opponent.name, engine=self._engine_name())

    def _join(self, full: GameFull) -> None:
        """First gameFull: per-game sources and observers, and hello (at the game's start)."""
        assert self.context is not None
        if self.hooks.move_sources is not None:
            try:
                self._sources = tuple(self.hooks.move_sources(self.context))
            except Exception:
                log.exception("move sources could not be set up; the engine plays alone")
        for factory in self.hooks.observers:
            try:
                self._observers.append(factory(full, self.context))
            except Exception:
                log.exception("game observer could not be set up")
        first_visit = self.think_s is None or len(full.state.moves) == int(
            self.board is not None and self.board.turn != self.context.color)
        if len(full.state.moves) < 2 and not full.state.is_over and first_visit:
            for message in self._greetings(GamePhase.START):
                self._spawn(self._send_chat(message), "greeting")

    # --- watchdog, resync, ending ------------------------------------------------------------

    async def _watch(self) -> None:
        abort_after_s = self.config.game.abort_after_s
        while not self.over:
            await asyncio.sleep(WATCH_INTERVAL_S)
            now = time.monotonic()
            if self._server_finished_at is not None and now - self._server_finished_at > \
                    FINISH_GRACE_S:
                log.info("gameFinish seen but the stream did not end: ending the game")
                winner = self.info.winner if self.info else None
                self._finish("finished", status=self._status_from_info(), winner=winner)
                return
            if self.context is None or self.state is None:
                continue
            if (len(self.moves) < 2 and not self._our_turn() and not self._abort_sent
                    and now - self._idle_since > abort_after_s + self._abort_extra_s):
                self._abort_sent = True
                log.info("the opponent has not moved in %.0f s: aborting", abort_after_s)
                await self._command("abort", self.client.abort(self.id))
            if self._claim_at is not None and now >= self._claim_at \
                    and self.config.game.claim_victory:
                self._claim_at = now + CLAIM_RETRY_S
                log.info("claiming victory: the opponent is gone")
                await self._command("claim victory", self.client.claim_victory(self.id))
            mover_idle = self._mover is None or self._mover.done()
            if self._our_turn() and mover_idle:
                wait_s = STUCK_AFTER_FAILURE_S if self._move_failed else STUCK_AFTER_SENT_S
                if now - self._idle_since > wait_s:
                    self._idle_since = now
                    self._request_resync("our turn, but no move is on its way")

    def _request_resync(self, why: str) -> None:
        self._resyncs += 1
        self.metrics.resyncs += 1
        if self._resyncs > MAX_RESYNCS:
            self._give_up(f"still out of step after {MAX_RESYNCS} resyncs ({why})")
            return
        log.warning("resync (%s): reopening the game stream", why)
        self._mover_moves = None
        self._sent = None
        self._resync_wanted = True
        self._wake.set()

    def _give_up(self, why: str) -> None:
        """The game cannot go on: abort or resign it, and end it here."""
        log.error("giving up the game: %s", why)
        self.reason = f"gave up: {why}"
        self._spawn(self._end_by_request(why), "give up")

    async def _end_by_request(self, why: str) -> None:
        """Abort (while abortable) or resign, then end the game whatever the server says."""
        if self.think_s is not None:  # a correspondence visit leaves; the next one retries
            self._finish(f"left: {why}", status=self.status)
            return
        if len(self.moves) < 2 and await self._command("abort", self.client.abort(self.id)):
            log.info("aborted: %s", why)
        elif await self._command("resign", self.client.resign(self.id)):
            log.info("resigned: %s", why)
        self._finish(self.reason if self.reason != "finished" else why, status=self.status)

    def _status_from_info(self) -> str:
        return self.info.status if self.info is not None else self.status

    def _finish(self, reason: str, *, status: str, winner: str | None = None) -> None:
        if self.over:
            return
        self.status = status
        self.winner = winner
        if self.reason == "finished":
            self.reason = reason
        self._over.set()
        self._wake.set()
        if status in ("created", "started"):  # a visit or a shutdown leaves a game that goes on
            log.info("leaving the game (%s)", reason)
            return
        log.info("game over: %s%s (%s)", status, f", {winner} wins" if winner else "", reason)

    async def _after_end(self) -> None:
        """Goodbye line, observers (PGN), the takeback ledger."""
        if self.context is None:
            return
        if (self.think_s is not None or self.abandoned) and self.status in ("created", "started"):
            return  # a visit or a shutdown left a game that goes on: nothing has ended
        if len(self.moves) >= 2 and self.reason == "finished":
            for message in self._greetings(GamePhase.END):
                with contextlib.suppress(LichessError, TimeoutError):
                    async with asyncio.timeout(CHAT_TIMEOUT_S):
                        await self._send_chat(message)
        for observer in self._observers:
            try:
                await observer.game_finished(self.status, self.winner)
            except Exception:
                log.exception("game observer %s failed at the end", type(observer).__name__)
        self.ledger.forget(self.id)
