"""An engine's search line: a typed value made once, where the engine's answer arrives, from
python-chess's `InfoDict`; one function renders its PV in SAN and one its score, for the kibitz
line in chat, the move log, the status line and the status page alike; and one conversion of
a score to centipawns (`score_cp`), for the game's conduct and the evaluation graph."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import chess
import chess.engine

# A mate in n as MATE_SCORE_CP - n centipawns: beyond any margin, threshold or graph edge, and
# a shorter mate scores higher.
MATE_SCORE_CP: Final = 100_000


def score_cp(score: chess.engine.Score) -> int:
    """A score in centipawns, from the side it is seen from; mates as +-(MATE_SCORE_CP - n)."""
    return score.score(mate_score=MATE_SCORE_CP)


@dataclass(frozen=True, slots=True)
class SearchLine:
    """What a search reported: each field None (or an empty PV) when the engine did not say.

    A bound score (`lowerbound`, `upperbound`) is kept as the score, as it always was: python-chess
    merges a search's info lines into one `InfoDict`, so a bound flag can outlive the line it
    came with and says nothing sure about the score beside it."""

    depth: int | None = None
    seldepth: int | None = None
    score: chess.engine.PovScore | None = None
    nodes: int | None = None
    nodes_per_s: int | None = None  # as the engine reported it (`nps`)
    time_s: float | None = None  # the engine's own search time
    pv: tuple[chess.Move, ...] = ()

    @classmethod
    def from_info(cls, info: chess.engine.InfoDict) -> SearchLine:
        """The line of python-chess's `InfoDict` (an engine's `analysis.info` or `play` info)."""
        return cls(depth=info.get("depth"), seldepth=info.get("seldepth"),
                   score=info.get("score"), nodes=info.get("nodes"),
                   nodes_per_s=info.get("nps"), time_s=info.get("time"),
                   pv=tuple(info.get("pv", ())))

    @property
    def speed_nps(self) -> float | None:
        """Nodes per second: as reported, else worked out from the nodes and the time."""
        if self.nodes_per_s is not None:
            return self.nodes_per_s
        if self.nodes is not None and self.time_s is not None and self.time_s > 0:
            return self.nodes / self.time_s
        return None


def pv_san(board: chess.Board, pv: Iterable[chess.Move], *, numbered: bool = True,
           max_moves: int | None = None) -> list[str]:
    """The PV from `board` in SAN, one token per move: numbered ("12. Nf3", "12...Nc6", then
    "Nc6" after a White move) or bare ("Nf3"). Stops at the first move that is not legal (a
    stale PV) and after `max_moves` moves."""
    position = board.copy(stack=False)
    tokens: list[str] = []
    for move in pv:
        if max_moves is not None and len(tokens) >= max_moves:
            break
        if not position.is_legal(move):
            break
        san = position.san(move)
        if not numbered:
            tokens.append(san)
        elif position.turn == chess.WHITE:
            tokens.append(f"{position.fullmove_number}. {san}")
        elif not tokens:
            tokens.append(f"{position.fullmove_number}...{san}")
        else:
            tokens.append(san)
        position.push(move)
    return tokens


def score_text(score: chess.engine.PovScore, side: chess.Color | None = None) -> str:
    """A score in pawns. Without `side`, from White's side for a chat reader: "+0.35",
    "-1.20", "mate in 3 for White", "mate on the board". From `side`, compact for a status
    line: "+0.35", "#3" (`side` mates), "#-2", and "" when there is no number."""
    if side is not None:
        ours = score.pov(side)
        mate = ours.mate()
        if mate is not None:
            return f"#{mate}"
        cp = ours.score()
        return f"{cp / 100:+.2f}" if cp is not None else ""
    white = score.white()
    mate = white.mate()
    if mate is not None:
        if mate == 0:
            return "mate on the board"
        return f"mate in {abs(mate)} for {'White' if mate > 0 else 'Black'}"
    return f"{(white.score() or 0) / 100:+.2f}"
