"""Two engines chosen by rule, end to end on the sandbox: a standard game and an atomic game
at once, each played by the engine its rule names (the greeting names the engine in play),
and a challenge declined when the engine its rule names does not play its variant.

Debian's Fairy-Stockfish 11.1 is built without atomic, so the atomic rule names the test
engine that plays atomic by python-chess's rules; Fairy-Stockfish is the default and plays
the standard game."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from sandbox.opponent import ChallengeSpec
from sandbox.server import SandboxServer
from tests.bot.e2e_support import (
    BOT,
    FAIRY_STOCKFISH,
    FAKE_ENGINE,
    NEEDS_FAIRY_STOCKFISH,
    UNBUDGETED,
    UNLIMITED,
    assert_legal,
    make_config,
    quiet_logs,
    running_bot,
    wait_for,
)

GAME_TIMEOUT_S = 240.0


@NEEDS_FAIRY_STOCKFISH
async def test_each_game_plays_on_the_engine_its_rule_names(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    quiet_logs()
    caplog.set_level(logging.INFO, logger="bot.app")
    atomic = f'["{sys.executable}", "{FAKE_ENGINE}", "none", "0", "atomic"]'
    config = make_config(tmp_path, f"""
engines:
  default: fairy
  entries:
    fairy: {{command: "{FAIRY_STOCKFISH}", options: {{Hash: 16}}, first_move_s: 0.2,
             max_move_s: 0.05, move_overhead_s: 0.05}}
    blaster: {{command: {atomic}, first_move_s: 0.2, max_move_s: 0.05}}
  rules:
    - {{engine: blaster, variants: [atomic, horde]}}
""")
    async with SandboxServer(keepalive_s=0.5, limits=UNLIMITED) as server, \
            running_bot(server, config, timings=UNBUDGETED) as run:
        await server.start_opponent("classic", seed=3, movetime_s=0.02, challenge=ChallengeSpec(
            BOT, 60, 0, variant="standard", repeat=False, color="black"))
        await server.start_opponent("blaster", seed=7, movetime_s=0.02, challenge=ChallengeSpec(
            BOT, 60, 0, variant="atomic", repeat=False, color="black"))
        # horde goes to the test engine, which does not play it: declined, although
        # Fairy-Stockfish (the default) would
        server.add_account("hordefan", bot=False)
        refused = await server.challenge("hordefan", BOT, 60, 0, variant="horde")
        await wait_for(lambda: len(server.game_records()) == 2)
        await wait_for(lambda: server.lobby.challenges[refused].status == "declined")
        assert server.lobby.challenges[refused].decline_key == "variant"
        ids = [record.id for record in server.game_records()]
        for game_id in ids:
            await server.wait_for_game_end(game_id, GAME_TIMEOUT_S)
        await run.done_with(ids)
        records = {server.game_record(i).variant: server.game_record(i) for i in ids}
    assert run.task.result() == 0

    assert sorted(records) == ["atomic", "standard"]
    for variant, record in records.items():
        assert_legal(record)
        greeting = next(line.text for line in record.chat
                        if line.username.lower() == BOT and line.text.startswith("Hi "))
        expected = "running Fake" if variant == "atomic" else "running Fairy-Stockfish"
        assert expected in greeting, (variant, greeting)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert f"{records['atomic'].id} starts against blaster on engine blaster" in logged
    assert f"{records['standard'].id} starts against classic on engine fairy" in logged
    assert run.metrics.rejected_moves == 0 and run.metrics.engine_restarts == 0
