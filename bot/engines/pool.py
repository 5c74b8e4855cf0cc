"""Engine processes: one per game, a spare started in advance, warm-up, restart on crash.

Search never runs on the event loop: each engine is a subprocess spoken to through
python-chess's asyncio UCI or XBoard client. An engine that crashes, hangs or answers
nonsense raises `EngineFailure`; the game then replaces it and carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import chess
import chess.engine

from bot.engines.levels import GameLevel
from bot.engines.searchline import SearchLine
from bot.lichess.variants import STANDARD_RULES, engine_variants
from bot.ops.config import THREADS_OPTION, EngineConfig

log = logging.getLogger(__name__)

START_TIMEOUT_S: Final = 60.0  # process start + uci/uciok + options
WARM_UP_TIMEOUT_S: Final = 900.0  # the first start may compile the whole numba cache
WARM_UP_LIMIT: Final = chess.engine.Limit(depth=4, time=5.0)  # a search that touches every path
# Every new process searches once before it plays: an engine that loads compiled code
# lazily (numba) would otherwise spend its first move's time loading it.
PRIMING_LIMIT: Final = chess.engine.Limit(depth=2, time=1.0)
STOP_GRACE_S: Final = 1.0  # after `stop`, wait this long for bestmove before calling it hung
QUIT_TIMEOUT_S: Final = 2.0  # after `quit`, wait this long before killing the process
# What a search's info lines are parsed for: depth, nodes, nps, time, score, PV (the kibitz
# line and the conduct rules); current-move and refutation lines are not worth the work.
SEARCH_INFO: Final = chess.engine.INFO_BASIC | chess.engine.INFO_SCORE | chess.engine.INFO_PV
SPARE_RETRY_S: Final = 5.0  # wait before retrying a spare engine that failed to start
# The options a game's level sets, where the engine declares them (UCI's own names).
LIMIT_STRENGTH: Final = "UCI_LimitStrength"
ELO_OPTION: Final = "UCI_Elo"
RATING_ADV_OPTION: Final = "UCI_RatingAdv"


class EngineFailure(Exception):
    """The engine crashed, hung, or could not be started; the message says which."""


@dataclass(frozen=True, slots=True)
class EngineSpec:
    """How to start an engine: argv, options, protocol (uci or xboard)."""

    command: tuple[str, ...]
    options: Mapping[str, str | int | bool] = field(default_factory=dict)
    protocol: str = "uci"

    @classmethod
    def from_config(cls, config: EngineConfig) -> EngineSpec:
        command = config.command or (sys.executable, "-m", "engine")
        # The threads are read one way (`search_threads`: the `threads` key, or a `Threads`
        # option) and sent only when more than the engines' usual one is asked for, so an
        # engine without the option (an XBoard one, say) is not warned about by default.
        options = {name: value for name, value in config.options.items()
                   if name.lower() != THREADS_OPTION.lower()}
        if config.search_threads > 1:
            options[THREADS_OPTION] = config.search_threads
        return cls(tuple(command), options, config.protocol)


@dataclass(frozen=True, slots=True)
class Thought:
    """The engine's answer: the move, its search line (None when the engine printed no info
    line), and the wall time it took."""

    move: chess.Move
    line: SearchLine | None
    elapsed_s: float
    timed_out: bool = False
    lines: tuple[SearchLine, ...] = ()  # a MultiPV search's lines, best first


def _collect(task: asyncio.Future[Any]) -> None:
    """Retrieve a finished wait's outcome, so an abandoned one never logs as unretrieved."""
    if not task.cancelled():
        task.exception()


