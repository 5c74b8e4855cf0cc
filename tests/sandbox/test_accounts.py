"""Accounts: authentication errors, token test, profile, ongoing games, bot upgrade, online."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from sandbox.accounts import A_BOT, NOT_A_BOT
from sandbox.server import SandboxServer
from tests.sandbox.conftest import Duel
from tests.sandbox.spec import SpecClient

Client = Callable[[str | None], SpecClient]


async def test_missing_and_unknown_tokens_get_401(client: Client) -> None:
    missing = await client(None).get("/api/account")
    assert missing.status == 401
    assert "authorization" in missing.json()["error"].lower()
    unknown = await client("lip_nosuchtoken").get("/api/account")
    assert unknown.status == 401
    assert unknown.json() == {"error": "No such token"}


async def test_missing_scope_gets_403(sandbox: SandboxServer, client: Client) -> None:
    token = sandbox.add_account("reader", bot=True, scopes=["challenge:read"])
    reply = await client(token).post("/api/challenge/reader2", data={})
    assert reply.status == 403
    assert "Missing scope" in reply.json()["error"]
    # The event stream accepts challenge:read alone.
    async with client(token).stream("/api/stream/event") as stream:
        assert stream.status == 200


async def test_bot_api_refuses_humans_and_board_api_refuses_bots(
        sandbox: SandboxServer, duel: Duel) -> None:
    game_id = await duel.start_game()
    # Without the scope: 403; with it but the wrong kind of account: 400.
    assert (await duel.human.post(f"/api/bot/game/{game_id}/move/e2e4")).status == 403
    assert (await duel.bot.post(f"/api/board/game/{game_id}/move/e2e4")).status == 403
    sandbox.account("human1").scopes |= {"bot:play"}
    sandbox.account("bot1").scopes |= {"board:play"}
    human_on_bot = await duel.human.post(f"/api/bot/game/{game_id}/move/e2e4")
    assert (human_on_bot.status, human_on_bot.json()["error"]) == (400, NOT_A_BOT)
    bot_on_board = await duel.bot.post(f"/api/board/game/{game_id}/move/e2e4")
    assert (bot_on_board.status, bot_on_board.json()["error"]) == (400, A_BOT)


async def test_token_test_reports_each_token(sandbox: SandboxServer, client: Client) -> None:
    token = sandbox.add_account("tester", bot=True)
    reply = await client(None).post("/api/token/test", data=f"{token},lip_bogus",
                                    headers={"Content-Type": "text/plain"})
    assert reply.status == 200
    body = reply.json()
    assert body["lip_bogus"] is None
    assert body[token]["userId"] == "tester"
    # A bot's default token has exactly what the README asks an owner for.
    assert body[token]["scopes"] == "bot:play"


async def test_each_endpoint_checks_lilas_scopes(sandbox: SandboxServer, duel: Duel) -> None:
    """lila Challenge.scala: apiList and apiShow need challenge:read (ScopedBody,
    AnonOrScoped), which a bot:play token lacks; a rematch offer to a bot is no stored
    challenge, so apiShow finds none (404) while accept and decline still work."""
    game_id = await duel.start_game()
    challenge_id = await sandbox.challenge("human1", "bot1", 180, 2)
    assert (await duel.bot.get("/api/challenge")).status == 403
    shown = await duel.bot.get(f"/api/challenge/{challenge_id}/show")
    assert (shown.status, shown.json()["error"]) == (403, "Missing scope: challenge:read")
    assert (await duel.bot.post(f"/api/challenge/{challenge_id}/decline")).status == 200
    sandbox.end_game(game_id, "draw")
    offer = await sandbox.offer_rematch(game_id, "human1")
    sandbox.account("bot1").scopes |= {"challenge:read"}
    assert (await duel.bot.get(f"/api/challenge/{offer}/show")).status == 404
    assert (await duel.bot.post(f"/api/challenge/{offer}/decline")).status == 200


async def test_account_profile_and_its_rate_limit(sandbox: SandboxServer,
                                                  client: Client) -> None:
    me = client(sandbox.add_account("Profile_Bot", bot=True))
    reply = await me.get("/api/account")
    body = reply.json()
    assert (body["id"], body["username"], body["title"]) == ("profile_bot", "Profile_Bot", "BOT")
    assert body["perfs"]["blitz"]["rating"] == 1500
    statuses = [(await me.get("/api/account")).status for _ in range(30)]
    assert statuses[:29] == [200] * 29
    assert statuses[29] == 429
    limited = me.received[-1]
    # lila Account.scala apiMe: `rateLimited(msg)`, no `ratelimit` object.
    assert "ratelimit" not in limited and "Please don't poll" in limited["error"]


async def test_playing_lists_ongoing_games_most_urgent_first(duel: Duel) -> None:
    first = await duel.start_game(bot_color="black")
    second = await duel.start_game(bot_color="white")
    body = (await duel.bot.get("/api/account/playing")).json()
    assert body["nbMyTurn"] == 1
    assert [g["gameId"] for g in body["nowPlaying"]] == [second, first]
    assert body["nowPlaying"][0]["isMyTurn"] is True
    assert body["nowPlaying"][0]["opponent"]["username"] == "human1"
    # lila Namer.playerTextBlocking: the human sees its BOT opponent as "BOT bot1".
    theirs = (await duel.human.get("/api/account/playing")).json()
    assert {g["opponent"]["username"] for g in theirs["nowPlaying"]} == {"BOT bot1"}
    limited = (await duel.bot.get("/api/account/playing?nb=1")).json()
    assert len(limited["nowPlaying"]) == 1


async def test_upgrade_is_refused_once_the_account_has_played(
        sandbox: SandboxServer, client: Client, duel: Duel) -> None:
    fresh = client(sandbox.add_account("fresh", bot=False,
                                       scopes=["bot:play", "board:play", "challenge:write"]))
    assert (await fresh.post("/api/bot/account/upgrade")).json() == {"ok": True}
    assert sandbox.account("fresh").bot
    assert (await fresh.get("/api/account")).json()["title"] == "BOT"
    await duel.start_game()
    sandbox.account("human1").scopes |= {"bot:play"}
    refused = await duel.human.post("/api/bot/account/upgrade")
    assert refused.status == 400
    assert refused.json()["error"] == "You already have games played. Make a new account."
    assert not sandbox.account("human1").bot


async def test_online_bots_are_those_with_an_event_stream(sandbox: SandboxServer,
                                                          client: Client) -> None:
    bots = [client(sandbox.add_account(f"online{i}", bot=True)) for i in range(3)]
    sandbox.add_account("offline", bot=True)
    async with bots[0].stream("/api/stream/event"), bots[1].stream("/api/stream/event"):
        reply = await client(None).get("/api/bot/online")
        assert reply.content_type == "application/x-ndjson"
        ids = [json.loads(line)["id"] for line in reply.text.splitlines()]
        assert sorted(ids) == ["online0", "online1"]
        one = await client(None).get("/api/bot/online?nb=1")
        assert len(one.text.splitlines()) == 1


@pytest.mark.parametrize("username", ["a", "has space", "x" * 21])
def test_bad_usernames_are_refused(username: str) -> None:
    with pytest.raises(ValueError, match="invalid username"):
        SandboxServer().add_account(username, bot=True)


def test_unknown_scopes_and_duplicate_names_are_refused() -> None:
    server = SandboxServer()
    with pytest.raises(ValueError, match="unknown scopes"):
        server.add_account("someone", bot=True, scopes=["bot:fly"])
    server.add_account("someone", bot=True)
    with pytest.raises(ValueError, match="already taken"):
        server.add_account("SomeOne", bot=False)


async def test_public_profiles_and_statuses(sandbox: SandboxServer, client: Client,
                                            duel: Duel) -> None:
    anyone = client(None)
    profile = (await anyone.get("/api/user/BOT1")).json()
    assert (profile["id"], profile["title"]) == ("bot1", "BOT")
    assert (await anyone.get("/api/user/nobody")).status == 404
    await duel.start_game()
    async with duel.bot.stream("/api/stream/event"):
        statuses = (await anyone.get("/api/users/status?ids=bot1,human1,nobody")).json()
    # lila Api.scala `usersStatus`: a false flag is left out, unknown ids too.
    assert statuses == [
        {"id": "bot1", "name": "bot1", "title": "BOT", "online": True, "playing": True},
        {"id": "human1", "name": "human1", "playing": True}]
    missing = await anyone.get("/api/users/status")
    assert (missing.status, missing.json()) == (400, {"error": "No user ids provided"})
    # Only the first 100 ids are looked at; more is no error.
    many = await anyone.get("/api/users/status?ids=" + ",".join(["nobody"] * 100 + ["bot1"]))
    assert (many.status, many.json()) == (200, [])
