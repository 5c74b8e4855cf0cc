"""Clocks: no running clock before both first moves, increments, flagging, correspondence,
unlimited games, and the first-move timers."""

from __future__ import annotations

import pytest

from sandbox.clock import UNLIMITED_MS
from sandbox.server import SandboxServer
from sandbox.timers import ManualClock
from tests.sandbox.conftest import FIRST_MOVE_S, Duel

# A 0+1 game starts with lila's minimum of 3 s: the shortest clock that can flag.
FLAG_LIMIT_S = 3
# The server's timers fire a millisecond after the deadline.
TIMER_SLACK_S = 0.01


async def test_clocks_do_not_run_before_both_first_moves(duel: Duel, clock: ManualClock) -> None:
    game_id = await duel.start_game(bot_color="white", limit_s=60, increment_s=2)
    async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as stream:
        await stream.next()
        clock.advance(0.25)
        await duel.move(game_id, "e2e4")
        after_white = await stream.next()
        clock.advance(0.25)
        await duel.move(game_id, "e7e5")
        after_black = await stream.next()
        # No time charged and no increment added for the first move of either side; white's
        # clock starts the moment black has moved.
        assert (after_white["wtime"], after_white["btime"]) == (60_000, 60_000)
        assert (after_black["wtime"], after_black["btime"]) == (60_000, 60_000)
        assert (after_black["winc"], after_black["binc"]) == (2_000, 2_000)
        clock.advance(0.25)
        await duel.move(game_id, "g1f3")
        after_clock_start = await stream.next()
    # White spent 0.25 s and got 2 s back; black's clock has only just started.
    assert (after_clock_start["wtime"], after_clock_start["btime"]) == (61_750, 60_000)


async def test_increments_are_added_after_each_move(duel: Duel, clock: ManualClock) -> None:
    game_id = await duel.start_game(bot_color="white", limit_s=60, increment_s=5)
    for white, black in (("e2e4", "e7e5"), ("g1f3", "b8c6"), ("f1c4", "g8f6")):
        await duel.play(game_id, white)
        clock.advance(0.5)
        await duel.play(game_id, black)
        clock.advance(0.5)
    game = duel.sandbox.game(game_id)
    # The first move of each side is free and earns nothing; the next two took 0.5 s each
    # and earned 5 s each; white's clock has run 0.5 s more since black's last move.
    assert game.remaining_ms(False) == 69_000
    assert game.remaining_ms(True) == 68_500


async def test_flagging_ends_the_game_and_a_lone_king_cannot_win(
        duel: Duel, clock: ManualClock) -> None:
    normal = await duel.start_game(bot_color="white", limit_s=0, increment_s=1)
    lone_king = await duel.start_game(bot_color="white", limit_s=0, increment_s=1,
                                      fen="4k3/8/8/8/8/8/4P3/4K3 w - - 0 1")
    async with duel.bot.stream(f"/api/bot/game/stream/{normal}") as stream:
        full = await stream.next()
        assert full["clock"] == {"initial": FLAG_LIMIT_S * 1000, "increment": 1000}
        assert full["speed"] == "bullet"
        await duel.play(normal, "e2e4 e7e5")
        await duel.play(lone_king, "e2e3 e8d8")
        await stream.until("gameState", moves="e2e4 e7e5")
        # White lets the clock run out; the server flags without any request.
        clock.advance(FLAG_LIMIT_S - 0.5)
        assert duel.sandbox.game_record(normal).status == "started"
        clock.advance(0.5 + TIMER_SLACK_S)
        final = await stream.until("gameState")
        assert (final["status"], final["winner"], final["wtime"]) == ("outoftime", "black", 0)
    record = duel.sandbox.game_record(lone_king)
    assert record.finished
    assert (record.status, record.winner) == ("outoftime", None)
    late = await duel.bot.post(f"/api/bot/game/{normal}/move/g1f3")
    assert late.json() == {"error": "Not your turn, or game already over"}


async def test_correspondence_and_unlimited_clocks(duel: Duel) -> None:
    corr = await duel.start_game(bot_color="white", limit_s=None, days=2)
    unlimited = await duel.start_game(bot_color="white", limit_s=None)
    async with duel.bot.stream(f"/api/bot/game/stream/{corr}") as stream:
        full = await stream.next()
    assert full["daysPerTurn"] == 2 and "clock" not in full
    assert full["speed"] == "correspondence"
    two_days_ms = 2 * 86_400_000
    assert two_days_ms - 2_000 < full["state"]["wtime"] <= two_days_ms
    assert full["state"]["btime"] == two_days_ms
    async with duel.bot.stream(f"/api/bot/game/stream/{unlimited}") as stream:
        state = (await stream.next())["state"]
    assert (state["wtime"], state["btime"], state["winc"]) == (UNLIMITED_MS, UNLIMITED_MS, 0)


async def test_challenge_games_never_expire_on_the_server(
        sandbox: SandboxServer, duel: Duel, clock: ManualClock) -> None:
    game_id = await duel.start_game(bot_color="white")
    lobby_game = await sandbox.pair("bot1", "human1", 180, 2, source="lobby")
    async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as stream:
        assert "expiration" not in (await stream.next())["state"]
    clock.advance(FIRST_MOVE_S * 10)
    assert duel.sandbox.game_record(lobby_game).status == "aborted"  # the timer did run
    assert duel.sandbox.game_record(game_id).status == "started"


@pytest.mark.parametrize(("source", "first_moves", "status", "winner"), [
    ("lobby", "", "aborted", None),
    ("lobby", "e2e4", "aborted", None),
    ("arena", "e2e4", "noStart", "white"),
])
async def test_first_move_timers_of_lobby_and_tournament_games(
        sandbox: SandboxServer, duel: Duel, clock: ManualClock, source: str, first_moves: str,
        status: str, winner: str | None) -> None:
    game_id = await sandbox.pair("bot1", "human1", 180, 2, source=source)
    async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as stream:
        expiration = (await stream.next())["state"]["expiration"]
        assert expiration["millisToMove"] == int(FIRST_MOVE_S * 1000)
        assert 0 <= expiration["idleMillis"] < expiration["millisToMove"]
        if first_moves:
            clock.advance(FIRST_MOVE_S / 2)
            await duel.play(game_id, first_moves)
            assert "expiration" in await stream.next()
        clock.advance(FIRST_MOVE_S - TIMER_SLACK_S)
        assert sandbox.game_record(game_id).status == "started"
        clock.advance(2 * TIMER_SLACK_S)
        final = await stream.until("gameState", status=status)
    assert final.get("winner") == winner


async def test_giving_time_to_the_opponent(duel: Duel) -> None:
    game_id = await duel.start_game(bot_color="white", limit_s=60, increment_s=0)
    async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as stream:
        await stream.next()
        assert (await duel.human.post(f"/api/round/{game_id}/add-time/15")).status == 200
        state = await stream.until("gameState")
    assert state["moves"] == ""
    assert (state["wtime"], state["btime"]) == (75_000, 60_000)
    assert duel.sandbox.game_record(game_id).chat[-1].text == "White + 15 seconds"
    for seconds in ("4", "61", "x"):
        refused = await duel.human.post(f"/api/round/{game_id}/add-time/{seconds}")
        assert refused.status == 400 and "seconds" in refused.json()
    corr = await duel.start_game(limit_s=None, days=1)
    assert (await duel.human.post(f"/api/round/{corr}/add-time/10")).status == 400
