"""Matchmaking end to end on the sandbox: another bot account challenged and played,
colours alternating; the daily bot-game cap (ours: 429, theirs: 400); declined and
unanswered challenges backed off and remembered across a restart; a pending challenge
giving way to an incoming one."""

from __future__ import annotations

import functools
import json
import logging
import time
from pathlib import Path

import pytest

from bot.ops.config import Config
from sandbox.challenges import Challenge
from sandbox.opponent import ChallengeSpec
from sandbox.ratelimit import RateLimits
from sandbox.server import SandboxServer
from tests.bot.e2e_support import (
    BOT,
    GUARD_S,
    make_config,
    post_as,
    quiet_logs,
    running_bot,
    wait_for,
)

MATCHMAKING = """
matchmaking:
  enabled: true
  idle_s: 0.2
  challenge_timeout_s: {timeout_s}
  time_controls: {{"1+0": 1}}
  variants: {{standard: 1}}
  modes: {{casual: 1}}
  backoff_s: 600
"""


def matchmaking_config(tmp_path: Path, *, timeout_s: float = 10, concurrency: int = 2,
                       extra: str = "") -> Config:
    return make_config(tmp_path, MATCHMAKING.format(timeout_s=timeout_s) + extra,
                       concurrency=concurrency)


def ours(server: SandboxServer) -> list[Challenge]:
    """Challenges the bot sent, oldest first."""
    return [c for c in server.lobby.challenges.values() if c.challenger.id == BOT]


def seed_recent_games(tmp_path: Path, *opponents: str) -> None:
    """Games against these opponents an hour ago: matchmaking prefers the others."""
    state = tmp_path / "state"
    state.mkdir(parents=True, exist_ok=True)
    started = time.time() - 3600
    games = {f"old{i:05d}": [name, started] for i, name in enumerate(opponents)}
    (state / "opponents.json").write_text(json.dumps({"games": games, "bots": []}))


def nth_accepted(server: SandboxServer, n: int) -> bool:
    """The bot has sent `n` challenges and the last was accepted."""
    return len(ours(server)) == n and ours(server)[-1].status == "accepted"


def match_state(tmp_path: Path) -> dict[str, object]:
    data = json.loads((tmp_path / "state" / "matchmaking.json").read_text())
    assert isinstance(data, dict)
    return data


async def test_idle_bot_challenges_an_online_bot_and_alternates_colours(tmp_path: Path) -> None:
    quiet_logs()
    async with SandboxServer(keepalive_s=0.5) as server:
        await server.start_opponent("rival", bot=True)
        server.add_account("offline_bot", bot=True)  # no event stream: not online
        async with running_bot(server, matchmaking_config(tmp_path)):
            for played in (1, 2):
                await wait_for(functools.partial(nth_accepted, server, played))
                challenge = ours(server)[-1]
                assert challenge.dest.id == "rival"
                assert not challenge.request.rated
                assert challenge.request.time_control.limit_s == 60
                game = server.game(challenge.id)  # the game id is the challenge id
                assert game.playing
                server.end_game(challenge.id, "draw")
        colors = [c.request.color for c in ours(server)]
        assert colors[:2] in (["white", "black"], ["black", "white"])
        assert all(c.dest.id == "rival" for c in ours(server))


