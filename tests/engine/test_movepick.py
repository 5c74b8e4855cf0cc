"""Move ordering: continuation and capture history (indices, gravity, their place in the order)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from engine import params
from engine.bench import BENCH_FENS
from engine.board import Position
from engine.constants import MAX_MOVES
from engine.history import update_capture_history, update_continuation
from engine.movegen import gen_moves
from engine.movepick import (
    NO_CONT,
    capture_index,
    cont_index,
    is_tactical,
    new_capture_history,
    new_cont_history,
    new_see_buffer,
    pick_next,
    pick_next_settled,
    score_moves,
    see,
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
    score_moves(board, moves, scores, n, 0, 0, 0, 0, history, 0, table,
                prev1, prev2, new_capture_history())
    by_score = {int(moves[i]): int(scores[i]) for i in range(n)}
    assert by_score[quiet] == 2 * params.HISTORY_BONUS_MAX
    # every capture here loses material: settled, none comes before it
    assert pick_next_settled(board, moves, scores, 0, n, new_see_buffer()) == quiet
    # without a previous move the continuation adds nothing
    score_moves(board, moves, scores, n, 0, 0, 0, 0, history, 0, table,
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
                    new_cont_history(), NO_CONT, NO_CONT, captures)
        return {int(moves[i]): int(scores[i]) for i in range(n)}

    before = keys()
    assert before[knight] == before[bishop]  # the same victim, no history yet
    for _ in range(50):
        update_capture_history(captures, capture_index(board, bishop), params.HISTORY_BONUS_MAX)
        update_capture_history(captures, capture_index(board, knight), -params.HISTORY_BONUS_MAX)
    after = keys()
    assert after[bishop] > after[knight]
    assert after[rook] > after[bishop]  # a rook taken still comes before a pawn


def _positions_with_captures(count: int, seed: int) -> list[Position]:
    """Bench positions and positions a few random moves on from them (many captures)."""
    rng = np.random.default_rng(seed)
    positions: list[Position] = []
    for fen in BENCH_FENS:
        for plies in range(0, 8, 2):
            position = Position.from_fen(fen)
            for _ in range(plies):
                legal = position.legal_moves()
                if not legal:
                    break
                position.push(legal[int(rng.integers(len(legal)))])
            positions.append(position)
            if len(positions) == count:
                return positions
    return positions


def test_settled_picking_orders_exactly_as_every_see_computed_first() -> None:
    """The lazy SEE of ``pick_next_settled`` picks the same moves in the same order, and leaves
    the same scores, as eager SEE keys (reference: SEE first, then first-of-equals selection
    in plain Python), with random histories (ties included) and a random hash move."""
    rng = np.random.default_rng(48)
    buf = new_see_buffer()
    losing_seen = 0
    for position in _positions_with_captures(160, 7):
        board, stack, _keys, meta = position.arrays
        moves = np.zeros(MAX_MOVES, dtype=np.int32)
        n = gen_moves(board, stack, meta, moves)
        if n == 0:
            continue
        history = rng.integers(-3, 3, size=(2, 128, 128)).astype(np.int32)  # many ties
        captures = rng.integers(-2000, 2000, size=new_capture_history().shape).astype(np.int16)
        hash_move = int(moves[int(rng.integers(n))]) if rng.random() < 0.5 else 0
        killer = int(moves[int(rng.integers(n))])
        scores = np.zeros(MAX_MOVES, dtype=np.int32)
        score_moves(board, moves, scores, n, hash_move, killer, 0, 0, history, 0,
                    new_cont_history(), NO_CONT, NO_CONT, captures)
        # the reference: every capture's SEE first, then plain selection
        ref_moves = [int(m) for m in moves[:n]]
        ref_scores = [int(x) for x in scores[:n]]
        for i, move in enumerate(ref_moves):
            if move != hash_move and is_tactical(move) and see(board, move, buf) < 0:
                ref_scores[i] += params.SCORE_BAD_CAPTURE - params.SCORE_GOOD_CAPTURE
                losing_seen += 1
        expected = []
        for start in range(n):
            best = max(range(start, n), key=lambda i: (ref_scores[i], -i))
            ref_moves[start], ref_moves[best] = ref_moves[best], ref_moves[start]
            ref_scores[start], ref_scores[best] = ref_scores[best], ref_scores[start]
            expected.append(ref_moves[start])
        picked = [pick_next_settled(board, moves, scores, i, n, buf) for i in range(n)]
        assert picked == expected
        assert [int(x) for x in scores[:n]] == ref_scores
    assert losing_seen > 50  # the positions did exercise the settling


def test_pick_next_takes_the_first_of_equal_best_scores() -> None:
    moves = np.arange(1, MAX_MOVES + 1, dtype=np.int32)
    scores = np.zeros(MAX_MOVES, dtype=np.int32)
    scores[:40] = [5, 9, 1, 9, 9, 3, 0, 9] * 5
    picked = [pick_next(moves, scores, i, 40) for i in range(40)]
    # a swap moves the displaced entry to the winner's old place: 1st 9 is 2, then 4, 5, 8...
    assert picked[:4] == [2, 4, 5, 8]
    assert [int(x) for x in scores[:40]] == sorted([5, 9, 1, 9, 9, 3, 0, 9] * 5, reverse=True)
    assert sorted(picked) == list(range(1, 41))


@pytest.mark.parametrize(
    ("fen", "uci", "expected_cp"),
    [
        # a knight to a square a pawn attacks: it is lost
        ("4k3/8/3p4/8/8/5N2/8/4K3 w - - 0 1", "f3e5", -320),
        # the same square, defended by a pawn: a knight for a pawn
        ("4k3/8/3p4/8/3P4/5N2/8/4K3 w - - 0 1", "f3e5", -220),
        # a square nothing attacks: nothing is lost
        ("4k3/8/8/8/8/5N2/8/4K3 w - - 0 1", "f3e5", 0),
        # a rook to a square a bishop attacks: lost; with a second rook behind it, which
        # defends the square once the first has left the file's way (x-ray): rook for bishop
        ("7k/8/8/2b5/8/8/4R3/4K3 w - - 0 1", "e2e3", -500),
        ("7k/8/8/2b5/8/8/4R3/4RK2 w - - 0 1", "e2e3", -170),
    ],
)
def test_see_of_a_quiet_move_is_what_the_exchange_on_its_square_loses(
    fen: str, uci: str, expected_cp: int
) -> None:
    """SEE also scores a quiet move (what a pruning rule by hanging pieces would read): the
    exchange starts with the opponent's capture of the mover, lifted off its square."""
    position = Position.from_fen(fen)
    move = position.parse_uci(uci)
    assert not is_tactical(move)
    assert see(position.arrays[0], move, new_see_buffer()) == expected_cp
