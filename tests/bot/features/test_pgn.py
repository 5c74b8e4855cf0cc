"""PGN records: headers, clocks, evals with PVs, grouping into files, completion from an export."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Any

import chess
import chess.engine
import chess.pgn
from aiohttp import ClientSession, web

from bot.engines.searchline import SearchLine
from bot.features.pgn import (
    GameRecord,
    PgnObserver,
    SearchNote,
    build_game,
    fetch_export,
    finished_pgn,
    game_result,
    merge_export,
    pgn_path,
    save_game,
    save_unwatched,
    termination,
)
from bot.game.hooks import GameContext, SourcedMove
from bot.lichess.events import GameFull, GameState, parse_game_event
from bot.ops.config import PgnConfig
from tests.bot.loopback import serving

MOVES = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "e1h1"]


def _full(moves: list[str] | None = None, **extra: Any) -> GameFull:
    raw = {
        "type": "gameFull", "id": "AbCd1234", "variant": {"key": "standard"},
        "speed": "blitz", "rated": True, "clock": {"initial": 180000, "increment": 2000},
        "white": {"id": "kibitz", "name": "Kibitz", "title": "BOT", "rating": 1500},
        "black": {"id": "magnus", "name": "Magnus", "title": None, "rating": 2800},
        "initialFen": "startpos",
        "state": {"type": "gameState", "moves": " ".join(moves or []), "wtime": 180000,
                  "btime": 180000, "winc": 2000, "binc": 2000, "status": "started"},
    }
    raw.update(extra)
    event = parse_game_event(raw)
    assert isinstance(event, GameFull)
    return event


def _state(moves: list[str], wtime_s: float, btime_s: float, status: str = "started",
           **extra: Any) -> GameState:
    return GameState(tuple(moves), wtime_s, btime_s, 2.0, 2.0, status, **extra)


def _play(record: GameRecord, moves: list[str]) -> None:
    """Feed one gameState per move; white's clock ticks 1 s a move, black's 2 s."""
    for n in range(1, len(moves) + 1):
        record.update(_state(moves[:n], 180.0 - (n + 1) // 2, 180.0 - 2 * (n // 2)))


def _score(cp: int) -> chess.engine.PovScore:
    return chess.engine.PovScore(chess.engine.Cp(cp), chess.WHITE)


def _files(directory: Path) -> list[Path]:
    return list(directory.iterdir())


def _record(moves: list[str] | None = None) -> GameRecord:
    return GameRecord.from_game_full(_full(moves), server_url="http://127.0.0.1:9663/",
                                     me="Kibitz")


def test_a_full_record_has_headers_clocks_evals_and_pv() -> None:
    record = _record()
    _play(record, MOVES)
    pv = [chess.Move.from_uci(u) for u in ("g1f3", "b8c6", "f1b5", "a7a6")]
    record.note_search(2, SearchNote(SearchLine(depth=12, score=_score(31), pv=tuple(pv))))
    record.note_search(0, SearchNote(None, source="book"))
    text = finished_pgn(record, "resign", "white")
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None
    headers = game.headers
    assert headers["Result"] == "1-0" and headers["Termination"] == "Normal"
    assert headers["Site"] == "http://127.0.0.1:9663/AbCd1234"
    assert headers["Event"] == "Rated Blitz game" and headers["TimeControl"] == "180+2"
    assert headers["WhiteElo"] == "1500" and headers["WhiteTitle"] == "BOT"
    assert headers["Variant"] == "Standard" and "FEN" not in headers
    nodes = list(game.mainline())
    assert [n.move.uci() for n in nodes] == [*MOVES[:6], "e1g1"]
    assert nodes[0].clock() == 179.0 and nodes[1].clock() == 178.0 and nodes[6].clock() == 176.0
    assert "book" in nodes[0].comment
    assert nodes[2].eval() == _score(31) and nodes[2].eval_depth() == 12
    # The PV after 2.Nf3: 2...Nc6 was played, then 3.Bb5 a6 hangs off 3.Bc4 as a variation.
    assert [v.move.uci() for v in nodes[3].variations] == ["f1c4", "f1b5"]
    assert "[%eval 0.31,12]" in text and "( 3. Bb5 a6 )" in text
    assert "[%clk 0:02:59]" in text


def test_results_and_terminations() -> None:
    assert game_result("mate", "black") == "0-1"
    assert game_result("draw", None) == "1/2-1/2" and game_result("stalemate", None) == "1/2-1/2"
    assert game_result("aborted", None) == "*"
    assert termination("outoftime") == "Time forfeit" and termination("mate") == "Normal"
    assert termination("timeout") == "Abandoned"


def test_a_takeback_drops_moves_clocks_and_notes() -> None:
    record = _record()
    _play(record, MOVES[:4])
    record.note_search(2, SearchNote(SearchLine(depth=9, score=_score(20))))
    record.update(_state(MOVES[:2], 170.0, 170.0))
    assert record.moves == MOVES[:2] and 2 not in record.notes and 3 not in record.clocks_s
    record.update(_state([*MOVES[:2], "d2d4"], 169.0, 170.0))
    game = build_game(record, "draw", None)
    assert [n.move.uci() for n in game.mainline()][-1] == "d2d4"


def test_set_up_positions_and_chess960_carry_their_fen() -> None:
    fen = "4k3/8/8/8/8/8/4P3/4K3 b - - 0 1"
    full = _full(initialFen=fen, variant={"key": "fromPosition"})
    record = GameRecord.from_game_full(full, server_url="http://x", me="Kibitz")
    record.update(_state(["e8d7"], 180.0, 179.0))
    record.update(_state(["e8d7", "e2e4"], 178.0, 179.0))
    game = build_game(record, "draw", None)
    assert game.headers["FEN"] == fen and game.headers["SetUp"] == "1"
    assert game.headers["Variant"] == "From Position"
    nodes = list(game.mainline())
    assert nodes[0].clock() == 179.0 and nodes[1].clock() == 178.0  # black moved first


def test_an_illegal_move_ends_the_record_without_error() -> None:
    record = _record()
    record.update(_state(["e2e4", "e2e4"], 180.0, 180.0))
    assert [n.move.uci() for n in build_game(record, "draw", None).mainline()] == ["e2e4"]


def test_files_per_game_per_opponent_or_single(tmp_path: Path) -> None:
    assert pgn_path(tmp_path, "game", game_id="AbCd1234", opponent="x") == tmp_path / "AbCd1234.pgn"
    assert pgn_path(tmp_path, "opponent", game_id="g", opponent="Mag/../nus") == (
        tmp_path / "mag____nus.pgn")
    assert pgn_path(tmp_path, "single", game_id="g", opponent="x") == tmp_path / "games.pgn"
    config = PgnConfig(enabled=True, dir=tmp_path / "games", grouping="opponent")
    for _ in range(2):
        record = _record()
        _play(record, MOVES)
        path = save_game(config, record, status="mate", winner="white", opponent="Magnus")
        assert path == tmp_path / "games" / "magnus.pgn"
    text = (tmp_path / "games" / "magnus.pgn").read_text()
    stream = io.StringIO(text)
    games = [chess.pgn.read_game(stream), chess.pgn.read_game(stream)]
    assert all(g is not None and g.headers["GameId"] == "AbCd1234" for g in games)
    assert save_game(replace(config, enabled=False), record, status="mate", winner="white",
                     opponent="Magnus") is None


EXPORT = """[Event "Rated blitz game"]
[Site "https://lichess.org/AbCd1234"]
[White "Kibitz"]
[Black "Magnus"]
[Result "0-1"]
[WhiteElo "1500"]
[BlackElo "2800"]
[Termination "Normal"]

