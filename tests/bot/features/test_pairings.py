"""The memory of each pairing (its bound, its file across restarts) and the deviation from it."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import chess
import chess.engine
import pytest

from bot.engines.pool import EngineSpec, start_engine
from bot.engines.searchline import SearchLine, score_cp
from bot.features.book import OpeningBook
from bot.features.pairings import (
    SAME_PLIES,
    DeviationSource,
    PairingMemory,
    PairingObserver,
    PastGame,
)
from bot.game.deviation import choose_deviation, lines_wanted
from bot.game.hooks import Avoid, GameContext, SourcedMove
from bot.lichess.events import GameFull, GameState, Player
from tests.bot.book_files import write_book

SPARRING = (sys.executable, str(Path(__file__).resolve().parents[1] / "sparring_engine.py"))
RUY = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6", "e1g1", "f8e7", "f1e1",
       "b7b5", "a4b3", "d7d6", "c2c3", "e8g8", "h2h3", "c6a5", "b3c2", "c7c5", "d2d4"]


def context(*, rated: bool = True, color: chess.Color = chess.WHITE, opponent: str = "Foe",
            initial_fen: str = "startpos") -> GameContext:
    us, them = Player("kibitz", "Kibitz", "BOT", 1500), Player(opponent.lower(), opponent,
                                                                  "BOT", 1500)
    white, black = (us, them) if color == chess.WHITE else (them, us)
    return GameContext(game_id="NowGame1", variant="standard", speed="blitz", rated=rated,
                       me="Kibitz", color=color, white=white, black=black,
                       initial_fen=initial_fen, clock_initial_s=180.0, clock_increment_s=2.0)


def board_after(moves: list[str]) -> chess.Board:
    board = chess.Board()
    for uci in moves:
        board.push_uci(uci)
    return board


def past(game_id: str, moves: list[str], *, winner: str | None = "white",
         our_color: str = "white") -> PastGame:
    board = chess.Board()
    sans = []
    for uci in moves[:SAME_PLIES]:
        move = chess.Move.from_uci(uci)
        sans.append(board.san(move))
        board.push(move)
    return PastGame(game_id, "standard", "startpos", our_color, tuple(sans), winner, True)


def test_the_memory_survives_a_restart_and_keeps_two_games_per_opponent(tmp_path: Path) -> None:
    path = tmp_path / "pairings.json"
    memory = PairingMemory(path, 10)
    for number in range(3):
        memory.save(memory.add("Foe", past(f"game{number}", RUY)))
    again = PairingMemory(path, 10)
    assert [g.game_id for g in again.games("foe")] == ["game2", "game1"]  # newest first
    assert again.games("FOE")[0] == past("game2", RUY)
    assert len(again.games("foe")[0].sans) == SAME_PLIES


def test_the_memory_forgets_the_opponents_met_least_recently(tmp_path: Path) -> None:
    path = tmp_path / "pairings.json"
    memory = PairingMemory(path, 3)
    for name in ("a", "b", "c", "a", "d"):  # "a" met again: "b" is now the oldest
        memory.save(memory.add(name, past(f"vs-{name}", RUY)))
    assert list(memory.opponents()) == ["c", "a", "d"]
    assert list(PairingMemory(path, 3).opponents()) == ["c", "a", "d"]
    assert list(PairingMemory(path, 2).opponents()) == ["a", "d"]  # a smaller bound at start
    assert len(json.loads(path.read_text())["opponents"]) == 3


def test_an_older_snapshot_never_overwrites_a_newer_one(tmp_path: Path) -> None:
    path = tmp_path / "pairings.json"
    memory = PairingMemory(path, 10)
    older = memory.add("a", past("one", RUY))
    newer = memory.add("b", past("two", RUY))
    memory.save(newer)
    memory.save(older)  # a slower thread's write
    assert list(PairingMemory(path, 10).opponents()) == ["a", "b"]


def test_a_damaged_file_costs_the_memory_not_the_start(tmp_path: Path) -> None:
    path = tmp_path / "pairings.json"
    path.write_text("{not json")
    assert len(PairingMemory(path, 5)) == 0
    path.write_text(json.dumps({"version": 1, "opponents": [
        {"name": "x", "games": [{"game_id": 1}]}, "junk"]}))
    assert len(PairingMemory(path, 5)) == 0


def test_the_moves_to_avoid_are_those_of_a_past_game_the_game_follows() -> None:
    memory = PairingMemory(None, 5)
    memory.add("foe", past("first", RUY))
    other = [*RUY[:5], "f8c5"]
    memory.add("foe", past("second", other, our_color="black"))
    # Both games begin 1.e4 e5 2.Nf3 Nc6 3.Bb5: two moves to avoid at ply 6 (either colour).
    found = memory.to_avoid(board_after(RUY[:5]), context(color=chess.BLACK))
    assert sorted(m.uci() for m, _ in found) == ["a7a6", "f8c5"]
    assert memory.to_avoid(board_after(RUY[:2]), context())[0][0].uci() == "g1f3"
    assert memory.to_avoid(board_after(["d2d4", "d7d5"]), context()) == []  # left the line
    assert memory.to_avoid(board_after(RUY[:20]), context()) == []  # ply 21: beyond botFarming
    assert memory.to_avoid(board_after(RUY[:2]), context(opponent="Other")) == []
    assert memory.to_avoid(board_after(RUY[:2]), context(initial_fen=chess.STARTING_FEN)) == []


async def test_a_rated_game_avoids_a_past_move_and_a_book_offers_another(tmp_path: Path) -> None:
    memory = PairingMemory(None, 5)
    memory.add("foe", past("first", RUY))
    board = board_after(RUY[:2])
    assert await DeviationSource(memory, 30).choose(board, context(rated=False)) is None
    answer = await DeviationSource(memory, 30).choose(board, context())
    assert isinstance(answer, Avoid)
    assert answer.moves == {chess.Move.from_uci("g1f3")} and answer.margin_cp == 30
    assert "game first at ply 3" in answer.why
    book_file = tmp_path / "book.bin"
    write_book(book_file, [(board, "g1f3", 50), (board, "b1c3", 5), (board, "f1c4", 9)])
    with OpeningBook({"standard": [book_file]}) as book:
        answer = await DeviationSource(memory, 30, (book,)).choose(board, context())
    assert answer == SourcedMove(chess.Move.from_uci("f1c4"), "book")  # the heaviest other


async def test_the_observer_remembers_a_finished_game_and_skips_an_aborted_one(
        tmp_path: Path) -> None:
    memory = PairingMemory(tmp_path / "pairings.json", 5)
    start = GameState((), 180.0, 180.0, 2.0, 2.0, "started")
    full = GameFull("NowGame1", "standard", "blitz", True, "startpos",
                    Player("kibitz", "Kibitz", "BOT", 1500), Player("foe", "Foe", "BOT", 1500),
                    180.0, 2.0, start)
    observer = PairingObserver(memory, full, context())
    observer.game_state(GameState(tuple(RUY), 1.0, 1.0, 2.0, 2.0, "resign", "black"))
    await PairingObserver(memory, full, context()).game_finished("aborted", None)
    assert len(memory) == 0
    await observer.game_finished("resign", "black")
    [remembered] = PairingMemory(tmp_path / "pairings.json", 5).games("foe")
    assert remembered.winner == "black" and remembered.our_color == "white"
    assert remembered.rated and remembered.sans[:3] == ("e4", "e5", "Nf3")
    assert len(remembered.sans) == SAME_PLIES


def line(move: str, cp: int) -> SearchLine:
    return SearchLine(depth=10, score=chess.engine.PovScore(chess.engine.Cp(cp), chess.WHITE),
                      pv=(chess.Move.from_uci(move),))


def test_a_deviation_never_leaves_the_margin() -> None:
    moves = [m.uci() for m in chess.Board().legal_moves]
    rng = random.Random(65)
    for _ in range(2000):
        picked = rng.sample(moves, rng.randint(1, 6))
        lines = [line(m, rng.randint(-200, 200)) for m in picked]
        avoid = {chess.Move.from_uci(m) for m in rng.sample(picked, rng.randint(1, len(picked)))}
        margin = rng.choice((0, 10, 30, 60))
        best = max(score_cp(x.score.pov(chess.WHITE)) for x in lines if x.score)
        chosen = choose_deviation(lines, avoid, margin, chess.WHITE)
        within = [x for x in lines if x.pv[0] not in avoid and x.score
                  and score_cp(x.score.pov(chess.WHITE)) >= best - margin]
        if chosen is None:
            assert not within
            continue
        assert chosen.line.pv[0] not in avoid
        assert chosen.loss_cp <= margin
        assert chosen.loss_cp == best - max(score_cp(x.score.pov(chess.WHITE))
                                            for x in within if x.score)


def test_a_deviation_is_seen_from_the_side_to_move() -> None:
    lines = [line("e7e5", 10), line("c7c5", -20)]  # white's view: black's c5 scores best
    chosen = choose_deviation(lines, {chess.Move.from_uci("c7c5")}, 30, chess.BLACK)
    assert chosen is not None and chosen.line.pv[0].uci() == "e7e5" and chosen.loss_cp == 30
    assert choose_deviation(lines, {chess.Move.from_uci("c7c5")}, 29, chess.BLACK) is None
    assert lines_wanted(1, 20) == 3 and lines_wanted(5, 2) == 2


@pytest.mark.parametrize("multipv", [1, 3])
async def test_an_engine_that_declares_multipv_ranks_several_moves(multipv: int) -> None:
    engine = await start_engine(EngineSpec(SPARRING))
    try:
        assert engine.multipv
        thought = await engine.think(chess.Board(), chess.engine.Limit(nodes=1), hard_limit_s=10,
                                     game="g", multipv=multipv)
        assert len(thought.lines) == (multipv if multipv > 1 else 0)
        assert [x.pv[0] for x in thought.lines[:1]] == ([thought.move] if multipv > 1 else [])
        again = await engine.think(chess.Board(), chess.engine.Limit(nodes=1), hard_limit_s=10,
                                   game="g")
        assert again.lines == ()  # MultiPV back at 1 for the next search
    finally:
        await engine.close()
