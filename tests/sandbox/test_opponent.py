"""The sandbox-side opponent: random or UCI-engine moves, accepting and sending challenges."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import chess.variant
import pytest

from sandbox.errors import ApiError
from sandbox.opponent import ChallengeSpec, Opponent, OpponentSettings
from sandbox.server import SandboxServer
from tests.sandbox.conftest import Duel, eventually
from tests.sandbox.spec import GUARD_S, Stream

# The built-in engine, so the test runs the same on every machine (no Stockfish needed).
BUILTIN_ENGINE = [sys.executable, "-m", "engine"]


async def challenge_sparring(sandbox: SandboxServer, duel: Duel) -> str:
    """bot1 challenges the opponent "sparring" as white; the game id once it has started."""
    reply = await duel.bot.post("/api/challenge/sparring", data={
        "clock.limit": "300", "clock.increment": "0", "color": "white"})
    await sandbox.wait_for_game("sparring")
    return str(reply.json()["id"])


async def move_and_await_reply(duel: Duel, stream: Stream, game_id: str,
                               uci: str) -> dict[str, Any]:
    """bot1 moves; the gameState once the opponent has answered."""
    plies = len(duel.sandbox.game_record(game_id).moves) + 2
    await duel.bot.post(f"/api/bot/game/{game_id}/move/{uci}")
    state = await stream.until("gameState")
    while len(state["moves"].split()) < plies:
        state = await stream.until("gameState")
    return state


async def test_an_engine_opponent_beats_a_random_one(sandbox: SandboxServer) -> None:
    engine = await sandbox.start_opponent("fish", engine=BUILTIN_ENGINE, movetime_s=0.01)
    random_bot = await sandbox.start_opponent(
        "randombot", bot=True, seed=3,
        challenge=ChallengeSpec("fish", 600, 5, color="black", repeat=False))
    game_id = await sandbox.wait_for_game("fish")
    record = await sandbox.wait_for_game_end(game_id, timeout_s=GUARD_S)
    assert (record.white, record.black) == ("fish", "randombot")
    assert (record.status, record.winner) == ("mate", "white")
    for player in (engine, random_bot):  # both hear of the end on their event streams
        await asyncio.wait_for(player.finished(game_id).wait(), GUARD_S)
    assert engine.games_finished == random_bot.games_finished == [game_id]


async def test_the_opponent_challenges_again_after_each_game(
        sandbox: SandboxServer, duel: Duel) -> None:
    opponent = await sandbox.start_opponent(
        "sparring", challenge=ChallengeSpec("bot1", 60, 0, color="white", retry_s=0.1))
    async with duel.bot.stream("/api/stream/event") as events:
        first = (await events.until("challenge"))["challenge"]
        await duel.bot.post(f"/api/challenge/{first['id']}/decline", data={"reason": "later"})
        second = (await events.until("challenge"))["challenge"]
        assert second["id"] != first["id"]
        assert second["timeControl"]["show"] == "1+0"
        await duel.bot.post(f"/api/challenge/{second['id']}/accept")
        start = await events.until("gameStart")
        game_id = start["game"]["gameId"]
        await duel.bot.post(f"/api/bot/game/{game_id}/resign")  # aborts: nobody moved
        third = (await events.until("challenge"))["challenge"]
    assert third["id"] not in (first["id"], second["id"])
    assert opponent.challenges_sent[:3] == [first["id"], second["id"], third["id"]]


async def test_the_opponent_accepts_challenges_and_answers_offers(
        sandbox: SandboxServer, duel: Duel) -> None:
    await sandbox.start_opponent("sparring", seed=5)
    game_id = await challenge_sparring(sandbox, duel)
    async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as stream:
        await stream.next()
        await move_and_await_reply(duel, stream, game_id, "e2e4")
        # No takeback proposal here: lila allows none in a game with a BOT (test_games.py).
        # A draw offered with a move: declined, and the opponent keeps playing.
        await duel.bot.post(f"/api/bot/game/{game_id}/move/d2d4?offeringDraw=true")
        async with asyncio.timeout(GUARD_S):
            while True:
                state = await stream.until("gameState")
                game = sandbox.game(game_id)
                if len(state["moves"].split()) == 4 and not game.draw_offers:
                    break
    texts = [line.text for line in sandbox.game_record(game_id).chat]
    assert texts == ["White offers draw", "Draw offer declined"]


async def test_server_side_challenges_reach_the_event_stream(
        sandbox: SandboxServer, duel: Duel) -> None:
    async with duel.bot.stream("/api/stream/event") as events:
        challenge_id = await sandbox.challenge("human1", "bot1", 120, 1, color="black",
                                               rated=True)
        event = await events.until("challenge")
    assert event["challenge"]["id"] == challenge_id
    assert (event["challenge"]["finalColor"], event["challenge"]["rated"]) == ("black", True)
    with pytest.raises(ApiError, match=r"clock\.limit"):
        await sandbox.challenge("human1", "bot1", 70, 0)


async def test_the_opponent_retries_a_move_refused_by_a_fault(
        sandbox: SandboxServer, duel: Duel) -> None:
    await sandbox.start_opponent("sparring", seed=9)
    sandbox.rate_limit("/api/board/game/*/move/*", username="sparring", count=1)
    sandbox.fail(503, "/api/board/game/*/move/*", username="sparring", count=1)
    game_id = await challenge_sparring(sandbox, duel)
    async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as stream:
        await stream.next()
        await move_and_await_reply(duel, stream, game_id, "e2e4")
    assert [f.fired for f in sandbox.faults.request_faults] == [1, 1]


async def test_an_engine_that_cannot_start_is_named(sandbox: SandboxServer) -> None:
    with pytest.raises(ValueError, match="cannot start the UCI engine"):
        await sandbox.start_opponent("broken", engine=["/nonexistent/engine"])


async def test_the_opponent_reopens_a_game_stream_that_ends_early(
        sandbox: SandboxServer, duel: Duel) -> None:
    await sandbox.start_opponent("sparring", seed=4)
    game_id = await challenge_sparring(sandbox, duel)
    async with duel.bot.stream(f"/api/bot/game/stream/{game_id}") as stream:
        await stream.next()
        await eventually(lambda: sandbox.lobby.hub.watching(game_id, "sparring"))
        # Cleanly end the opponent's stream (as a replaced stream ends), then move.
        opened = sandbox.lobby.hub.select("game", "sparring")
        assert len(opened) == 1
        opened[0].close()
        await move_and_await_reply(duel, stream, game_id, "e2e4")


async def test_the_opponent_stops_challenging_after_its_games(
        sandbox: SandboxServer, duel: Duel, monkeypatch: pytest.MonkeyPatch) -> None:
    """With `games`, the opponent re-challenges until that many games have started (so a
    benchmark plays exactly what it is asked)."""
    opponent = await sandbox.start_opponent(
        "sparring", challenge=ChallengeSpec("bot1", 60, 0, color="white", retry_s=0.1, games=2))
    scheduled: list[float] = []
    schedule = opponent._schedule_challenge

    def spy(delay_s: float) -> None:
        scheduled.append(delay_s)
        schedule(delay_s)

    monkeypatch.setattr(opponent, "_schedule_challenge", spy)
    after_games: list[int] = []
    async with duel.bot.stream("/api/stream/event") as events:
        for _ in range(2):
            offer = (await events.until("challenge"))["challenge"]
            await duel.bot.post(f"/api/challenge/{offer['id']}/accept")
            game_id = (await events.until("gameStart"))["game"]["gameId"]
            await duel.bot.post(f"/api/bot/game/{game_id}/resign")  # aborts: nobody moved
            # The decision is taken as the gameFinish is handled, with finished() set.
            await asyncio.wait_for(opponent.finished(game_id).wait(), GUARD_S)
            after_games.append(len(scheduled))
    assert scheduled[after_games[0] - 1] == 0.1 / 4  # the first game's end: challenge again
    assert after_games[1] == after_games[0]  # the second's: no more
    assert len(opponent.games_started) == 2


async def test_a_drops_first_opponent_drops_what_it_holds() -> None:
    # White holds a pawn from 1. e4 d5 2. exd5: a drop at once, whatever the seed; black holds
    # nothing and moves as it otherwise would.
    holding = chess.variant.CrazyhouseBoard(
        "rnbqkbnr/ppp1pppp/8/3P4/8/8/PPPP1PPP/RNBQKBNR[P] w KQkq - 0 3")
    empty_handed = chess.variant.CrazyhouseBoard(
        "rnbqkbnr/ppp1pppp/8/3P4/8/8/PPPP1PPP/RNBQKBNR[P] b KQkq - 0 2")
    for seed in range(20):
        player = Opponent("http://127.0.0.1:9", "token", "sparring", False,
                          OpponentSettings(seed=seed, drops_first=True))
        assert "@" in await player._choose(holding, {})
        assert "@" not in await player._choose(empty_handed, {})
    plain = [await Opponent("http://127.0.0.1:9", "token", "sparring", False,
                            OpponentSettings(seed=seed))._choose(holding, {})
             for seed in range(20)]
    assert not all("@" in uci for uci in plain)  # a random mover alone need not drop