class Engine:
    """One running engine process (UCI or XBoard)."""

    def __init__(
        self, transport: asyncio.SubprocessTransport, protocol: chess.engine.Protocol
    ) -> None:
        self._transport = transport
        self._protocol = protocol
        self.xboard = isinstance(protocol, chess.engine.XBoardProtocol)
        self.name = str(protocol.id.get("name", "XBoard engine" if self.xboard else "UCI engine"))
        self.pid = transport.get_pid()
        # The Lichess variants it plays: python-chess tells it each game's variant.
        if isinstance(protocol, chess.engine.XBoardProtocol):
            declared = str(protocol.features.get("variants", "normal"))
            self.variants = engine_variants(frozenset(declared.split(",")), xboard=True)
        else:
            variant_option = protocol.options.get("UCI_Variant")
            self.variants = engine_variants(
                frozenset(variant_option.var or ()) if variant_option is not None else None)
        # Waits on searches not yet answered; one whose bestmove never came (an engine that
        # answered nonsense) stays here until the engine is closed.
        self._waiters: set[asyncio.Future[chess.engine.BestMove]] = set()

    async def _start(self, board: chess.Board, limit: chess.engine.Limit | None, *,
                     timeout_s: float, **kwargs: Any) -> chess.engine.AnalysisResult:
        """Start a search, whole or not at all. python-chess sends `go` when the engine's
        `readyok` comes even if the start was cancelled meanwhile (the game ended): then
        nobody would stop it nor read its bestmove. So the start is shielded; one cut short
        is stopped once it has started, and its bestmove collected."""
        start = asyncio.ensure_future(self._protocol.analysis(board, limit, **kwargs))
        try:
            async with asyncio.timeout(timeout_s):
                return await asyncio.shield(start)
        except BaseException:
            start.add_done_callback(self._abandon)
            raise

    def _abandon(self, start: asyncio.Future[chess.engine.AnalysisResult]) -> None:
        """A search started for nobody: stop it at once and collect its bestmove."""
        if start.cancelled() or start.exception() is not None:
            return
        analysis = start.result()
        analysis.stop()
        self._wait_for(analysis)

    def _wait_for(self, analysis: chess.engine.AnalysisResult) -> asyncio.Future[
            chess.engine.BestMove]:
        waiter = asyncio.ensure_future(analysis.wait())
        self._waiters.add(waiter)
        waiter.add_done_callback(self._waiters.discard)
        waiter.add_done_callback(_collect)
        return waiter

    @property
    def multipv(self) -> bool:
        """The engine declares UCI's MultiPV option: it can rank several root moves at once."""
        return not self.xboard and "MultiPV" in self._protocol.options

    @property
    def alive(self) -> bool:
        return self._transport.get_returncode() is None and not self._protocol.returncode.done()

    async def set_level(self, level: GameLevel) -> None:
        """Tell a UCI engine the game's level and opponent, each option only where the engine
        declares it: UCI_LimitStrength and UCI_Elo (clamped to its range; full strength is
        UCI_LimitStrength false), the rule's options, UCI_Opponent (`title rating
        computer|human name`) and UCI_RatingAdv. A game no strength rule matched keeps the
        strength `engine.options` gave the engine (full, unless they limit it). An XBoard
        engine is told nothing."""
        if self.xboard:
            return
        declared = self._protocol.options
        options: dict[str, str | int | bool] = {}
        for name, value in level.options.items():
            if name in declared:
                options[name] = value
            else:
                log.warning("engine %s has no option %r: skipped", self.name, name)
        if LIMIT_STRENGTH in declared and (level.rule is not None or level.elo is not None):
            options[LIMIT_STRENGTH] = level.elo is not None
        if level.elo is not None and ELO_OPTION in declared:
            options[ELO_OPTION] = _clamped(declared[ELO_OPTION], level.elo)
        advantage = level.rating_advantage
        if advantage is not None and RATING_ADV_OPTION in declared:
            options[RATING_ADV_OPTION] = _clamped(declared[RATING_ADV_OPTION], advantage)
        opponent = level.opponent
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                await self._protocol.configure(options)
                if opponent is not None:  # python-chess sends it only where declared
                    await self._protocol.send_opponent_information(
                        opponent=chess.engine.Opponent(opponent.name, opponent.title,
                                                       opponent.rating, opponent.bot))
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError,
                TimeoutError) as exc:
            raise EngineFailure(f"{self.name} (pid {self.pid}) refused the game's level "
                                f"({level}): {type(exc).__name__}: {exc}") from exc

    async def think(
        self, board: chess.Board, limit: chess.engine.Limit, *, hard_limit_s: float, game: object,
        root_moves: Sequence[chess.Move] | None = None, ponder: bool = False,
        start_timeout_s: float | None = None, multipv: int = 1,
    ) -> Thought:
        """The engine's move for `board`. `game` keys the transposition table: a new value
        sends `ucinewgame`, the same one keeps the table from the previous move. `ponder`: an
        XBoard engine is told `hard` and ponders by itself after its move (a UCI engine is
        sent the expected position by `ponder` instead). `start_timeout_s` bounds the wait for the
        search to start (`isready` after `ucinewgame`: an engine still compiling answers late);
        START_TIMEOUT_S when not given. `multipv` > 1 (an engine that declares MultiPV):
        the lines of that many root moves come back in `Thought.lines`, best first."""
        if self.xboard:
            return await self._play(board, limit, hard_limit_s=hard_limit_s, game=game,
                                    ponder=ponder)
        start = time.monotonic()
        try:
            analysis = await self._start(
                board, limit, timeout_s=start_timeout_s or START_TIMEOUT_S, game=game,
                info=SEARCH_INFO, root_moves=root_moves,
                multipv=multipv if multipv > 1 and self.multipv else None)
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError) as exc:
            raise EngineFailure(f"{self.name} (pid {self.pid}) did not start a search: "
                                f"{type(exc).__name__}: {exc}") from exc
        # The wait runs as a task of its own, shielded: a cancelled or overrunning think sends
        # `stop` and leaves the protocol to collect the bestmove, never cancels its future.
        waiter = self._wait_for(analysis)
        timed_out = False
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation that
            # arrives as the search ends, and a stale move would be sent.
            try:
                async with asyncio.timeout(hard_limit_s):
                    best = await asyncio.shield(waiter)
            except TimeoutError:
                timed_out = True
                log.warning("%s (pid %s) overran its %.2f s hard limit: sending stop",
                            self.name, self.pid, hard_limit_s)
                analysis.stop()
                async with asyncio.timeout(STOP_GRACE_S):
                    best = await asyncio.shield(waiter)
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError) as exc:
            raise EngineFailure(f"{self.name} (pid {self.pid}) failed while searching: "
                                f"{type(exc).__name__}: {exc}") from exc
        finally:
            analysis.stop()
        line = SearchLine.from_info(analysis.info) if analysis.info else None
        move = best.move
        if move is None or not board.is_legal(move):
            raise EngineFailure(f"{self.name} (pid {self.pid}) answered {move} in {board.fen()}")
        if line is not None and line.pv and line.pv[0] != move:
            # A limited level (UCI_Elo, Skill Level) plays a line other than its first: the
            # line it reported for the move played is the one to show. A search stopped
            # mid-iteration may answer a new best move after its last info line: the
            # reported line is about another move, so only the move itself stays.
            played = next((info for info in analysis.multipv
                           if info.get("pv") and info["pv"][0] == move), None)
            line = (SearchLine.from_info(played) if played is not None
                    else dataclasses.replace(line, pv=(move,)))
        lines = (tuple(SearchLine.from_info(info) for info in analysis.multipv if info.get("pv"))
                 if multipv > 1 and self.multipv else ())
        return Thought(move, line, time.monotonic() - start, timed_out, lines)

    async def _play(self, board: chess.Board, limit: chess.engine.Limit, *,
                    hard_limit_s: float, game: object, ponder: bool) -> Thought:
        """An XBoard engine's move: `play` (its analysis mode takes no clock), cut off at the
        hard limit (the engine is then replaced). XBoard takes no root-move restriction."""
        if limit.depth is not None:  # `sd` is not universal (phalanx takes it for a move)
            limit = dataclasses.replace(limit, depth=None)
        start = time.monotonic()
        try:
            async with asyncio.timeout(hard_limit_s + STOP_GRACE_S):
                result = await self._protocol.play(board, limit, game=game, info=SEARCH_INFO,
                                                   ponder=ponder)
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError) as exc:
            raise EngineFailure(f"{self.name} (pid {self.pid}) failed while searching: "
                                f"{type(exc).__name__}: {exc}") from exc
        move = result.move
        if move is None or not board.is_legal(move):
            raise EngineFailure(f"{self.name} (pid {self.pid}) answered {move} in {board.fen()}")
        line = SearchLine.from_info(result.info)
        if line.pv[:1] != (move,):
            line = dataclasses.replace(line, pv=(move,))
        return Thought(move, line, time.monotonic() - start)

    async def ponder(self, board: chess.Board, *, game: object) -> None:
        """Search `board` (the position after the reply we expect) on the opponent's time,
        until cancelled: the transposition table is warm for our next move. No `ponderhit`:
        the next search starts afresh and finds the table filled. An XBoard engine told
        `hard` ponders by itself: nothing to do."""
        if self.xboard:
            return
        analysis = await self._start(board, None, timeout_s=START_TIMEOUT_S, game=game,
                                     info=chess.engine.INFO_NONE)
        waiter = self._wait_for(analysis)
        try:
            await asyncio.shield(waiter)
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError) as exc:
            raise EngineFailure(f"{self.name} (pid {self.pid}) failed while pondering: "
                                f"{type(exc).__name__}: {exc}") from exc
        finally:
            analysis.stop()

    async def close(self) -> None:
        """`quit`, then kill if it does not go. Never raises (but a cancellation while it
        waits for `quit` still closes the transport, killing the process, then goes on)."""
        try:
            if self.alive:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._protocol.quit(), QUIT_TIMEOUT_S)
        finally:
            with contextlib.suppress(Exception):
                self._transport.close()
            for waiter in list(self._waiters):
                waiter.cancel()  # a search the process took with it


