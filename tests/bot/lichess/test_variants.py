"""Lichess's variants on python-chess's boards: start positions, drops, game ends, and what
an engine declares it plays."""

from __future__ import annotations

import chess
import chess.engine
import chess.variant
import pytest

from bot.engines.pool import EngineSpec, start_engine
from bot.game.position import initial_board, replay, wire_uci
from bot.lichess.variants import (
    LICHESS_VARIANTS,
    STANDARD_RULES,
    board_class,
    engine_variants,
    new_board,
)
from tests.bot.e2e_support import BUILTIN, FAIRY_STOCKFISH, NEEDS_FAIRY_STOCKFISH


def test_startpos_is_the_variants_own_start() -> None:
    assert new_board("horde", "startpos").fen() == chess.variant.HordeBoard().fen()
    assert new_board("racingKings", "startpos").fen() == chess.variant.RacingKingsBoard().fen()
    assert new_board("antichess", "startpos").castling_rights == 0  # no castling on Lichess
    assert new_board("chess960", "startpos").chess960
    assert not new_board("atomic", "startpos").chess960


def test_an_unknown_variant_is_named() -> None:
    with pytest.raises(ValueError, match="unknown variant 'suicide'"):
        board_class("suicide")


def test_crazyhouse_drops_replay_both_ways_and_fill_the_pockets() -> None:
    board = replay(initial_board("crazyhouse", "startpos"),
                   ("e2e4", "d7d5", "e4d5", "d8d5", "b1c3", "d5a5"))
    assert isinstance(board, chess.variant.CrazyhouseBoard)
    assert str(board.pockets[chess.WHITE]) == "p" and str(board.pockets[chess.BLACK]) == "p"
    drop = board.parse_uci("P@e4")
    assert board.is_legal(drop) and wire_uci(board, drop, "crazyhouse") == "P@e4"
    assert board.san(drop).endswith("@e4")
    board.push(drop)
    assert str(board.pockets[chess.WHITE]) == ""


@pytest.mark.parametrize(("variant", "moves", "winner"), [
    ("kingOfTheHill", ("e2e3", "a7a6", "e1e2", "a6a5", "e2d3", "a5a4", "d3e4"), chess.WHITE),
    ("threeCheck", ("e2e4", "e7e5", "f1c4", "d7d6", "c4f7", "e8f7", "d1h5", "f7e7",
                    "h5e5"), chess.WHITE),
    ("atomic", ("g1f3", "d7d5", "f3e5", "d8d6", "e5f7"), chess.WHITE),
])
def test_variant_wins_follow_the_variants_rules(variant: str, moves: tuple[str, ...],
                                                winner: chess.Color) -> None:
    board = replay(initial_board(variant, "startpos"), moves)
    assert board.is_variant_end()
    outcome = board.outcome()
    assert outcome is not None and outcome.winner == winner


def test_declared_names_map_to_lichess_keys() -> None:
    assert engine_variants(None) == frozenset(STANDARD_RULES)
    assert engine_variants(frozenset({"chess", "giveaway", "3check"})) == \
        frozenset(STANDARD_RULES) | {"threeCheck"}  # giveaway castles: it is not antichess
    assert engine_variants(frozenset({"normal"}), xboard=True) == {"standard"}
    assert engine_variants(frozenset({"normal", "fischerandom", "giveaway"}), xboard=True) == \
        {"standard", "chess960", "fromPosition", "antichess"}


@NEEDS_FAIRY_STOCKFISH
async def test_fairy_stockfish_plays_every_lichess_variant() -> None:
    engine = await start_engine(EngineSpec((FAIRY_STOCKFISH,)))
    try:
        # Debian's build (11.1) has no atomic: its UCI_Variant does not offer it.
        assert engine.variants >= frozenset(LICHESS_VARIANTS) - {"atomic"}
        # python-chess tells it each board's variant (UCI_Variant).
        for variant in sorted(engine.variants - set(STANDARD_RULES)):
            board = initial_board(variant, "startpos")
            thought = await engine.think(board, chess.engine.Limit(depth=3), hard_limit_s=10,
                                         game=variant)
            assert board.is_legal(thought.move), variant
    finally:
        await engine.close()


async def test_the_builtin_engine_plays_three_check_and_king_of_the_hill() -> None:
    engine = await start_engine(EngineSpec(tuple(BUILTIN)))
    try:
        assert engine.variants == frozenset(STANDARD_RULES) | {"threeCheck", "kingOfTheHill"}
        for variant in ("threeCheck", "kingOfTheHill"):
            board = initial_board(variant, "startpos")
            thought = await engine.think(board, chess.engine.Limit(depth=3), hard_limit_s=10,
                                         game=variant)
            assert board.is_legal(thought.move), variant
    finally:
        await engine.close()
