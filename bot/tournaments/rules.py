"""What lila allows in an arena game.

- No abort: a tournament game is "mandatory" (lila modules/core game/Game.scala
  `isMandatory`; `abortable` needs `nonMandatory`): a first move not played in time loses
  the game (status noStart), and an abort request is refused.
- No draw before the variant's long-game ply: an arena scores a draw under 20 plies as
  nothing (lila modules/tournament Pairing.scala `quickDraw`), and a draw that follows
  another draw (losses between them do not count) as nothing unless the game lasted
  `Pairing.longGame`: 60 plies in standard, chess960 and horde, 40 in antichess,
  crazyhouse and king of the hill, 20 in three-check, atomic and racing kings
  (arena/ArenaSheet.scala `isDrawStreak`). The bot offers and accepts no draw before that
  ply in every tournament game (fullmove 31 in standard), so none of its draws is void.
- The first move within the arena's own, shorter allowance (lila Game.timeForFirstMove in a
  tournament): the mover plays it from the book or with a short search (engine.first_move_s).
"""

from __future__ import annotations

from typing import Final

from bot.lichess.events import GameInfo

# Sources of games where lila refuses an abort and a missed first move loses.
MANDATORY_SOURCES: Final = frozenset({"arena", "swiss", "tournament"})
# Pairing.longGame: the plies after which a draw in a draw streak still scores.
LONG_GAME_PLIES: Final = 60
LONG_GAME_PLIES_BY_VARIANT: Final = {
    "antichess": 40, "crazyhouse": 40, "kingOfTheHill": 40,
    "threeCheck": 20, "atomic": 20, "racingKings": 20,
}


def is_mandatory(info: GameInfo | None) -> bool:
    """A tournament game: never aborted by us."""
    return info is not None and (info.source in MANDATORY_SOURCES
                                 or info.tournament_id is not None)


def long_game_plies(variant: str) -> int:
    return LONG_GAME_PLIES_BY_VARIANT.get(variant, LONG_GAME_PLIES)


def first_draw_move(info: GameInfo | None) -> int:
    """The first fullmove at which a draw may be offered or accepted (1: no arena rule):
    the one that starts after the variant's long-game plies have been played."""
    if info is None or not is_mandatory(info):
        return 1
    return long_game_plies(info.variant) // 2 + 1
