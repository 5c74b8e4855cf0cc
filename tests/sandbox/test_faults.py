"""Fault injection: 5xx, slow replies, 429 (JSON or HTML), dropped and silent streams."""

from __future__ import annotations

import time

import aiohttp
import pytest

from sandbox.faults import RequestFault, StreamFault, parse_fault
from sandbox.ratelimit import RateLimits
from sandbox.server import SandboxServer
from tests.sandbox.conftest import KEEPALIVE_S, Duel
from tests.sandbox.spec import SpecClient

MOVE_PATH = "/api/bot/game/*/move/*"


async def test_5xx_on_a_chosen_endpoint_for_a_number_of_requests(
        sandbox: SandboxServer, duel: Duel) -> None:
    sandbox.fail(503, "/api/account", count=2)
    statuses = [(await duel.bot.get("/api/account")).status for _ in range(3)]
    assert statuses == [503, 503, 200]
    assert (await duel.bot.get("/api/account/playing")).status == 200


async def test_5xx_on_stream_opens_until_cleared(sandbox: SandboxServer, duel: Duel) -> None:
    sandbox.fail(502, "/api/stream/event", count=None)
    for _ in range(3):
        async with duel.bot.stream("/api/stream/event") as stream:
            assert stream.status == 502
    sandbox.clear_faults()
    async with duel.bot.stream("/api/stream/event") as stream:
        assert stream.status == 200


async def test_faults_can_target_one_user_and_one_method(
        sandbox: SandboxServer, duel: Duel) -> None:
    sandbox.fail(500, "/api/challenge/*", method="POST", username="human1", count=None)
    assert (await duel.bot.post("/api/challenge/human1", data={"days": "1"})).status == 200
    assert (await duel.human.post("/api/challenge/bot1", data={"days": "1"})).status == 500
    assert (await duel.human.get("/api/challenge")).status == 200


async def test_delayed_replies(sandbox: SandboxServer, duel: Duel) -> None:
    sandbox.delay(0.3, "/api/account", count=1)
    started = time.monotonic()
    assert (await duel.bot.get("/api/account")).status == 200
    assert time.monotonic() - started >= 0.3


@pytest.mark.parametrize("html", [False, True])
async def test_429_on_the_move_endpoint(sandbox: SandboxServer, duel: Duel, html: bool) -> None:
    game_id = await duel.start_game(bot_color="white")
    sandbox.rate_limit(MOVE_PATH, html=html, count=1)
    limited = await duel.bot.post(f"/api/bot/game/{game_id}/move/e2e4")
    assert limited.status == 429
    if html:
        assert limited.content_type == "text/html"
        assert "Too Many Requests" in limited.text
    else:
        assert limited.json() == {"error": "Too many requests. Try again later."}
    assert sandbox.game_record(game_id).moves == ()
    await duel.move(game_id, "e2e4")


async def test_real_limits_can_answer_in_html(duel: Duel) -> None:
    server = SandboxServer(keepalive_s=KEEPALIVE_S,
                           limits=RateLimits(account_reads=1, html_bodies=True))
    await server.start()
    try:
        me = SpecClient(server.url, server.add_account("htmlbot", bot=True), duel.bot.session)
        assert (await me.get("/api/account")).status == 200
        limited = await me.get("/api/account")
        assert (limited.status, limited.content_type) == (429, "text/html")
    finally:
        await server.stop()


async def test_every_request_of_a_token_counts_against_one_limit(duel: Duel) -> None:
    """No per-move limit in lila (app/controllers/PlayApi.scala); one overall limit per
    token, answered with a bare 429 (no `ratelimit` object)."""
    server = SandboxServer(keepalive_s=KEEPALIVE_S, limits=RateLimits(requests_per_minute=6))
    await server.start()
    try:
        session = duel.bot.session
        limited = Duel(server,
                       SpecClient(server.url, server.add_account("bot1", bot=True), session),
                       SpecClient(server.url, server.add_account("human1", bot=False), session))
        game_id = await limited.start_game(bot_color="white")
        spent = server.lobby.limiters.requests.count("bot1")
        for _ in range(6 - spent - 1):
            assert (await limited.bot.get("/api/account/playing")).status == 200
        await limited.play(game_id, "e2e4 e7e5")  # the human's requests are the human's
        refused = await limited.bot.post(f"/api/bot/game/{game_id}/move/g1f3")
        assert refused.status == 429
        assert "ratelimit" not in refused.json()
        assert server.game_record(game_id).moves[-1] == "e7e5"
    finally:
        await server.stop()