async def test_daily_bot_game_caps_theirs_skipped_ours_waited_out(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    quiet_logs()
    caplog.set_level(logging.INFO, logger="bot")
    seed_recent_games(tmp_path, "fresh")  # so "capped" is tried first
    async with SandboxServer(keepalive_s=0.5,
                             limits=RateLimits(bot_games_per_day=1)) as server:
        server.add_account("spare", bot=True)
        await server.start_opponent("capped", bot=True)
        await server.start_opponent("fresh", bot=True)
        used = await server.pair("capped", "spare", 60, 0)  # capped's one game today
        server.end_game(used, "draw")
        config = matchmaking_config(tmp_path)
        async with running_bot(server, config):
            await wait_for(lambda: any(c.status == "accepted" for c in ours(server)))
            [challenge] = ours(server)  # the 400 from "capped" created no challenge
            assert challenge.dest.id == "fresh"
            server.end_game(challenge.id, "draw")
            await wait_for(lambda: match_state(tmp_path).get("paused_until", 0) != 0)
        state = match_state(tmp_path)
        day_s = 86400
        paused_until = state["paused_until"]
        assert isinstance(paused_until, int | float)
        assert abs(paused_until - (time.time() + day_s)) < 120
        assert state["pause_reason"] == "our bot games for today are used up"
        book = json.loads((tmp_path / "state" / "opponents.json").read_text())
        assert abs(book["bots_capped_until"] - (time.time() + day_s)) < 120
        backoff = state["backoff"]
        assert isinstance(backoff, dict)
        until, _level = backoff["capped|capped"]  # the opponent, whatever the time control
        assert abs(until - (time.time() + day_s)) < 120
        assert len(ours(server)) == 1
        # After a restart the pause still holds: the bot stays idle and sends nothing.
        caplog.clear()
        async with running_bot(server, config, token=server.account(BOT).token):
            await wait_for(lambda: "matchmaking: idle, but no challenge for" in caplog.text)
        assert len(ours(server)) == 1


async def test_declined_and_unanswered_challenges_back_off(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    quiet_logs()
    caplog.set_level(logging.INFO, logger="bot")
    seed_recent_games(tmp_path, "sleepy")  # so "grumpy" is asked first
    async with SandboxServer(keepalive_s=0.5) as server:
        grumpy = await server.start_opponent("grumpy", bot=True, accept=False)
        await server.start_opponent("sleepy", bot=True, accept=False)
        config = matchmaking_config(tmp_path, timeout_s=1.0)
        async with running_bot(server, config):
            await wait_for(lambda: len(ours(server)) == 1)
            first = ours(server)[0]
            assert first.dest.id == "grumpy"
            status = await post_as(server, server.account(grumpy.username).token,
                                   f"/api/challenge/{first.id}/decline?reason=tooFast")
            assert status == 200
            await wait_for(lambda: len(ours(server)) == 2)
            second = ours(server)[1]
            assert second.dest.id == "sleepy"
            caplog.clear()
            await wait_for(lambda: second.status == "canceled")
            # Both backed off: the next look finds nobody to challenge.
            await wait_for(lambda: "matchmaking: no suitable bot online" in caplog.text)
            assert len(ours(server)) == 2
        backoff = match_state(tmp_path)["backoff"]
        assert isinstance(backoff, dict)
        assert set(backoff) == {"grumpy|1+0", "sleepy|1+0"}
        for until, level in backoff.values():
            assert level == 1 and abs(until - (time.time() + 600)) < 60
        assert first.decline_key == "toofast"
        # Remembered across a restart: neither is challenged again.
        caplog.clear()
        async with running_bot(server, config, token=server.account(BOT).token):
            await wait_for(lambda: "matchmaking: no suitable bot online" in caplog.text)
        assert len(ours(server)) == 2


async def test_pending_challenge_gives_way_to_an_incoming_one(tmp_path: Path) -> None:
    quiet_logs()
    async with SandboxServer(keepalive_s=0.5) as server:
        await server.start_opponent("sleepy", bot=True, accept=False)
        config = matchmaking_config(tmp_path, timeout_s=30, concurrency=1)
        async with running_bot(server, config):
            await wait_for(lambda: len(ours(server)) == 1)
            pending = ours(server)[0]
            assert pending.status == "created"
            await server.start_opponent("visitor", challenge=ChallengeSpec(
                BOT, 60, 0, repeat=False))
            game_id = await server.wait_for_game(BOT, timeout_s=GUARD_S)
            assert pending.status == "canceled"
            assert {p.id for p in server.game(game_id).players.values()} == {BOT, "visitor"}
            server.end_game(game_id, "draw")
        backoff = match_state(tmp_path).get("backoff")
        assert not backoff, "giving way is no fault of the opponent's"
