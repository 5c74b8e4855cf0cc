"""Draw, resign and takeback rules."""

from __future__ import annotations

import json
from pathlib import Path

import chess.engine
import pytest

from bot.engines.searchline import MATE_SCORE_CP, score_cp
from bot.game.conduct import Conduct, TakebackLedger
from bot.ops.config import DrawConfig, ResignConfig

DRAW = DrawConfig(offer=True, accept=True, margin_cp=20, moves=3, min_move=30)
RESIGN = ResignConfig(enabled=True, threshold_cp=-800, moves=2)
CLOCKS = {"our_clock_s": 60.0, "their_clock_s": 60.0, "their_increment_s": 0.0}


def test_mates_count_as_huge_scores() -> None:
    assert score_cp(chess.engine.Mate(3)) > MATE_SCORE_CP - 10
    assert score_cp(chess.engine.Mate(-2)) < -MATE_SCORE_CP + 10
    assert score_cp(chess.engine.Cp(-15)) == -15


def test_draw_needs_n_moves_within_margin_after_move_m() -> None:
    conduct = Conduct(DRAW, RESIGN)
    for score in (5, -20, 12):
        assert not conduct.should_offer_draw(40)
        conduct.record(score)
    assert conduct.should_offer_draw(40) and conduct.should_accept_draw(40)
    assert not conduct.should_offer_draw(29)  # too early in the game
    conduct.record(21)  # one move outside the margin breaks the run
    assert not conduct.should_offer_draw(40)
    for score in (0, 0):
        conduct.record(score)
    assert not conduct.should_offer_draw(40)
    conduct.record(chess.engine.Cp(-3))
    assert conduct.should_offer_draw(40)
    conduct.record(None)  # a book move: no evaluation
    assert not conduct.should_accept_draw(40)


def test_offer_and_accept_switch_separately() -> None:
    conduct = Conduct(DrawConfig(offer=False, accept=True, margin_cp=20, moves=1, min_move=0),
                      RESIGN)
    conduct.record(0)
    assert not conduct.should_offer_draw(10) and conduct.should_accept_draw(10)
    conduct = Conduct(DrawConfig(offer=True, accept=False, margin_cp=20, moves=1, min_move=0),
                      RESIGN)
    conduct.record(0)
    assert conduct.should_offer_draw(10) and not conduct.should_accept_draw(10)


@pytest.mark.parametrize("wdl", [-1, 0, 1])
def test_tablebase_draws_count_at_once(wdl: int) -> None:
    conduct = Conduct(DRAW, RESIGN)
    conduct.record(350, tablebase_wdl=wdl)
    assert conduct.should_offer_draw(5)
    assert not conduct.should_resign(abortable=False, **CLOCKS)


def test_tablebase_wins_never_draw() -> None:
    conduct = Conduct(DrawConfig(offer=True, accept=True, margin_cp=20, moves=1, min_move=0),
                      RESIGN)
    conduct.record(0, tablebase_wdl=2)
    assert not conduct.should_accept_draw(50)


def test_resign_after_n_moves_below_threshold() -> None:
    conduct = Conduct(DRAW, RESIGN)
    conduct.record(-900)
    assert not conduct.should_resign(abortable=False, **CLOCKS)
    conduct.record(chess.engine.Mate(-4))
    assert conduct.should_resign(abortable=False, **CLOCKS)
    conduct.record(-799)
    assert not conduct.should_resign(abortable=False, **CLOCKS)


def test_resign_never_while_abortable_or_against_a_lower_clock_without_increment() -> None:
    conduct = Conduct(DRAW, RESIGN)
    conduct.record(-2000)
    conduct.record(-2000)
    assert not conduct.should_resign(abortable=True, **CLOCKS)
    assert not conduct.should_resign(abortable=False, our_clock_s=30.0, their_clock_s=10.0,
                                     their_increment_s=0.0)
    assert conduct.should_resign(abortable=False, our_clock_s=30.0, their_clock_s=10.0,
                                 their_increment_s=2.0)
    assert conduct.should_resign(abortable=False, our_clock_s=10.0, their_clock_s=30.0,
                                 their_increment_s=0.0)
    disabled = Conduct(DRAW, ResignConfig(enabled=False, threshold_cp=-800, moves=2))
    disabled.record(-2000)
    disabled.record(-2000)
    assert not disabled.should_resign(abortable=False, **CLOCKS)


def test_tablebase_loss_resigns_at_once() -> None:
    conduct = Conduct(DRAW, RESIGN)
    conduct.record(50, tablebase_wdl=-2)
    assert conduct.should_resign(abortable=False, **CLOCKS)