async def start_engine(spec: EngineSpec, *, timeout_s: float = START_TIMEOUT_S,
                       prime: bool = False) -> Engine:
    """Start one engine and send it the configured options it knows; `prime`: and let it
    search once, so its first real move is not slowed by loading code."""
    try:
        # asyncio.timeout, not wait_for: on 3.11 a wait_for cancelled just as the start
        # succeeds drops the result, and the process with it (running, never closed).
        async with asyncio.timeout(timeout_s):
            popen = chess.engine.popen_xboard if spec.protocol == "xboard" else \
                chess.engine.popen_uci
            # A session of its own: Ctrl-C in a terminal, or a signal an init sends to the
            # bot's process group, must not end a game's engine; the bot ends it (`quit`, or
            # the end of its input when the bot dies).
            transport, protocol = await popen(list(spec.command), setpgrp=True)
    except (OSError, chess.engine.EngineError, chess.engine.EngineTerminatedError,
            TimeoutError) as exc:
        raise EngineFailure(f"cannot start engine {' '.join(spec.command)!r}: "
                            f"{type(exc).__name__}: {exc}") from exc
    engine = Engine(transport, protocol)
    try:
        for name, value in spec.options.items():
            if name not in protocol.options:
                log.warning("engine %s has no option %r: skipped", engine.name, name)
                continue
            try:
                await asyncio.wait_for(protocol.configure({name: value}), timeout_s)
            except (chess.engine.EngineError, TimeoutError) as exc:
                log.warning("engine %s refused option %s=%r: %s", engine.name, name, value, exc)
        if prime:
            await engine.think(chess.Board(), PRIMING_LIMIT, hard_limit_s=timeout_s,
                               game=object(), start_timeout_s=timeout_s)
    except BaseException:  # a failed priming, or a cancelled start: the process goes too
        await engine.close()
        raise
    return engine


