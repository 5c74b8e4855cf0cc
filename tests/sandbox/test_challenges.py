"""Challenges: the create form, accept, decline reasons, cancel, expiry and the limits."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import chess
import pytest

from sandbox.ratelimit import RateLimits
from sandbox.server import SandboxServer
from sandbox.timers import ManualClock
from tests.sandbox.conftest import CHALLENGE_EXPIRY_S, KEEPALIVE_S, Duel, eventually
from tests.sandbox.spec import SpecClient, validate_schema

Client = Callable[[str | None], SpecClient]
BLITZ = {"clock.limit": "180", "clock.increment": "2"}


async def test_create_returns_the_challenge_with_every_field(duel: Duel) -> None:
    reply = await duel.human.post("/api/challenge/bot1", data={
        **BLITZ, "rated": "true", "color": "white"})
    body = reply.json()
    assert reply.status == 200
    assert body["direction"] == "out"
    assert (body["status"], body["rated"], body["speed"]) == ("created", True, "blitz")
    assert body["timeControl"] == {"type": "clock", "limit": 180, "increment": 2,
                                   "show": "3+2"}
    assert (body["color"], body["finalColor"]) == ("white", "white")
    assert body["destUser"]["title"] == "BOT"
    assert body["url"].endswith("/" + body["id"])
    duel.sandbox.account("bot1").scopes |= {"challenge:read"}  # lila apiShow, apiList
    shown = (await duel.bot.get(f"/api/challenge/{body['id']}/show")).json()
    assert shown["direction"] == "in"
    listed = (await duel.bot.get("/api/challenge")).json()
    assert [c["id"] for c in listed["in"]] == [body["id"]]
    assert listed["out"] == []


async def test_berserk_style_json_bodies_are_accepted(duel: Duel) -> None:
    reply = await duel.human.post("/api/challenge/bot1", json_body={
        "rated": False, "clock.limit": 300, "clock.increment": 0, "days": None,
        "color": "black", "variant": "standard", "fen": None})
    assert reply.status == 200, reply.text
    assert reply.json()["timeControl"]["show"] == "5+0"


@pytest.mark.parametrize(("form", "field_or_text"), [
    ({"clock.limit": "70", "clock.increment": "0"}, "clock.limit"),
    ({"clock.limit": "180", "clock.increment": "61"}, "clock.increment"),
    ({"clock.limit": "0", "clock.increment": "0"}, "Invalid clock"),
    ({"days": "4"}, "days"),
    ({**BLITZ, "color": "purple"}, "color"),
    ({**BLITZ, "variant": "nonsense"}, "variant"),
    ({**BLITZ, "fen": "not a fen"}, "fen"),
    ({**BLITZ, "fen": "8/8/8/8/8/8/8/8 w - - 0 1"}, "fen"),
    ({**BLITZ, "rated": "true", "fen": "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"}, "can't be rated"),
    ({"rated": "true"}, "can't be rated"),
    ({**BLITZ, "rated": "maybe"}, "rated"),
    ({**BLITZ, "rules": "noAbort"}, "Rules not applicable for bots"),
    ({"clock.limit": "15", "clock.increment": "0"}, "UltraBullet"),
])
async def test_bad_forms_are_refused_with_a_400_naming_the_problem(
        duel: Duel, form: dict[str, str], field_or_text: str) -> None:
    reply = await duel.human.post("/api/challenge/bot1", data=form)
    assert reply.status == 400
    body = reply.json()
    assert field_or_text in body or field_or_text in body["error"], body


async def test_unknown_users_and_self_challenges_are_refused(duel: Duel) -> None:
    unknown = await duel.human.post("/api/challenge/nobody", data=BLITZ)
    assert unknown.json() == {"error": "No such user: nobody"}
    itself = await duel.human.post("/api/challenge/human1", data=BLITZ)
    assert itself.json() == {"error": "You cannot challenge yourself."}


async def test_a_standard_challenge_with_a_fen_becomes_from_position(duel: Duel) -> None:
    fen = "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1"
    body = (await duel.human.post("/api/challenge/bot1", data={**BLITZ, "fen": fen})).json()
    assert body["variant"]["key"] == "fromPosition"
    assert body["initialFen"] == fen
    await duel.bot.post(f"/api/challenge/{body['id']}/accept")
    async with duel.bot.stream(f"/api/bot/game/stream/{body['id']}") as stream:
        full = await stream.next()
    assert (full["initialFen"], full["variant"]["key"]) == (fen, "fromPosition")


async def test_chess960_challenges_get_a_random_start_position(duel: Duel) -> None:
    body = (await duel.human.post("/api/challenge/bot1", data={
        **BLITZ, "variant": "chess960"})).json()
    assert body["perf"]["name"] == "Chess960"
    board = chess.Board(body["initialFen"], chess960=True)
    assert board.chess960_pos() is not None


async def test_accept_starts_a_game_with_the_challenge_id(duel: Duel) -> None:
    async with duel.bot.stream("/api/stream/event") as events:
        challenge = (await duel.human.post("/api/challenge/bot1", data=BLITZ)).json()
        assert (await events.until("challenge"))["challenge"]["id"] == challenge["id"]
        assert (await duel.bot.post(f"/api/challenge/{challenge['id']}/accept")).json() == {
            "ok": True}
        start = await events.until("gameStart")
        assert start["game"]["gameId"] == challenge["id"]
        assert start["game"]["color"] != challenge["finalColor"]
    again = await duel.bot.post(f"/api/challenge/{challenge['id']}/accept")
    assert again.status == 400
    other = await duel.human.post("/api/challenge/zzzzzzzz/accept")
    assert other.status == 404


@pytest.mark.parametrize(("sent", "key"), [
    ("tooFast", "toofast"), ("TOOSLOW", "tooslow"), ("noBot", "nobot"),
    ("whatever", "generic"), (None, "generic"),
])
async def test_decline_reasons_are_matched_case_insensitively(
        duel: Duel, sent: str | None, key: str) -> None:
    async with duel.human.stream("/api/stream/event") as events:
        challenge = (await duel.human.post("/api/challenge/bot1", data=BLITZ)).json()
        form = {} if sent is None else {"reason": sent}
        assert (await duel.bot.post(f"/api/challenge/{challenge['id']}/decline",
                                    data=form)).status == 200
        declined = await events.until("challengeDeclined")
    validate_schema(declined, "ChallengeDeclinedEvent")
    assert declined["challenge"]["declineReasonKey"] == key
    assert declined["challenge"]["status"] == "declined"
    assert declined["challenge"]["declineReason"].endswith(".")


async def test_cancel_withdraws_a_challenge_and_aborts_an_unstarted_game(duel: Duel) -> None:
    async with duel.bot.stream("/api/stream/event") as events:
        challenge = (await duel.human.post("/api/challenge/bot1", data=BLITZ)).json()
        assert (await duel.human.post(f"/api/challenge/{challenge['id']}/cancel")).status == 200
        canceled = await events.until("challengeCanceled")
        assert canceled["challenge"]["id"] == challenge["id"]
        assert (await duel.human.post(f"/api/challenge/{challenge['id']}/cancel")).status == 400
    game_id = await duel.start_game()
    assert (await duel.human.post(f"/api/challenge/{game_id}/cancel")).status == 200
    assert duel.sandbox.game_record(game_id).status == "aborted"
    game_id = await duel.start_game()
    await duel.play(game_id, "e2e4 e7e5")
    refused = await duel.human.post(f"/api/challenge/{game_id}/cancel")
    assert refused.json()["error"] == "The game can no longer be aborted"


async def test_realtime_challenges_go_offline_silently_unless_kept_alive(
        client: Client) -> None:
    """lila ChallengeApi.scala `sweep`: a real-time challenge unseen for 20 s goes
    "offline" with no event, and can still be accepted (`active`)."""
    server = SandboxServer(keepalive_s=KEEPALIVE_S, challenge_expiry_s=0.3)
    await server.start()
    try:
        session = client(None).session
        bot = SpecClient(server.url, server.add_account(
            "bot1", bot=True, scopes=["bot:play", "challenge:read"]), session)
        human = SpecClient(server.url, server.add_account("human1", bot=False), session)
        async with bot.stream("/api/stream/event") as events:
            challenge = (await human.post("/api/challenge/bot1", data=BLITZ)).json()
            await events.until("challenge")
            stale = server.lobby.challenges[challenge["id"]]
            await eventually(lambda: stale.status == "offline")
            again = (await human.post("/api/challenge/bot1", data=BLITZ)).json()
            following = await events.next()  # no challengeCanceled came before it
            assert (following["type"], following["challenge"]["id"]) == (
                "challenge", again["id"])
            shown = (await bot.get(f"/api/challenge/{challenge['id']}/show")).json()
            assert shown["status"] == "offline"
            assert (await bot.post(f"/api/challenge/{challenge['id']}/accept")).status == 200
            assert server.game(challenge["id"]).playing
            await bot.post(f"/api/challenge/{again['id']}/decline")
            corr = (await human.post("/api/challenge/bot1", data={"days": "3"})).json()
            assert corr["speed"] == "correspondence"
            async with human.stream("/api/challenge/bot1", method="POST", data={
                    **BLITZ, "keepAliveStream": "true"}) as kept:
                first = await kept.next()
                assert first["status"] == "created"
                assert await kept.raw_line() == b"\n"  # keep-alives, no expiry
                assert await kept.raw_line() == b"\n"
                await bot.post(f"/api/challenge/{first['id']}/decline")
                assert await kept.next() == {"done": "declined"}
                with pytest.raises(EOFError):
                    await kept.next()
            assert server.lobby.challenges[corr["id"]].pending
    finally:
        await server.stop()


async def test_challenge_credits_and_the_bot_game_cap(client: Client) -> None:
    limits = RateLimits(challenge_credits_per_minute=6, bot_games_per_day=1)
    server = SandboxServer(keepalive_s=KEEPALIVE_S, limits=limits)
    await server.start()
    try:
        session = client(None).session
        bot_a = SpecClient(server.url, server.add_account("bot_a", bot=True), session)
        bot_b = SpecClient(server.url, server.add_account("bot_b", bot=True), session)
        bot_c = SpecClient(server.url, server.add_account("bot_c", bot=True), session)
        server.add_account("human", bot=False)
        # A human costs 5 credits, a bot 1: 5 + 1 fit in 6, the next does not.
        assert (await bot_c.post("/api/challenge/human", data=BLITZ)).status == 200
        assert (await bot_c.post("/api/challenge/bot_a", data=BLITZ)).status == 200
        limited = await bot_c.post("/api/challenge/bot_a", data=BLITZ)
        assert limited.status == 429
        # lila Challenge.scala apiCreate: `rateLimited`, no `ratelimit` object.
        assert limited.json() == {"error": "Too many requests. Try again later."}
        # One bot-vs-bot game a day: bot_a's own cap is a 429, its opponent's a 400, on
        # creating and on accepting alike (lila modules/bot/src/main/BotLimit.scala,
        # app/controllers/Challenge.scala `eitherBotLimitResponse`).
        to_c = (await bot_b.post("/api/challenge/bot_c", data={"days": "1"})).json()
        first = (await bot_a.post("/api/challenge/bot_b", data=BLITZ)).json()
        assert (await bot_b.post(f"/api/challenge/{first['id']}/accept")).status == 200
        own = await bot_a.post("/api/challenge/bot_c", data=BLITZ)
        assert own.status == 429
        assert own.json()["ratelimit"]["key"] == "bot.vsBot.day"
        assert "against other bots today" in own.json()["error"]
        theirs = await bot_c.post("/api/challenge/bot_a", data={"days": "1"})
        assert theirs.status == 400
        assert theirs.json()["error"].startswith("bot_a played 1 games")
        pending = server.lobby.challenges
        to_a = next(c for c in pending.values() if c.dest.id == "bot_a" and c.pending)
        refused = await bot_a.post(f"/api/challenge/{to_a.id}/accept")
        assert refused.status == 429  # our own cap
        assert refused.json()["ratelimit"]["key"] == "bot.vsBot.day"
        assert 0 < refused.json()["ratelimit"]["seconds"] <= 86400
        theirs_now = await bot_c.post(f"/api/challenge/{to_c['id']}/accept")
        assert theirs_now.status == 400  # bot_b's cap, reached after it challenged
        reply = theirs_now.json()
        assert reply["error"].startswith("bot_b played 1 games against other bots today, "
                                         "please wait until ")
        assert reply["ratelimit"]["key"] == "bot.vsBot.day"  # the opponent's, with a 400
    finally:
        await server.stop()


async def test_closing_a_keep_alive_stream_lets_its_challenge_go_offline(
        duel: Duel, clock: ManualClock) -> None:
    """lila ChallengeKeepAliveStream.scala: closing the stream only stops its pings; the
    challenge is swept offline later, silently (ChallengeApi.scala `sweep`)."""
    async with duel.bot.stream("/api/stream/event") as events:
        async with duel.human.stream("/api/challenge/bot1", method="POST", data={
                **BLITZ, "keepAliveStream": "true"}) as kept:
            challenge_id = (await kept.next())["id"]
            await events.until("challenge")
        challenge = duel.sandbox.lobby.challenges[challenge_id]

        def swept() -> bool:
            clock.advance(CHALLENGE_EXPIRY_S)  # the sweep is armed once the close is seen
            return challenge.status == "offline"

        await eventually(swept)
        assert not any(line.get("type") == "challengeCanceled"
                       for line in duel.bot.received)


async def test_a_kept_alive_challenge_ends_its_stream_when_accepted(duel: Duel) -> None:
    async with duel.human.stream("/api/challenge/bot1", method="POST", data={
            **BLITZ, "keepAliveStream": "true"}) as kept:
        challenge_id = (await kept.next())["id"]
        await duel.bot.post(f"/api/challenge/{challenge_id}/accept")
        assert await kept.next() == {"done": "accepted"}
        with pytest.raises(EOFError):
            await kept.next()
    assert duel.sandbox.game_record(challenge_id).status == "started"


async def test_a_rematch_offer_names_the_next_game_and_the_old_one(
        duel: Duel) -> None:
    old = await duel.start_game(bot_color="white")
    await duel.bot.post(f"/api/bot/game/{old}/abort")
    async with duel.bot.stream("/api/stream/event") as events:
        offer_id = await duel.sandbox.offer_rematch(old, "human1")
        offer = (await events.until("challenge"))["challenge"]
        # ChallengeMaker.makeRematch: id = Rematches.offer's next game id, rematchOf = old.
        assert offer_id == offer["id"] != old
        assert offer["rematchOf"] == old
        assert offer["finalColor"] == "white"  # the human was black
        await duel.bot.post(f"/api/challenge/{offer_id}/accept")
        start = (await events.until("gameStart"))["game"]
    assert start["gameId"] == offer_id
    assert start["color"] == "black"
    record = duel.sandbox.game_record(start["gameId"])
    assert (record.white, record.black) == ("human1", "bot1")


async def test_an_anonymous_challenger_is_null(sandbox: SandboxServer,
                                               client: Client) -> None:
    """lila challenge JsonView: `"challenger" -> c.challengerUser`, null when the challenger
    is not logged in; its side of the game has no id or name (GameStateStream)."""
    bot = client(sandbox.add_account("bot1", bot=True, scopes=["bot:play", "challenge:read"]))
    anon = client(sandbox.add_anonymous("anon1"))
    challenge_id = await sandbox.challenge("anon1", "bot1", 180, 2, color="white")
    # Read without the OpenAPI check: the spec says `challenger` is an object, lila sends null.
    async with bot.session.get(f"{sandbox.url}/api/challenge/{challenge_id}/show",
                               headers={"Authorization": f"Bearer {bot.token}"}) as reply:
        shown = await reply.json()
    assert shown["challenger"] is None and shown["destUser"]["id"] == "bot1"
    assert (await bot.post(f"/api/challenge/{challenge_id}/accept")).status == 200
    assert sandbox.lobby.full(sandbox.game(challenge_id))["white"] == {}
    assert (await anon.post(f"/api/board/game/{challenge_id}/move/e2e4")).status == 200
    # lila RoundSocket.scala povDisconnectTimeout: half the claim delay for a player with no
    # account (40 s at blitz, 20 s for them)
    game = sandbox.game(challenge_id)
    game.settings = dataclasses.replace(game.settings, claim_win_after_s=None)  # lila's own
    assert (game.disconnect_timeout_s(chess.WHITE), game.disconnect_timeout_s(chess.BLACK)) \
        == (20.0, 40.0)
