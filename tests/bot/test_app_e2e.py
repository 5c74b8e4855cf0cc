"""The bot's lifecycle on the sandbox: token checks, challenge policy and queue, engine faults,
hostile chat, takebacks, claiming victory, shutdown, restart, and signals."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import sys
from pathlib import Path

import aiohttp
import chess
import pytest

from bot.app import EXIT_ACCOUNT, EXIT_FATAL, EXIT_INTERRUPTED, EXIT_OK, run_bot
from bot.engines.pool import EngineSpec
from bot.ops.config import Config
from sandbox.opponent import ChallengeSpec
from sandbox.server import SandboxServer
from tests.bot.e2e_support import (
    BOT,
    FAKE_ENGINE,
    FAST_TIMINGS,
    GUARD_S,
    AlarmClock,
    assert_legal,
    bot_games,
    make_config,
    post_as,
    quiet_logs,
    running_bot,
    strong_opponent,
    wait_for,
)


async def _plies(server: SandboxServer, game_id: str, count: int) -> None:
    """Wait until the game has ``count`` plies; a game that ends before fails at once."""
    async with asyncio.timeout(GUARD_S):
        while len((record := server.game_record(game_id)).moves) < count:
            assert not record.finished, f"the game ended first: {record.status}"
            await asyncio.sleep(0.05)


async def run_briefly(server: SandboxServer, config: Config, token: str) -> int:
    return await asyncio.wait_for(run_bot(config, url=server.url, token=token,
                                          handle_signals=False, timings=FAST_TIMINGS), 30)


async def test_bad_tokens_and_accounts_are_fatal_with_a_clear_reason(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = make_config(tmp_path)
    async with SandboxServer(keepalive_s=0.5) as server:
        human = server.add_account("person", bot=False, scopes=["bot:play"])
        no_scope = server.add_account("robot", bot=True, scopes=["challenge:read"])
        cases = [("not_a_token", "rejected the token"), (human, "not a BOT account"),
                 (no_scope, "bot:play")]
        for token, reason in cases:
            caplog.clear()
            assert await run_briefly(server, config, token) == EXIT_ACCOUNT
            assert reason in caplog.text
            assert token not in caplog.text or token == "not_a_token"


async def test_an_engine_that_does_not_start_is_fatal(tmp_path: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    config = make_config(tmp_path)
    config = dataclasses.replace(config, engine=dataclasses.replace(
        config.engine, command=("/nonexistent/engine",)))
    async with SandboxServer(keepalive_s=0.5) as server:
        token = server.add_account(BOT, bot=True)
        assert await run_briefly(server, config, token) == EXIT_FATAL
    assert "engine does not work" in caplog.text


async def test_challenges_are_declined_with_reasons_and_queued_in_order(tmp_path: Path) -> None:
    quiet_logs()
    config = make_config(tmp_path, concurrency=1)
    config = dataclasses.replace(config, challenge=dataclasses.replace(
        config.challenge, accept_rated=False, variants=("standard", "fromPosition")))
    async with SandboxServer(keepalive_s=0.3) as server:
        for name in ("first", "second", "third"):
            server.add_account(name, bot=False)
        async with running_bot(server, config) as run:
            atomic = await server.challenge("first", BOT, 60, 0, variant="chess960")
            rated = await server.challenge("first", BOT, 60, 0, rated=True)
            slow = await server.challenge("first", BOT, None, None, days=3)
            lobby = server.lobby
            await wait_for(lambda: all(lobby.challenges[c].status == "declined"
                                       for c in (atomic, rated, slow)))
            reasons = {cid: lobby.challenges[cid].decline_key for cid in (atomic, rated, slow)}
            assert reasons == {atomic: "variant", rated: "casual", slow: "timecontrol"}
            # Three acceptable challenges, one slot: taken in order as games end.
            for name in ("first", "second", "third"):
                sent = len(lobby.challenges)
                await server.start_opponent(name, seed=1,
                                            challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
                # in before the next
                await wait_for(lambda: len(lobby.challenges) > sent)  # noqa: B023
            await bot_games(server, 3, 90)
            games = [r.id for r in server.game_records()]  # in the order they started
            records = [await server.wait_for_game_end(g, 60) for g in games]
            assert run.metrics.rejected_moves == 0
        opponents = [r.white if r.black.lower() == BOT else r.black for r in records]
        assert opponents == ["first", "second", "third"]
        assert all(record.finished for record in records)
        assert run.task.result() == EXIT_OK


async def test_engine_crash_and_hang_mid_game_restart_the_engine(tmp_path: Path) -> None:
    quiet_logs()
    for mode in ("crash", "hang"):
        spec = EngineSpec((sys.executable, FAKE_ENGINE, mode, "4"))
        config = make_config(tmp_path)
        config = dataclasses.replace(config, engine=dataclasses.replace(
            config.engine, command=spec.command, spare=True, max_move_s=0.05))
        async with SandboxServer(keepalive_s=0.3) as server:
            async with running_bot(server, config) as run:
                await server.start_opponent("rival", seed=3,
                                            challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
                (game_id,) = await bot_games(server, 1)
                # Random against random: a long game; it only has to go on after the fault.
                async with asyncio.timeout(GUARD_S):
                    while run.metrics.engine_restarts == 0:  # noqa: ASYNC110
                        await asyncio.sleep(0.05)
                    record = server.game_record(game_id)
                    while not record.finished and len(record.moves) < 14:
                        await asyncio.sleep(0.05)
                        record = server.game_record(game_id)
                server.end_game(game_id, "draw")
            assert_legal(record)
            assert record.status != "resign" and len(record.moves) >= 10, mode


async def test_hostile_chat_takebacks_and_claiming_victory(tmp_path: Path) -> None:
    quiet_logs()
    config = make_config(tmp_path)
    async with SandboxServer(keepalive_s=0.3, claim_win_after_s=1.0, gone_after_s=0.5) as server:
        async with running_bot(server, config) as run:
            # A real engine for the rival, so the game lasts until it leaves.
            rival = await server.start_opponent("rival", engine=strong_opponent(), movetime_s=0.05,
                                                challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
            (game_id,) = await bot_games(server, 1)
            token = server.account("rival").token
            # Both sides have moved; then the rival stops moving, so the position holds still
            # on the rival's turn while its takeback proposal waits for the bot's answer (a
            # move in between would cancel the proposal before the bot declines it).
            await wait_for(lambda: len(server.game_record(game_id).moves) >= 2)
            await rival.hold_moves()
            rival_color = server.game(game_id).players[chess.WHITE].username == "rival"
            await wait_for(lambda: server.game(game_id).turn == rival_color)
            hostile = ["!help", "!eval", "!" * 500, "x" * 5000, "visit https://evil.example now",
                       "\x00\x1b[31m\u202e!help", "!pv off", "!name\n!name", "\ud7ff" * 10]
            async with aiohttp.ClientSession(
                    headers={"Authorization": f"Bearer {token}"}) as session:
                for text in hostile:
                    async with session.post(f"{server.url}/api/board/game/{game_id}/chat",
                                            data={"room": "player", "text": text[:140]}) as reply:
                        assert reply.status == 200, text  # every hostile line reached the bot
            # A takeback proposal to a BOT is answered 200 and does nothing (lila: a BOT's
            # takeback preference is never; PrefApi.scala `setBot`).
            assert await post_as(server, token,
                                 f"/api/board/game/{game_id}/takeback/yes") == 200
            assert not server.game(game_id).takeback_offers
            # The rival leaves: the bot claims the win once Lichess allows it.
            await rival.stop()
            record = await server.wait_for_game_end(game_id, GUARD_S)
        assert run.task.result() == EXIT_OK
    assert not any(line.text.startswith("Takeback") for line in record.chat)
    assert record.status == "timeout", record.status
    assert record.winner == ("white" if record.white.lower() == BOT else "black")
    bot_lines = [line.text for line in record.chat if line.username.lower() == BOT]
    assert any(text.startswith("Commands:") for text in bot_lines)  # answered !help
    assert len(bot_lines) >= 3  # the greeting, the answers to !help and !eval at least
    assert all(len(text) <= 140 and "://" not in text and "evil" not in text
               for text in bot_lines)


async def test_shutdown_keeps_its_deadline_when_the_server_hangs_on_resign(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the grace period the resign requests and the wait for the games share one
    deadline (LEAVE_TIMEOUT_S, shortened here): a server that never answers the resign
    cannot hold the stop past it, so systemd's TimeoutStopSec is never reached."""
    import bot.app

    quiet_logs()
    monkeypatch.setattr(bot.app, "LEAVE_TIMEOUT_S", 1.0)
    config = make_config(tmp_path)
    resign = dataclasses.replace(config, game=dataclasses.replace(
        config.game, shutdown_grace_s=0.3, shutdown_action="resign"))
    async with SandboxServer(keepalive_s=0.3, claim_win_after_s=30) as server:
        await server.start_opponent("rival", engine=strong_opponent(), movetime_s=0.05,
                                    challenge=ChallengeSpec(BOT, 180, 0, repeat=False))
        # The alarms' clock stands still: on a busy machine an opponent slow to make its first
        # move is not aborted (abort_after_s is 2 s), which would end the game these plies need.
        async with running_bot(server, resign, alarm_clock=AlarmClock()) as run:
            (game_id,) = await bot_games(server, 1)
            await _plies(server, game_id, 4)
            server.delay(60, "/api/bot/game/*/resign")
            # grace 0.3 s + one 1 s deadline + engines closing: well within 30 s, while the
            # server holds the resign for 60 s (the bound is what is tested, not a guard)
            assert await run.finish(timeout_s=30) == EXIT_OK
        server.clear_faults()


