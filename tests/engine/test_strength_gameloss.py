"""The game-record loss tool: phases, the summary by player, and a run with Stockfish."""

from __future__ import annotations

import shutil
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import pytest

from tools.common.engines import resolve_engine
from tools.common.referee import move_comment
from tools.strength import gameloss
from tools.strength.cploss import Reference

STOCKFISH = shutil.which("stockfish") or "/usr/games/stockfish"
needs_stockfish = pytest.mark.skipif(not Path(STOCKFISH).is_file(),
                                     reason="stockfish is not installed (make stockfish)")


def test_the_phase_is_the_material_on_the_board() -> None:
    assert gameloss.phase_of(chess.Board()) == "opening"
    # queens off, a bishop and a knight each traded: 12
    middlegame = chess.Board("r1b1k2r/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/R1B1K2R w KQkq - 0 8")
    assert gameloss.phase_of(middlegame) == "middlegame"
    assert gameloss.phase_of(chess.Board("8/5k2/8/4p3/8/8/4P3/R3K3 w - - 0 40")) == "ending"


def test_the_summary_splits_each_player_s_loss_by_phase() -> None:
    moves = [gameloss.ScoredMove(1, 10, "a", "opening", 0),
             gameloss.ScoredMove(1, 30, "a", "middlegame", 350),
             gameloss.ScoredMove(1, 31, "b", "middlegame", 120),
             gameloss.ScoredMove(1, 60, "a", "ending", 50)]
    rows = {(row.player, row.phase): row for row in gameloss.summarize_moves(moves)}
    assert set(rows) == {("a", "opening"), ("a", "middlegame"), ("a", "ending"), ("a", "all"),
                         ("b", "middlegame"), ("b", "all")}
    assert rows["a", "all"].summary.positions == 3
    assert rows["a", "all"].summary.mean_loss_cp == pytest.approx(400 / 3)
    assert (rows["a", "middlegame"].mistakes, rows["a", "middlegame"].summary.blunders) == (1, 1)
    assert (rows["b", "all"].mistakes, rows["b", "all"].summary.blunders) == (1, 0)
    text = gameloss.table(gameloss.summarize_moves(moves))
    assert "| a | middlegame | 1 | 350.0" in text and "| 88% |" in text  # 350 of a's 400


def _write_games(path: Path) -> None:
    """Two short games: in the first white leaves its queen to a pawn on move 3; the second
    starts from a FEN (a book opening) and no one blunders."""
    first = chess.pgn.Game.from_board(_played(chess.Board(), ["e4", "e5", "Qh5", "Nc6",
                                                              "Qxe5+", "Nxe5"]))
    first.headers["White"], first.headers["Black"] = "careless", "careful"
    start = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    second = chess.pgn.Game.from_board(_played(start, ["Bb5", "a6", "Ba4", "Nf6"]))
    second.headers["White"], second.headers["Black"] = "careful", "careless"
    path.write_text(f"{first}\n\n{second}\n\n")


def _played(board: chess.Board, sans: list[str]) -> chess.Board:
    for san in sans:
        board.push_san(san)
    return board


@needs_stockfish
def test_a_blunder_is_charged_to_its_player_and_a_rerun_comes_from_the_cache(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    games = tmp_path / "games.pgn"
    _write_games(games)
    cache = tmp_path / "cache.json"
    reference = Reference(resolve_engine("stockfish"), 8, cache)
    try:
        moves = gameloss.score_games(games, reference)
    finally:
        reference.close()
    assert len(moves) == 10 and {m.game for m in moves} == {1, 2}
    # the second game's moves are scored from its FEN: white's first move is ply 4
    assert next(m.ply for m in moves if m.game == 2) == 4
    queen = next(m for m in moves if m.game == 1 and m.ply == 4)  # 3. Qxe5+?? Nxe5
    assert queen.player == "careless" and queen.phase == "opening" and queen.loss_cp >= 300
    assert all(m.loss_cp < 300 for m in moves if m.player == "careful")
    assert gameloss.main([str(games), "--depth", "8", "--cache", str(cache),
                          "--player", "careless"]) == 0
    out = capsys.readouterr().out
    assert "5 moves of 2 games, stockfish at depth 8 (0 searches)" in out
    assert "| careless | opening | 5 |" in out


def test_bad_input_is_named(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no such file"):
        gameloss.main([str(tmp_path / "missing.pgn")])
    games = tmp_path / "games.pgn"
    _write_games(games)
    with pytest.raises(SystemExit, match="no moves to score by nobody"):
        gameloss.main([str(games), "--player", "nobody", "--cache", str(tmp_path / "c.json"),
                       "--reference", "/nonexistent/engine"])


def test_the_match_tools_comments_give_each_move_s_depth_and_time() -> None:
    score = chess.engine.PovScore(chess.engine.Cp(31), chess.WHITE)
    mate = chess.engine.PovScore(chess.engine.Mate(-4), chess.BLACK)
    assert gameloss.parse_comment(move_comment({"score": score, "depth": 15}, 0.5234)) == \
        (15, 0.523)
    assert gameloss.parse_comment(move_comment({"score": mate, "depth": 22}, 1.0)) == (22, 1.0)
    assert gameloss.parse_comment(move_comment({}, 0.25)) == (None, 0.25)
    assert gameloss.parse_comment("book move") == (None, None)
    moves = [gameloss.ScoredMove(1, 10, "a", "opening", 0, 12, 0.2),
             gameloss.ScoredMove(1, 12, "a", "opening", 40, 14, 0.4),
             gameloss.ScoredMove(1, 60, "a", "ending", 10)]
    rows = {(row.player, row.phase): row for row in gameloss.summarize_moves(moves)}
    assert rows["a", "opening"].mean_move_s == pytest.approx(0.3)
    assert rows["a", "opening"].mean_depth == 13
    assert rows["a", "ending"].mean_move_s is None
    assert "| a | ending | 1 | 10.0 ± 0.0 | 0 | 0 | 20% | - | - |" in gameloss.table(
        gameloss.summarize_moves(moves))
