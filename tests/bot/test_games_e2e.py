"""Whole games on the sandbox: standard, chess960 and from-position, ending in mate,
resignation, draw and abort; every move legal; kibitz lines with a PV within 140 characters."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import chess
import pytest

from sandbox.opponent import ChallengeSpec
from sandbox.server import GameRecord, SandboxServer
from tests.bot.e2e_support import (
    BOT,
    GUARD_S,
    UNBUDGETED,
    UNLIMITED,
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

# Castling is possible for both sides at once, so the castling notation gets exercised.
CASTLING_FEN = "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8"
# Rook against rook: dead level, the bot accepts a draw offer here.
ROOK_ENDING_FEN = "4k2r/8/8/8/8/8/R7/4K3 w - - 0 40"


async def play_as(server: SandboxServer, token: str, game_id: str, uci: str) -> None:
    status = await post_as(server, token, f"/api/board/game/{game_id}/move/{uci}")
    assert status == 200, f"move {uci} refused: {status}"


async def wait_turns(server: SandboxServer, game_id: str, plies: int) -> None:
    async with asyncio.timeout(GUARD_S):
        while len(server.game_record(game_id).moves) < plies:  # noqa: ASYNC110
            await asyncio.sleep(0.02)


def kibitz_lines(record: GameRecord) -> list[str]:
    return [line.text for line in record.chat
            if line.username.lower() == BOT and "PV" in line.text]


def bot_color(record: GameRecord) -> str:
    return "white" if record.white.lower() == BOT else "black"


def opponent_to_move(record: GameRecord, min_plies: int) -> bool:
    """At least ``min_plies`` played, and the bot's opponent to move."""
    white_to_move = len(record.moves) % 2 == 0
    return len(record.moves) >= min_plies and white_to_move == (bot_color(record) == "black")


