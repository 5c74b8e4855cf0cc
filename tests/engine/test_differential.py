"""Differential tests against python-chess over seeded random games, standard and chess960.

At every position: the same legal moves (as UCI text), the same check / mate / stalemate
verdicts, the same FEN (and our FEN reads back to itself), the same Polyglot key, and
incremental state equal to a fresh computation; after unmaking, the same key and state again.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import chess
import chess.polyglot
import pytest

from engine.board import Position, state_is_consistent
from engine.constants import FLAG_CASTLE
from engine.perft import perft
from tests.engine.conftest import engine_uci_set, state_snapshot, uci_set

REPO_ROOT = Path(__file__).resolve().parents[2]


def _check_position(pos: Position, board: chess.Board) -> None:
    context = board.fen()
    assert engine_uci_set(pos) == uci_set(board), context
    assert pos.in_check() == board.is_check(), context
    assert pos.is_checkmate() == board.is_checkmate(), context
    assert pos.is_stalemate() == board.is_stalemate(), context
    fen = pos.fen()
    assert fen == board.fen(en_passant="xfen"), context
    assert pos.fen(shredder=True) == board.fen(shredder=True, en_passant="xfen"), context
    assert Position.from_fen(fen, chess960=pos.chess960).fen() == fen, context
    assert pos.key == chess.polyglot.zobrist_hash(board), context
    assert state_is_consistent(*pos.arrays), context


def play_random_games(seed: int, games: int, chess960: bool, max_plies: int) -> int:
    """Play seeded random games in both implementations, checking every position.

    Returns the number of positions checked.
    """
    rng = random.Random(seed)
    checked = 0
    for _ in range(games):
        if chess960:
            board = chess.Board.from_chess960_pos(rng.randrange(960))
        else:
            board = chess.Board()
        pos = Position.from_fen(board.fen(), chess960=chess960)
        keys = [pos.key]
        for _ in range(max_plies):
            _check_position(pos, board)
            checked += 1
            moves = list(board.legal_moves)
            if not moves or board.is_insufficient_material():
                break
            # prefer captures half of the time: the games reach endings and promotions
            captures = [m for m in moves if board.is_capture(m) or m.promotion]
            move = rng.choice(captures if captures and rng.random() < 0.5 else moves)
            text = board.uci(move)
            if rng.random() < 0.3:
                # make, unmake, and make again: unmake restores everything
                before = state_snapshot(pos)
                pos.push_uci(text)
                pos.pop()
                assert state_snapshot(pos) == before, (board.fen(), text)
            ours = pos.push_uci(text)
            if board.is_castling(move) and not chess960:
                # the king-takes-rook text names the same move in standard chess too
                pos.pop()
                rook_text = text[:2] + ("h" if text[2] == "g" else "a") + text[3]
                assert pos.parse_uci(rook_text) == ours
                assert ours & FLAG_CASTLE
                pos.push_unchecked(ours)
            board.push(move)
            keys.append(pos.key)
        while pos.ply:
            assert pos.key == keys[pos.ply]
            pos.pop()
            board.pop()
            assert pos.key == keys[pos.ply] == chess.polyglot.zobrist_hash(board)
    return checked


def test_standard_random_games() -> None:
    assert play_random_games(seed=1, games=30, chess960=False, max_plies=160) >= 2000


def test_chess960_random_games() -> None:
    assert play_random_games(seed=2, games=30, chess960=True, max_plies=160) >= 2000


SUBSET_FENS = [
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 3, 8902),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 2, 2039),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 3, 2812),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 2, 264),
    ("B6b/8/8/8/2K5/5k2/8/b6B b - - 0 1", 3, 1829),
]


def run_subset() -> None:
    """The small suite run as plain Python (``NUMBA_DISABLE_JIT=1``) in a subprocess."""
    for fen, depth, count in SUBSET_FENS:
        pos = Position.from_fen(fen)
        assert perft(*pos.arrays, depth) == count, fen
    play_random_games(seed=3, games=2, chess960=False, max_plies=60)
    play_random_games(seed=4, games=2, chess960=True, max_plies=60)
    print("subset ok")


def test_subset_without_jit() -> None:
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    result = subprocess.run(
        [sys.executable, "-c", "import tests.engine.test_differential as t; t.run_subset()"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "subset ok" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("chess960", [False, True])
def test_many_more_random_games(chess960: bool) -> None:
    assert play_random_games(seed=5, games=300, chess960=chess960, max_plies=200) >= 20000
