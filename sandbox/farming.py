"""Which finished games lila leaves unrated: bot farming, judged on each pair's crosstable.

lila modules/round/src/main/FarmBoostDetection.scala `botFarming`: a finished rated game with a
BOT in it and two logged-in players is not rated when one of the pair's last PREV_GAMES = 2
games (the crosstable's latest results) had the same winner (the same user, or both drawn)
and the same first SAME_PLIES = 20 plies in SAN (`g.sans.take(20) == prev.sans.take(20)`: a
game shorter than 20 plies matches only a game with exactly its moves). PerfsUpdater.scala
`save` asks it first and then returns no rating diffs (`setRatingDiffs` is never called).

The crosstable (modules/game/src/main/CrosstableApi.scala `add`, called by Finisher.scala
`updateCountAndPerfs` for every finished game that is not aborted and not against oneself)
holds the pair's games of every kind: rated or casual, any variant, any speed. Finisher runs
`crosstableApi.add(game)` beside `perfsUpdater.save(game)`; the sandbox compares with the
games before this one.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import chess

SAME_PLIES = 20  # FarmBoostDetection.SAME_PLIES
PREV_GAMES = 2  # FarmBoostDetection.PREV_GAMES


@dataclass(frozen=True)
class PairResult:
    """One finished game of a pair as the farming check reads it."""

    game_id: str
    winner_id: str | None  # the winner's user id; None for a draw
    sans: tuple[str, ...]  # the first SAME_PLIES plies in SAN


def opening_sans(start: chess.Board, moves: list[chess.Move]) -> tuple[str, ...]:
    """The first SAME_PLIES moves in SAN, played from `start` (a copy is used)."""
    board = start.copy(stack=False)
    sans: list[str] = []
    for move in moves[:SAME_PLIES]:
        sans.append(board.san(move))
        board.push(move)
    return tuple(sans)


class Crosstables:
    """The latest results of every pair of players, as lila's crosstable keeps them."""

    def __init__(self) -> None:
        self._pairs: dict[tuple[str, str], deque[PairResult]] = {}

    @staticmethod
    def _key(user_a: str, user_b: str) -> tuple[str, str]:
        first, second = sorted((user_a, user_b))
        return first, second

    def last(self, user_a: str, user_b: str) -> list[PairResult]:
        """The pair's latest PREV_GAMES results, newest first."""
        return list(reversed(self._pairs.get(self._key(user_a, user_b), ())))

    def add(self, user_a: str, user_b: str, result: PairResult) -> None:
        pair = self._pairs.setdefault(self._key(user_a, user_b), deque(maxlen=PREV_GAMES))
        pair.append(result)

    def is_bot_farming(self, user_a: str, user_b: str, result: PairResult) -> bool:
        """FarmBoostDetection.botFarming's comparison (the caller checks rated and BOT)."""
        return any(prev.winner_id == result.winner_id and prev.sans == result.sans
                   for prev in self.last(user_a, user_b))
