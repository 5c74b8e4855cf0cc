"""The memory of each pairing against lila's botFarming, on the sandbox (sandbox/farming.py,
after lila FarmBoostDetection.scala): two deterministic players replay every game they
played before in the same colours, and a rated game that repeats one of the pair's last two
games' first 20 plies and winner is left unrated. With the memory the bot leaves the line."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import chess

from bot.ops.config import Config, parse_config
from sandbox.games import Game
from sandbox.server import SandboxServer
from tests.bot.e2e_support import BOT, quiet_logs, running_bot, wait_for

SPARRING = [sys.executable, str(Path(__file__).with_name("sparring_engine.py"))]
OPPONENT = "sparring"
PLIES = 22  # past the 20 that botFarming compares; then the opponent resigns
GAMES = 6


def sparring_config(tmp_path: Path, *, memory: bool) -> Config:
    command = ", ".join(f'"{part}"' for part in SPARRING)
    return parse_config(f"""
state_dir: "{tmp_path / 'state'}"
engine:
  command: [{command}]
  first_move_s: 0.2
  max_move_s: 0.05
game:
  abort_after_s: 30
  shutdown_grace_s: 5
chat:
  kibitz_every: 0
pgn:
  dir: "{tmp_path / 'games'}"
log:
  status_interval_s: 0
watch:
  enabled: false
openings:
  memory: {'true' if memory else 'false'}
  deviation_margin_cp: 30
""", "test config")


def played_out(game: Game) -> bool:
    """The game has reached PLIES plies, so the opponent may resign it."""
    return len(game.uci_moves) >= PLIES


async def rated_games(tmp_path: Path, *, memory: bool) -> SandboxServer:
    """Six rated games in alternating colours, each resigned by the opponent after PLIES
    plies; the sandbox they were played on."""
    quiet_logs()
    async with SandboxServer() as server:
        await server.start_opponent(OPPONENT, bot=True, engine=SPARRING, movetime_s=0.01)
        async with running_bot(server, sparring_config(tmp_path, memory=memory)) as run:
            for number in range(GAMES):
                ours = chess.WHITE if number % 2 == 0 else chess.BLACK
                white, black = (BOT, OPPONENT) if ours == chess.WHITE else (OPPONENT, BOT)
                game_id = await server.pair(white, black, 180, 2, rated=True)
                game = server.game(game_id)
                await wait_for(functools.partial(played_out, game))
                server.end_game(game_id, "resign", "white" if ours == chess.WHITE else "black")
                await run.done_with([game_id])
        return server


async def test_with_the_memory_no_rated_game_is_left_unrated(tmp_path: Path) -> None:
    server = await rated_games(tmp_path, memory=True)
    games = [g for g in server.lobby.games.values() if g.rated]
    assert len(games) == GAMES
    assert server.lobby.unrated_games == []
    assert all(g.rating_diffs for g in games)
    state = json.loads((tmp_path / "state" / "pairings.json").read_text())
    [remembered] = state["opponents"]
    assert remembered["name"] == OPPONENT and len(remembered["games"]) == 2
    assert all(len(g["sans"]) == 20 for g in remembered["games"])


async def test_without_the_memory_the_repeated_games_are_unrated(tmp_path: Path) -> None:
    server = await rated_games(tmp_path, memory=False)
    # Games 3 to 6 replay game 1 or 2 (the same colours, the same winner); game 2 may also
    # replay game 1 with the colours swapped (the same players on both sides).
    assert len(server.lobby.unrated_games) >= GAMES - 2
    assert not (tmp_path / "state" / "pairings.json").exists()