async def test_shutdown_resigns_after_the_grace_period_and_a_restart_resumes(
        tmp_path: Path) -> None:
    quiet_logs()
    config = make_config(tmp_path)
    abandon = dataclasses.replace(config, game=dataclasses.replace(
        config.game, shutdown_grace_s=0.3, shutdown_action="abandon"))
    resign = dataclasses.replace(config, game=dataclasses.replace(
        config.game, shutdown_grace_s=0.3, shutdown_action="resign"))
    async with SandboxServer(keepalive_s=0.3, claim_win_after_s=30) as server:
        token = server.add_account(BOT, bot=True)
        await server.start_opponent("rival", engine=strong_opponent(), movetime_s=0.05,
                                    challenge=ChallengeSpec(BOT, 180, 0, repeat=False))
        # The alarms' clock stands still (as above): no abort while a busy machine is slow.
        async with running_bot(server, abandon, token=token, alarm_clock=AlarmClock()) as run:
            (game_id,) = await bot_games(server, 1)
            await _plies(server, game_id, 4)
        assert run.task.result() == EXIT_OK
        assert server.game_record(game_id).status == "started"  # abandoned, still running
        plies_then = len(server.game_record(game_id).moves)
        # A new run picks the game up from its gameStart and plays on; its shutdown resigns.
        async with running_bot(server, resign, token=token, alarm_clock=AlarmClock()) as run:
            async with asyncio.timeout(GUARD_S):
                while len(server.game_record(game_id).moves) < plies_then + 4:
                    if server.game_record(game_id).finished:
                        break
                    await asyncio.sleep(0.05)
        assert run.task.result() == EXIT_OK
        record = server.game_record(game_id)
        assert_legal(record)
        assert record.status == "resign", record.status
        assert record.winner == ("black" if record.white.lower() == BOT else "white")
        assert any(o.game_id == game_id for o in run.metrics.games)


