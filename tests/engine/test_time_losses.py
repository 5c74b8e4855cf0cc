"""The engine never loses on time: very fast games with a referee clock (tools.match).

Each game is played to a move limit without adjudication, so the clocks run low; the referee
charges the wall time of every move (the engine's thinking, its replies over the pipe and
python-chess's handling) to the mover.
"""

from __future__ import annotations

import sys

import pytest

from tools.common.engines import EngineSpec
from tools.common.openings import load_openings
from tools.common.referee import MatchConfig, Seat, play_game

KIBITZ = [sys.executable, "-m", "engine"]


def _play(base_s: float, increment_s: float, games: int, max_plies: int) -> None:
    config = MatchConfig(
        base_s=base_s,
        increment_s=increment_s,
        win_cp=10**9,  # never adjudicate: play on with the clock running low
        win_plies=8,
        draw_cp=-1,
        draw_plies=10**6,
        draw_min_ply=10**6,
        max_plies=max_plies,
    )
    seats = (Seat(EngineSpec("kibitz-a", KIBITZ, {})), Seat(EngineSpec("kibitz-b", KIBITZ, {})))
    openings = load_openings(None)
    try:
        for index in range(games):
            result = play_game(index, openings[index % len(openings)], index % 2 == 0, seats,
                               config)
            assert result.time_loss is None, f"game {index}: {result.termination}"
            assert "failed" not in result.termination, result.termination
            assert "illegal" not in result.termination, result.termination
    finally:
        for seat in seats:
            seat.discard()


def test_no_time_loss_at_one_second_per_game() -> None:
    _play(1.0, 0.0, games=4, max_plies=160)


def test_no_time_loss_at_five_seconds_plus_increment() -> None:
    _play(5.0, 0.05, games=1, max_plies=90)


@pytest.mark.slow
def test_no_time_loss_over_many_fast_games() -> None:
    _play(1.0, 0.0, games=16, max_plies=200)
    _play(5.0, 0.05, games=8, max_plies=200)
