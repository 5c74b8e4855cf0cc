"""The variants the engine plays besides chess: three-check and king of the hill.

A position's rules are in its state rows (``S_VARIANT``, carried by every move), so the
compiled code needs no extra argument and standard chess pays one never-taken branch.

Three-check (``VARIANT_THREE_CHECK``)
    ``S_CHECKS + color`` counts the checks that side has given (``make_move`` counts them);
    the third check wins.  The counts are part of the position key.
King of the hill (``VARIANT_KING_OF_THE_HILL``)
    A king that reaches d4, e4, d5 or e5 wins at once.

As in python-chess's variant boards, a position whose variant has ended has no legal moves,
and the end of the variant is tested before checkmate and stalemate.

``variant_result(stack, row) -> int``
    ``RESULT_NONE`` while play goes on, else ``RESULT_WIN``/``RESULT_LOSS``/``RESULT_DRAW`` for
    the side to move at stack row ``row``.
``variant_eval_white(stack, row) -> int``
    The variant's evaluation term, white minus black (0 in chess).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

import numpy as np
import numpy.typing as npt

from engine import params
from engine.constants import (
    BOARD_SIZE,
    S_CHECKS,
    S_KING,
    S_SIDE,
    S_VARIANT,
    SQ64,
    VARIANT_CHESS,
    VARIANT_KING_OF_THE_HILL,
    VARIANT_THREE_CHECK,
    StackArray,
)
from engine.jit import njit_noalloc

# The names of UCI_Variant (Fairy-Stockfish's, which python-chess sends as `uci_variant`).
UCI_VARIANTS: Final[Mapping[str, int]] = MappingProxyType({
    "chess": VARIANT_CHESS,
    "3check": VARIANT_THREE_CHECK,
    "kingofthehill": VARIANT_KING_OF_THE_HILL,
})
UCI_NAMES: Final[Mapping[int, str]] = MappingProxyType(
    {code: name for name, code in UCI_VARIANTS.items()})

THREE_CHECK_WIN = 3  # checks given that win a three-check game

RESULT_NONE = 0
RESULT_WIN = 1
RESULT_LOSS = -1
RESULT_DRAW = 2


def _hill_tables() -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
    """Is a mailbox square on the hill, and its distance in king steps to the nearest one."""
    on_hill = np.zeros(BOARD_SIZE, dtype=np.bool_)
    distance = np.zeros(BOARD_SIZE, dtype=np.int64)
    for sq in range(BOARD_SIZE):
        s64 = int(SQ64[sq])
        if s64 < 0:
            continue
        file, rank = s64 & 7, s64 >> 3
        on_hill[sq] = file in (3, 4) and rank in (3, 4)
        distance[sq] = min(max(abs(file - f), abs(rank - r)) for f in (3, 4) for r in (3, 4))
    return on_hill, distance


ON_HILL, HILL_DISTANCE = _hill_tables()
_CHECK_GIVEN_CP = np.array(params.THREE_CHECK_GIVEN_CP, dtype=np.int64)
_HILL_KING_CP = np.array(params.HILL_KING_DISTANCE_CP, dtype=np.int64)


@njit_noalloc
def variant_result(stack: StackArray, row: int) -> int:
    """Has the variant's own rule ended the game at ``row``, and how for the side to move?"""
    variant = stack[row, S_VARIANT]
    us = stack[row, S_SIDE]
    if variant == VARIANT_THREE_CHECK:
        we_won = stack[row, S_CHECKS + us] >= THREE_CHECK_WIN
        they_won = stack[row, S_CHECKS + 1 - us] >= THREE_CHECK_WIN
    elif variant == VARIANT_KING_OF_THE_HILL:
        we_won = ON_HILL[stack[row, S_KING + us]]
        they_won = ON_HILL[stack[row, S_KING + 1 - us]]
    else:
        return RESULT_NONE
    if we_won and they_won:  # only a set-up position can have both
        return RESULT_DRAW
    if they_won:
        return RESULT_LOSS
    if we_won:
        return RESULT_WIN
    return RESULT_NONE


@njit_noalloc
def variant_eval_white(stack: StackArray, row: int) -> int:
    """The variant's evaluation term from white's view: checks given, or the race to the hill."""
    variant = stack[row, S_VARIANT]
    if variant == VARIANT_THREE_CHECK:
        white = min(stack[row, S_CHECKS], THREE_CHECK_WIN - 1)
        black = min(stack[row, S_CHECKS + 1], THREE_CHECK_WIN - 1)
        return int(_CHECK_GIVEN_CP[white] - _CHECK_GIVEN_CP[black])
    if variant == VARIANT_KING_OF_THE_HILL:
        white = HILL_DISTANCE[stack[row, S_KING]]
        black = HILL_DISTANCE[stack[row, S_KING + 1]]
        return int(_HILL_KING_CP[white] - _HILL_KING_CP[black])
    return 0


__all__ = [
    "HILL_DISTANCE",
    "ON_HILL",
    "RESULT_DRAW",
    "RESULT_LOSS",
    "RESULT_NONE",
    "RESULT_WIN",
    "THREE_CHECK_WIN",
    "UCI_NAMES",
    "UCI_VARIANTS",
    "variant_eval_white",
    "variant_result",
]
