"""The history heuristics: what the search learns at a cutoff, and the one call that records it.

A beta cutoff teaches the ordering of later nodes (``movepick.score_moves`` reads it back):
a quiet move that cut becomes a killer of its ply and the counter move of the opponent's last
move, and its butterfly and continuation histories rise; a capture's capture history rises.
Every move tried before it at that node failed to cut and gets a malus of the same size: each
capture in its capture history, and after a quiet cutoff each quiet move in its histories.
Entries move by gravity (``_gravity``), so they stay within +-``HISTORY_MAX``.  The tables are
fields of the searching thread's work record (``threads.WORK_DTYPE``).
"""

from __future__ import annotations

from engine import params
from engine.constants import NULL_MOVE, BoardArray, Int32Array, MoveArray
from engine.jit import njit_noalloc
from engine.movepick import (
    NO_CONT,
    Int16Array,
    capture_index,
    cont_index,
    is_tactical,
    move_from,
    move_to,
)
from engine.params import HISTORY_BONUS_MAX, HISTORY_MULTIPLIER
from engine.threads import WorkRecord


@njit_noalloc
def _gravity(entry: int, bonus: int) -> int:
    """History gravity: the entry moves towards +-HISTORY_MAX and never leaves that range."""
    magnitude = bonus if bonus >= 0 else -bonus
    return entry + bonus - entry * magnitude // params.HISTORY_MAX


@njit_noalloc
def update_history(history: Int32Array, side: int, move: int, bonus: int) -> None:
    frm = move_from(move)
    to = move_to(move)
    history[side, frm, to] = _gravity(int(history[side, frm, to]), bonus)


@njit_noalloc
def update_capture_history(capture_history: Int16Array, idx: int, bonus: int) -> None:
    capture_history[idx] = _gravity(int(capture_history[idx]), bonus)


@njit_noalloc
def update_continuation(cont_history: Int16Array, prev: int, idx: int, bonus: int) -> None:
    """The same gravity for a continuation entry; the NO_CONT row stays zero."""
    if prev == NO_CONT:
        return
    cont_history[prev, idx] = _gravity(int(cont_history[prev, idx]), bonus)


@njit_noalloc
def update_at_cutoff(
    work: WorkRecord,
    board: BoardArray,
    node_moves: MoveArray,
    cut: int,
    ply: int,
    side: int,
    depth: int,
    prev: int,
    prev1: int,
    prev2: int,
    idx: int,
) -> None:
    """Record a beta cutoff by ``node_moves[cut]`` at ``depth`` (the move not yet made: ``idx``
    is its continuation index); the moves before it in ``node_moves`` failed to cut.

    ``prev`` is the opponent's last move (0 or ``NULL_MOVE`` when there is none), ``prev1`` and
    ``prev2`` the continuation indices of that move and of our own move before it.
    """
    move = node_moves[cut]
    quiet = not is_tactical(move)
    killers = work.killers
    history = work.history
    cont_history = work.cont_history
    capture_history = work.capture_history
    bonus = HISTORY_MULTIPLIER * min(depth * depth, HISTORY_BONUS_MAX)
    if quiet:
        # Killers, history and the counter move of the opponent's last move.
        killer1 = killers[ply, 0]
        if move != killer1:
            killers[ply, 1] = killer1
            killers[ply, 0] = move
        update_history(history, side, move, bonus)
        update_continuation(cont_history, prev1, idx, bonus)
        update_continuation(cont_history, prev2, idx, bonus)
        if prev != 0 and prev != NULL_MOVE:
            work.counters[move_from(prev), move_to(prev)] = move
    else:
        update_capture_history(capture_history, capture_index(board, move), bonus)
    # The malus: every capture tried before in its capture history, and after a quiet cutoff
    # every quiet move tried before in its histories.
    for j in range(cut):
        other = node_moves[j]
        if is_tactical(other):
            update_capture_history(capture_history, capture_index(board, other), -bonus)
        elif quiet:
            update_history(history, side, other, -bonus)
            other_idx = cont_index(board, other)
            update_continuation(cont_history, prev1, other_idx, -bonus)
            update_continuation(cont_history, prev2, other_idx, -bonus)
