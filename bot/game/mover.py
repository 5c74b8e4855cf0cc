"""The mover: our move when it is our turn, and pondering on the opponent's time.

One mover task per turn asks the move sources in order, then the engine (restarted when it
fails; with MultiPV when a source names a past game's move to avoid, bot/game/deviation.py),
weighs resigning and offering a draw, and sends the move. The task is cancelled if the
position changes while it thinks (a takeback), never once the move is on its way. The
echo of our move times the round trip and the clock's charge, for the next allocation.
With engine.ponder, a search of the reply the PV expects runs until the opponent moves.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Final, Protocol

import chess
import chess.engine

from bot.engines.levels import GameLevel
from bot.engines.pool import Engine, EngineFailure, EnginePool
from bot.engines.searchline import SearchLine
from bot.game.alarms import Alarms
from bot.game.clock import LatencyMeter, ThinkPlan, plan_move
from bot.game.conduct import Conduct
from bot.game.deviation import choose_deviation, lines_wanted
from bot.game.hooks import (
    Avoid,
    GameContext,
    LastSearch,
    MoveSource,
    RootRestriction,
    SourcedMove,
)
from bot.game.metrics import Metrics, MoveTiming, ThinkingLoad
from bot.game.position import Position, wire_uci
from bot.lichess.client import AuthError, Lichess, RequestError, Unavailable, attempt
from bot.lichess.events import GameState
from bot.ops.config import Config

log = logging.getLogger(__name__)

ENGINE_ATTEMPTS: Final = 3  # engine starts/searches tried for one move before giving up
SOURCE_TIMEOUT_S: Final = 3.0  # a move source (book, tablebase, online) gets at most this
MOVE_REQUEST_MAX_S: Final = 30.0  # a move request never retries longer than this
MIN_MOVE_REQUEST_S: Final = 2.0  # ... nor shorter than this
VISIT_SLACK_S: Final = 5.0  # a correspondence visit's search may overrun think_s by this
CORES: Final = os.cpu_count() or 1


def is_finished(board: chess.Board) -> bool:
    """Over by the rules of the board alone: no legal move (mate, stalemate) or the
    variant's own end. Draws lila may claim or apply differently are left to lila."""
    return board.is_variant_end() or not any(board.legal_moves)


@dataclass(frozen=True, slots=True)
class Turn:
    """Our turn as the game's position held it when the move started, read once: the mover
    chooses and plans from it. What must be seen as of later (the clocks after the thinking,
    a reply that came while pondering) is read from the game then."""

    board: chess.Board  # a copy: the position we move from
    moves: tuple[str, ...]  # the server's move list up to it
    context: GameContext
    state: GameState | None  # the state that gave us the turn: its clocks plan the search
    received: float  # monotonic time that state arrived


class MoverHost(Protocol):
    """What the mover needs of its game."""

    @property
    def position(self) -> Position | None: ...

    def spawn(self, coro: Coroutine[Any, Any, object], what: str) -> asyncio.Task[None]: ...

    def give_up(self, why: str) -> None: ...

    def played(self, board: chess.Board, chosen: SourcedMove, offered_draw: bool) -> None:
        """Our move from `board` was accepted by the server."""
        ...


