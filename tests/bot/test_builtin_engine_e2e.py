"""The built-in engine plays a whole game on the sandbox through the bot: warm-up, clock, kibitz
lines and PGN, end to end; its engines forked by the engine host, as the bot runs it.  It plays
three-check and king of the hill too (lila's rules on the sandbox)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bot.lichess.variants import PGN_NAMES
from sandbox.opponent import ChallengeSpec
from sandbox.server import SandboxServer
from tests.bot.e2e_support import (
    BOT,
    assert_legal,
    bot_games,
    make_config,
    quiet_logs,
    running_bot,
)


async def test_the_builtin_engine_plays_a_whole_game(tmp_path: Path) -> None:
    quiet_logs()
    config = make_config(tmp_path, max_move_s=0.1)
    config = dataclasses.replace(config, engine=dataclasses.replace(
        config.engine, command=None, fork_host=True))
    async with SandboxServer(keepalive_s=0.5) as server:
        async with running_bot(server, config) as run:
            await server.start_opponent("rival", seed=11,
                                        challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
            (game_id,) = await bot_games(server, 1)
            assert (tmp_path / "state" / "engine.sock").is_socket()  # the host listens
            record = await server.wait_for_game_end(game_id, 120)
        assert run.task.result() == 0
    assert_legal(record)
    bot_side = "white" if record.white.lower() == BOT else "black"
    assert record.status == "mate" and record.winner == bot_side
    lines = [line.text for line in record.chat if line.username.lower() == BOT
             and "PV " in line.text]
    assert lines and all(len(line) <= 140 and "depth " in line for line in lines)
    assert (tmp_path / "games" / f"{game_id}.pgn").exists()
    assert {m.source for m in run.metrics.moves} == {"engine"}


async def test_the_builtin_engine_wins_three_check_and_king_of_the_hill(tmp_path: Path) -> None:
    """A whole game of each against a random mover: the engine wins it, by the variant's own
    end (lila's `variantEnd`) or by mate, with legal moves and the variant's PGN tag."""
    quiet_logs()
    config = make_config(tmp_path, max_move_s=0.1)
    config = dataclasses.replace(config, engine=dataclasses.replace(
        config.engine, command=None, fork_host=True))
    variants = ("threeCheck", "kingOfTheHill")
    async with SandboxServer(keepalive_s=0.5) as server:
        async with running_bot(server, config) as run:
            for index, variant in enumerate(variants):
                spec = ChallengeSpec(BOT, 60, 0, variant=variant, repeat=False,
                                     color="white" if index else "black")
                await server.start_opponent(f"hill{index}", seed=index, challenge=spec)
            game_ids = await bot_games(server, len(variants))
            records = [await server.wait_for_game_end(game_id, 120) for game_id in game_ids]
            await run.done_with(game_ids)  # PGN files written
        assert run.task.result() == 0
    assert sorted(r.variant for r in records) == sorted(variants)
    for record in records:
        assert_legal(record)
        bot_side = "white" if record.white.lower() == BOT else "black"
        assert record.status in ("variantEnd", "mate"), (record.variant, record.status)
        assert record.winner == bot_side, record.variant
        pgn = (tmp_path / "games" / f"{record.id}.pgn").read_text()
        assert f'[Variant "{PGN_NAMES[record.variant]}"]' in pgn
    assert {m.source for m in run.metrics.moves} == {"engine"}