async def test_sigterm_stops_gracefully_and_a_second_sigint_at_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    quiet_logs()
    caplog.set_level(logging.INFO, logger="bot")
    config = make_config(tmp_path)
    async with SandboxServer(keepalive_s=0.3) as server:
        token = server.add_account(BOT, bot=True)
        ready = asyncio.Event()
        task = asyncio.create_task(run_bot(config, url=server.url, token=token,
                                           timings=FAST_TIMINGS, on_ready=lambda _: ready.set()))
        await asyncio.wait_for(ready.wait(), GUARD_S)
        os.kill(os.getpid(), signal.SIGTERM)
        assert await asyncio.wait_for(task, GUARD_S) == EXIT_OK

        long_grace = dataclasses.replace(config, game=dataclasses.replace(
            config.game, shutdown_grace_s=60))
        ready.clear()
        task = asyncio.create_task(run_bot(long_grace, url=server.url, token=token,
                                           timings=FAST_TIMINGS, on_ready=lambda _: ready.set()))
        await asyncio.wait_for(ready.wait(), GUARD_S)
        await server.start_opponent("rival", seed=4,
                                    challenge=ChallengeSpec(BOT, 180, 0, repeat=False))
        await bot_games(server, 1)
        caplog.clear()
        os.kill(os.getpid(), signal.SIGINT)
        await wait_for(lambda: "stopping: 1 games may finish" in caplog.text)
        assert not task.done()  # a game is running: waiting for it within the grace period
        os.kill(os.getpid(), signal.SIGINT)
        # at once: well within the 60 s grace period the first SIGINT granted
        assert await asyncio.wait_for(task, 10) == EXIT_INTERRUPTED
    logging.getLogger("bot").info("signals restored")