def _clamped(option: chess.engine.Option, value: int) -> int:
    """`value` within a spin option's declared range."""
    if option.min is not None:
        value = max(value, option.min)
    if option.max is not None:
        value = min(value, option.max)
    return value


class EnginePool:
    """Starts engines for games; keeps one spare running so a new game never waits."""

    def __init__(self, spec: EngineSpec, *, spare: bool) -> None:
        self.spec = spec
        self._keep_spare = spare
        self._spare: Engine | None = None
        self._want_spare = asyncio.Event()
        self._live: set[Engine] = set()
        self.name = " ".join(spec.command)
        self.variants: frozenset[str] = frozenset(STANDARD_RULES)  # known after warm_up

    async def warm_up(self) -> str:
        """Start an engine and run a short search, so its compiled code is cached before the
        first game; the engine becomes the spare (or is closed). Returns the engine's name."""
        engine = await start_engine(self.spec, timeout_s=WARM_UP_TIMEOUT_S)
        try:
            # the first search of a fresh checkout waits for the engine's compilation
            await engine.think(chess.Board(), WARM_UP_LIMIT, hard_limit_s=WARM_UP_TIMEOUT_S,
                               game=object(), start_timeout_s=WARM_UP_TIMEOUT_S)
        except BaseException:
            await engine.close()
            raise
        self.name = engine.name
        self.variants = engine.variants
        if self._keep_spare:
            self._spare = engine
            self._live.add(engine)
        else:
            await engine.close()
        return engine.name

    async def acquire(self) -> Engine:
        """An engine for a new game: the spare if there is one, else a fresh start."""
        engine, self._spare = self._spare, None
        if self._keep_spare:
            self._want_spare.set()
        if engine is not None and engine.alive:
            return engine
        if engine is not None:
            self._live.discard(engine)
            await engine.close()
        engine = await start_engine(self.spec, prime=True)
        self._live.add(engine)
        return engine

    async def release(self, engine: Engine) -> None:
        self._live.discard(engine)
        await engine.close()

    async def replace(self, engine: Engine) -> Engine:
        """A crashed or hung engine out, a fresh one in."""
        log.warning("replacing engine %s (pid %s)", engine.name, engine.pid)
        await self.release(engine)
        return await self.acquire()

    async def keep_spare(self) -> None:
        """Long-lived task: start a new spare each time the last one was taken."""
        if not self._keep_spare:
            return
        self._want_spare.set()
        while True:
            await self._want_spare.wait()
            self._want_spare.clear()
            if self._spare is not None and self._spare.alive:
                continue
            try:
                engine = await start_engine(self.spec, prime=True)
            except EngineFailure as exc:
                log.error("spare engine: %s; retrying in %.0f s", exc, SPARE_RETRY_S)
                await asyncio.sleep(SPARE_RETRY_S)
                self._want_spare.set()
                continue
            self._live.add(engine)
            if self._spare is not None:
                await self.release(self._spare)
            self._spare = engine

    async def close(self) -> None:
        """Close every engine still running (spare and any a game did not release)."""
        self._spare = None
        engines = list(self._live)
        self._live.clear()
        await asyncio.gather(*(engine.close() for engine in engines))

    @property
    def running(self) -> int:
        return sum(1 for engine in self._live if engine.alive)

