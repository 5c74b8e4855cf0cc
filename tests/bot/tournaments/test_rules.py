"""Arena game rules: no abort, no draw before the variant's long-game ply."""

from __future__ import annotations

from bot.game.conduct import Conduct
from bot.lichess.events import GameInfo
from bot.ops.config import DrawConfig, ResignConfig
from bot.tournaments.rules import first_draw_move, is_mandatory


def info(source: str, tournament_id: str | None = None,
         variant: str = "standard") -> GameInfo:
    return GameInfo(game_id="g", full_id="g1234", color="white", variant=variant,
                    speed="bullet", rated=True, source=source, status="started",
                    opponent_id="x", opponent_name="x", winner=None,
                    tournament_id=tournament_id)


def test_tournament_games_are_mandatory() -> None:
    assert is_mandatory(info("arena", "AbCd1234"))
    assert is_mandatory(info("swiss"))
    assert not is_mandatory(info("friend"))
    assert not is_mandatory(None)
    assert first_draw_move(info("lobby")) == 1


def test_the_first_draw_follows_lilas_long_game_plies() -> None:
    """Pairing.longGame: 60 plies in standard, 40 in crazyhouse, 20 in atomic; the first
    fullmove after them (white to move: 2 x (fullmove - 1) plies played)."""
    assert first_draw_move(info("arena")) == 31
    assert first_draw_move(info("arena", variant="chess960")) == 31
    assert first_draw_move(info("arena", variant="crazyhouse")) == 21
    assert first_draw_move(info("arena", variant="atomic")) == 11


def test_no_draw_before_fullmove_31_in_an_arena_even_in_a_tablebase_draw() -> None:
    draw = DrawConfig(offer=True, accept=True, margin_cp=20, moves=1, min_move=1)
    arena = Conduct(draw, ResignConfig(), first_draw_move=first_draw_move(info("arena")))
    friendly = Conduct(draw, ResignConfig())
    for conduct in (arena, friendly):
        conduct.record(0, tablebase_wdl=0)
    assert friendly.should_offer_draw(12) and friendly.should_accept_draw(12)
    assert not arena.should_offer_draw(30) and not arena.should_accept_draw(30)
    assert arena.should_offer_draw(31) and arena.should_accept_draw(31)
