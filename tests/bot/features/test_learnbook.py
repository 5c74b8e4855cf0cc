"""`kibitz book build`: a Polyglot book from the bot's own games, weighted by its results."""

from __future__ import annotations

from pathlib import Path

import chess
import chess.polyglot
import pytest

from bot import cli
from bot.cli import ExitCode
from bot.features.learnbook import LearnError, build_book, learned_book_path

DATA = Path(__file__).resolve().parents[2] / "data" / "learn"
GAMES = DATA / "kibitz_games.pgn"  # kibitz: 1.e4 won and lost, 1.d4 drawn, ...e5 won
CORRUPT = DATA / "corrupt.pgn"  # its second game has an illegal move


def weights(book: Path, board: chess.Board) -> dict[str, int]:
    with chess.polyglot.open_reader(book) as reader:
        return {entry.move.uci(): entry.weight for entry in reader.find_all(board)}


def after(*moves: str) -> chess.Board:
    board = chess.Board()
    for uci in moves:
        board.push_uci(uci)
    return board


def test_each_move_the_bot_played_weighs_its_results_plus_a_prior(tmp_path: Path) -> None:
    out = tmp_path / "learned.bin"
    learned, entries = build_book([GAMES], out)
    # 1.e4: a win (2) and a loss (0) plus the prior 1; 1.d4: a draw (1) plus 1.
    assert weights(out, chess.Board()) == {"e2e4": 3, "d2d4": 2}
    # With black, after 1.e4 the bot answered 1...e5 and won; the opponent's moves teach nothing.
    assert weights(out, after("e2e4")) == {"e7e5": 3}
    assert weights(out, after("e2e4", "e7e5")) == {"g1f3": 3}
    assert weights(out, after("e2e4", "c7c5")) == {"g1f3": 1}  # one loss does not erase it
    assert (learned.games, learned.skipped_variant, learned.skipped_unfinished) == (4, 1, 1)
    assert entries == 5


def test_min_games_and_max_plies_bound_what_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "learned.bin"
    build_book([GAMES], out, min_games=2)
    assert weights(out, chess.Board()) == {"e2e4": 3}  # 1.d4 was played once only
    build_book([GAMES], out, max_plies=1)
    assert weights(out, after("e2e4", "e7e5")) == {}


def test_games_added_by_hand_name_the_account(tmp_path: Path) -> None:
    out = tmp_path / "learned.bin"
    learned, _ = build_book([DATA / "added.pgn"], out)
    assert learned.skipped_not_ours == 1 and weights(out, chess.Board()) == {}
    build_book([DATA / "added.pgn"], out, account="MyBot")
    assert weights(out, chess.Board()) == {"c2c4": 3}


def test_a_corrupt_record_is_refused_by_file_and_game_and_nothing_is_written(
        tmp_path: Path) -> None:
    out = tmp_path / "learned.bin"
    with pytest.raises(LearnError, match=r"corrupt\.pgn: game 2 \(kibitz - foe, bad00002\)"):
        build_book([GAMES, CORRUPT], out)
    assert not out.exists()
    build_book([GAMES], out)
    before = out.read_bytes()
    with pytest.raises(LearnError):
        build_book([CORRUPT], out)
    assert out.read_bytes() == before  # the previous book stays
    assert sorted(p.name for p in tmp_path.iterdir()) == ["learned.bin"]  # no temporary left


def test_the_command_learns_from_the_records_and_refuses_a_corrupt_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "games"
    records.mkdir()
    (records / "g.pgn").write_text(GAMES.read_text())
    config = tmp_path / "config.yml"
    config.write_text(f'state_dir: "{tmp_path / "state"}"\npgn: {{dir: "{records}"}}\n')
    assert cli.run(["book", "build", "--config", str(config)]) == ExitCode.OK
    book = learned_book_path(tmp_path / "state")
    assert weights(book, chess.Board()) == {"e2e4": 3, "d2d4": 2}
    assert "5 moves from 4 games" in capsys.readouterr().out
    before = book.read_bytes()
    assert cli.run(["book", "build", "--config", str(config), str(CORRUPT)]) == ExitCode.ERROR
    error = capsys.readouterr().err
    assert "corrupt.pgn: game 2" in error and "bad00002" in error
    assert "nothing was written" in error
    assert book.read_bytes() == before
