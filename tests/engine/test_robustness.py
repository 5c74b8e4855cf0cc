"""Regression tests of the engine's rules and search against hostile or rare positions.

The UCI side of the same issue (stale moves, endless searches, perft, lost commands, the first
move's clock) is in ``test_uci_robustness.py``.
"""

from __future__ import annotations

import random
import time

import chess
import numpy as np
import pytest

from engine import params as tt_params
from engine import tt
from engine.board import FenError, Position, make_null
from engine.constants import MAX_MOVES
from engine.movegen import gen_moves
from engine.params import MATE
from engine.search import Searcher, _is_draw, _poll_stop
from engine.threads import I_ITERATION, I_NODES, I_STOPPED, INFO_SIZE
from engine.timeman import GoLimits, TimeBudget

UNLIMITED = TimeBudget(None, None)
QUEENS_FEN = "QQQQQQrk/Q4Qrr/Q5QQ/Q6Q/Q6Q/Q6Q/Q6Q/KQQQQQQQ w - - 0 1"


# -- defect 1: impossible positions ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("fen", "message"),
    [
        (QUEENS_FEN, "white has 27 pieces"),
        ("4k3/pppppppp/p7/8/8/8/8/4K3 b - - 0 1", "black has 9 pawns"),
        ("7k/QQQ5/8/8/8/QQQQQQ2/8/KQQQQQQQ w - - 0 1", "white has 17 pieces"),
    ],
)
def test_impossible_piece_counts_are_rejected(fen: str, message: str) -> None:
    assert chess.Board(fen).status() != chess.STATUS_VALID
    with pytest.raises(FenError, match=message):
        Position.from_fen(fen)


def test_the_move_buffer_holds_every_move_of_a_crowded_position() -> None:
    # 15 queens: more pseudo-legal moves than any real game, within what validation lets in
    fen = "2Q1Q1bk/KQ3Qpp/3Q4/Q5Q1/3Q2Q1/1Q6/2Q4Q/Q3QQ2 w - - 0 1"
    position = Position.from_fen(fen)
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    count = gen_moves(position.board, position.stack, position.meta, moves)
    assert count == len(list(chess.Board(fen).generate_pseudo_legal_moves())) == 231
    assert len(position.legal_moves()) == chess.Board(fen).legal_moves.count()


# -- defect 2: mates in minor-piece endings --------------------------------------------------------


def test_a_mate_with_bishop_against_knight_is_found() -> None:
    position = Position.from_fen("8/8/8/8/8/B7/n1K5/k7 w - - 0 1")
    result = Searcher(8).think(position, GoLimits(depth=6), UNLIMITED, time.monotonic(), print)
    assert result.best_move == "a3b2"
    assert result.score == MATE - 1


def _random_pawnless(rng: random.Random) -> chess.Board:
    while True:
        board = chess.Board(None)
        pieces = [chess.Piece(chess.KING, chess.WHITE), chess.Piece(chess.KING, chess.BLACK)]
        for _ in range(rng.randint(0, 3)):
            kind = rng.choice((chess.KNIGHT, chess.BISHOP, chess.BISHOP, chess.ROOK))
            pieces.append(chess.Piece(kind, rng.choice(chess.COLORS)))
        for piece, square in zip(pieces, rng.sample(chess.SQUARES, len(pieces)), strict=True):
            board.set_piece_at(square, piece)
        board.turn = rng.choice(chess.COLORS)
        if board.is_valid():
            return board


def test_only_dead_positions_are_draws_by_material() -> None:
    # python-chess's insufficient material is exactly the dead positions without pawns; with no
    # history and a zero halfmove clock, only the material can make the search call a draw
    rng = random.Random(13)
    for _ in range(400):
        board = _random_pawnless(rng)
        position = Position.from_fen(board.fen())
        board_, stack, keys, meta = position.arrays
        drawn = _is_draw(board_, stack, keys, meta, 0, np.zeros(MAX_MOVES, dtype=np.int32))
        assert drawn == board.is_insufficient_material(), board.fen()


