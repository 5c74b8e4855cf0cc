"""Perft: count the leaf nodes of the legal move tree, the exact test of move generation.

``perft(board, stack, keys, meta, depth) -> int``
    Every leaf is made and unmade (the speed benchmark counts this).
``perft_bulk(board, stack, keys, meta, depth) -> int``
    The same count, but the last ply only counts legal moves (faster; for deep tests).
``perft_checked(board, stack, keys, meta, depth, errors) -> int``
    The full count, also checking the incremental state at every node (for tests).
``perft_divide(board, stack, keys, meta, depth, moves, counts) -> int``
    Fills ``moves``/``counts`` (int32 / int64, ``MAX_MOVES`` long) with each legal root move
    and its subtree count; returns the number of root moves.  ``divide_lines(position, depth)``
    formats it the way UCI ``go perft`` prints (``e2e4: 20``, blank line, ``Nodes searched``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engine.board import (
    Position,
    make_move,
    move_to_uci,
    state_is_consistent,
    unmake_move,
)
from engine.constants import (
    M_PLY,
    MAX_MOVES,
    S_SIDE,
    BoardArray,
    KeyArray,
    MetaArray,
    StackArray,
)
from engine.jit import njit, njit_noalloc
from engine.movegen import gen_legal, gen_moves, is_legal

MoveBuffer = npt.NDArray[np.int32]
ErrorCount = npt.NDArray[np.int64]


@njit_noalloc
def _perft(
    board: BoardArray,
    stack: StackArray,
    keys: KeyArray,
    meta: MetaArray,
    depth: int,
    buf: MoveBuffer,
    bulk: bool,
    errors: ErrorCount,
    check: bool,
) -> int:
    """Leaves below the current position (``depth >= 1``).

    ``bulk``: count the last ply's legal moves without playing them.  ``check``: count into
    ``errors[0]`` every node whose incremental state differs from a fresh computation.
    """
    if check and not state_is_consistent(board, stack, keys, meta):
        errors[0] += 1
    moves = buf[depth]
    n = gen_moves(board, stack, meta, moves)
    total = 0
    for i in range(n):
        move = moves[i]
        if not is_legal(board, stack, meta, move):
            continue
        if depth == 1 and bulk:
            total += 1
            continue
        make_move(board, stack, keys, meta, move)
        if depth > 1:
            total += _perft(board, stack, keys, meta, depth - 1, buf, bulk, errors, check)
        else:
            total += 1
            if check and not state_is_consistent(board, stack, keys, meta):
                errors[0] += 1
        unmake_move(board, stack, meta)
    return total


@njit
def _run(
    board: BoardArray,
    stack: StackArray,
    keys: KeyArray,
    meta: MetaArray,
    depth: int,
    bulk: bool,
    errors: ErrorCount,
    check: bool,
) -> int:
    if depth <= 0:
        return 1
    buf = np.zeros((depth + 1, MAX_MOVES), dtype=np.int32)
    return _perft(board, stack, keys, meta, depth, buf, bulk, errors, check)


@njit
def perft(board: BoardArray, stack: StackArray, keys: KeyArray, meta: MetaArray, depth: int) -> int:
    """Leaf count at ``depth``, every leaf made and unmade."""
    return _run(board, stack, keys, meta, depth, False, np.zeros(1, dtype=np.int64), False)


@njit
def perft_bulk(
    board: BoardArray, stack: StackArray, keys: KeyArray, meta: MetaArray, depth: int
) -> int:
    """Leaf count at ``depth``, counting the last ply's legal moves without playing them."""
    return _run(board, stack, keys, meta, depth, True, np.zeros(1, dtype=np.int64), False)


@njit
def perft_checked(
    board: BoardArray,
    stack: StackArray,
    keys: KeyArray,
    meta: MetaArray,
    depth: int,
    errors: ErrorCount,
) -> int:
    """``perft`` that also counts into ``errors[0]`` the nodes whose incremental state
    (key, evaluation terms, king squares) differs from a fresh computation."""
    return _run(board, stack, keys, meta, depth, False, errors, True)


@njit
def perft_divide(
    board: BoardArray,
    stack: StackArray,
    keys: KeyArray,
    meta: MetaArray,
    depth: int,
    moves: MoveBuffer,
    counts: npt.NDArray[np.int64],
) -> int:
    """Each legal root move into ``moves`` and its leaf count at ``depth`` into ``counts``."""
    n = gen_legal(board, stack, meta, moves)
    errors = np.zeros(1, dtype=np.int64)
    for i in range(n):
        make_move(board, stack, keys, meta, moves[i])
        counts[i] = _run(board, stack, keys, meta, depth - 1, True, errors, False)
        unmake_move(board, stack, meta)
    return n


def divide(position: Position, depth: int) -> list[tuple[str, int]]:
    """``(uci move, leaf count)`` for every legal root move, in generation order."""
    if depth < 1:
        raise ValueError(f"perft depth must be at least 1, got {depth}")
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    counts = np.zeros(MAX_MOVES, dtype=np.int64)
    board, stack, keys, meta = position.arrays
    n = perft_divide(board, stack, keys, meta, depth, moves, counts)
    side = int(stack[meta[M_PLY], S_SIDE])
    return [(move_to_uci(int(moves[i]), side, position.chess960), int(counts[i])) for i in range(n)]


def divide_lines(position: Position, depth: int) -> list[str]:
    """The lines UCI ``go perft depth`` prints: ``move: count``, a blank line, the total."""
    rows = divide(position, depth)
    lines = [f"{uci}: {count}" for uci, count in rows]
    lines.append("")
    lines.append(f"Nodes searched: {sum(count for _, count in rows)}")
    return lines
