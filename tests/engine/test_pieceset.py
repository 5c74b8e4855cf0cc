"""Piece sets: the incremental sets equal the board's pieces, and walking them is a scan."""

from __future__ import annotations

import random

from engine.board import Position, make_move, unmake_move
from engine.constants import S_OCC, SQ64, WHITE
from engine.pieceset import (
    lowest_square,
    piece_count,
    set_word,
    set_words,
    sets_match_board,
)
from tests.engine.conftest import random_boards


def _walk(position: Position, colour: int) -> list[int]:
    squares = []
    for word in range(2):
        bits = int(set_word(position.stack, position.ply, colour, word))
        while bits:
            squares.append(int(lowest_square(bits, word)))
            bits &= bits - 1
    return squares


def _scan(position: Position, colour: int) -> list[int]:
    return [
        sq
        for sq in range(120)
        if SQ64[sq] >= 0 and position.board[sq] > 0 and position.board[sq] >> 3 == colour
    ]


def test_walking_a_set_meets_the_pieces_in_board_scan_order() -> None:
    for board in random_boards(seed=11, games=6, chess960=True, max_plies=80)[::7]:
        position = Position.from_fen(board.fen(), chess960=True)
        for colour in range(2):
            assert _walk(position, colour) == _scan(position, colour), board.fen()


def test_the_piece_count_is_the_boards() -> None:
    """Every count from a full board down to bare kings (the net's output bucket reads it)."""
    seen = set()
    for board in random_boards(seed=13, games=12, chess960=False, max_plies=300)[::3]:
        position = Position.from_fen(board.fen())
        assert piece_count(position.stack, position.ply) == len(board.piece_map()), board.fen()
        seen.add(len(board.piece_map()))
    bare = Position.from_fen("8/8/4k3/8/8/4K3/8/8 w - - 0 1")
    assert piece_count(bare.stack, bare.ply) == 2
    assert 32 in seen and len(seen) >= 15, sorted(seen)


def test_incremental_sets_equal_sets_from_scratch_through_make_and_unmake() -> None:
    rng = random.Random(5)
    for fen in (
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
        "rk2r3/8/8/8/8/8/8/RK2R3 w KQkq - 0 1",  # chess960 castling
    ):
        position = Position.from_fen(fen)
        for _ in range(40):
            path = []
            for _ in range(rng.randrange(1, 12)):
                moves = position.legal_moves()
                if not moves:
                    break
                move = rng.choice(moves)
                make_move(*position.arrays, move)
                path.append(move)
                assert sets_match_board(position.board, position.stack, position.ply), fen
                stored = position.stack[position.ply, S_OCC : S_OCC + 4]
                assert list(stored) == set_words(position.board)
            for _ in path:
                unmake_move(position.board, position.stack, position.meta)
                assert sets_match_board(position.board, position.stack, position.ply), fen


def test_a_set_word_holding_the_top_square_reads_back_non_negative() -> None:
    # h4 and h8 are bit 31 of their words: stored negative, read as 32-bit numbers
    position = Position.from_fen("4k2r/8/8/8/7R/8/8/4K3 w - - 0 1")
    assert position.stack[0, S_OCC + 2 * WHITE] < 0  # white's h4 rook sets the sign bit
    assert set_word(position.stack, 0, WHITE, 0) == (1 << 31) | (1 << 4)
    assert _walk(position, WHITE) == _scan(position, WHITE)
