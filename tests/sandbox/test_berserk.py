"""berserk, the official Python client, plays a whole game on the sandbox against the
built-in opponent: event stream, accepting the challenge, the game stream, moves and chat."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

import berserk
import chess

from sandbox.opponent import ChallengeSpec
from sandbox.server import SandboxServer
from tests.sandbox.spec import GUARD_S

PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5,
                chess.QUEEN: 9, chess.KING: 0}
GREETING = "hello from berserk"


@dataclass
class BerserkGame:
    game_id: str = ""
    color: str = ""
    moves_sent: int = 0
    final_state: dict[str, Any] = field(default_factory=dict)
    chat: list[tuple[str, str]] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    online: list[str] = field(default_factory=list)


def greedy_move(board: chess.Board, rng: random.Random) -> chess.Move:
    """Mate if possible, else the biggest capture, else any move: ends games quickly."""
    moves = list(board.legal_moves)
    for move in moves:
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return move

    def gain(move: chess.Move) -> int:
        victim = board.piece_at(move.to_square)
        return PIECE_VALUES[victim.piece_type] if victim else 0

    best = max(gain(m) for m in moves)
    return rng.choice([m for m in moves if gain(m) == best])


def play_with_berserk(url: str, token: str, username: str) -> BerserkGame:
    """Run in a thread: berserk is a blocking client."""
    session = berserk.TokenSession(token)
    client = berserk.Client(session=session, base_url=url)
    result = BerserkGame()
    rng = random.Random(7)
    try:
        assert client.account.get()["id"] == username
        for event in client.bots.stream_incoming_events():
            result.events.append(event["type"])
            if event["type"] == "challenge":
                dest = event["challenge"]["destUser"]
                assert dest is not None  # every challenge here is to a named account
                if dest["id"] == username:
                    client.bots.accept_challenge(event["challenge"]["id"])
            elif event["type"] == "gameStart":
                result.game_id = event["game"]["gameId"]
                result.color = event["game"]["color"]
                # The event stream is open: the account counts as an online bot.
                result.online = [user["id"] for user in client.bots.get_online_bots()]
                break
        my_color = result.color == "white"
        board = chess.Board()
        for item in client.bots.stream_game_state(result.game_id):
            if item["type"] == "gameFull":
                fen = item["initialFen"]
                board = chess.Board(None if fen == "startpos" else fen)
                client.bots.post_message(result.game_id, GREETING)
                state = item["state"]
            elif item["type"] == "chatLine":
                result.chat.append((item["username"], item["text"]))
                continue
            elif item["type"] == "gameState":
                state = item
            else:
                continue
            if state["status"] != "started":
                result.final_state = state
                break
            board.reset()
            for uci in state["moves"].split():
                board.push_uci(uci)
            if board.turn == my_color:
                client.bots.make_move(result.game_id, greedy_move(board, rng).uci())
                result.moves_sent += 1
        return result
    finally:
        session.close()


async def test_berserk_plays_a_whole_game_against_the_builtin_opponent(
        sandbox: SandboxServer) -> None:
    token = sandbox.add_account("berserker", bot=True)
    await sandbox.start_opponent(
        "sparring", challenge=ChallengeSpec("berserker", 300, 3, repeat=False),
        greeting="Good luck, have fun", seed=11)
    played = await asyncio.to_thread(play_with_berserk, sandbox.url, token, "berserker")
    assert played.events[:2] == ["challenge", "gameStart"]
    assert played.online == ["berserker"]
    record = await sandbox.wait_for_game_end(played.game_id, timeout_s=GUARD_S)
    assert record.finished
    assert played.final_state["status"] == record.status
    assert " ".join(record.moves) == played.final_state["moves"]
    assert played.moves_sent == sum(1 for i in range(len(record.moves))
                                    if (i % 2 == 0) == (played.color == "white"))
    assert played.moves_sent > 0
    assert ("berserker", GREETING) in played.chat
    assert ("sparring", "Good luck, have fun") in [(line.username, line.text)
                                                   for line in record.chat]
    # berserk reads the finished game back, as JSON and as PGN.
    client = berserk.Client(session=berserk.TokenSession(token), base_url=sandbox.url)
    exported = await asyncio.to_thread(client.games.export, played.game_id)
    assert isinstance(exported, dict)  # JSON unless asked for PGN
    assert exported["id"] == played.game_id and exported["status"] == record.status
    pgn = await asyncio.to_thread(client.games.export, played.game_id, as_pgn=True)
    assert f'[Site "{sandbox.url}/{played.game_id}"]' in pgn