class Mover:
    def __init__(self, game_id: str, host: MoverHost, *, client: Lichess, config: Config,
                 engines: EnginePool, conduct: Conduct, alarms: Alarms,
                 load: ThinkingLoad, metrics: Metrics, think_s: float | None) -> None:
        self.game_id = game_id
        self.host = host
        self.client = client
        self.config = config
        self.engines = engines
        self.conduct = conduct
        self.alarms = alarms
        self.load = load
        self.metrics = metrics
        self.think_s = think_s  # set: a correspondence visit (a fixed budget, no clock)
        self.sources: tuple[MoveSource, ...] = ()
        self.latency = LatencyMeter()
        self.lag = LatencyMeter()  # clock charged per move beyond the engine's thinking
        self.moves_played = 0
        self.last_search: LastSearch | None = None
        self._engine: Engine | None = None
        # The game's level, from its first gameFull: each engine the game holds is told it
        # before its first search (a restarted one too).
        self.level: GameLevel | None = None
        self._leveled: Engine | None = None
        self._task: asyncio.Task[None] | None = None
        self._for_moves: tuple[str, ...] | None = None  # the move list the task answers
        self._thinking = False  # the task may be cancelled only before it sends
        self._ponder: asyncio.Task[None] | None = None
        self._ponder_plies = -1  # the move count that pondering goes on through
        self._sent: tuple[int, float] | None = None  # (ply of our move, when it was sent)
        self._charge: tuple[int, float, float] | None = None  # (ply, our clock, thinking)

    # --- the engine seat ----------------------------------------------------------------------

    async def acquire(self) -> None:
        self._engine = await self.engines.acquire()

    def seat(self, engines: EnginePool, config: Config) -> None:
        """Play on `engines` with `config`: chosen at gameFull, before any engine was
        taken (the first think takes one)."""
        self.engines = engines
        self.config = config

    async def release(self) -> None:
        if self._engine is not None:
            engine, self._engine = self._engine, None
            await self.engines.release(engine)

    @property
    def engine_pid(self) -> int | None:
        """The process of the engine this game holds now (None between moves of a pool)."""
        return self._engine.pid if self._engine is not None else None

    @property
    def engine_name(self) -> str:
        return self._engine.name if self._engine is not None else self.engines.name

    # --- following the game ---------------------------------------------------------------------

    @property
    def idle(self) -> bool:
        """No mover task is running."""
        return self._task is None or self._task.done()

    @property
    def awaiting_echo(self) -> bool:
        """Our move was sent and the server has not shown it yet."""
        return self._sent is not None

    def follow(self, state: GameState, received: float, *, our_turn: bool) -> None:
        """A new state: time our move's echo, then start a move on our turn, or stop one
        thinking about a position that is gone."""
        if self._sent is not None and len(state.moves) > self._sent[0]:
            self.latency.add(received - self._sent[1])
            self._sent = None
        self._measure_lag(state)
        in_flight = self._sent is not None and self._sent[0] == len(state.moves)
        if our_turn and self._for_moves != state.moves and not in_flight:
            self._start(state.moves, received)
        elif not our_turn and self._for_moves != state.moves:
            self.cancel()

    def new_ply(self, plies: int) -> None:
        """The move count changed: pondering goes on only through the echo of our move."""
        if plies != self._ponder_plies:
            self.stop_pondering()

    def rethink(self, *, drop_sent: bool = False) -> None:
        """Think again at the next state even if the moves are the same (a fresh stream);
        `drop_sent`: the move we sent is not awaited any more (a resync)."""
        self._for_moves = None
        if drop_sent:
            self._sent = None

    def cancel(self) -> None:
        """Stop a search for a position that is gone; a move already on its way completes."""
        if self._task is not None and not self._task.done() and self._thinking:
            self._task.cancel()
        self._task = None

    def stop(self) -> None:
        self.cancel()
        self.stop_pondering()

    # --- one move -------------------------------------------------------------------------------

    def _start(self, moves: tuple[str, ...], received: float) -> None:
        self.cancel()
        self._for_moves = moves
        # Cancellable from the start: the game may end before the task first runs.
        self._thinking = True
        self._task = self.host.spawn(self._turn(moves, received), "move")

    def _done_thinking(self) -> None:
        """Past the search: the move on its way completes. Only the current task's: a task
        cancelled for a newer one must not make the newer one uncancellable."""
        if self._task is asyncio.current_task():
            self._thinking = False

    async def _turn(self, moves: tuple[str, ...], received: float) -> None:
        try:
            await self._play(moves, received)
        except AuthError:
            raise
        except Exception:
            self.alarms.move_failed()  # the alarms resync soon
            raise

    async def _play(self, moves: tuple[str, ...], received: float) -> None:
        position = self.host.position
        assert position is not None
        turn = Turn(position.board.copy(), moves, position.context, position.state, received)
        board, context = turn.board, turn.context
        if is_finished(board):
            # A `started` gameState can show the move that ended the game before the final
            # one (lichess-bot#1067): the end comes next, nothing to search.
            self._done_thinking()
            log.debug("no move to make: the position is finished")
            return
        self._thinking = True
        try:
            chosen, think_s = await self._choose(turn)
        except EngineFailure as exc:
            self.host.give_up(str(exc))
            return
        finally:
            self._done_thinking()
        self._record_verdict(chosen, len(moves), context.color)
        # The clocks as of now, after the thinking: resigning and the move's deadline use them.
        position = self.host.position or position
        ours_s, theirs_s = position.clocks_s(time.monotonic())
        state = position.state
        their_increment_s = state.clock_for(not context.color).increment_s if state else 0.0
        if self.conduct.should_resign(abortable=len(moves) < 2, our_clock_s=ours_s,
                                      their_clock_s=theirs_s, their_increment_s=their_increment_s):
            log.info("resigning: the score has been lost for %d moves", self.config.resign.moves)
            await attempt("resign", self.client.resign(self.game_id))
            return
        offer = self.conduct.should_offer_draw(board.fullmove_number)
        uci = wire_uci(board, chosen.move, context.variant)
        sent_at = time.monotonic()
        self.metrics.moved(MoveTiming(self.game_id, len(moves), sent_at - received - think_s,
                                      think_s, chosen.source))
        self._sent = (len(moves), sent_at)
        if len(moves) >= 2 and state is not None:  # the clock runs: measure its charge
            self._charge = (len(moves), state.clock_for(context.color).time_s, think_s)
        deadline_s = min(MOVE_REQUEST_MAX_S, max(MIN_MOVE_REQUEST_S, ours_s))
        try:
            await self.client.move(self.game_id, uci, offering_draw=offer, deadline_s=deadline_s)
        except (RequestError, Unavailable) as exc:
            self.metrics.rejected_moves += 1
            self.alarms.move_failed()
            self._sent = None
            log.warning("move %s not accepted: %s", uci, exc)
            return
        self.moves_played += 1
        if chosen.line is not None:
            self.last_search = (board, chosen.line)
        self.host.played(board, chosen, offer)
        self._start_pondering(board, chosen)

    def _record_verdict(self, chosen: SourcedMove, ply: int, color: chess.Color) -> None:
        score = chosen.line.score if chosen.line is not None else None
        ours = score.pov(color) if score is not None else None
        self.conduct.record(ours, tablebase_wdl=chosen.tablebase_wdl, ply=ply)

    def _measure_lag(self, state: GameState) -> None:
        """Our clock before and after our move: what the move cost beyond the thinking
        (transit both ways, the bot's own work, waiting for a core), for the allocation."""
        position = self.host.position
        if self._charge is None or position is None or len(state.moves) <= self._charge[0]:
            return
        ply, before_s, think_s = self._charge
        self._charge = None
        if len(state.moves) != ply + 1:
            return  # the opponent moved too: the clock snapshot is no longer ours alone
        after = state.clock_for(position.context.color)
        self.lag.add(max(0.0, before_s - after.time_s + after.increment_s - think_s))

    def _plan(self, turn: Turn) -> ThinkPlan:
        state = turn.state
        assert state is not None
        if self.think_s is not None:  # a correspondence visit: a fixed budget, no clock
            return ThinkPlan(chess.engine.Limit(time=self.think_s),
                             self.think_s + VISIT_SLACK_S, 0.0)
        color = turn.context.color
        ours, theirs = state.clock_for(color), state.clock_for(not color)
        return plan_move(
            turn=turn.board.turn,
            our_clock_s=ours.time_s,
            their_clock_s=theirs.time_s,
            our_increment_s=ours.increment_s,
            their_increment_s=theirs.increment_s,
            elapsed_s=time.monotonic() - turn.received,
            clock_running=len(turn.moves) >= 2,
            overhead_s=self.config.engine.move_overhead_s,
            latency_s=self.latency.estimate_s,
            lag_s=self.lag.mean_s,
            first_move=len(turn.moves) < 2,
            first_move_s=self.config.engine.first_move_s,
            thinking_games=self.load.thinking + 1,
            cores=CORES,
            max_move_s=self.config.engine.max_move_s,
        )

    async def _choose(self, turn: Turn) -> tuple[SourcedMove, float]:
        """Our move and the engine's time: its thinking, plus any failed attempt and restart
        (0 for a move source's answer)."""
        board, moves, context = turn.board, turn.moves, turn.context
        restriction: RootRestriction | None = None
        avoid: Avoid | None = None
        for source in self.sources:
            try:
                async with asyncio.timeout(SOURCE_TIMEOUT_S):
                    answer = await source.choose(board, context)
            except Exception as exc:
                log.warning("move source %s failed: %s: %s", source.name, type(exc).__name__, exc)
                continue
            if isinstance(answer, Avoid):
                avoid = avoid or answer
                continue
            if isinstance(answer, SourcedMove) and avoid is not None and answer.move in avoid.moves:
                log.debug("%s offered %s, the move of %s: passed over", source.name,
                          answer.move.uci(), avoid.why)
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
        wdl = restriction.tablebase_wdl if restriction is not None else None
        if restriction is not None and root_moves is not None and len(root_moves) == 1:
            return SourcedMove(root_moves[0], restriction.source, tablebase_wdl=wdl), 0.0
        engine_start = time.monotonic()
        for attempt_no in range(1, ENGINE_ATTEMPTS + 1):
            if self._engine is None and attempt_no == 1:
                await self.acquire()  # the engine chosen at gameFull
            if self._engine is None or not self._engine.alive:
                await self._replace_engine("not running")
            assert self._engine is not None
            plan = self._plan(turn)
            self.load.thinking += 1
            ponder = self._may_ponder()
            multipv = (lines_wanted(len(avoid.moves), board.legal_moves.count())
                       if avoid is not None and root_moves is None and self._engine.multipv
                       else 1)
            try:
                if self.level is not None and self._leveled is not self._engine:
                    self._leveled = self._engine
                    await self._engine.set_level(self.level)
                thought = await self._engine.think(board, plan.limit,
                                                   hard_limit_s=plan.hard_limit_s,
                                                   game=self.game_id, root_moves=root_moves,
                                                   ponder=ponder, multipv=multipv)
            except EngineFailure as exc:
                log.error("engine failure (attempt %d of %d): %s; position: %s moves %s",
                          attempt_no, ENGINE_ATTEMPTS, exc, context.initial_fen,
                          " ".join(moves) or "-")
                await self._replace_engine(str(exc))
                continue
            finally:
                self.load.thinking -= 1
            if thought.timed_out:
                log.warning("the engine overran its hard limit but answered to stop")
            if ponder and self._engine.xboard:
                self.metrics.ponders += 1  # told `hard`: it ponders by itself after this move
            chosen = SourcedMove(thought.move, "engine", thought.line, wdl)
            if avoid is not None and root_moves is None:
                chosen = self._deviate(chosen, thought.lines, avoid, board.turn)
            return chosen, time.monotonic() - engine_start
        raise EngineFailure(f"no move after {ENGINE_ATTEMPTS} engine attempts")

    def _deviate(self, chosen: SourcedMove, lines: tuple[SearchLine, ...], avoid: Avoid,
                 color: chess.Color) -> SourcedMove:
        """The engine's move, or the best of its MultiPV lines that leaves a past game within
        the margin; with none, the engine's move and a line in the log saying so."""
        if chosen.move not in avoid.moves:
            return chosen
        deviation = choose_deviation(lines, avoid.moves, avoid.margin_cp, color)
        if deviation is None:
            why = ("the engine declares no MultiPV" if not lines else
                   f"no other move within {avoid.margin_cp} cp")
            log.info("game %s: repeating %s: %s; playing on", self.game_id, avoid.why, why)
            return chosen
        log.info("game %s: leaving %s with %s (%d cp below the best)", self.game_id, avoid.why,
                 deviation.line.pv[0].uci(), deviation.loss_cp)
        return SourcedMove(deviation.line.pv[0], "engine", deviation.line, chosen.tablebase_wdl)

    async def _replace_engine(self, why: str) -> None:
        self.metrics.engine_restarts += 1
        log.warning("restarting the engine: %s", why)
        await self.release()
        await self.acquire()

    # --- pondering --------------------------------------------------------------------------------

    def _start_pondering(self, board: chess.Board, chosen: SourcedMove) -> None:
        """Think on the opponent's time about the reply the PV expects, when configured and
        every game has a core to itself (pondering would slow the others' searches). An XBoard
        engine ponders by itself, told `hard` with its search: nothing to start here."""
        pv = chosen.line.pv if chosen.line is not None else ()
        position = self.host.position
        if (not self._may_ponder() or self._engine is None or self._engine.xboard
                or len(pv) < 2 or position is None):
            return
        if len(position.moves) > len(board.move_stack) + 1:
            return  # the opponent has replied already: a search for it may be running
        expected = board.copy(stack=True)
        for move in pv[:2]:
            if not expected.is_legal(move):
                return
            expected.push(move)
        if expected.is_game_over():
            return
        self.stop_pondering()
        self.metrics.ponders += 1
        self._ponder_plies = len(board.move_stack) + 1  # our move echoed: keep pondering
        self._ponder = self.host.spawn(self._engine.ponder(expected, game=self.game_id), "ponder")

    def _may_ponder(self) -> bool:
        """engine.ponder, while every game has a core to itself (pondering would slow the
        others' searches)."""
        return self.config.engine.ponder and self.load.games < CORES

    def stop_pondering(self) -> None:
        if self._ponder is not None and not self._ponder.done():
            self._ponder.cancel()
        self._ponder = None
