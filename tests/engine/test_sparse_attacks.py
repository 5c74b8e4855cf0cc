"""The attack test that walks the attacker's pieces (few pieces: endings) answers as the rays
from the square do, and as python-chess does, also on the trial boards of a legality test."""

from __future__ import annotations

import random

import chess
import numpy as np

from engine.board import Position
from engine.constants import M_PLY, MAX_MOVES, SQ64, square
from engine.movegen import _is_attacked_by_set, gen_legal, is_square_attacked
from engine.params import SPARSE_ATTACK_MAX_PIECES
from engine.pieceset import piece_count_of

# few pieces a side from the start: every kind of attacker, pins, checks, en passant
ENDING_FENS = (
    "8/8/8/4k3/8/8/8/R3K3 w Q - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "8/8/3bk3/8/8/2B1K3/4P3/8 w - - 0 1",
    "6k1/8/8/3q4/8/2N5/5PK1/8 w - - 0 1",
    "4k3/8/8/1b6/8/8/3N4/4K3 w - - 0 1",
    "8/8/8/2k5/3Pp3/8/8/4K3 b - d3 0 1",
    "4k3/4r3/8/8/8/8/4B3/4K3 w - - 0 1",
    "8/5k2/8/4PK2/8/8/8/8 w - - 0 1",
)


def _ending_boards(seed: int, plies: int) -> list[chess.Board]:
    rng = random.Random(seed)
    boards = []
    for fen in ENDING_FENS:
        for _ in range(4):
            board = chess.Board(fen)
            for _ in range(plies):
                moves = list(board.legal_moves)
                if not moves:
                    break
                board.push(rng.choice(moves))
                boards.append(board.copy(stack=False))
    return boards


def test_the_walk_over_pieces_agrees_with_the_rays_and_python_chess() -> None:
    walked = 0
    for board in _ending_boards(seed=4, plies=30):
        pos = Position.from_fen(board.fen())
        row = int(pos.meta[M_PLY])
        for sq64 in range(64):
            sq = square(sq64 & 7, sq64 >> 3)
            assert SQ64[sq] == sq64
            for color, by in ((chess.WHITE, 0), (chess.BLACK, 1)):
                expected = board.is_attacked_by(color, sq64)
                assert is_square_attacked(pos.board, sq, by) == expected
                assert _is_attacked_by_set(pos.board, pos.stack, row, sq, by) == expected, (
                    board.fen(), chess.square_name(sq64), color)
                walked += piece_count_of(pos.stack, row, by) <= SPARSE_ATTACK_MAX_PIECES
    assert walked > 10_000  # the walk, not the rays, answered in these positions


def test_legal_moves_of_endings_are_python_chess_ones() -> None:
    """Legality tests make trial moves on the board (a capture, en passant, the king away)
    while the sets still show the position before them."""
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    for board in _ending_boards(seed=9, plies=40):
        pos = Position.from_fen(board.fen())
        n = gen_legal(pos.board, pos.stack, pos.meta, moves)
        assert {pos.move_to_uci(int(m)) for m in moves[:n]} \
            == {m.uci() for m in board.legal_moves}, board.fen()
