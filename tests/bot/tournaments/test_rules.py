"""Arena game rules: no abort, no draw before move 30."""

from __future__ import annotations

from bot.game.conduct import Conduct
from bot.lichess.events import GameInfo
from bot.ops.config import DrawConfig, ResignConfig
from bot.tournaments.rules import ARENA_NO_DRAW_BEFORE_MOVE, first_draw_move, is_mandatory


def info(source: str, tournament_id: str | None = None) -> GameInfo:
    return GameInfo(game_id="g", full_id="g1234", color="white", variant="standard",
                    speed="bullet", rated=True, source=source, status="started",
                    opponent_id="x", opponent_name="x", winner=None,
                    tournament_id=tournament_id)


def test_tournament_games_are_mandatory() -> None:
    assert is_mandatory(info("arena", "AbCd1234"))
    assert is_mandatory(info("swiss"))
    assert not is_mandatory(info("friend"))
    assert not is_mandatory(None)
    assert first_draw_move(info("arena")) == ARENA_NO_DRAW_BEFORE_MOVE == 30
    assert first_draw_move(info("lobby")) == 1


def test_no_draw_before_move_30_in_an_arena_even_in_a_tablebase_draw() -> None:
    draw = DrawConfig(offer=True, accept=True, margin_cp=20, moves=1, min_move=1)
    arena = Conduct(draw, ResignConfig(), first_draw_move=first_draw_move(info("arena")))
    friendly = Conduct(draw, ResignConfig())
    for conduct in (arena, friendly):
        conduct.record(0, tablebase_wdl=0)
    assert friendly.should_offer_draw(12) and friendly.should_accept_draw(12)
    assert not arena.should_offer_draw(29) and not arena.should_accept_draw(29)
    assert arena.should_offer_draw(30) and arena.should_accept_draw(30)
