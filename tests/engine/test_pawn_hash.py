"""Pawn hash: a cached pawn structure entry scores exactly like one computed afresh."""

from __future__ import annotations

import numpy as np

from engine.board import Position
from engine.constants import PAWN, SQ64
from engine.evaluate import (
    _P_KEY,
    _PAWN_KEY_SEED,
    _PAWN_TABLE,
    _PAWN_WORDS,
    PAWN_ENTRIES,
    PAWN_KEYS,
    _pawn_entry,
    evaluate_white,
    new_scratch,
)
from tests.engine.test_evaluate import sample_positions


def _pawn_key(position: Position) -> int:
    """The pawn key from scratch: the seed and the number of every pawn, exclusive-or'ed."""
    key = np.int64(_PAWN_KEY_SEED)
    for sq in range(120):
        piece = int(position.board[sq])
        if SQ64[sq] >= 0 and piece > 0 and piece & 7 == PAWN:
            key ^= PAWN_KEYS[piece >> 3, sq]
    return int(key)


def _white_score(position: Position, scratch: np.ndarray) -> int:
    board, stack, _, meta = position.arrays
    return int(evaluate_white(board, stack, int(meta[0]), scratch))


def test_scores_with_a_warm_pawn_table_equal_scores_with_a_fresh_one() -> None:
    positions = [Position.from_fen(fen) for fen in sample_positions()]
    fresh = [_white_score(position, new_scratch()) for position in positions]
    shared = new_scratch()
    for _ in range(2):  # the second round finds most structures in the table
        assert [_white_score(position, shared) for position in positions] == fresh
    assert np.count_nonzero(shared[_PAWN_TABLE::_PAWN_WORDS]) > 100


def test_an_entry_equals_the_uncached_computation_of_its_structure() -> None:
    shared = new_scratch()
    for fen in sample_positions()[:150]:
        position = Position.from_fen(fen)
        _white_score(position, shared)  # fills (or finds) the entry
        key = _pawn_key(position)
        fresh = new_scratch()
        entry = int(_pawn_entry(position.board, fresh, key))
        assert entry == _PAWN_TABLE + (key & (PAWN_ENTRIES - 1)) * _PAWN_WORDS
        assert int(shared[entry + _P_KEY]) == key, fen
        words = slice(entry, entry + _PAWN_WORDS)
        assert np.array_equal(shared[words], fresh[words]), fen


def test_an_entry_of_another_structure_in_the_slot_is_replaced() -> None:
    position = Position.from_fen("4k3/pp3ppp/8/3P4/8/8/PP3PPP/4K3 w - - 0 1")
    scratch = new_scratch()
    real = _white_score(position, scratch)
    key = _pawn_key(position)
    entry = _PAWN_TABLE + (key & (PAWN_ENTRIES - 1)) * _PAWN_WORDS
    # the same slot, a key differing in a high bit, and nonsense scores
    scratch[entry : entry + _PAWN_WORDS] = 12345
    scratch[entry + _P_KEY] = key ^ (1 << 50)
    assert _white_score(position, scratch) == real
    assert int(scratch[entry + _P_KEY]) == key
