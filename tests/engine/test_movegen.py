"""Move generation rules and attack queries, position by position and against python-chess."""

from __future__ import annotations

import chess
import numpy as np
import pytest

from engine.board import Position
from engine.constants import (
    FLAG_CAPTURE,
    FLAG_EP,
    MAX_MOVES,
    MOVE_PROMO_MASK,
    MOVE_PROMO_SHIFT,
    SQ64,
    square,
)
from engine.movegen import (
    gen_captures,
    gen_legal,
    gen_moves,
    gen_quiescence,
    is_legal,
    is_square_attacked,
)
from tests.engine.conftest import engine_uci_set, random_boards, uci_set


def _uci(pos: Position) -> set[str]:
    return engine_uci_set(pos)


def _pbm(pos: Position) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return pos.board, pos.stack, pos.meta


@pytest.mark.parametrize(
    ("fen", "expected"),
    [
        # the en passant capture would expose the king along the rank: not legal
        ("8/8/8/K2pP2q/8/8/8/7k w - d6 0 1", "e5e6"),
        # the en passant capture is legal and the only move that saves the king
        ("8/8/8/2k5/3Pp3/8/8/4K3 b - d3 0 1", "e4d3"),
    ],
)
def test_en_passant_pins_and_evasions(fen: str, expected: str) -> None:
    pos = Position.from_fen(fen)
    moves = _uci(pos)
    assert moves == uci_set(chess.Board(fen))
    assert expected in moves


def test_pinned_en_passant_is_not_generated_as_legal() -> None:
    pos = Position.from_fen("8/8/8/K2pP2q/8/8/8/7k w - d6 0 1")
    assert "e5d6" not in _uci(pos)
    pseudo = np.zeros(MAX_MOVES, dtype=np.int32)
    n = gen_moves(pos.board, pos.stack, pos.meta, pseudo)
    assert any(int(m) & FLAG_EP for m in pseudo[:n])


def test_double_check_allows_only_king_moves() -> None:
    pos = Position.from_fen("B6b/8/8/8/2K5/5k2/8/b6B b - - 0 1")
    moves = _uci(pos)
    assert moves and all(m.startswith("f3") for m in moves)
    assert moves == uci_set(chess.Board("B6b/8/8/8/2K5/5k2/8/b6B b - - 0 1"))


def test_pinned_piece_moves_along_the_pin_only() -> None:
    pos = Position.from_fen("4k3/4r3/8/8/8/8/4R3/4K3 w - - 0 1")
    rook_moves = {m for m in _uci(pos) if m.startswith("e2")}
    assert rook_moves == {"e2e3", "e2e4", "e2e5", "e2e6", "e2e7"}


def test_all_four_promotions_with_and_without_capture() -> None:
    pos = Position.from_fen("1n2k3/P7/8/8/8/8/8/4K3 w - - 0 1")
    moves = _uci(pos)
    for target in ("a8", "b8"):
        assert {f"a7{target}{p}" for p in "qrbn"} <= moves


@pytest.mark.parametrize(
    "fen",
    [
        "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
        "r3k2r/8/8/8/8/8/5r2/R3K2R w KQkq - 0 1",  # f1 attacked: no short castling
        "1r2k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",  # b1 attacked: long castling still legal
        "3rk3/8/8/8/8/8/8/R3K2R w KQ - 0 1",  # d1 attacked: no long castling
        "2r1k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",  # c1 (the king's target) attacked
        "4k1r1/8/8/8/8/8/8/R3K2R w KQ - 0 1",  # g1 (the king's target) attacked
        "4k3/8/8/8/8/8/4r3/R3K2R w KQ - 0 1",  # in check: no castling at all
        "4k3/8/8/8/8/8/8/RN2K1NR w KQ - 0 1",  # blocked on both sides
    ],
)
def test_standard_castling_rules(fen: str) -> None:
    pos = Position.from_fen(fen)
    assert _uci(pos) == uci_set(chess.Board(fen))


def test_generators_against_python_chess() -> None:
    """Captures+promotions, attacks and the legality filter over random-game positions."""
    boards = random_boards(seed=11, games=12, chess960=False, max_plies=80)
    boards += random_boards(seed=12, games=8, chess960=True, max_plies=80)
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    for board in boards:
        pos = Position.from_fen(board.fen(), chess960=board.chess960)
        n = gen_captures(pos.board, pos.stack, pos.meta, moves)
        ours = {pos.move_to_uci(int(m)) for m in moves[:n] if is_legal(*_pbm(pos), int(m))}
        theirs = {board.uci(m) for m in board.legal_moves if board.is_capture(m) or m.promotion}
        assert ours == theirs, board.fen()
        for m in moves[:n]:
            assert int(m) & FLAG_CAPTURE or (int(m) >> MOVE_PROMO_SHIFT) & MOVE_PROMO_MASK
        n_legal = gen_legal(pos.board, pos.stack, pos.meta, moves)
        assert n_legal == board.legal_moves.count(), board.fen()
        for sq64 in range(64):
            sq = square(sq64 & 7, sq64 >> 3)
            assert SQ64[sq] == sq64
            for color, by in ((chess.WHITE, 0), (chess.BLACK, 1)):
                assert is_square_attacked(pos.board, sq, by) == board.is_attacked_by(color, sq64), (
                    board.fen(),
                    chess.square_name(sq64),
                    color,
                )


def test_in_check_is_cached_per_ply() -> None:
    pos = Position.from_fen("4k3/8/8/8/8/8/8/4R1K1 b - - 0 1")
    assert pos.in_check()
    assert pos.in_check()  # cached answer
    pos.push_uci("e8d7")
    assert not pos.in_check()
    pos.pop()
    assert pos.in_check()


def test_quiescence_moves_are_evasions_in_check() -> None:
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    quiet_position = Position.from_fen("4k3/8/8/3p4/4P3/8/8/4K3 w - - 0 1")
    n = gen_quiescence(*_pbm(quiet_position), moves)
    assert {quiet_position.move_to_uci(int(m)) for m in moves[:n]} == {"e4d5"}
    checked = Position.from_fen("4k3/8/8/8/8/8/4r3/4K3 w - - 0 1")
    n = gen_quiescence(*_pbm(checked), moves)
    legal = {checked.move_to_uci(int(m)) for m in moves[:n] if is_legal(*_pbm(checked), int(m))}
    assert legal == _uci(checked) == {"e1e2", "e1d1", "e1f1"}


@pytest.mark.parametrize(
    "fen",
    [
        "R6R/3Q4/1Q4Q1/4Q3/2Q4Q/Q4Q2/pp1Q4/kBNN1KB1 w - - 0 1",
        "3Q4/1Q4Q1/4Q3/2Q4R/Q4Q2/3Q4/1Q4Rp/1K1BBNNk w - - 0 1",
    ],
)
def test_most_moves_known_fit_the_move_buffer(fen: str) -> None:
    pos = Position.from_fen(fen)
    moves = np.zeros(MAX_MOVES, dtype=np.int32)
    assert gen_moves(*_pbm(pos), moves) == 218 < MAX_MOVES
    assert len(pos.legal_moves()) == 218