# -- defect 8: repetition across a null move -------------------------------------------------------


def test_a_position_repeated_across_a_null_move_is_no_draw() -> None:
    # the white king walks a1-b1-b2-a1 while black's king goes a8-b8-a8 and then passes: the
    # start position recurs six plies later only because of the pass
    position = Position.from_fen("k7/8/8/8/8/8/8/K6R w - - 0 1")
    for text in ("a1b1", "a8b8", "b1b2", "b8a8", "b2a1"):
        position.push_uci(text)
    board, stack, keys, meta = position.arrays
    make_null(board, stack, keys, meta)
    assert keys[meta[0]] == keys[0]
    scratch = np.zeros(MAX_MOVES, dtype=np.int32)
    assert not _is_draw(board, stack, keys, meta, 0, scratch)


def test_a_real_repetition_in_the_search_path_is_a_draw() -> None:
    position = Position.from_fen("k7/8/8/8/8/8/8/K6R w - - 0 1")
    for text in ("a1b1", "a8b8", "b1a1", "b8a8"):
        position.push_uci(text)
    board, stack, keys, meta = position.arrays
    scratch = np.zeros(MAX_MOVES, dtype=np.int32)
    assert _is_draw(board, stack, keys, meta, 0, scratch)
    assert not _is_draw(board, stack, keys, meta, 1, scratch)  # once before the root: not yet


# -- defect 9: the table, and stops during depth 1 -------------------------------------------------

KEY = np.uint64(0x463B96181691FC9C)


def test_a_quiescence_bound_does_not_replace_a_deeper_one() -> None:
    table = tt.new_table(1)
    tt.store(table, KEY, 1234, 50, 9, tt.BOUND_LOWER, 3)
    tt.store(table, KEY, 0, -20, 0, tt.BOUND_UPPER, 3)
    word = tt.probe(table, KEY)
    assert (tt.entry_depth(word), tt.entry_bound(word), tt.entry_score(word)) == (
        9, tt.BOUND_LOWER, 50,
    )
    tt.store(table, KEY, 0, 35, 2, tt.BOUND_EXACT, 3)  # an exact score replaces it
    assert tt.entry_depth(tt.probe(table, KEY)) == 2
    tt.store(table, KEY, 1234, 50, 9, tt.BOUND_LOWER, 3)
    tt.store(table, KEY, 0, -20, 1, tt.BOUND_UPPER, 4)  # so does a newer search
    assert tt.entry_depth(tt.probe(table, KEY)) == 1
    tt.store(table, KEY, 1234, 50, 9, tt.BOUND_LOWER, 4)
    tt.store(table, KEY, 777, 60, 9 - tt_params.TT_KEEP_DEPTH_MARGIN, tt.BOUND_LOWER, 4)
    word = tt.probe(table, KEY)  # a bound nearly as deep replaces it, with its new move
    assert (tt.entry_depth(word), tt.entry_move(word)) == (9 - tt_params.TT_KEEP_DEPTH_MARGIN, 777)


def test_a_stop_is_obeyed_during_depth_one() -> None:
    info = np.zeros(INFO_SIZE, dtype=np.int64)
    stop = np.ones(1, dtype=np.int64)
    info[I_ITERATION] = 1
    info[I_NODES] = 1023  # the next node is a polling node
    assert _poll_stop(info, stop)
    assert info[I_STOPPED] == 1


def test_a_search_stopped_at_once_still_plays_a_legal_move() -> None:
    searcher = Searcher(1)
    searcher.request_stop()
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    result = searcher.think(Position.from_fen(fen), GoLimits(), UNLIMITED, time.monotonic(), print)
    assert result.best_move is not None
    assert chess.Move.from_uci(result.best_move) in chess.Board(fen).legal_moves