1. e4 { [%clk 0:03:00] } 1... e5 { [%clk 0:03:00] } 2. Nf3 { [%clk 0:02:58] }
2... Nc6 { [%clk 0:02:55] } 3. Bc4 { [%clk 0:02:50] } 3... Nf6 { [%clk 0:02:50] }
4. O-O { [%clk 0:02:45] } 0-1
"""


def test_a_restarted_game_is_completed_from_the_export() -> None:
    record = _record(MOVES[:4])  # we joined after four plies
    assert not record.complete
    record.update(_state(MOVES[:5], 170.0, 175.0))
    record.note_search(4, SearchNote(SearchLine(
        depth=15, score=_score(-45),
        pv=(chess.Move.from_uci("f1c4"), chess.Move.from_uci("g8f6")))))
    record.update(_state(MOVES, 170.0, 174.0))
    text = finished_pgn(record, "resign", "black", EXPORT)
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None and game.headers["Site"] == "https://lichess.org/AbCd1234"
    nodes = list(game.mainline())
    assert nodes[0].clock() == 180.0 and nodes[3].clock() == 175.0
    assert nodes[4].eval() == _score(-45) and game.headers["Annotator"] == "Kibitz"
    # Without an export, or with one of another game, our own partial record is used.
    assert "[%clk" not in finished_pgn(record, "resign", "black", None).split("1. e4")[1][:20]
    assert merge_export(record, EXPORT.replace("4. O-O", "4. d3")) is None
    assert merge_export(record, "garbage {") is None
    fallback = chess.pgn.read_game(io.StringIO(finished_pgn(record, "resign", "black", "x")))
    assert fallback is not None and fallback.headers["Result"] == "0-1"


async def test_the_observer_completes_a_restarted_game_from_a_real_export(
        tmp_path: Path) -> None:
    async def export(request: web.Request) -> web.Response:
        if request.match_info["id"] != "AbCd1234":
            return web.json_response({"error": "Not found"}, status=404)
        assert request.query["clocks"] == "true"
        return web.Response(text=EXPORT, content_type="application/x-chess-pgn")

    app = web.Application()
    app.router.add_get("/game/export/{id}", export)
    full = _full(MOVES[:4])
    context = GameContext(game_id=full.id, variant="standard", speed="blitz", rated=True,
                          me="Kibitz", color=chess.WHITE, white=full.white, black=full.black,
                          initial_fen="startpos", clock_initial_s=180.0, clock_increment_s=2.0)
    async with serving(app) as url, ClientSession() as session:
        assert await fetch_export(session, url, "zzzzzzzz") is None
        config = PgnConfig(enabled=True, dir=tmp_path, grouping="single")
        observer = PgnObserver(config, full, context, server_url=url,
                               fetch_export=lambda gid: fetch_export(session, url, gid))
        observer.game_state(_state(MOVES[:5], 170.0, 175.0))
        board = chess.Board()
        for uci in MOVES[:4]:
            board.push_uci(uci)
        observer.our_move(4, board, SourcedMove(
            chess.Move.from_uci("f1c4"), "engine",
            SearchLine(depth=15, score=_score(-45), pv=(chess.Move.from_uci("f1c4"),))))
        observer.game_state(_state(MOVES, 170.0, 174.0, status="resign", winner="black"))
        await observer.game_finished("resign", "black")
    assert observer.written == tmp_path / "games.pgn"
    game = chess.pgn.read_game(io.StringIO(observer.written.read_text()))
    assert game is not None and game.headers["Site"] == "https://lichess.org/AbCd1234"
    nodes = list(game.mainline())
    assert nodes[0].clock() == 180.0 and nodes[4].eval() == _score(-45)


async def test_aborted_games_are_not_recorded(tmp_path: Path) -> None:
    full = _full()
    context = GameContext(game_id=full.id, variant="standard", speed="blitz", rated=True,
                          me="Kibitz", color=chess.WHITE, white=full.white, black=full.black,
                          initial_fen="startpos", clock_initial_s=180.0, clock_increment_s=2.0)
    observer = PgnObserver(PgnConfig(enabled=True, dir=tmp_path), full, context,
                           server_url="http://x")
    observer.game_state(_state(["e2e4"], 180.0, 180.0, status="aborted"))
    await observer.game_finished("aborted", None)
    assert observer.written is None and not _files(tmp_path)


def test_a_pv_after_the_last_move_never_extends_the_game() -> None:
    record = _record()
    _play(record, MOVES[:3])
    pv = tuple(chess.Move.from_uci(u) for u in ("g1f3", "b8c6", "f1b5"))
    record.note_search(2, SearchNote(SearchLine(depth=10, score=_score(20), pv=pv)))
    game = build_game(record, "resign", "white")
    assert [n.move.uci() for n in game.mainline()] == MOVES[:3]
    assert game.end().eval() == _score(20)


def test_castling_from_a_set_up_position_in_either_notation() -> None:
    fen = "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8"
    full = _full(initialFen=fen, variant={"key": "fromPosition"})
    record = GameRecord.from_game_full(full, server_url="http://x", me="Kibitz")
    record.update(_state(["e1h1"], 179.0, 180.0))
    record.update(_state(["e1h1", "e8c8"], 179.0, 178.0))
    text = finished_pgn(record, "draw", None)
    assert "8. O-O { [%clk 0:02:59] } 8... O-O-O" in text and '[FEN "' + fen + '"]' in text
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None and len(list(game.mainline())) == 2


def test_a_game_ended_between_visits_is_written_from_a_finished_readable_export(
        tmp_path: Path) -> None:
    config = PgnConfig(dir=tmp_path)
    unfinished = '[Site "x"]\n[Result "*"]\n\n1. e4 *\n'
    illegal = '[Result "1-0"]\n\n1. e4 e5 2. Ke3 1-0\n'
    for exported in (unfinished, illegal, ""):
        assert save_unwatched(config, "g1", opponent="pal", exported_pgn=exported) is None
    assert not list(tmp_path.iterdir())
    mated = '[Site "x/g1"]\n[Result "0-1"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n'
    path = save_unwatched(config, "g1", opponent="pal", exported_pgn=mated)
    assert path == tmp_path / "g1.pgn"
    game = chess.pgn.read_game(io.StringIO(path.read_text(encoding="utf-8")))
    assert game is not None and game.headers["Result"] == "0-1"
    assert game.end().board().is_checkmate()
    assert save_unwatched(replace(config, enabled=False), "g2", opponent="pal",
                          exported_pgn=mated) is None
