"""The metrics of a long run: counters count everything, the windows stay bounded."""

from __future__ import annotations

from bot.game.metrics import GAMES_KEPT, MOVES_KEPT, GameOutcome, Metrics, MoveTiming


def outcome(index: int) -> GameOutcome:
    return GameOutcome(f"g{index}", "mate", "white", None, (), "finished")


def test_windows_keep_the_latest_and_counters_keep_counting() -> None:
    metrics = Metrics()
    for index in range(GAMES_KEPT + 5):
        metrics.finished(outcome(index))
    for ply in range(MOVES_KEPT + 3):
        metrics.moved(MoveTiming("g", ply, 0.001, 0.05, "engine"))
    assert metrics.games_finished == GAMES_KEPT + 5 and len(metrics.games) == GAMES_KEPT
    assert metrics.moves_sent == MOVES_KEPT + 3 and len(metrics.moves) == MOVES_KEPT
    assert metrics.moves[0].ply == 3 and metrics.games[-1].game_id == f"g{GAMES_KEPT + 4}"


def test_the_latest_games_are_those_still_in_the_window() -> None:
    metrics = Metrics()
    for index in range(3):
        metrics.finished(outcome(index))
    assert [o.game_id for o in metrics.latest_games(2)] == ["g1", "g2"]
    assert [o.game_id for o in metrics.latest_games(10)] == ["g0", "g1", "g2"]
    assert metrics.latest_games(0) == []


def test_the_benchmark_shares_exactly_the_games_asked_among_its_opponents() -> None:
    from tools.bench.session import quotas

    assert quotas(16, 8) == [2] * 8
    assert quotas(300, 8) == [38] * 4 + [37] * 4 and sum(quotas(300, 8)) == 300
    assert quotas(3, 8) == [1, 1, 1, 0, 0, 0, 0, 0]
