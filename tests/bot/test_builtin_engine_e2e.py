"""The built-in engine (`python -m engine`, its own process) plays a whole game on the sandbox
through the bot: warm-up, clock, kibitz lines and PGN, end to end."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from sandbox.opponent import ChallengeSpec
from sandbox.server import SandboxServer
from tests.bot.e2e_support import (
    BOT,
    BUILTIN,
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
        config.engine, command=tuple(BUILTIN)))
    async with SandboxServer(keepalive_s=0.5) as server:
        async with running_bot(server, config) as run:
            await server.start_opponent("rival", seed=11,
                                        challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
            (game_id,) = await bot_games(server, 1, 30)
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
