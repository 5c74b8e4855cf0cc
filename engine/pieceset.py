"""Piece sets: the squares each side occupies, as bits kept in the state stack.

Scanning the board for the mover's pieces costs a hard-to-predict branch per square; the move
generator walks the bits of the mover's set instead, 16 or fewer.  (The evaluation, which
needs every piece, measured slower with the walk than with its plain scan.)

Each side's set is two ``int32`` words of the state row, ``stack[ply, S_OCC + 2 * color +
word]``: word 0 holds a1..h4 and word 1 a5..h8, bit ``sq64 & 31`` each (so bit 31 makes the
stored word negative; readers mask it to 32 bits).  Walking the bits lowest first visits the
squares in ascending order, the order of a plain scan, so generated moves keep their order.
``make_move`` updates the sets of the row it pushes; an unmake simply steps back a row.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engine.constants import BOARD_SIZE, MAILBOX, S_OCC, SQ64, BoardArray, StackArray
from engine.jit import njit_noalloc, njit_noalloc_inline, uncompiled

WORD_MASK = 0xFFFFFFFF
_SIGN_BIT = 0x80000000
# De Bruijn multiplication: the index of a word's lowest bit without a loop or an intrinsic
# (the same code then runs as plain Python with the JIT disabled).
_DEBRUIJN = 0x077CB531


def _square_tables() -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Word and bit of each mailbox square, and the square of each (word, De Bruijn slot)."""
    word = np.zeros(BOARD_SIZE, dtype=np.int64)
    bit = np.zeros(BOARD_SIZE, dtype=np.int64)
    square_of = np.zeros(64, dtype=np.int64)
    for sq in range(BOARD_SIZE):
        s64 = int(SQ64[sq])
        if s64 < 0:
            continue
        word[sq] = s64 >> 5
        bit[sq] = 1 << (s64 & 31)
        slot = (((1 << (s64 & 31)) * _DEBRUIJN) & WORD_MASK) >> 27
        square_of[32 * (s64 >> 5) + slot] = MAILBOX[s64]
    return word, bit, square_of


SQ_WORD, SQ_BIT, _SQUARE_OF = _square_tables()


@njit_noalloc_inline
def set_word(stack: StackArray, ply: int, color: int, word: int) -> int:
    """One word of ``color``'s set at row ``ply``, as a non-negative 32-bit number."""
    return int(stack[ply, S_OCC + 2 * color + word]) & WORD_MASK


@njit_noalloc_inline
def lowest_square(bits: int, word: int) -> int:
    """The mailbox square of the lowest set bit of ``bits`` (non-zero), a word of a set."""
    lowest = bits & -bits
    return int(_SQUARE_OF[32 * word + (((lowest * _DEBRUIJN) & WORD_MASK) >> 27)])


@njit_noalloc_inline
def _stored(value: int) -> int:
    """A 32-bit word as the ``int32`` the stack holds (bit 31 read as the sign)."""
    return ((value & WORD_MASK) ^ _SIGN_BIT) - _SIGN_BIT


@njit_noalloc_inline
def add_square(stack: StackArray, ply: int, color: int, sq: int) -> None:
    """Put ``sq`` into ``color``'s set at row ``ply``."""
    field = S_OCC + 2 * color + SQ_WORD[sq]
    stack[ply, field] = _stored(int(stack[ply, field]) | SQ_BIT[sq])


@njit_noalloc_inline
def remove_square(stack: StackArray, ply: int, color: int, sq: int) -> None:
    """Take ``sq`` out of ``color``'s set at row ``ply``."""
    field = S_OCC + 2 * color + SQ_WORD[sq]
    stack[ply, field] = _stored(int(stack[ply, field]) & ~SQ_BIT[sq])


@njit_noalloc_inline
def _word_popcount(bits: int) -> int:
    """Set bits of a 32-bit word (the classic SWAR sum: no intrinsic, so it also runs as
    plain Python)."""
    bits -= (bits >> 1) & 0x55555555
    bits = (bits & 0x33333333) + ((bits >> 2) & 0x33333333)
    bits = (bits + (bits >> 4)) & 0x0F0F0F0F
    return ((bits * 0x01010101) & WORD_MASK) >> 24


@njit_noalloc_inline
def piece_count(stack: StackArray, ply: int) -> int:
    """Pieces of both sides, kings and pawns included, at row ``ply``."""
    total = 0
    for field in range(4):
        total += _word_popcount(int(stack[ply, S_OCC + field]) & WORD_MASK)
    return total


@njit_noalloc_inline
def piece_count_of(stack: StackArray, ply: int, color: int) -> int:
    """Pieces of ``color``, king and pawns included, at row ``ply``."""
    return _word_popcount(set_word(stack, ply, color, 0)) + _word_popcount(
        set_word(stack, ply, color, 1))


@njit_noalloc
def sets_match_board(board: BoardArray, stack: StackArray, ply: int) -> bool:
    """Do the sets at row ``ply`` hold exactly the squares of each side's pieces (tests)?"""
    for sq in range(BOARD_SIZE):
        if SQ64[sq] < 0:
            continue
        p = board[sq]
        for color in range(2):
            inside = set_word(stack, ply, color, SQ_WORD[sq]) & SQ_BIT[sq] != 0
            if inside != (p > 0 and (p >> 3) == color):
                return False
    return True


def set_words(board: BoardArray) -> list[int]:
    """The four stored words (white's two, then black's) for ``board``, as int32 values."""
    result = [0, 0, 0, 0]
    for sq in range(BOARD_SIZE):
        p = int(board[sq])
        if SQ64[sq] >= 0 and p > 0:
            result[2 * (p >> 3) + int(SQ_WORD[sq])] |= int(SQ_BIT[sq])
    # plain Python: setting up a position must not wait for compiled code
    return [uncompiled(_stored)(w) for w in result]
