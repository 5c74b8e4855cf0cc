"""What a search tells the UCI side: an iteration's ``info`` line and the search's result.

Scores are centipawns from the side to move's view; a mate in ``n`` plies from the root is
``MATE - n`` (``params.MATE``, the engine's one mate constant), shown as ``mate`` in moves.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.params import MATE, MATE_BOUND


def mate_in_moves(score: int) -> int | None:
    """The moves to the mate a mate score announces (negative when being mated), or None for
    a score in centipawns."""
    if abs(score) < MATE_BOUND:
        return None
    moves = (MATE - abs(score) + 1) // 2
    return moves if score > 0 else -moves


@dataclass(frozen=True)
class Iteration:
    """What one finished (or stopped) iteration found, for an ``info`` line."""

    depth: int
    seldepth: int
    score: int
    bound: str  # "", "lowerbound" or "upperbound"
    nodes: int
    time_ms: int
    hashfull: int
    pv: tuple[str, ...]
    multipv: int = 1  # the line's rank among the MultiPV lines, 1 the best

    @property
    def nps(self) -> int:
        return self.nodes * 1000 // max(self.time_ms, 1)

    def score_text(self) -> str:
        """``cp N`` or ``mate N`` (moves, negative when being mated), plus the bound."""
        moves = mate_in_moves(self.score)
        text = f"cp {self.score}" if moves is None else f"mate {moves}"
        return f"{text} {self.bound}" if self.bound else text

    def uci(self) -> str:
        line = (
            f"info depth {self.depth} seldepth {self.seldepth} multipv {self.multipv} "
            f"score {self.score_text()} nodes {self.nodes} nps {self.nps} "
            f"hashfull {self.hashfull} time {self.time_ms}"
        )
        return f"{line} pv {' '.join(self.pv)}" if self.pv else line


@dataclass(frozen=True)
class SearchResult:
    best_move: str | None  # None when there is no legal move
    ponder_move: str | None
    score: int
    depth: int
    nodes: int
    pv: tuple[str, ...]
    thread: int = 0  # whose line it is: 0 the main thread, i helper thread i
    # the MultiPV lines of the deepest iteration completed, best first (one line at MultiPV 1)
    lines: tuple[RootLine, ...] = ()


@dataclass(frozen=True)
class RootLine:
    """One MultiPV line: its score and its principal variation (UCI text)."""

    score: int
    pv: tuple[str, ...]