async def test_whole_games_in_every_variant_and_every_ending(tmp_path: Path) -> None:
    quiet_logs()
    config = make_config(tmp_path, """
draw: {accept: true, min_move: 0, moves: 1, margin_cp: 150}
""", concurrency=8)
    async with SandboxServer(keepalive_s=0.5, limits=UNLIMITED) as server:
        tokens = {name: server.add_account(name, bot=False)
                  for name in ("quitter", "peacemaker", "sleeper")}
        clock = AlarmClock()  # the abort timer moves only when the test says so
        async with running_bot(server, config, timings=UNBUDGETED, alarm_clock=clock) as run:
            # Random movers: the bot mates them (standard, chess960, from a set-up position).
            for name, spec in {
                "sparring": ChallengeSpec(BOT, 60, 0, variant="standard", repeat=False),
                "fischer": ChallengeSpec(BOT, 60, 0, variant="chess960", repeat=False),
                "setup": ChallengeSpec(BOT, 60, 0, variant="fromPosition", fen=CASTLING_FEN,
                                       repeat=False),
            }.items():
                await server.start_opponent(name, challenge=spec, seed=7)
            # Driven by the test: resigns after two moves each; offers a draw; never moves.
            resign_id = await server.challenge("quitter", BOT, 60, 0, color="white",
                                               variant="fromPosition", fen=CASTLING_FEN)
            draw_id = await server.challenge("peacemaker", BOT, 60, 0, variant="fromPosition",
                                             fen=ROOK_ENDING_FEN, color="white")
            abort_id = await server.challenge("sleeper", BOT, 60, 0, color="white")

            await wait_for(lambda: all(server.lobby.challenges[c].status == "accepted"
                                       for c in (resign_id, draw_id, abort_id)))
            # The quitter castles king-takes-rook: the bot must read that notation.
            await play_as(server, tokens["quitter"], resign_id, "e1h1")
            await wait_turns(server, resign_id, 2)
            await play_as(server, tokens["quitter"], resign_id, "a2a3")
            await wait_turns(server, resign_id, 4)
            assert await post_as(server, tokens["quitter"],
                                 f"/api/board/game/{resign_id}/resign") == 200

            await play_as(server, tokens["peacemaker"], draw_id, "e1d1")
            await wait_turns(server, draw_id, 2)
            assert await post_as(server, tokens["peacemaker"],
                                 f"/api/board/game/{draw_id}/draw/yes") == 200

            # Every other game is past its abortable start: the sleeper's alone is aborted.
            await wait_for(lambda: all(len(r.moves) >= 2 or r.finished
                                       for r in server.game_records() if r.id != abort_id))
            clock.advance(config.game.abort_after_s + 1)
            records: dict[str, GameRecord] = {}
            for game_id in (resign_id, draw_id, abort_id):
                records[game_id] = await server.wait_for_game_end(game_id, GUARD_S)
            others = [r for r in server.game_records() if r.id not in records]
            assert len(others) == 3
            for record in others:
                records[record.id] = await server.wait_for_game_end(record.id, 90)
            await run.done_with(records)  # its last kibitz lines are out
            records = {game_id: server.game_record(game_id) for game_id in records}
        assert await asyncio.wait_for(run.task, 1) == 0

    assert records[resign_id].status == "resign"
    assert records[resign_id].winner == "black"
    assert records[draw_id].status == "draw"
    assert records[abort_id].status == "aborted"
    assert records[abort_id].moves == ()
    mates = [r for r in records.values() if r.id not in (resign_id, draw_id, abort_id)]
    assert sorted(r.variant for r in mates) == ["chess960", "fromPosition", "standard"]
    for record in mates:
        assert record.status == "mate", (record.variant, record.status)
        assert record.winner == bot_color(record)
    assert castlings(records[resign_id]) >= 1
    for record in records.values():
        assert_legal(record)
        if len(record.moves) >= 2:
            lines = kibitz_lines(record)
            assert lines, f"{record.id}: no kibitz line"
            for line in lines:
                assert len(line) <= 140
                assert "PV " in line and "depth " in line
    assert run.metrics.rejected_moves == 0
    pgn_files = {path.stem for path in (tmp_path / "games").glob("*.pgn")}
    assert pgn_files == set(records) - {abort_id}  # an aborted game is no game



def castlings(record: GameRecord) -> int:
    """How many castling moves the game had."""
    chess960 = record.variant in ("chess960", "fromPosition")
    fen = record.initial_fen
    board = chess.Board(fen, chess960=chess960) if fen and fen != "startpos" else \
        chess.Board(chess960=chess960)
    count = 0
    for uci in record.moves:
        move = board.parse_uci(uci)
        count += board.is_castling(move)
        board.push(move)
    return count


async def test_pondering_on_the_opponents_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """engine.ponder: after each move the engine searches the expected reply until the
    opponent moves; games still finish with every move legal and no search disturbed."""
    # the bot ponders only while every game has a core to itself: one game, two cores
    monkeypatch.setattr("bot.game.mover.CORES", 2)
    quiet_logs()
    config = make_config(tmp_path, "", concurrency=1)
    config = dataclasses.replace(config, engine=dataclasses.replace(config.engine, ponder=True))
    async with SandboxServer(keepalive_s=0.5) as server:
        async with running_bot(server, config) as run:
            await server.start_opponent("thinker", engine=strong_opponent(), movetime_s=0.2,
                                        challenge=ChallengeSpec(BOT, 60, 0, repeat=False))
            (game_id,) = await bot_games(server, 1)
            # End the game on the opponent's turn: on the bot's, a reply found by a ponder hit
            # may be on its way and be refused, as lila refuses a move after the game's end.
            async with asyncio.timeout(GUARD_S):
                while not opponent_to_move(server.game_record(game_id), 16):  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
            server.end_game(game_id, "draw")
        assert run.task.result() == 0
    assert_legal(server.game_record(game_id))
    assert run.metrics.rejected_moves == 0 and run.metrics.engine_restarts == 0
    assert run.metrics.ponders >= 4
