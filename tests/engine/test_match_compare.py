"""Two match logs of one book set side by side, opening by opening (``tools.match.compare``)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from tools.common.referee import elo_from_score
from tools.match.compare import LogMismatch, compare, main, read_games


def game_line(number: int, opening: str, name: str, colour: str, result: str) -> str:
    """A game line as ``tools.match`` prints it (``tools.common.referee``)."""
    return (f"game {number:3d} {opening:24s} {name} {colour}: {result:7s} (adjudication)  "
            "score 0-0-0")


def log(name: str, results: list[str], book: str = "book1.epd") -> list[str]:
    """Game lines of ``results`` (the white side's, game by game: the first engine white in odd
    games), two games an opening."""
    return [game_line(i + 1, f"{book}:{i // 2 + 1}", name, "white" if i % 2 == 0 else "black",
                      result) for i, result in enumerate(results)]


def test_the_pairs_both_logs_finished_are_compared_and_the_interval_comes_from_their_spread(
) -> None:
    # A (first engine) per pair: 2, 1, 0.5, 1 (and an unfinished pair); B: 1, 1, 0, 1.5
    a = read_games(log("kibitz 2200", ["1-0", "0-1", "1/2-1/2", "1/2-1/2", "1/2-1/2", "1-0",
                                       "1-0", "1-0", "1-0"]))
    b = read_games(log("old net", ["1/2-1/2", "1/2-1/2", "1/2-1/2", "1/2-1/2", "0-1", "1-0",
                                   "1-0", "1/2-1/2"]))
    result = compare(a, b)
    diffs = [1.0, 0.0, 0.5, -0.5]
    mean = sum(diffs) / 4
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / 3)
    assert (result.pairs, result.games) == (4, 8)
    assert (result.points_a, result.points_b) == (4.5, 3.5)  # game 9 has no pair in B
    assert (result.better_a, result.better_b, result.same) == (2, 1, 1)
    assert result.diff_per_game == pytest.approx(1.0 / 8)
    assert result.margin_per_game == pytest.approx(1.959964 * sd / 2 / 2)
    elo, low, high = result.elo_difference()
    assert elo == pytest.approx(elo_from_score(0.5 + 1 / 16) - elo_from_score(0.5 - 1 / 16))
    assert low < 0 < elo < high


def test_identical_logs_differ_by_nothing_with_no_spread() -> None:
    games = read_games(log("a", ["1-0", "1-0", "0-1", "1/2-1/2"]))
    result = compare(games, games)
    assert (result.diff_per_game, result.margin_per_game, result.same) == (0.0, 0.0, 2)
    assert result.unpaired_margin_per_game > 0  # the runs' own spread, were they unrelated


def test_a_game_from_another_opening_is_refused_by_its_number() -> None:
    a = read_games(log("a", ["1-0", "0-1"], book="book1.epd"))
    b = read_games(log("a", ["1-0", "0-1"], book="book2.epd"))
    with pytest.raises(LogMismatch, match=re.escape(
            "game 1 started from 'book1.epd:1' in one log and from 'book2.epd:1' in the other")):
        compare(a, b)


def test_logs_without_a_shared_pair_are_refused() -> None:
    a = read_games(log("a", ["1-0", "0-1"]))
    b = read_games(log("a", ["1-0"]))
    with pytest.raises(LogMismatch, match="no game pair that both finished"):
        compare(a, b)


def test_a_label_longer_than_its_field_and_a_name_with_spaces_are_read() -> None:
    line = game_line(7, "a-book-of-many-openings.epd:1234", "kibitz 1800", "black", "0-1")
    assert read_games([line, "kibitz vs stockfish, 100 games", ""])[7].opening \
        == "a-book-of-many-openings.epd:1234"
    assert read_games([line])[7].points == 1.0


def test_the_command_prints_both_scores_and_names_a_log_without_games(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new, old, empty = tmp_path / "new.log", tmp_path / "old.log", tmp_path / "empty.log"
    new.write_text("\n".join(["new vs opponent, 4 games at 10+0.1",
                              *log("new", ["1-0", "1/2-1/2", "1-0", "0-1"])]) + "\n")
    old.write_text("\n".join(log("old", ["0-1", "1-0", "1/2-1/2", "1/2-1/2"])) + "\n")
    empty.write_text("new vs opponent, 4 games at 10+0.1\n")
    assert main([str(new), str(old)]) == 0
    out = capsys.readouterr().out
    assert "2 game pairs (4 games) finished in both logs" in out
    assert f"A {new}: 3.5/4 (87.5%)" in out
    assert f"B {old}: 1/4 (25.0%)" in out
    assert "A - B: +62.5% a game" in out
    with pytest.raises(SystemExit):
        main([str(empty), str(old)])
    assert f"{empty}: no game lines" in capsys.readouterr().err
