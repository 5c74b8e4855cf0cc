"""Any Lichess client can play the sandbox's free human account: berserk, the official
Python client, plays the human side of a whole game against the running bot over the
Board API (challenge, event stream, game stream, moves, resignation), then reads the
result back as every client would (game export as JSON and PGN, users' status)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import berserk
import chess

from sandbox.server import DEFAULT_HUMAN, SandboxServer
from tests.bot.e2e_support import BOT, GUARD_S, make_config, quiet_logs, running_bot, wait_for

# berserk resigns after this many of its own moves: a whole game, kept short.
BERSERK_MOVES = 3


@dataclass
class Played:
    game_id: str = ""
    events: list[str] = field(default_factory=list)
    final_state: dict[str, Any] = field(default_factory=dict)
    moves_sent: list[str] = field(default_factory=list)


def play_human_side(url: str, token: str) -> Played:
    """Run in a thread (berserk blocks): challenge the bot as white, play a few quiet
    moves, resign, and read the game stream to its end."""
    session = berserk.TokenSession(token)
    client = berserk.Client(session=session, base_url=url)
    played = Played()
    try:
        assert client.account.get()["id"] == DEFAULT_HUMAN
        challenge = client.challenges.create(BOT, rated=False, clock_limit=180,
                                             clock_increment=2, color="white")
        for event in client.board.stream_incoming_events():
            played.events.append(event["type"])
            if event["type"] == "gameStart" and event["game"]["gameId"] == challenge["id"]:
                played.game_id = event["game"]["gameId"]
                break
        for item in client.board.stream_game_state(played.game_id):
            state = item["state"] if item["type"] == "gameFull" else item
            if item["type"] not in ("gameFull", "gameState"):
                continue
            if state["status"] != "started":
                played.final_state = state
                break
            board = chess.Board()
            for uci in state["moves"].split():
                board.push_uci(uci)
            if board.turn != chess.WHITE:
                continue
            if len(played.moves_sent) == BERSERK_MOVES:
                client.board.resign_game(played.game_id)
                continue
            move = next(m for m in board.legal_moves
                        if not board.is_capture(m) and not board.gives_check(m)).uci()
            client.board.make_move(played.game_id, move)
            played.moves_sent.append(move)
        return played
    finally:
        session.close()


async def test_berserk_plays_the_free_human_account_against_the_bot(tmp_path: Path) -> None:
    quiet_logs()
    # As `kibitz sandbox --no-opponent`: both accounts, and nobody playing the human one.
    async with SandboxServer(keepalive_s=0.5) as server:
        token = server.add_account(DEFAULT_HUMAN, bot=False)
        async with running_bot(server, make_config(tmp_path)):
            played = await asyncio.to_thread(play_human_side, server.url, token)
            record = await server.wait_for_game_end(played.game_id, GUARD_S)
            pgn_file = tmp_path / "games" / f"{played.game_id}.pgn"
            await wait_for(pgn_file.exists)
        client = berserk.Client(session=berserk.TokenSession(token), base_url=server.url)
        exported = await asyncio.to_thread(client.games.export, played.game_id)
        pgn = await asyncio.to_thread(client.games.export, played.game_id, as_pgn=True)
        statuses = await asyncio.to_thread(client.users.get_realtime_statuses, BOT,
                                           DEFAULT_HUMAN)

    assert "gameStart" in played.events
    assert (record.white, record.black) == (DEFAULT_HUMAN, BOT)
    assert (record.status, record.winner) == ("resign", "black")
    assert played.final_state["status"] == "resign"
    assert played.final_state["winner"] == "black"
    assert list(record.moves[0::2]) == played.moves_sent
    assert len(record.moves) == 2 * BERSERK_MOVES  # the bot answered every move
    assert isinstance(exported, dict)  # JSON unless asked for PGN
    assert (exported["status"], exported["winner"]) == ("resign", "black")
    assert '[Result "0-1"]' in pgn and '[Result "0-1"]' in pgn_file.read_text()
    assert [s["id"] for s in statuses] == [BOT, DEFAULT_HUMAN]
    assert not any(s.get("playing") for s in statuses)
