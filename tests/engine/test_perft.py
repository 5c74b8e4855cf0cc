"""Perft: exact leaf counts of the legal move tree against published suites and python-chess."""

from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from engine.board import Position
from engine.perft import divide, divide_lines, perft, perft_bulk, perft_checked
from tests.engine.conftest import PerftCase, load_perft_epd, python_chess_perft

# The fast run plays every leaf of each position up to this many leaves (about 270 million
# leaves in all); deeper counts run in the slow tests.
FAST_MAX_LEAVES = 10_000_000
SLOW_MAX_LEAVES = 1_000_000_000

SUITE = load_perft_epd("perftsuite126.epd") + load_perft_epd("perft_cpw6.epd")
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"


def _case_id(case: PerftCase) -> str:
    return f"line{case.line}"


def test_suites_are_complete() -> None:
    assert len(load_perft_epd("perftsuite126.epd")) == 126
    assert len(load_perft_epd("perft_cpw6.epd")) == 7


@pytest.mark.parametrize("case", SUITE, ids=_case_id)
def test_perft_suite(case: PerftCase) -> None:
    pos = Position.from_fen(case.fen)
    before = pos.fen()
    depth = case.deepest(FAST_MAX_LEAVES)
    assert perft(*pos.arrays, depth) == case.counts[depth], case.fen
    assert pos.fen() == before and pos.ply == 0


@pytest.mark.parametrize("case", SUITE[::4], ids=_case_id)
def test_incremental_state_at_every_node(case: PerftCase) -> None:
    """Key, evaluation terms and king squares equal a fresh computation at every node."""
    pos = Position.from_fen(case.fen)
    errors = np.zeros(1, dtype=np.int64)
    depth = case.deepest(300_000)
    assert perft_checked(*pos.arrays, depth, errors) == case.counts[depth]
    assert errors[0] == 0


@pytest.mark.slow
@pytest.mark.parametrize("case", SUITE, ids=_case_id)
def test_perft_suite_deep(case: PerftCase) -> None:
    pos = Position.from_fen(case.fen)
    for depth, count in sorted(case.counts.items()):
        if count <= SLOW_MAX_LEAVES:
            assert perft_bulk(*pos.arrays, depth) == count, (case.fen, depth)


def test_bulk_counting_agrees_with_full_perft() -> None:
    pos = Position.from_fen(KIWIPETE)
    for depth in range(5):
        assert perft_bulk(*pos.arrays, depth) == perft(*pos.arrays, depth)


def _divided(pos: Position, depth: int) -> dict[str, int]:
    """``divide``'s leaf count of each root move (never stopped: no stop flag is given)."""
    rows = divide(pos, depth)
    assert rows is not None
    return dict(rows)


def test_divide_matches_stockfish_format() -> None:
    pos = Position.startpos()
    lines = divide_lines(pos, 3)
    assert lines is not None
    assert lines[-2:] == ["", "Nodes searched: 8902"]
    moves = {move: count for move, count in (line.split(": ") for line in lines[:-2])}
    assert len(moves) == 20
    assert moves["e2e4"] == "600" and moves["g1f3"] == "440" and moves["a2a3"] == "380"


def test_divide_after_moves_and_castling_text() -> None:
    pos = Position.from_fen(KIWIPETE)
    standard = _divided(pos, 1)
    assert "e1g1" in standard and "e1c1" in standard
    pos.chess960 = True
    chess960 = _divided(pos, 2)
    assert "e1h1" in chess960 and "e1a1" in chess960
    board = chess.Board(KIWIPETE, chess960=True)
    for uci, count in chess960.items():
        board.push_uci(uci)
        assert count == board.legal_moves.count(), uci
        board.pop()


def test_divide_rejects_depth_zero() -> None:
    with pytest.raises(ValueError, match="depth"):
        divide(Position.startpos(), 0)


CHESS960_STARTS = [*sorted(random.Random(960).sample(range(960), 24)), 0, 518, 959]


@pytest.mark.parametrize("number", CHESS960_STARTS)
def test_chess960_start_positions(number: int) -> None:
    board = chess.Board.from_chess960_pos(number)
    pos = Position.from_fen(board.fen(), chess960=True)
    assert perft(*pos.arrays, 3) == python_chess_perft(board, 3)


def _midgame_960_fens() -> list[str]:
    """Chess960 positions after 8-16 random plies in which a castling right survives."""
    rng = random.Random(4)
    fens: list[str] = []
    while len(fens) < 24:
        board = chess.Board.from_chess960_pos(rng.randrange(960))
        for _ in range(rng.randrange(8, 17)):
            moves = list(board.legal_moves)
            if not moves:
                break
            castles = [m for m in moves if board.is_castling(m)]
            board.push(rng.choice(castles or moves))
        if board.castling_rights and not board.is_game_over():
            fens.append(board.fen())
    return fens


@pytest.mark.parametrize("fen", _midgame_960_fens())
def test_chess960_midgame_positions(fen: str) -> None:
    board = chess.Board(fen, chess960=True)
    pos = Position.from_fen(fen, chess960=True)
    assert perft(*pos.arrays, 3) == python_chess_perft(board, 3)


# Castling corner cases of chess960, with counts from python-chess.
CHESS960_CASTLING = [
    # the queen-side rook shields the king's target square from the rook on a1
    "1r2k3/8/8/8/8/8/8/rR1K3R w HB - 0 1",
    # king and rook swap places (king b1, rook c1 -> king g1 ... ) and overlapping paths
    "4k3/8/8/8/8/8/8/1KR4R w C - 0 1",
    "4k3/8/8/8/8/8/8/RK5R w HA - 0 1",
    "rk5r/8/8/8/8/8/8/RK5R b HAha - 0 1",
    # king already on its castled square
    "4k3/8/8/8/8/8/8/3R2KR w H - 0 1",
    "4k3/8/8/8/8/8/8/1RK5 w B - 0 1",
    # a bishop attacks a square the king passes
    "4k3/8/8/8/8/8/5b2/1K4R1 w G - 0 1",
]


@pytest.mark.parametrize("fen", CHESS960_CASTLING)
def test_chess960_castling_corner_cases(fen: str) -> None:
    board = chess.Board(fen, chess960=True)
    pos = Position.from_fen(fen, chess960=True)
    for depth in (1, 2, 3):
        assert perft(*pos.arrays, depth) == python_chess_perft(board, depth), depth