def test_takebacks_are_limited_per_game_and_survive_a_restart(tmp_path: Path) -> None:
    ledger = TakebackLedger(tmp_path / "state", max_per_game=2)
    assert ledger.request("game0001") and ledger.request("game0001")
    assert not ledger.request("game0001")
    assert ledger.request("game0002")
    restarted = TakebackLedger(tmp_path / "state", max_per_game=2)
    assert restarted.granted("game0001") == 2 and restarted.granted("game0002") == 1
    assert not restarted.request("game0001")
    restarted.forget("game0001")
    assert json.loads(restarted.path.read_text()) == {"game0002": 1}
    assert TakebackLedger(tmp_path / "state", max_per_game=2).granted("game0001") == 0


def test_the_ledger_keeps_the_most_recent_games(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bot.game.conduct.MAX_LEDGER_GAMES", 3)
    ledger = TakebackLedger(tmp_path, max_per_game=5)
    for game_id in ("a", "b", "c", "a", "d"):
        assert ledger.request(game_id)
    assert list(json.loads(ledger.path.read_text())) == ["c", "a", "d"]
    assert TakebackLedger(tmp_path, max_per_game=5).granted("a") == 2


def test_no_takebacks_by_default_and_a_damaged_ledger_is_replaced(tmp_path: Path) -> None:
    assert not TakebackLedger(tmp_path, max_per_game=0).request("game0001")
    (tmp_path / "takebacks.json").write_text("{not json")
    ledger = TakebackLedger(tmp_path, max_per_game=1)
    assert ledger.granted("game0001") == 0 and ledger.request("game0001")
    (tmp_path / "takebacks.json").write_text('["x"]')
    assert TakebackLedger(tmp_path, max_per_game=1).granted("game0001") == 0


def test_a_takeback_drops_the_scores_of_the_undone_moves() -> None:
    conduct = Conduct(DRAW, RESIGN)
    conduct.record(-900, ply=40)
    conduct.record(-950, ply=42)
    assert conduct.should_resign(abortable=False, **CLOCKS)
    conduct.take_back(42)  # our move at ply 42 was taken back
    assert not conduct.should_resign(abortable=False, **CLOCKS)
    conduct.record(-30, ply=42)  # the move played instead
    assert not conduct.should_resign(abortable=False, **CLOCKS)
    conduct.take_back(43)  # only the opponent's reply to ours: our verdicts stay
    conduct.record(-870, ply=44)
    assert not conduct.should_resign(abortable=False, **CLOCKS)
    for ply, score in ((44, 0), (46, 10), (48, -5)):
        conduct.record(score, ply=ply)
    assert conduct.should_offer_draw(40)
    conduct.take_back(40)  # all the way back: nothing of ours is left
    assert conduct.last is None and not conduct.should_offer_draw(40)


def test_a_move_chosen_again_replaces_its_verdict() -> None:
    conduct = Conduct(DRAW, RESIGN)
    conduct.record(-900, ply=10)
    conduct.record(-900, ply=12)  # the server refused this move ...
    conduct.record(0, ply=12)  # ... and another was chosen at the same ply
    assert not conduct.should_resign(abortable=False, **CLOCKS)
    assert conduct.last is not None and conduct.last.score_cp == 0


def test_no_draw_offered_to_nor_resignation_to_a_beginner() -> None:
    conduct = Conduct(DrawConfig(offer=True, accept=True, margin_cp=20, moves=1, min_move=0,
                                 min_rating=1000),
                      ResignConfig(enabled=True, threshold_cp=-800, moves=1, min_rating=1200))
    conduct.record(0)
    conduct.opponent_rating = 999
    assert not conduct.should_offer_draw(40)
    assert conduct.should_accept_draw(40)  # their offer is theirs to make
    conduct.opponent_rating = 1000
    assert conduct.should_offer_draw(40)
    conduct.record(-900)
    conduct.opponent_rating = 1199
    assert not conduct.should_resign(abortable=False, **CLOCKS)
    conduct.opponent_rating = None  # unknown: the rules as they are
    assert conduct.should_resign(abortable=False, **CLOCKS)
    unbounded = Conduct(DrawConfig(offer=True, accept=True, margin_cp=20, moves=1, min_move=0,
                                   min_rating=None), RESIGN)
    unbounded.record(0)
    unbounded.opponent_rating = 400
    assert unbounded.should_offer_draw(40)
