"""lila's botFarming: a rated game that repeats the first 20 plies and the winner of one of
the pair's last two games is left unrated (sandbox/farming.py)."""

from __future__ import annotations

import chess

from sandbox.server import SandboxServer
from sandbox.timers import ManualClock
from sandbox.tournaments import ArenaSpec
from tests.sandbox.conftest import FIRST_MOVE_S, Duel

# A Ruy Lopez of exactly 20 plies, then a 21st that the repeated games vary.
RUY_LOPEZ = ("e2e4 e7e5 g1f3 b8c6 f1b5 a7a6 b5a4 g8f6 e1g1 f8e7 f1e1 b7b5 a4b3 d7d6 c2c3 "
             "e8g8 h2h3 c6a5 b3c2 c7c5")
# The same line, but ply 19 is d2d4 instead of b3c2.
AT_PLY_19 = RUY_LOPEZ.replace("b3c2 c7c5", "d2d4 c7c5")
OTHER_LINE = "d2d4 d7d5 c2c4 e7e6"


async def play_game(duel: Duel, moves: str, winner: str | None, *, rated: bool = True,
                    white: str = "bot1", black: str = "human1") -> str:
    """A game `white` - `black` on `moves`, ended by the server with
    `winner` ("white", "black" or None for a draw); the game id."""
    game_id = await duel.sandbox.pair(white, black, 180, 2, rated=rated)
    game = duel.sandbox.game(game_id)
    for uci in moves.split():
        game.move(game.players[game.turn], uci)
    duel.sandbox.end_game(game_id, "resign" if winner else "draw", winner)
    return game_id


def ratings(sandbox: SandboxServer) -> tuple[int, int]:
    return sandbox.account("bot1").rating("blitz"), sandbox.account("human1").rating("blitz")


async def test_a_repeated_opening_and_winner_is_left_unrated_everywhere(duel: Duel) -> None:
    sandbox = duel.sandbox
    first = await play_game(duel, RUY_LOPEZ + " d2d4", "white")
    assert sandbox.game(first).rating_diffs
    before = ratings(sandbox)
    async with duel.bot.stream("/api/stream/event") as events:
        # Plies after the 20th differ: lila compares the first 20 only.
        second = await play_game(duel, RUY_LOPEZ + " a2a4", "white")
        finish = (await events.until("gameFinish"))["game"]
    assert finish["gameId"] == second
    assert sandbox.game(second).rating_diffs == {}
    assert ratings(sandbox) == before
    assert sandbox.lobby.unrated_games == [second]
    # lila game JsonView `ownerPreview` and GameApiV2 `toJson` add ratingDiff only if set.
    assert finish["rated"] is True and "ratingDiff" not in finish
    assert "ratingDiff" not in finish["opponent"]
    body = (await duel.bot.get(f"/game/export/{second}",
                               headers={"Accept": "application/json"})).json()
    assert all("ratingDiff" not in body["players"][c] for c in ("white", "black"))
    assert "WhiteRatingDiff" not in sandbox.game_record(second).pgn
    assert "1 left unrated" in sandbox.summary()


async def test_a_game_that_differs_at_ply_19_is_rated(duel: Duel) -> None:
    await play_game(duel, RUY_LOPEZ, "white")
    varied = await play_game(duel, AT_PLY_19, "white")
    assert duel.sandbox.game(varied).rating_diffs
    assert duel.sandbox.lobby.unrated_games == []


async def test_another_winner_is_rated_and_a_repeated_draw_is_not(duel: Duel) -> None:
    await play_game(duel, RUY_LOPEZ, "white")
    lost = await play_game(duel, RUY_LOPEZ, "black")
    assert duel.sandbox.game(lost).rating_diffs
    await play_game(duel, OTHER_LINE, None)
    drawn = await play_game(duel, OTHER_LINE, None)
    assert duel.sandbox.lobby.unrated_games == [drawn]


async def test_the_same_winner_with_swapped_colours_is_the_same_winner(duel: Duel) -> None:
    """lila compares `winnerUserId`, not the colour."""
    await play_game(duel, OTHER_LINE, "white")  # bot1 wins with white
    swapped = await play_game(duel, OTHER_LINE, "black", white="human1", black="bot1")
    assert duel.sandbox.lobby.unrated_games == [swapped]


async def test_only_the_last_two_games_count_casual_ones_too(duel: Duel) -> None:
    await play_game(duel, RUY_LOPEZ, "white")
    await play_game(duel, OTHER_LINE, "white", rated=False)
    await play_game(duel, AT_PLY_19, "white", rated=False)
    # The first game is now third from last: the same line is rated again.
    again = await play_game(duel, RUY_LOPEZ, "white")
    assert duel.sandbox.game(again).rating_diffs
    # A casual game is never left unrated, but it is in the crosstable: a rated game
    # that repeats it is unrated.
    casual = await play_game(duel, OTHER_LINE, "black", rated=False)
    assert casual not in duel.sandbox.lobby.unrated_games
    repeat = await play_game(duel, OTHER_LINE, "black")
    assert duel.sandbox.lobby.unrated_games == [repeat]


async def test_games_between_people_are_never_farming(sandbox: SandboxServer,
                                                      duel: Duel) -> None:
    sandbox.add_account("human2", bot=False)
    game_ids = [await play_game(duel, OTHER_LINE, "white", white="human1", black="human2")
                for _ in range(2)]
    assert all(sandbox.game(g).rating_diffs for g in game_ids)
    assert sandbox.lobby.unrated_games == []


async def test_a_rated_game_under_two_plies_is_not_rated(duel: Duel) -> None:
    """lila PerfsUpdater.save: `playedPlies >= 2 || isTournament`."""
    game_id = await play_game(duel, "e2e4", "black")
    assert duel.sandbox.game(game_id).rating_diffs == {}
    assert ratings(duel.sandbox) == (1500, 1500)
    assert duel.sandbox.game(game_id).board.turn == chess.BLACK


async def test_a_rated_arena_game_lost_by_no_start_is_rated(sandbox: SandboxServer,
                                                             clock: ManualClock) -> None:
    """lila Finisher.noStart: a mandatory game ends NoStart with a winner, and
    PerfsUpdater.save rates a tournament game whatever its plies."""
    for name in ("bot1", "bot2"):
        sandbox.add_account(name, bot=True)
    arena_id = sandbox.create_arena(ArenaSpec(starts_in_s=0, rated=True))
    for name in ("bot1", "bot2"):
        sandbox.arenas.join(sandbox.account(name), arena_id)
        sandbox.lobby.hub.open_event_stream(name)
    clock.advance(0)
    game = sandbox.game(sandbox.arena(arena_id).games[0])
    clock.advance(FIRST_MOVE_S + 0.1)  # white never moves
    assert (game.status, game.winner) == ("noStart", chess.BLACK)
    assert game.rating_diffs[chess.BLACK] > 0
    assert game.players[chess.WHITE].losses == 1
