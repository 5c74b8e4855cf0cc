"""Every Lichess variant on the sandbox: lila's rules (python-chess's variant boards), its
end statuses (variantEnd), drops, the variant perfs, and the variant's PGN tag."""

from __future__ import annotations

import chess.variant
import pytest

from sandbox.timecontrol import VARIANTS
from tests.sandbox.conftest import Duel


@pytest.mark.parametrize(("variant", "moves", "status", "winner"), [
    ("kingOfTheHill", "e2e3 a7a6 e1e2 a6a5 e2d3 a5a4 d3e4", "variantEnd", "white"),
    ("threeCheck", "e2e4 e7e5 f1c4 d7d6 c4f7 e8f7 d1h5 f7e7 h5e5", "variantEnd", "white"),
    # the third check mates: scalachess's Situation.status says mate before variantEnd
    ("threeCheck", "h2h4 c7c5 e2e3 f7f6 d1h5 g7g6 h5g6 h7g6 f1d3 h8h5 d3g6", "mate", "white"),
    ("atomic", "g1f3 d7d5 f3e5 d8d6 e5f7", "variantEnd", "white"),  # the knight blows up e8
    ("crazyhouse", "f2f3 e7e5 g2g4 d8h4", "mate", "black"),
    ("horde", "d4d5 e7e6 d5e6 d8g5 f4g5 f7e6", None, None),  # plays on: 3 pawns gone
])
async def test_variant_games_end_by_their_rules_with_lilas_status(
        duel: Duel, variant: str, moves: str, status: str | None, winner: str | None) -> None:
    game_id = await duel.start_game(variant=variant)
    async with duel.human.stream(f"/api/board/game/stream/{game_id}") as stream:
        full = await stream.next()
        assert full["variant"]["key"] == variant
        assert full["variant"]["name"] == VARIANTS[variant][0]
        assert full["initialFen"] == "startpos"
    await duel.play(game_id, moves)
    game = duel.sandbox.game(game_id)
    if status is None:
        assert game.playing
        return
    assert game.status == status
    assert winner == ("white" if game.winner else "black")
    async with duel.human.stream(f"/api/board/game/stream/{game_id}") as stream:
        final = (await stream.next())["state"]
        assert (final["status"], final.get("winner")) == (status, winner)
    pgn = (await duel.human.get(f"/game/export/{game_id}")).text
    assert f'[Variant "{VARIANTS[variant][0]}"]' in pgn


async def test_crazyhouse_drops_are_moves_in_uci(duel: Duel) -> None:
    game_id = await duel.start_game(variant="crazyhouse")
    await duel.play(game_id, "e2e4 d7d5 e4d5 d8d5 b1c3 d5a5")
    illegal = await duel.bot.post(f"/api/bot/game/{game_id}/move/N@e4")  # no knight in hand
    assert illegal.status == 400 and "Cannot drop on e4" in illegal.text
    await duel.move(game_id, "P@e4")
    game = duel.sandbox.game(game_id)
    assert isinstance(game.board, chess.variant.CrazyhouseBoard)
    assert game.moves.endswith("P@e4") and str(game.board.pockets[True]) == ""


async def test_antichess_forces_captures_and_has_no_castling(duel: Duel) -> None:
    game_id = await duel.start_game(variant="antichess")
    await duel.play(game_id, "e2e4 d7d5")
    refused = await duel.bot.post(f"/api/bot/game/{game_id}/move/g1f3")  # exd5 is forced
    assert refused.status == 400
    await duel.move(game_id, "e4d5")
    assert duel.sandbox.game(game_id).board.castling_rights == 0


async def test_variant_games_are_rated_in_the_variants_perf(duel: Duel) -> None:
    reply = await duel.human.post("/api/challenge/bot1", data={
        "variant": "racingKings", "clock.limit": "180", "clock.increment": "2"})
    body = reply.json()
    assert (body["perf"]["name"], body["variant"]["short"]) == ("Racing Kings", "Racing")
    await duel.bot.post(f"/api/challenge/{body['id']}/accept")
    game = duel.sandbox.game(body["id"])
    assert game.perf == "racingKings"
    assert game.board.fen().startswith("8/8/8/8/8/8/krbnNBRK/qrbnNBRQ")
