"""Move ordering: continuation and capture history (indices, gravity, their place in the order)."""

from __future__ import annotations

import time

import numpy as np

from engine import params
from engine.board import Position
from engine.constants import MAX_MOVES
from engine.movepick import (
    NO_CONT,
    capture_index,
    cont_index,
    new_capture_history,
    new_cont_history,
    new_see_buffer,
    score_moves,
    update_capture_history,
    update_continuation,
)
from engine.search import Searcher
from engine.timeman import GoLimits, TimeBudget

ITALIAN = "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"


def test_the_largest_cutoff_bonus_keeps_every_history_in_bounds() -> None:
    # A cutoff moves its histories by HISTORY_MULTIPLIER * min(d^2, HISTORY_BONUS_MAX): gravity
    # keeps an entry within +-HISTORY_MAX (and the int16 tables from wrapping) only while that
    # bonus is no larger than HISTORY_MAX itself, whichever way the updates alternate.
    largest = params.HISTORY_MULTIPLIER * params.HISTORY_BONUS_MAX
    assert largest <= params.HISTORY_MAX
    cont = new_cont_history()
    captures = new_capture_history()
    for step in range(200):
        bonus = largest if step % 3 else -largest
        update_continuation(cont, 7, 100, bonus)
        update_capture_history(captures, 5, bonus)
        assert -params.HISTORY_MAX <= int(cont[7, 100]) <= params.HISTORY_MAX
        assert -params.HISTORY_MAX <= int(captures[5]) <= params.HISTORY_MAX


def test_continuation_index_is_piece_and_target_square() -> None:
    position = Position.from_fen(ITALIAN)
    board = position.arrays[0]
    knight_g5 = position.parse_uci("f3g5")
    castle = position.parse_uci("e1g1")
    bishop_b5 = position.parse_uci("c4b5")
    indices = {cont_index(board, m) for m in (knight_g5, castle, bishop_b5)}
    assert len(indices) == 3
    for move in position.legal_moves():
        assert 0 <= cont_index(board, move) < NO_CONT
    other = Position.from_fen("4k3/8/8/8/8/8/8/1N2K1N1 w - - 0 1")
    b1 = other.parse_uci("b1d2")
    g1 = other.parse_uci("g1f3")
    assert cont_index(other.arrays[0], b1) != cont_index(other.arrays[0], g1)
    # the same piece to the same square is one entry, whichever square it came from
    via_e4 = Position.from_fen("4k3/8/8/8/4N3/8/8/4K3 w - - 0 1")
    assert cont_index(via_e4.arrays[0], via_e4.parse_uci("e4d2")) == cont_index(
        other.arrays[0], b1
    )


def test_gravity_keeps_entries_within_the_history_bound() -> None:
    table = new_cont_history()
    for _ in range(500):
        update_continuation(table, 7, 100, params.HISTORY_BONUS_MAX)
    high = int(table[7, 100])
    assert params.HISTORY_MAX - params.HISTORY_BONUS_MAX <= high <= params.HISTORY_MAX
    for _ in range(500):
        update_continuation(table, 7, 100, -params.HISTORY_BONUS_MAX)
    low = int(table[7, 100])
    assert -params.HISTORY_MAX <= low <= -params.HISTORY_MAX + params.HISTORY_BONUS_MAX
    update_continuation(table, NO_CONT, 100, params.HISTORY_BONUS_MAX)
    assert not table[NO_CONT].any()  # the row of "no move before" is never written


def test_quiet_moves_are_ordered_by_their_continuation_after_the_last_move() -> None:
    position = Position.from_fen(ITALIAN)
    board = position.arrays[0]
    moves = np.array(position.legal_moves() + [0] * (MAX_MOVES - len(position.legal_moves())),
                     dtype=np.int32)
    n = len(position.legal_moves())
    scores = np.zeros(MAX_MOVES, dtype=np.int32)
    history = np.zeros((2, 128, 128), dtype=np.int32)
    table = new_cont_history()
    quiet = position.parse_uci("d2d3")
    prev1, prev2 = 123, 456
    update_continuation(table, prev1, cont_index(board, quiet), params.HISTORY_BONUS_MAX)
    update_continuation(table, prev2, cont_index(board, quiet), params.HISTORY_BONUS_MAX)
    score_moves(board, moves, scores, n, 0, 0, 0, 0, history, 0, new_see_buffer(), table,
                prev1, prev2, new_capture_history())
    by_score = {int(moves[i]): int(scores[i]) for i in range(n)}
    assert by_score[quiet] == 2 * params.HISTORY_BONUS_MAX
    assert by_score[quiet] == max(by_score.values())  # no capture here beats it
    # without a previous move the continuation adds nothing
    score_moves(board, moves, scores, n, 0, 0, 0, 0, history, 0, new_see_buffer(), table,
                NO_CONT, NO_CONT, new_capture_history())
    assert {int(scores[i]) for i in range(n) if int(moves[i]) == quiet} == {0}


def test_search_fills_the_continuation_table_and_clear_empties_it() -> None:
    searcher = Searcher(1)
    position = Position.from_fen(ITALIAN)
    searcher.think(position, GoLimits(depth=8), TimeBudget(None, None), time.monotonic(),
                   lambda _: None)
    table = searcher.tables.cont_history
    assert np.count_nonzero(table) > 100
    assert not table[NO_CONT].any()
    assert int(np.abs(table).max()) <= params.HISTORY_MAX
    searcher.clear()
    assert not table.any()


def test_captures_of_one_victim_are_ordered_by_their_capture_history() -> None:
    position = Position.from_fen("4k3/8/8/3p3r/8/2N2B2/8/4K2R w - - 0 1")
    board = position.arrays[0]
    legal = position.legal_moves()
    n = len(legal)
    moves = np.array(legal + [0] * (MAX_MOVES - n), dtype=np.int32)
    scores = np.zeros(MAX_MOVES, dtype=np.int32)
    captures = new_capture_history()
    knight = position.parse_uci("c3d5")
    bishop = position.parse_uci("f3d5")
    rook = position.parse_uci("h1h5")

    def keys() -> dict[int, int]:
        score_moves(board, moves, scores, n, 0, 0, 0, 0, np.zeros((2, 128, 128), np.int32), 0,
                    new_see_buffer(), new_cont_history(), NO_CONT, NO_CONT, captures)
        return {int(moves[i]): int(scores[i]) for i in range(n)}

    before = keys()
    assert before[knight] == before[bishop]  # the same victim, no history yet
    for _ in range(50):
        update_capture_history(captures, capture_index(board, bishop), params.HISTORY_BONUS_MAX)
        update_capture_history(captures, capture_index(board, knight), -params.HISTORY_BONUS_MAX)
    after = keys()
    assert after[bishop] > after[knight]
    assert after[rook] > after[bishop]  # a rook taken still comes before a pawn
