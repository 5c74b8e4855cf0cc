"""What lila allows in an arena game.

- No abort: a tournament game is "mandatory" (lila modules/core game/Game.scala
  `isMandatory`; `abortable` needs `nonMandatory`): a first move not played in time loses
  the game (status noStart), and an abort request is refused.
- No draw before move 30: an arena scores a draw under 20 plies as nothing (lila
  modules/tournament Pairing.scala `quickDraw`), and lila refuses draw offers before
  move 30 in Swiss and under the noEarlyDraw rule (modules/game GameExt
  `playerCanOfferDraw`): the bot keeps to move 30 in every tournament game.
- The first move within the arena's own, shorter allowance (lila Game.timeForFirstMove in a
  tournament): the mover plays it from the book or with a short search (engine.first_move_s).
"""

from __future__ import annotations

from typing import Final

from bot.lichess.events import GameInfo

# Sources of games where lila refuses an abort and a missed first move loses.
MANDATORY_SOURCES: Final = frozenset({"arena", "swiss", "tournament"})
# No draw offered or accepted before this move in an arena game.
ARENA_NO_DRAW_BEFORE_MOVE: Final = 30


def is_mandatory(info: GameInfo | None) -> bool:
    """A tournament game: never aborted by us."""
    return info is not None and (info.source in MANDATORY_SOURCES
                                 or info.tournament_id is not None)


def first_draw_move(info: GameInfo | None) -> int:
    """The first move at which a draw may be offered or accepted (1: no arena rule)."""
    return ARENA_NO_DRAW_BEFORE_MOVE if is_mandatory(info) else 1