async def test_a_dropped_event_stream_is_cut_and_the_reconnect_resends(
        sandbox: SandboxServer, duel: Duel) -> None:
    game_id = await duel.start_game()
    async with duel.bot.stream("/api/stream/event") as stream:
        await stream.until("gameStart")
        assert sandbox.drop_streams("event", "bot1") == 1
        with pytest.raises((aiohttp.ClientPayloadError, EOFError)):
            await stream.next()
    async with duel.bot.stream("/api/stream/event") as stream:
        assert (await stream.until("gameStart"))["game"]["gameId"] == game_id


async def test_a_dropped_game_stream_reopens_with_the_full_game(
        sandbox: SandboxServer, duel: Duel) -> None:
    game_id = await duel.start_game(bot_color="white")
    path = f"/api/bot/game/stream/{game_id}"
    async with duel.bot.stream(path) as stream:
        await stream.next()
        assert sandbox.drop_streams("game") == 1
        with pytest.raises((aiohttp.ClientPayloadError, EOFError)):
            await stream.next()
    await duel.play(game_id, "e2e4 e7e5")
    async with duel.bot.stream(path) as stream:
        assert (await stream.next())["state"]["moves"] == "e2e4 e7e5"


async def test_a_silent_stream_sends_nothing_at_all(sandbox: SandboxServer, duel: Duel) -> None:
    async with duel.bot.stream("/api/stream/event") as stream:
        assert await stream.raw_line() == b"\n"
        assert sandbox.silence_streams("event") == 1
        await duel.human.post("/api/challenge/bot1", data={"days": "1"})
        with pytest.raises(TimeoutError):
            await stream.raw_line(timeout_s=KEEPALIVE_S * 4)
    async with duel.bot.stream("/api/stream/event") as stream:
        assert (await stream.next())["type"] == "challenge"


async def test_a_stream_can_lose_only_its_keepalives(sandbox: SandboxServer, duel: Duel) -> None:
    async with duel.bot.stream("/api/stream/event") as stream:
        sandbox.silence_streams("event", keep_events=True)
        await duel.human.post("/api/challenge/bot1", data={"days": "1"})
        assert (await stream.next())["type"] == "challenge"
        with pytest.raises(TimeoutError):
            await stream.raw_line(timeout_s=KEEPALIVE_S * 4)


@pytest.mark.parametrize(("spec", "expected"), [
    ("status=503,path=/api/stream/event,count=2",
     RequestFault("status", "/api/stream/event", count=2, status=503)),
    ("delay=1.5,path=/api/bot/*", RequestFault("delay", "/api/bot/*", delay_s=1.5)),
    ("ratelimit=html,path=/api/bot/game/*/move/*,count=1,user=kibitz",
     RequestFault("ratelimit", MOVE_PATH, username="kibitz", count=1, html=True)),
    ("drop=event,every=30", StreamFault("drop", "event", 30.0)),
    ("silent=all,every=2.5", StreamFault("silent", "all", 2.5)),
])
def test_command_line_faults_parse(spec: str, expected: object) -> None:
    assert parse_fault(spec) == expected


@pytest.mark.parametrize(("spec", "message"), [
    ("status", "key=value"),
    ("path=/x", "exactly one of"),
    ("status=503,delay=1", "exactly one of"),
    ("status=200", "HTTP error code"),
    ("status=abc", "invalid literal"),
    ("delay=-1", "must not be negative"),
    ("ratelimit=xml", "json or html"),
    ("drop=chat", "must be one of"),
    ("silent=game,every=0", "positive"),
    ("drop=event,path=/x", "unknown keys"),
])
def test_bad_command_line_faults_name_the_problem(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_fault(spec)


async def test_periodic_stream_faults_from_the_command_line(duel: Duel) -> None:
    server = SandboxServer(keepalive_s=KEEPALIVE_S)
    await server.start()
    try:
        me = SpecClient(server.url, server.add_account("victim", bot=True), duel.bot.session)
        server.add_fault(parse_fault("drop=event,every=0.3"))
        async with me.stream("/api/stream/event") as stream:
            with pytest.raises((aiohttp.ClientPayloadError, EOFError)):
                while True:
                    if await stream.raw_line() == b"":
                        raise EOFError
    finally:
        await server.stop()
