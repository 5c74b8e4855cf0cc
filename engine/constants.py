"""Shared encodings of the engine: squares, pieces, moves, castling rights and the state layout.

Squares (10x12 mailbox)
    A square is an index into a 120-entry array.  The 8x8 board occupies rows 2-9 and columns
    1-8: ``square = 21 + file + 10 * rank`` (file and rank 0-7), so a1 = 21, h1 = 28, a8 = 91,
    h8 = 98.  Every other index is a border square holding ``OFFBOARD``, which stops sliding
    pieces and knight jumps without bounds checks.  ``SQ64[square]`` is ``8 * rank + file``
    (a1 = 0, -1 on the border) and ``MAILBOX[sq64]`` goes back.

Pieces (int8)
    ``EMPTY = 0``, ``OFFBOARD = -1``; a piece is ``piece_type | (color << 3)`` with
    ``PAWN..KING = 1..6`` and ``WHITE = 0``, ``BLACK = 1``: white pieces are 1-6, black 9-14.
    ``piece > 0`` means "a piece"; ``piece >> 3`` is its color and ``piece & 7`` its type.

Moves (one int, fits in 21 bits)
    =========  ==========================================================================
    bits 0-6   from square (mailbox)
    bits 7-13  to square (mailbox); for castling the square of the castling rook
               ("king takes rook"), which encodes chess960 castling without ambiguity
    bits 14-16 promotion piece type (KNIGHT..QUEEN), 0 if none
    bit 17     FLAG_CAPTURE (also set for en passant)
    bit 18     FLAG_EP      en passant capture
    bit 19     FLAG_CASTLE  castling (king on from, rook on to)
    bit 20     FLAG_DOUBLE  pawn double push
    =========  ==========================================================================
    ``NO_MOVE = 0`` is never a move; ``NULL_MOVE`` marks a null move in the state stack.

Castling rights (bit set)
    ``CASTLE_WK = 1`` (white, king side: towards the h-file), ``CASTLE_WQ = 2``,
    ``CASTLE_BK = 4``, ``CASTLE_BQ = 8``; right ``i`` (0-3) is bit ``1 << i``, its rook start
    square is ``meta[M_ROOK + i]``.  After castling the king always stands on the g- or c-file
    and the rook on the f- or d-file, in chess960 as in standard chess.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

# --- the position's arrays (see engine.board) -------------------------------------------------
BoardArray = npt.NDArray[np.int8]
StackArray = npt.NDArray[np.int32]
KeyArray = npt.NDArray[np.uint64]
MetaArray = npt.NDArray[np.int32]
MoveArray = npt.NDArray[np.int32]
Int32Array = npt.NDArray[np.int32]  # search tables: killers, history, PV, scores
Int64Array = npt.NDArray[np.int64]  # counters, scratch and exchange buffers

# --- colors and pieces ---------------------------------------------------------------------
WHITE = 0
BLACK = 1

EMPTY = 0
OFFBOARD = -1
PAWN = 1
KNIGHT = 2
BISHOP = 3
ROOK = 4
QUEEN = 5
KING = 6

W_PAWN, W_KNIGHT, W_BISHOP, W_ROOK, W_QUEEN, W_KING = 1, 2, 3, 4, 5, 6
B_PAWN, B_KNIGHT, B_BISHOP, B_ROOK, B_QUEEN, B_KING = 9, 10, 11, 12, 13, 14
PIECE_CODES = 16  # size of a table indexed by piece code

PIECE_CHARS = ".PNBRQK..pnbrqk."  # FEN letter of each piece code

# --- squares ---------------------------------------------------------------------------------
BOARD_SIZE = 120
A1, B1, C1, D1, E1, F1, G1, H1 = 21, 22, 23, 24, 25, 26, 27, 28
A8, H8 = 91, 98
RANK_STEP = 10  # one rank up on the mailbox
BLACK_RANK_SHIFT = 70  # from a white back-rank square to the same file on rank 8


def _mailbox_tables() -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    sq64 = np.full(BOARD_SIZE, -1, dtype=np.int64)
    mailbox = np.zeros(64, dtype=np.int64)
    for rank in range(8):
        for file in range(8):
            sq = 21 + file + 10 * rank
            sq64[sq] = 8 * rank + file
            mailbox[8 * rank + file] = sq
    return sq64, mailbox


SQ64, MAILBOX = _mailbox_tables()


def square(file: int, rank: int) -> int:
    """Mailbox square of (file, rank), both 0-7."""
    return 21 + file + 10 * rank


def square_name(sq: int) -> str:
    """Algebraic name of a mailbox square, e.g. ``e4``."""
    s64 = int(SQ64[sq])
    return "abcdefgh"[s64 & 7] + "12345678"[s64 >> 3]


def parse_square(name: str) -> int:
    """Mailbox square of an algebraic name; ``ValueError`` if it is not one."""
    if len(name) != 2 or name[0] not in "abcdefgh" or name[1] not in "12345678":
        raise ValueError(f"not a square: {name!r}")
    return square("abcdefgh".index(name[0]), "12345678".index(name[1]))


# --- directions --------------------------------------------------------------------------------
KNIGHT_STEPS = np.array([-21, -19, -12, -8, 8, 12, 19, 21], dtype=np.int64)
KING_STEPS = np.array([-11, -10, -9, -1, 1, 9, 10, 11], dtype=np.int64)
BISHOP_STEPS = np.array([-11, -9, 9, 11], dtype=np.int64)
ROOK_STEPS = np.array([-10, -1, 1, 10], dtype=np.int64)


def _line_steps() -> npt.NDArray[np.int64]:
    """``LINE_STEP[to - frm + 119]``: the queen step that may lead from ``frm`` to ``to``.

    A superset filter: a step is recorded whenever the difference is 1-7 times a queen step, so a
    walk along it still has to confirm the line (a wrap-around walk meets the border first).
    """
    table = np.zeros(239, dtype=np.int64)
    for step in (-11, -10, -9, -1, 1, 9, 10, 11):
        for k in range(1, 8):
            table[step * k + 119] = step
    return table


LINE_STEP = _line_steps()

# --- moves -----------------------------------------------------------------------------------
MOVE_SQ_MASK = 0x7F
MOVE_TO_SHIFT = 7
MOVE_PROMO_SHIFT = 14
MOVE_PROMO_MASK = 0x7
FLAG_CAPTURE = 1 << 17
FLAG_EP = 1 << 18
FLAG_CASTLE = 1 << 19
FLAG_DOUBLE = 1 << 20
NO_MOVE = 0
NULL_MOVE = 1  # from = 1, a border square: no real move has it
# Room for every pseudo-legal move of any position Position accepts (at most 16 pieces a side):
# a king's 8 steps and 2 castlings plus 15 queens' 27 moves each is 415 (a pawn has at most 12).
MAX_MOVES = 512

# --- castling rights -------------------------------------------------------------------------
CASTLE_WK = 1
CASTLE_WQ = 2
CASTLE_BK = 4
CASTLE_BQ = 8
CASTLE_ALL = 15

# --- state stack: one row per ply (``stack[ply, S_*]``, int32) ---------------------------------
# Fields make_move carries over unless the move changes them:
S_CASTLE = 0  # castling rights bit set
S_KING = 1  # S_KING + color: that side's king square
S_PHASE = 3  # game phase: 24 with all minor and major pieces on the board, 0 with none
S_NPM = 4  # S_NPM + color: that side's non-pawn material (middle-game piece values)
S_PAWN_MAT = 6  # S_PAWN_MAT + color: that side's pawn material (middle-game pawn values)
S_OCC = 8  # S_OCC + 2 * color + word: that side's squares, see engine.pieceset
S_CHECKS = 12  # S_CHECKS + color: checks that side has given (three-check; 0 in other variants)
S_VARIANT = 14  # the rules played: VARIANT_CHESS, VARIANT_THREE_CHECK or VARIANT_KING_OF_THE_HILL
CARRIED_FIELDS = 15
# Fields every move writes:
S_SIDE = 15  # side to move: WHITE / BLACK
S_EP = 16  # en passant target square, 0 if none (set only if a capture is pseudo-legal)
S_HALFMOVE = 17  # plies since the last capture or pawn move (fifty-move rule)
S_FULLMOVE = 18  # FEN full-move number
S_MOVE = 19  # the move that led to this row (NO_MOVE at the root, NULL_MOVE for a null move)
S_CAPTURED = 20  # piece code captured by that move, EMPTY if none
S_MG = 21  # middle-game material + piece-square sum, white minus black
S_EG = 22  # end-game material + piece-square sum, white minus black
# Caches filled on first use at this ply (-1: not yet known):
S_PINS = 23  # bit (step + 11) set: a piece of the side to move is pinned along that king step
S_CHECK = 24  # side to move is in check: 0 / 1
# The search's (engine.nnue): this row's accumulators are up to date (1) or still to be made
# from the parent's (0, as every move leaves them): updated only once something reads them.
S_ACC = 25
STACK_FIELDS = 26
STACK_SIZE = 2048  # plies of game history + search path one position can hold
SEARCH_HEADROOM = 256  # rows Position.push always leaves free above the game for a search

# --- meta: per-position scalars and the castling set-up (int32) ------------------------------
M_PLY = 0  # index of the current row of the stack (and of keys)
M_CHESS960 = 1  # 1: castling moves are written king-takes-rook and FEN uses X-FEN letters
M_ROOK = 2  # M_ROOK + right index (0-3): start square of that castling rook, 0 if unknown
M_CMASK = 8  # M_CMASK + square: castling rights kept when a move touches the square
META_SIZE = M_CMASK + BOARD_SIZE

# --- variants: the rules a position is played by (``stack[ply, S_VARIANT]``) ------------------
VARIANT_CHESS = 0
VARIANT_THREE_CHECK = 1  # the third check given wins
VARIANT_KING_OF_THE_HILL = 2  # a king on d4, e4, d5 or e5 wins
VARIANT_COUNT = 3
