"""The match tool's arithmetic and adjudication (whole games are played in test_time_losses)."""

from __future__ import annotations

import argparse

import chess
import pytest

from tools.match import (
    MatchConfig,
    _adjudicate,
    elo_estimate,
    load_openings,
    parse_option,
    parse_time_control,
)

CONFIG = MatchConfig(10, 0.1, win_cp=1000, win_plies=4, draw_cp=10, draw_plies=4,
                     draw_min_ply=20, max_plies=400)


def test_elo_estimate_and_margin() -> None:
    elo, low, high = elo_estimate(10, 0, 10)
    assert elo == pytest.approx(0.0)
    assert low < 0 < high
    elo, low, high = elo_estimate(15, 0, 5)
    assert elo == pytest.approx(190.8, abs=0.5)
    assert low < elo < high
    assert elo_estimate(30, 20, 10)[0] > elo_estimate(25, 20, 15)[0]
    with pytest.raises(ValueError, match="no games"):
        elo_estimate(0, 0, 0)


def test_time_control_and_option_parsing() -> None:
    assert parse_time_control("10+0.1") == (10.0, 0.1)
    assert parse_time_control("60") == (60.0, 0.0)
    for bad in ("ten", "10+x", "0+1", "5+-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_time_control(bad)
    assert parse_option("UCI_Elo=2000") == ("UCI_Elo", "2000")
    with pytest.raises(argparse.ArgumentTypeError):
        parse_option("UCI_Elo")


def test_adjudication() -> None:
    board = chess.Board()
    assert _adjudicate(board, [1200, 1100, 1500, 1300], CONFIG) == "1-0"
    assert _adjudicate(board, [-1200, -1100, None, -1300], CONFIG) is None
    assert _adjudicate(board, [-1200, -1100, -1500, -1300], CONFIG) == "0-1"
    assert _adjudicate(board, [0, 5, -3, 0], CONFIG) is None  # too early for a draw
    for move in ["g1f3", "g8f6", "f3g1", "f6g8"] * 5:
        board.push_uci(move)
    assert _adjudicate(board, [0, 5, -3, 0], CONFIG) == "1/2-1/2"


def test_built_in_openings_are_legal_and_distinct() -> None:
    openings = load_openings(None)
    assert len(openings) >= 30
    ends = set()
    for opening in openings:
        board = chess.Board(opening.fen)
        for move in opening.moves:
            assert move in board.legal_moves
            board.push(move)
        ends.add(board.fen())
    assert len(ends) == len(openings)
