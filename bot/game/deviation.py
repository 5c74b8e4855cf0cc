"""Another move than a past game's: the best of an engine's MultiPV lines within a margin.

lila leaves a rated bot game unrated when its first 20 plies and its winner repeat one of
the pair's last two games (FarmBoostDetection.botFarming). While a game follows such a past
game, the move played there is to be avoided: the engine ranks a few root moves at once
(MultiPV), and the best line starting with another move is played if it scores at most
`margin_cp` below the best line. Otherwise the game plays on and may repeat.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final

import chess

from bot.engines.searchline import SearchLine, score_cp

# Root moves ranked beyond the avoided ones: the best alternatives to compare.
EXTRA_LINES: Final = 2


@dataclass(frozen=True, slots=True)
class Deviation:
    """The line chosen and how far its score lies below the best line's (centipawns)."""

    line: SearchLine
    loss_cp: int


def lines_wanted(avoided: int, legal_moves: int) -> int:
    """How many lines a MultiPV search needs to rank the avoided moves and some others."""
    return max(1, min(legal_moves, avoided + EXTRA_LINES))


def choose_deviation(lines: Sequence[SearchLine], avoid: Collection[chess.Move],
                     margin_cp: int, color: chess.Color) -> Deviation | None:
    """The best line not starting with an avoided move whose score is within `margin_cp` of
    the best scored line (seen from `color`, the side to move); None when there is none."""
    scored = [(line, score_cp(line.score.pov(color))) for line in lines
              if line.pv and line.score is not None]
    if not scored:
        return None
    best_cp = max(cp for _, cp in scored)
    allowed = [(line, cp) for line, cp in scored
               if line.pv[0] not in avoid and cp >= best_cp - margin_cp]
    if not allowed:
        return None
    line, cp = max(allowed, key=lambda pair: pair[1])
    return Deviation(line, best_cp - cp)
