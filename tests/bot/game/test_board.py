"""Rebuilding the board from the server's moves: both castling notations, chess960, set-ups."""

from __future__ import annotations

import chess
import pytest

from bot.game.game import initial_board, replay, wire_uci

CASTLE_READY = "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8"


@pytest.mark.parametrize("variant", ["standard", "fromPosition"])
@pytest.mark.parametrize(("white", "black"), [("e1g1", "e8c8"), ("e1h1", "e8a8")])
def test_both_castling_notations_replay(variant: str, white: str, black: str) -> None:
    board = replay(initial_board(variant, CASTLE_READY), (white, black))
    assert board.piece_at(chess.G1) == chess.Piece(chess.KING, chess.WHITE)
    assert board.piece_at(chess.F1) == chess.Piece(chess.ROOK, chess.WHITE)
    assert board.piece_at(chess.C8) == chess.Piece(chess.KING, chess.BLACK)
    assert board.piece_at(chess.D8) == chess.Piece(chess.ROOK, chess.BLACK)


def test_we_send_e1g1_in_standard_and_king_takes_rook_in_chess960() -> None:
    board = initial_board("fromPosition", CASTLE_READY)
    castle = board.parse_uci("e1h1")
    assert wire_uci(board, castle, "fromPosition") == "e1g1"
    assert wire_uci(board, board.parse_uci("e1c1"), "standard") == "e1c1"
    # Chess960 position 518 is the standard setup; king-takes-rook is the only safe notation.
    c960 = initial_board("chess960", CASTLE_READY.replace("KQkq", "HAha"))
    assert wire_uci(c960, c960.parse_uci("e1h1"), "chess960") == "e1h1"


def test_chess960_start_position_and_castling() -> None:
    fen = "bqnbrkrn/pppppppp/8/8/8/8/PPPPPPPP/BQNBRKRN w GEge - 0 1"
    board = initial_board("chess960", fen)
    assert board.chess960
    moves = ("e2e4", "e7e5", "f1g1")  # f1g1: the king takes its rook: O-O
    board = replay(board, moves)
    assert board.piece_at(chess.G1) == chess.Piece(chess.KING, chess.WHITE)
    assert board.piece_at(chess.F1) == chess.Piece(chess.ROOK, chess.WHITE)


def test_startpos_and_an_illegal_move() -> None:
    board = initial_board("standard", "startpos")
    assert board == chess.Board()
    with pytest.raises(ValueError):
        replay(board, ("e2e4", "e2e4"))
    with pytest.raises(ValueError):
        replay(initial_board("standard", "startpos"), ("zz99",))
