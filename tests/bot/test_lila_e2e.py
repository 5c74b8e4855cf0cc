"""The running bot against the sandbox where lila's behaviour is easy to get wrong: the
daily bot-game caps (ours 429, the challenger's 400), ... Each test names the lila file
the sandbox follows (see the table in sandbox/__init__.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TypedDict

import chess
import pytest

from sandbox.opponent import ChallengeSpec
from sandbox.ratelimit import RateLimits
from sandbox.server import SandboxServer
from tests.bot.e2e_support import (
    BOT,
    bot_games,
    make_config,
    quiet_logs,
    running_bot,
    wait_for,
)
from tests.bot.test_challenge_rules_e2e import answered


async def test_our_daily_bot_cap_declines_bots_and_still_serves_people(tmp_path: Path) -> None:
    """lila BotLimit.scala: accepting once our bot games are used up answers 429
    `bot.vsBot.day`. Two bot challenges wait while our last bot game of the day starts;
    the bot declines the first ("later") when the accept is refused and the second without
    asking again, and a person's challenge is accepted at once: the 429 blocks neither the
    accept endpoint nor the challenge queue."""
    quiet_logs()
    async with SandboxServer(keepalive_s=0.5,
                             limits=RateLimits(bot_games_per_day=1)) as server:
        for name, bot in (("sparring", True), ("robo", True), ("robo2", True),
                          ("person", False), ("person2", False)):
            server.add_account(name, bot=bot)
        async with running_bot(server, make_config(tmp_path, concurrency=1)):
            busy = server.lobby.challenges[await server.challenge("person", BOT, 600, 0)]
            await wait_for(lambda: answered(busy) == "accepted")
            robo = server.lobby.challenges[await server.challenge("robo", BOT, 180, 2)]
            robo2 = server.lobby.challenges[await server.challenge("robo2", BOT, 180, 2)]
            used = await server.pair(BOT, "sparring", 60, 0)  # our one bot game today
            server.end_game(used, "draw")
            server.end_game(busy.id, "draw")  # the slot frees: the queue is taken
            await wait_for(lambda: None not in (answered(robo), answered(robo2)))
            assert (answered(robo), answered(robo2)) == ("later", "later")
            assert server.lobby.replies[(BOT, 429)] == 1  # one accept refused, not two
            person2 = server.lobby.challenges[await server.challenge("person2", BOT, 180, 2)]
            await wait_for(lambda: answered(person2) is not None)
            assert answered(person2) == "accepted"
            server.end_game(person2.id, "draw")


async def test_the_challengers_daily_cap_turns_away_that_challenger_only(
        tmp_path: Path) -> None:
    """lila BotLimit.scala `OpponentLimit`: the challenger's cap answers 400 with the same
    key. That challenge is declined; the next bot is accepted (our games are not used up)."""
    quiet_logs()
    async with SandboxServer(keepalive_s=0.5,
                             limits=RateLimits(bot_games_per_day=1)) as server:
        for name, bot in (("capped", True), ("spare", True), ("fresh", True),
                          ("person", False)):
            server.add_account(name, bot=bot)
        async with running_bot(server, make_config(tmp_path, concurrency=1)):
            busy = server.lobby.challenges[await server.challenge("person", BOT, 600, 0)]
            await wait_for(lambda: answered(busy) == "accepted")
            capped = server.lobby.challenges[await server.challenge("capped", BOT, 180, 2)]
            used = await server.pair("capped", "spare", 60, 0)  # capped's one game, meanwhile
            server.end_game(used, "draw")
            server.end_game(busy.id, "draw")  # the slot frees: capped's challenge is taken
            await wait_for(lambda: answered(capped) is not None)
            assert answered(capped) == "later"
            assert server.lobby.replies[(BOT, 400)] >= 1
            fresh = server.lobby.challenges[await server.challenge("fresh", BOT, 180, 2)]
            await wait_for(lambda: answered(fresh) is not None)
            assert answered(fresh) == "accepted"
            server.end_game(fresh.id, "draw")


async def test_a_refused_claim_is_tried_again_while_the_opponent_stays_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lila RoundAsyncActor.scala `Tick` repeats `claimWinInSeconds: 0` every tick, and
    BotPlayer.scala `claimVictory` refuses (400) only at that moment: a refused claim
    (injected here once) is sent again after a backoff (cut to 0.2 s) while the opponent
    is still gone, and wins the game."""
    import bot.game.claims

    quiet_logs()
    monkeypatch.setattr(bot.game.claims, "CLAIM_RETRY_S", 0.2)
    async with SandboxServer(keepalive_s=0.3, gone_after_s=0.1, gone_tick_s=0.1,
                             claim_win_after_s=1.0) as server:
        async with running_bot(server, make_config(tmp_path)):
            rival = await server.start_opponent(
                "rival", challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
            (game_id,) = await bot_games(server, 1)
            await wait_for(lambda: len(server.game_record(game_id).moves) >= 2)
            await rival.hold_moves()
            rival_white = server.game(game_id).players[chess.WHITE].username == "rival"
            await wait_for(lambda: server.game(game_id).turn == rival_white)
            server.fail(400, "/api/bot/game/*/claim-victory", count=1)
            await rival.stop()
            record = await server.wait_for_game_end(game_id, 60)
        assert server.lobby.replies[(BOT, 400)] == 1  # one claim refused, the next one won
        assert record.status == "timeout"
        assert record.winner == ("black" if rival_white else "white")


async def test_a_challenge_gone_offline_while_queued_is_declined_not_accepted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lila ChallengeApi.scala `sweep`: a real-time challenge unseen for a while goes offline
    with no event and can still be accepted, starting a game nobody plays. A challenge that
    waited in the queue (every one here: the age limit is 0) is accepted only while its
    challenger is online (`GET /api/users/status`): the first one's challenger is."""
    import bot.challenges.queue

    quiet_logs()
    monkeypatch.setattr(bot.challenges.queue, "STALE_CHALLENGE_S", 0.0)
    async with SandboxServer(keepalive_s=0.5, challenge_expiry_s=0.3) as server:
        for name in ("person", "ghost"):
            server.add_account(name, bot=False)
        async with running_bot(server, make_config(tmp_path, concurrency=1)):
            busy = server.lobby.challenges[await server.challenge("person", BOT, 600, 0)]
            await wait_for(lambda: answered(busy) == "accepted")
            ghost = server.lobby.challenges[await server.challenge("ghost", BOT, 180, 2)]
            await wait_for(lambda: ghost.status == "offline")
            server.end_game(busy.id, "draw")  # the slot frees: the queue is taken
            await wait_for(lambda: answered(ghost) is not None)
            assert answered(ghost) == "later"
            assert ghost.id not in server.lobby.games


async def test_a_bot_play_token_answers_queued_challenges_and_a_rematch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lila Challenge.scala: `apiShow` is AnonOrScoped(_.Challenge.Read), so a token with
    bot:play alone (what the README asks for) cannot look a challenge up; a rematch offer
    has no stored challenge at all (apiAccept `tryRematch`). A busy bot with such a token
    still answers every challenge: one queued past the stale age (0 here) whose challenger
    is still there, and a rematch offer, are both accepted."""
    import bot.challenges.queue

    quiet_logs()
    monkeypatch.setattr(bot.challenges.queue, "STALE_CHALLENGE_S", 0.0)
    async with SandboxServer(keepalive_s=0.5) as server:
        for name in ("person", "waiter"):
            server.add_account(name, bot=False)
        token = server.add_account(BOT, bot=True, scopes=["bot:play"])
        async with running_bot(server, make_config(tmp_path, concurrency=1), token=token):
            busy = server.lobby.challenges[await server.challenge("person", BOT, 600, 0)]
            await wait_for(lambda: answered(busy) == "accepted")
            waiter = server.lobby.challenges[await server.challenge("waiter", BOT, 180, 2)]
            server.end_game(busy.id, "draw")  # the slot frees: the queue is taken
            await wait_for(lambda: answered(waiter) is not None)
            assert answered(waiter) == "accepted"
            server.end_game(waiter.id, "draw")
            rematch = server.lobby.challenges[await server.offer_rematch(busy.id, "person")]
            await wait_for(lambda: answered(rematch) is not None)
            assert answered(rematch) == "accepted"
            assert server.lobby.replies[(BOT, 403)] == 0
            game = next(g for g in server.lobby.games.values()
                        if g.id not in (busy.id, waiter.id))
            server.end_game(game.id, "draw")


class ChallengeRules(TypedDict, total=False):
    """The challenge rules a case changes from the test config's."""

    accept_humans: bool
    min_rating: int | None


@pytest.mark.parametrize(("rules", "expect"), [({}, "accepted"),
                                               ({"accept_humans": False}, "onlybot"),
                                               ({"min_rating": 1000}, "generic")])
async def test_an_anonymous_challenge_is_judged_like_any_other(
        tmp_path: Path, rules: ChallengeRules, expect: str) -> None:
    """lila's challenge JSON has `"challenger": null` for a player who is not logged in:
    the policy judges it (a person with no rating), it is never left unanswered."""
    quiet_logs()
    config = make_config(tmp_path)
    config = dataclasses.replace(config, challenge=dataclasses.replace(
        config.challenge, **rules))
    async with SandboxServer(keepalive_s=0.5) as server:
        server.add_anonymous("anon1")
        async with running_bot(server, config):
            anon = server.lobby.challenges[await server.challenge("anon1", BOT, 180, 2)]
            await wait_for(lambda: answered(anon) is not None)
            assert (answered(anon) or "").lower() == expect
            if expect == "accepted":
                server.end_game(anon.id, "draw")


async def test_a_challenge_waiting_before_the_bot_connects_is_accepted_without_compat(
        tmp_path: Path) -> None:
    """lila EventStream.scala sends the challenges waiting when the stream opens without
    `compat` (Api.scala `eventStream`, `createdByDestId`): the bot takes them as playable."""
    quiet_logs()
    async with SandboxServer(keepalive_s=0.5) as server:
        server.add_account("early", bot=False)
        token = server.add_account(BOT, bot=True)
        early = server.lobby.challenges[await server.challenge("early", BOT, 180, 2)]
        first = server.lobby.event_stream_backlog(server.account(BOT))
        assert [e["type"] for e in first] == ["challenge"] and "compat" not in first[0]
        async with running_bot(server, make_config(tmp_path), token=token):
            await wait_for(lambda: answered(early) is not None)
            assert answered(early) == "accepted"
            server.end_game(early.id, "draw")
