"""Every Lichess variant end to end: the bot plays whole games with Debian's Fairy-Stockfish
as its engine on the sandbox (lila's rules), crazyhouse drops go both ways, and a variant the
engine does not play is declined with the `variant` reason before any game starts."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from bot.engines.pool import EngineSpec, start_engine
from bot.lichess.variants import LICHESS_VARIANTS, PGN_NAMES
from bot.ops.config import Config
from sandbox.opponent import ChallengeSpec
from sandbox.server import GameRecord, SandboxServer
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

CASTLING_FEN = "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8"
GAME_TIMEOUT_S = 240.0
OVER = frozenset({"mate", "variantEnd", "stalemate", "draw", "outoftime", "resign"})


def with_engine(config: Config, command: tuple[str, ...]) -> Config:
    return dataclasses.replace(config, engine=dataclasses.replace(config.engine,
                                                                  command=command))


async def declared_variants(command: tuple[str, ...]) -> frozenset[str]:
    engine = await start_engine(EngineSpec(command))
    try:
        return engine.variants
    finally:
        await engine.close()


def bot_color(record: GameRecord) -> str:
    return "white" if record.white.lower() == BOT else "black"


def drops(record: GameRecord, color: str) -> int:
    first = 0 if color == "white" else 1
    return sum("@" in uci for uci in record.moves[first::2])


@NEEDS_FAIRY_STOCKFISH
async def test_a_whole_game_in_every_variant_fairy_stockfish_plays(tmp_path: Path) -> None:
    quiet_logs()
    plays = await declared_variants((FAIRY_STOCKFISH,))
    config = with_engine(make_config(tmp_path, concurrency=12), (FAIRY_STOCKFISH,))
    variants: list[str] = [v for v in LICHESS_VARIANTS if v in plays]
    lacking: list[str] = [v for v in LICHESS_VARIANTS if v not in plays]  # Debian's 11.1: atomic
    async with SandboxServer(keepalive_s=0.5, limits=UNLIMITED) as server:
        async with running_bot(server, config, timings=UNBUDGETED) as run:
            # Random movers, one per variant; crazyhouse against Fairy-Stockfish, which
            # captures and then drops whatever it holds at once (left to itself it may keep
            # its pieces in hand a whole game), so both sides drop pieces.
            for index, variant in enumerate(variants):
                spec = ChallengeSpec(BOT, 60, 0, variant=variant, repeat=False,
                                     fen=CASTLING_FEN if variant == "fromPosition" else None,
                                     color="white" if index % 2 else "black")
                house = variant == "crazyhouse"
                await server.start_opponent(f"sparring{index}", challenge=spec, seed=index,
                                            engine=[FAIRY_STOCKFISH] if house else None,
                                            movetime_s=0.02, drops_first=house)
            declined = {}
            for variant in lacking:
                server.add_account(f"asker{variant}", bot=False)
                declined[variant] = await server.challenge(f"asker{variant}", BOT, 60, 0,
                                                           variant=variant)
            await wait_for(lambda: len(server.game_records()) == len(variants))
            records = {r.variant: await server.wait_for_game_end(r.id, GAME_TIMEOUT_S)
                       for r in server.game_records()}
            await run.done_with(r.id for r in records.values())  # kibitz lines and PGN files
            records = {v: server.game_record(r.id) for v, r in records.items()}
            declined_keys = {v: server.lobby.challenges[c].decline_key
                             for v, c in declined.items()}
        assert run.task.result() == 0

    assert sorted(records) == sorted(variants)
    assert declined_keys == dict.fromkeys(lacking, "variant")
    for variant, record in records.items():
        assert record.status in OVER, (variant, record.status)
        if variant != "crazyhouse" and record.status not in ("draw", "stalemate"):
            assert record.winner == bot_color(record), (variant, record.status)
        assert_legal(record)
        chat = [line.text for line in record.chat if line.username.lower() == BOT]
        assert any("PV " in line for line in chat), f"{variant}: no kibitz line"
        pgn = (tmp_path / "games" / f"{record.id}.pgn").read_text()
        assert f'[Variant "{PGN_NAMES[variant]}"]' in pgn
    crazyhouse = records["crazyhouse"]
    assert drops(crazyhouse, bot_color(crazyhouse)) > 0
    assert drops(crazyhouse, "white" if bot_color(crazyhouse) == "black" else "black") > 0
    assert run.metrics.rejected_moves == 0 and run.metrics.engine_restarts == 0


async def test_a_whole_atomic_game_with_an_engine_that_plays_atomic(tmp_path: Path) -> None:
    """Debian's Fairy-Stockfish 11.1 is built without atomic: a UCI engine that plays it by
    python-chess's rules stands in, so the bot's atomic path (board, legality, the end of the
    game, the chat's SAN, the PGN) is still played end to end."""
    quiet_logs()
    command = (sys.executable, FAKE_ENGINE, "none", "0", "atomic")
    assert "atomic" in await declared_variants(command)
    config = with_engine(make_config(tmp_path), command)
    async with SandboxServer(keepalive_s=0.5, limits=UNLIMITED) as server, \
            running_bot(server, config, timings=UNBUDGETED) as run:
        await server.start_opponent("blaster", seed=7, challenge=ChallengeSpec(
            BOT, 60, 0, variant="atomic", repeat=False, color="black"))
        await wait_for(lambda: len(server.game_records()) == 1)
        game_id = server.game_records()[0].id
        await server.wait_for_game_end(game_id, GAME_TIMEOUT_S)
        await run.done_with([game_id])
        record = server.game_record(game_id)
    assert record.variant == "atomic" and record.status in OVER, record.status
    assert_legal(record)
    assert any("PV " in line.text for line in record.chat if line.username.lower() == BOT)
    pgn = (tmp_path / "games" / f"{record.id}.pgn").read_text()
    assert '[Variant "Atomic"]' in pgn
    assert run.metrics.rejected_moves == 0


async def test_a_variant_the_engine_does_not_play_is_declined(tmp_path: Path) -> None:
    """The built-in engine's UCI_Variant has no crazyhouse: it is declined (reason `variant`)
    although the config accepts it, and a standard game is still played."""
    quiet_logs()
    config = make_config(tmp_path)
    assert "crazyhouse" in config.challenge.variants
    async with SandboxServer(keepalive_s=0.5) as server:
        server.add_account("housefan", bot=False)
        async with running_bot(server, config):
            refused = await server.challenge("housefan", BOT, 60, 0, variant="crazyhouse")
            taken = await server.challenge("housefan", BOT, 60, 0)
            challenges = server.lobby.challenges
            await wait_for(lambda: challenges[refused].status == "declined"
                           and challenges[taken].status == "accepted")
            assert challenges[refused].decline_key == "variant"
            assert not any(r.variant == "crazyhouse" for r in server.game_records())
            server.end_game(taken, "draw")
