"""Another engine as the other side of the factory's games, at a fixed node count a move.

Self-play's two sides share every blind spot, so its results cannot say where the evaluation
is wrong; an opponent that sees further can.  The built-in engine still searches every
position (its score is the label, its best move decides what is quiet); on the opponent's
turns the opponent's move is the one played.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import chess
import chess.engine

from tools.common.engines import EngineSpec, open_engine, play_watched

# An opponent silent this long on one move has hung: its process is killed and the move fails
# (a depth-limited search has no clock, so python-chess itself would wait for ever).
MOVE_TIMEOUT_S = 120.0


class Opponent(Protocol):
    """What a game needs of the other side: a fresh start, and a move in a position."""

    name: str

    def new_game(self) -> None: ...

    def move(self, board: chess.Board) -> chess.Move: ...


@dataclass(frozen=True)
class OpponentLimit:
    """The opponent's search a move: a node count, or a depth, for an engine that ignores
    ``go nodes`` (Ethereal 12 answers it with a search of depth 1)."""

    nodes: int | None = None
    depth: int | None = None

    def __post_init__(self) -> None:
        if (self.nodes is None) == (self.depth is None):
            raise ValueError("an opponent's limit is a node count or a depth, one of them")
        if (self.nodes or self.depth or 0) < 1:
            raise ValueError(f"an opponent's limit must be positive: {self}")

    def __str__(self) -> str:
        return f"{self.nodes} nodes" if self.nodes is not None else f"depth {self.depth}"


class OpponentError(RuntimeError):
    """The opponent engine failed: it died, or gave no move."""


class _Stops:
    """A stop (the job's SIGTERM) held back while an engine process starts or is replaced."""

    starting = 0  # sections open
    pending = False  # a stop came during one


_STOPS = _Stops()


def stop_or_defer() -> None:
    """A job's SIGTERM handler: exit now (``SystemExit``), or, while an opponent's process
    starts or is replaced, as soon as that is done.  Raised inside python-chess's start, the
    exit would leave a process no one can close, and the job's exit would wait on its thread
    for ever.  (Blocking the signal is not enough: another thread takes it, and Python runs
    the handler in the main thread all the same.)"""
    if _STOPS.starting:
        _STOPS.pending = True
        return
    raise SystemExit(0)


@contextlib.contextmanager
def stops_deferred() -> Iterator[None]:
    """The section ``stop_or_defer`` waits for; a stop that came during it exits on leaving,
    what was assigned inside it kept for the way out."""
    _STOPS.starting += 1
    try:
        yield
    finally:
        _STOPS.starting -= 1
    if not _STOPS.starting and _STOPS.pending:
        raise SystemExit(0)


class EngineOpponent:
    """A UCI or XBoard engine (``tools.common.engines``) searching to ``limit`` a move, a
    fresh process each game.

    Why fresh: Ethereal 12 starts a thread for each ``go`` and never joins it (``src/uci.c``,
    ``uciGo``), so each keeps its stack mapped.  At about 32,000 moves the process reaches
    ``vm.max_map_count`` (65,530), cannot start the next search, and says nothing: the game
    would wait for ever.  A start costs some 15 ms, a game seconds."""

    def __init__(self, spec: EngineSpec, limit: OpponentLimit,
                 move_timeout_s: float = MOVE_TIMEOUT_S) -> None:
        self.name = spec.name
        self.spec = spec
        self.limit = chess.engine.Limit(nodes=limit.nodes, depth=limit.depth)
        self.move_timeout_s = move_timeout_s
        self.engine = self._start()
        self.moves = 0  # asked of this process
        self.game = 0  # python-chess tells the engine of a new game when this changes

    def _start(self) -> chess.engine.SimpleEngine:
        try:
            return open_engine(self.spec)
        except (OSError, chess.engine.EngineError, chess.engine.EngineTerminatedError) as exc:
            raise OpponentError(f"opponent {self.spec.name!r}: cannot start "
                                f"{self.spec.command}: {exc}") from None

    def new_game(self) -> None:
        if self.moves:
            with stops_deferred():
                self.close()
                self.engine = self._start()
            self.moves = 0
        self.game += 1

    def move(self, board: chess.Board) -> chess.Move:
        self.moves += 1
        try:
            played = play_watched(self.engine, board, self.limit, self.move_timeout_s,
                                  game=self.game)
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError) as exc:
            raise OpponentError(f"opponent {self.name!r} in {board.fen()}: {exc}") from None
        if played.move is None:  # python-chess has checked that a move it gives is legal
            raise OpponentError(f"opponent {self.name!r} gave no move in {board.fen()}")
        return played.move

    def close(self) -> None:
        # an engine already gone has nothing to close
        with contextlib.suppress(chess.engine.EngineError, chess.engine.EngineTerminatedError):
            self.engine.quit()
