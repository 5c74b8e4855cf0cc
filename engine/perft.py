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
    S_VARIANT,
    VARIANT_CHESS,
    BoardArray,
    Int64Array,
    KeyArray,
    MetaArray,
    MoveArray,
    StackArray,
)
from engine.jit import njit, njit_noalloc
from engine.movegen import gen_legal, gen_moves, is_legal
from engine.variant import RESULT_NONE, variant_result

STOP_CHECK_DEPTH = 3  # nodes this far or farther from the leaves read the stop flag


@njit_noalloc
def _perft(
    board: BoardArray,
    stack: StackArray,
    keys: KeyArray,
    meta: MetaArray,
    depth: int,
    buf: MoveArray,
    bulk: bool,
    errors: Int64Array,
    check: bool,
    stop: Int64Array,
) -> int:
    """Leaves below the current position (``depth >= 1``).

    ``bulk``: count the last ply's legal moves without playing them.  ``check``: count into
    ``errors[0]`` every node whose incremental state differs from a fresh computation.
    ``stop[0] != 0`` (set by another thread) ends the count early, read only far from the
    leaves so the check costs nothing measurable.
    """
    if depth >= STOP_CHECK_DEPTH and stop[0] != 0:
        return 0
    if check and not state_is_consistent(board, stack, keys, meta):
        errors[0] += 1
    row = meta[M_PLY]
    if stack[row, S_VARIANT] != VARIANT_CHESS and variant_result(stack, row) != RESULT_NONE:
        return 0  # the variant's rule ended the game: no moves (python-chess counts so too)
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
            total += _perft(
                board, stack, keys, meta, depth - 1, buf, bulk, errors, check, stop
            )
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
    errors: Int64Array,
    check: bool,
    stop: Int64Array,
) -> int:
    if depth <= 0:
        return 1
    buf = np.zeros((depth + 1, MAX_MOVES), dtype=np.int32)
    return _perft(board, stack, keys, meta, depth, buf, bulk, errors, check, stop)


@njit
def _zeros() -> Int64Array:
    return np.zeros(1, dtype=np.int64)


@njit
def perft(board: BoardArray, stack: StackArray, keys: KeyArray, meta: MetaArray, depth: int) -> int:
    """Leaf count at ``depth``, every leaf made and unmade."""
    return _run(board, stack, keys, meta, depth, False, _zeros(), False, _zeros())


@njit
def perft_bulk(
    board: BoardArray, stack: StackArray, keys: KeyArray, meta: MetaArray, depth: int
) -> int:
    """Leaf count at ``depth``, counting the last ply's legal moves without playing them."""
    return _run(board, stack, keys, meta, depth, True, _zeros(), False, _zeros())


@njit
def perft_checked(
    board: BoardArray,
    stack: StackArray,
    keys: KeyArray,
    meta: MetaArray,
    depth: int,
    errors: Int64Array,
) -> int:
    """``perft`` that also counts into ``errors[0]`` the nodes whose incremental state
    (key, evaluation terms, king squares) differs from a fresh computation."""
    return _run(board, stack, keys, meta, depth, False, errors, True, _zeros())


@njit
def perft_divide(
    board: BoardArray,
    stack: StackArray,
    keys: KeyArray,
    meta: MetaArray,
    depth: int,
    moves: MoveArray,
    counts: Int64Array,
    stop: Int64Array,
) -> int:
    """Each legal root move into ``moves`` and its leaf count at ``depth`` into ``counts``.

    Returns the number of root moves, or -1 when ``stop[0]`` was set before the end.
    """
    n = gen_legal(board, stack, meta, moves)
    errors = np.zeros(1, dtype=np.int64)
    for i in range(n):
        make_move(board, stack, keys, meta, moves[i])
        counts[i] = _run(board, stack, keys, meta, depth - 1, True, errors, False, stop)
        unmake_move(board, stack, meta)
        if stop[0] != 0:
            return -1
    return n


def divide(
    position: Position, depth: int, stop: Int64Array | None = None
) -> list[tuple[str, int]] | None:
    """``(uci move, leaf count)`` for every legal root move, in generation order.

    None when ``stop[0]`` was set (by another thread) before the count was complete.
    """
    if depth < 1:
        raise ValueError(f"perft depth must be at least 1, got {depth}")
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    counts = np.zeros(MAX_MOVES, dtype=np.int64)
    board, stack, keys, meta = position.arrays
    flag = stop if stop is not None else np.zeros(1, dtype=np.int64)
    n = perft_divide(board, stack, keys, meta, depth, moves, counts, flag)
    if n < 0:
        return None
    side = int(stack[meta[M_PLY], S_SIDE])
    return [(move_to_uci(int(moves[i]), side, position.chess960), int(counts[i])) for i in range(n)]


def divide_lines(
    position: Position, depth: int, stop: Int64Array | None = None
) -> list[str] | None:
    """The lines UCI ``go perft depth`` prints: ``move: count``, a blank line, the total.

    None when stopped (see ``divide``).
    """
    rows = divide(position, depth, stop)
    if rows is None:
        return None
    lines = [f"{uci}: {count}" for uci, count in rows]
    lines.append("")
    lines.append(f"Nodes searched: {sum(count for _, count in rows)}")
    return lines
