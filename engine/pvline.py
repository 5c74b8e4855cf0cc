"""The legal start of a principal variation, walked in one compiled call.

The search's PV table can hold a line that is no longer legal (a move taken from a stale
table row); the driver keeps the longest legal start of it.  Checking it move by move from
Python cost a legal-move list and a make per move, several times a move: at the few thousand
nodes a move of self-play data, more than a quarter of the time the search itself took.
"""

from __future__ import annotations

from engine.board import make_move, unmake_move
from engine.constants import BoardArray, Int32Array, KeyArray, MetaArray, StackArray
from engine.jit import njit_noalloc
from engine.movegen import gen_legal


@njit_noalloc
def legal_prefix(
    board: BoardArray,
    stack: StackArray,
    keys: KeyArray,
    meta: MetaArray,
    line: Int32Array,
    length: int,
    buf: Int32Array,
) -> int:
    """How many of the first ``length`` moves of ``line`` are legal one after the other.

    The position is walked and taken back (it is as it was on return); ``buf`` holds one row
    of move-list space per move of the line.
    """
    count = 0
    while count < length:
        n = gen_legal(board, stack, meta, buf[count])
        move = line[count]
        found = False
        for i in range(n):
            if buf[count, i] == move:
                found = True
                break
        if not found:
            break
        make_move(board, stack, keys, meta, move)
        count += 1
    for _ in range(count):
        unmake_move(board, stack, meta)
    return count
