"""The event stream: keep-alives, one stream per account, backlog on reconnect, its limit."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import aiohttp

from sandbox.ratelimit import RateLimits
from sandbox.server import SandboxServer
from tests.sandbox.conftest import KEEPALIVE_S, Duel
from tests.sandbox.spec import SpecClient

Client = Callable[[str | None], SpecClient]
# What lila puts in the `game` of gameStart (gameFinish adds winner and ratingDiff).
GAME_EVENT_FIELDS = {
    "fullId", "gameId", "fen", "color", "lastMove", "source", "status", "variant", "speed",
    "perf", "rated", "hasMoved", "opponent", "isMyTurn", "secondsLeft", "rating", "compat",
    "id",
}


async def test_keepalive_lines_arrive_on_an_idle_stream(duel: Duel) -> None:
    async with duel.bot.stream("/api/stream/event") as stream:
        assert stream.response is not None
        assert stream.response.content_type == "application/x-ndjson"
        lines = [await stream.raw_line(timeout_s=KEEPALIVE_S * 5) for _ in range(3)]
    assert lines == [b"\n"] * 3


async def test_a_new_stream_closes_the_previous_one(duel: Duel) -> None:
    async with duel.bot.stream("/api/stream/event") as first:
        await first.raw_line()
        async with duel.bot.stream("/api/stream/event") as second:
            # The old stream ends; the new one carries the events.
            while (await first.raw_line()) != b"":
                pass
            await duel.human.post("/api/challenge/bot1", data={"clock.limit": "60",
                                                               "clock.increment": "0"})
            event = await second.until("challenge")
            assert event["challenge"]["challenger"]["id"] == "human1"


async def test_reconnect_resends_ongoing_games_and_pending_challenges(duel: Duel) -> None:
    game_id = await duel.start_game()
    pending = (await duel.human.post("/api/challenge/bot1", data={
        "clock.limit": "300", "clock.increment": "3"})).json()["id"]
    for _ in range(2):  # every (re)connection sends the same backlog: clients de-duplicate
        async with duel.bot.stream("/api/stream/event") as stream:
            start = await stream.next()
            assert start["type"] == "gameStart"
            assert start["game"]["gameId"] == game_id
            assert start["game"]["isMyTurn"] is True
            assert start["game"]["compat"] == {"bot": True, "board": True}
            challenge = await stream.next()
            assert challenge["type"] == "challenge"
            assert challenge["challenge"]["id"] == pending
            assert "direction" not in challenge["challenge"]
            # lila EventStream.scala: the challenges sent first carry no `compat`.
            assert "compat" not in challenge


async def test_a_live_challenge_has_compat_for_its_recipient(duel: Duel) -> None:
    """lila EventStream.scala `challengeCompat`: `bot` only for a BOT listening."""
    async with duel.bot.stream("/api/stream/event") as bot_events, \
            duel.human.stream("/api/stream/event") as human_events:
        await duel.human.post("/api/challenge/bot1", data={
            "clock.limit": "300", "clock.increment": "0"})
        to_bot = await bot_events.until("challenge")
        echoed = await human_events.until("challenge")
    assert to_bot["compat"] == {"bot": True, "board": True}
    assert echoed["compat"] == {"bot": False, "board": True}


async def test_a_challenge_gone_offline_is_not_sent_again_on_reconnect(
        sandbox: SandboxServer, duel: Duel) -> None:
    """lila app/controllers/Api.scala `eventStream` sends `createdByDestId` only."""
    pending = (await duel.human.post("/api/challenge/bot1", data={
        "clock.limit": "300", "clock.increment": "3"})).json()["id"]
    sandbox.lobby.expire_challenge(pending)
    async with duel.bot.stream("/api/stream/event") as stream:
        sent = await duel.human.post("/api/challenge/bot1", data={
            "clock.limit": "60", "clock.increment": "0"})
        first = await stream.until("challenge")
    assert first["challenge"]["id"] == sent.json()["id"]


async def test_outgoing_challenges_are_echoed_on_the_challengers_stream(duel: Duel) -> None:
    async with duel.bot.stream("/api/stream/event") as stream:
        sent = (await duel.bot.post("/api/challenge/human1", data={
            "clock.limit": "180", "clock.increment": "0"})).json()
        echoed = await stream.until("challenge")
        assert echoed["challenge"]["id"] == sent["id"]
        assert echoed["challenge"]["challenger"]["id"] == "bot1"


async def test_game_start_and_finish_reach_both_players(duel: Duel) -> None:
    async with duel.bot.stream("/api/stream/event") as bot_events, \
            duel.human.stream("/api/stream/event") as human_events:
        game_id = await duel.start_game(bot_color="white")
        for stream, color in ((bot_events, "white"), (human_events, "black")):
            start = await stream.until("gameStart")
            assert set(start["game"]) == GAME_EVENT_FIELDS
            assert (start["game"]["gameId"], start["game"]["color"]) == (game_id, color)
            assert start["game"]["fullId"].startswith(game_id)
            assert len(start["game"]["fullId"]) == 12
            assert start["game"]["id"] == game_id
            assert (start["game"]["source"], start["game"]["perf"]) == ("friend", "blitz")
            assert start["game"]["secondsLeft"] == 180
        assert (await duel.bot.post(f"/api/bot/game/{game_id}/abort")).status == 200
        for stream in (bot_events, human_events):
            finish = await stream.until("gameFinish")
            assert finish["game"]["status"] == {"id": 25, "name": "aborted"}


async def test_opening_the_stream_too_often_is_limited(client: Client) -> None:
    server = SandboxServer(keepalive_s=KEEPALIVE_S,
                           limits=RateLimits(event_stream_opens=3, event_stream_window_s=60))
    await server.start()
    try:
        bot = SpecClient(server.url, server.add_account("poller", bot=True),
                         client(None).session)
        for _ in range(3):
            async with bot.stream("/api/stream/event") as stream:
                assert stream.status == 200
        async with bot.stream("/api/stream/event") as stream:
            assert stream.status == 429
            assert "intended to be streamed" in stream.error_body["error"]
            # lila Api.scala eventStream answers `rateLimited`: no `ratelimit` object.
            assert "ratelimit" not in stream.error_body
    finally:
        await server.stop()


async def test_streams_end_when_the_server_stops(sandbox: SandboxServer, duel: Duel) -> None:
    async with duel.bot.stream("/api/stream/event") as stream:
        await stream.raw_line()
        await sandbox.stop()
        with contextlib.suppress(aiohttp.ClientPayloadError):
            while await stream.raw_line() != b"":
                pass
