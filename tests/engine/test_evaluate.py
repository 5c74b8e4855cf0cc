"""Evaluation: colour symmetry over many positions, and the sign of each term."""

from __future__ import annotations

import random
from pathlib import Path

import chess

from engine.board import Position
from engine.evaluate import evaluate, evaluate_white, new_scratch

DATA = Path(__file__).resolve().parents[1] / "data"


def white_score(fen: str) -> int:
    position = Position.from_fen(fen)
    board, stack, _, meta = position.arrays
    return int(evaluate_white(board, stack, int(meta[0]), new_scratch()))


def side_score(fen: str) -> int:
    position = Position.from_fen(fen)
    board, stack, _, meta = position.arrays
    return int(evaluate(board, stack, int(meta[0]), new_scratch()))


def sample_positions() -> list[str]:
    fens = []
    for name in ("bratko_kopec24.epd", "kaufman25.epd", "arasan20.epd", "perftsuite126.epd"):
        for line in (DATA / name).read_text().splitlines():
            if line.strip():
                fens.append(" ".join(line.split()[:4]) + " 0 1")
    rng = random.Random(2024)
    for _ in range(60):
        board = chess.Board()
        for _ in range(rng.randrange(10, 120)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        fens.append(board.fen())
    return fens


def test_score_equals_minus_the_score_of_the_colour_flipped_mirror() -> None:
    checked = 0
    for fen in sample_positions():
        board = chess.Board(fen)
        if not board.is_valid():
            continue
        mirrored = board.mirror().fen()
        assert white_score(fen) == -white_score(mirrored), fen
        assert side_score(fen) == side_score(mirrored), fen
        checked += 1
    assert checked > 300


def test_side_to_move_view() -> None:
    fen = "4k3/8/8/8/8/8/8/3QK3 w - - 0 1"
    assert side_score(fen) == white_score(fen) > 500
    black_to_move = fen.replace(" w ", " b ")
    assert side_score(black_to_move) == -white_score(black_to_move) < -500


def test_bishop_pair_is_worth_more_than_its_material() -> None:
    # two bishops against bishop and knight; then the same with the pair split by colour swap
    pair = white_score("4k3/pppppppp/8/8/8/8/PPPPPPPP/2B1KB2 w - - 0 1")
    split = white_score("2b1k3/pppppppp/8/8/8/8/PPPPPPPP/2B1K3 w - - 0 1")
    assert pair - split > 300  # a whole extra bishop
    mixed = white_score("4k3/pppppppp/8/8/8/8/PPPPPPPP/1NB1K3 w - - 0 1")
    assert pair > mixed


def _pawn_fen(rank: int, black_pawn: str = "") -> str:
    rows = ["8"] * 8
    rows[0] = "4k3"
    rows[7] = "4K3"
    rows[8 - rank] = "3P4"
    if black_pawn:
        rows[1] = black_pawn
    return "/".join(rows) + " w - - 0 1"


def test_passed_pawns_grow_with_their_rank() -> None:
    scores = [white_score(_pawn_fen(rank)) for rank in range(3, 7)]
    assert scores == sorted(scores)
    assert scores[-1] - scores[0] > 100


def test_a_blocked_pawn_is_not_passed() -> None:
    passed = white_score(_pawn_fen(6, black_pawn="p7"))
    blocked = white_score(_pawn_fen(6, black_pawn="2p5"))
    assert passed - blocked > 25


def test_doubled_and_isolated_pawns_are_weaknesses() -> None:
    healthy = "4k3/8/8/8/8/8/PPP5/4K3 w - - 0 1"
    doubled = "4k3/8/8/8/8/P7/P1P5/4K3 w - - 0 1"
    isolated = "4k3/8/8/8/8/8/P1P5/4K3 w - - 0 1"
    lone = "4k3/8/8/8/8/8/PP6/4K3 w - - 0 1"
    assert white_score(healthy) > white_score(doubled)
    assert white_score(isolated) < white_score(lone)


def test_lone_minor_piece_ending_scores_near_zero() -> None:
    assert abs(white_score("4k3/8/8/8/8/8/8/2B1K3 w - - 0 1")) < 150


def test_a_piece_attacked_by_a_pawn_is_a_threat() -> None:
    """The same knight and the same pawn, with and without the pawn attacking the knight: the
    difference of differences leaves only the threat (pawns on a2/a7 keep it from the
    drawish scaling of a lone minor piece)."""
    attacked = white_score("4k3/p7/8/4p3/3N4/8/P7/4K3 w - - 0 1")  # e5 pawn hits d4
    pawn_away = white_score("4k3/p7/8/7p/3N4/8/P7/4K3 w - - 0 1")
    knight_away = white_score("4k3/p7/8/4p3/2N5/8/P7/4K3 w - - 0 1")
    neither = white_score("4k3/p7/8/7p/2N5/8/P7/4K3 w - - 0 1")
    assert (attacked - pawn_away) - (knight_away - neither) < -30


def test_a_rook_attacked_by_a_minor_piece_is_a_threat() -> None:
    """The same bishop and rook, with and without the bishop's diagonal reaching the rook."""
    attacked = white_score("4r2k/p7/8/1B6/8/8/P7/6K1 w - - 0 1")  # b5 bishop hits e8
    rook_away = white_score("5r1k/p7/8/1B6/8/8/P7/6K1 w - - 0 1")
    bishop_away = white_score("4r2k/p7/8/8/8/1B6/P7/6K1 w - - 0 1")
    neither = white_score("5r1k/p7/8/8/8/1B6/P7/6K1 w - - 0 1")
    assert (attacked - rook_away) - (bishop_away - neither) > 20


def test_two_knights_against_a_bare_king_score_near_zero() -> None:
    """Two knights cannot force mate against a bare king; with a pawn left to the defender
    they can (the pawn lifts stalemate), and the score is kept."""
    bare = white_score("4k3/8/8/8/8/8/8/1NN1K3 w - - 0 1")
    assert 0 < bare < 60
    assert -60 < white_score("1nn1k3/8/8/8/8/8/8/4K3 b - - 0 1") < 0
    with_pawn = white_score("4k3/8/4p3/8/8/8/8/1NN1K3 w - - 0 1")
    assert with_pawn > 4 * bare
