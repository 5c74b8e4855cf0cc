"""The centipawn-loss tool: its arithmetic, and a run with real engines on hand-made positions."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import chess
import chess.engine
import pytest

from tools.common.engines import make_spec, resolve_engine
from tools.common.scores import MATE_CP
from tools.strength import cploss
from tools.strength.positions import POSITIONS_FILE, is_middlegame, load_positions

STOCKFISH = shutil.which("stockfish") or "/usr/games/stockfish"
needs_stockfish = pytest.mark.skipif(not Path(STOCKFISH).is_file(),
                                     reason="stockfish is not installed (make stockfish)")
FIRST_MOVE = f"{sys.executable} {Path(__file__).with_name('first_move_engine.py')}"
REFERENCE_DEPTH = 6  # a rook takes a hanging queen and a back-rank mate is seen at any depth

# Positions where the best move is certain and the first legal move in UCI order loses a lot:
# a rook takes a hanging queen (d2d5, where a first-move player plays d2a2), and a back-rank
# mate in one (a1a8#, where it plays a1a2).
HANGING_QUEEN = "4k3/8/8/3q4/8/8/3R4/4K3 w - - 0 1"
BACK_RANK_MATE = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"


def test_a_loss_is_the_capped_difference_and_never_below_zero() -> None:
    assert cploss.move_loss_cp(120, 20) == 100
    # a move the reference likes better than its own best costs nothing
    assert cploss.move_loss_cp(50, 80) == 0
    # a missed mate in 3 counts as CAP_CP, not as a hundred thousand centipawns
    assert cploss.move_loss_cp(MATE_CP - 3, 200) == cploss.CAP_CP - 200
    # walking into a mate from +100 costs at most CAP_CP more than the +100
    assert cploss.move_loss_cp(100, -MATE_CP + 2) == 100 + cploss.CAP_CP
    # both beyond the cap: still won, no loss
    assert cploss.move_loss_cp(2000, 1500) == 0


def test_a_blunder_starts_at_300_centipawns_and_the_summary_averages_the_losses() -> None:
    summary = cploss.summarize([0, 299, 300, 1000], [0.5, 0.5, 1.0, 2.0])
    assert summary.positions == 4
    assert summary.blunders == 2
    assert summary.blunder_share == 0.5
    assert summary.mean_loss_cp == pytest.approx(399.75)
    assert summary.mean_move_s == pytest.approx(1.0)
    # the mean's 95% interval from the sample standard deviation (424.3 over 4 positions)
    assert summary.loss_margin_cp == pytest.approx(1.959964 * 424.343 / 2, rel=1e-4)
    assert summary.blunder_low < 0.5 < summary.blunder_high
    # no blunder at all still has an upper bound above 0 (Wilson's interval)
    clean = cploss.summarize([0, 10, 20])
    assert clean.blunders == 0 and clean.blunder_low == 0.0 and clean.blunder_high > 0.3


def test_a_level_is_an_elo_number_or_full_strength() -> None:
    assert cploss.elo_level("1400").options == {"UCI_LimitStrength": "true", "UCI_Elo": "1400"}
    assert cploss.elo_level("full").options == {}
    with pytest.raises(Exception, match="UCI_Elo number"):
        cploss.elo_level("strong")
    skill = cploss.option_level(["skill0", "Skill Level=0"])
    assert skill == cploss.Level("skill0", {"Skill Level": "0"})


def test_the_default_move_is_a_typical_move_of_a_10_plus_0_1_game() -> None:
    limit = cploss.parse_go(None, None, None, None)
    assert (limit.white_clock, limit.black_clock, limit.white_inc, limit.black_inc) == (
        8.0, 8.0, 0.1, 0.1)
    assert cploss.parse_go(None, 250, None, None).time == 0.25
    with pytest.raises(SystemExit, match="TIME_MS"):
        cploss.parse_go("8s", None, None, None)


def test_the_committed_set_is_of_middlegames() -> None:
    positions = load_positions(POSITIONS_FILE)
    assert 150 <= len(positions) <= 220
    assert all(is_middlegame(board) for _, board in positions)
    assert len({board.fen() for _, board in positions}) == len(positions)


def _positions() -> list[tuple[str, chess.Board]]:
    return [("hanging queen", chess.Board(HANGING_QUEEN)),
            ("back-rank mate", chess.Board(BACK_RANK_MATE))]


@needs_stockfish
def test_a_weak_player_loses_more_than_a_strong_one_and_the_cache_answers_a_rerun(
        tmp_path: Path) -> None:
    cache = tmp_path / "reference.json"
    reference = cploss.Reference(resolve_engine("stockfish"), REFERENCE_DEPTH, cache)
    full = cploss.Level("full", {})
    limit = chess.engine.Limit(depth=8)
    try:
        strong, strong_moves = cploss.measure(resolve_engine("stockfish"), full, _positions(),
                                              limit, reference)
        weak, weak_moves = cploss.measure(make_spec(FIRST_MOVE, "first", None, [], False),
                                          full, _positions(), limit, reference)
    finally:
        reference.close()
    assert [p.move.uci() for p in strong_moves] == ["d2d5", "a1a8"]
    assert [p.move.uci() for p in weak_moves] == ["d2a2", "a1a2"]
    assert strong.mean_loss_cp == 0 and strong.blunders == 0
    assert weak.blunders == 2
    assert weak.mean_loss_cp >= cploss.BLUNDER_CP > strong.mean_loss_cp
    # the missed mate is capped: at most CAP_CP above what the rook-up position is worth
    assert all(p.loss_cp <= 2 * cploss.CAP_CP for p in weak_moves)
    # a rerun needs no reference search: the scores come from the cache file
    missing = cploss.Reference(make_spec("/nonexistent/stockfish", None, None, [], False),
                               REFERENCE_DEPTH, cache)
    again, again_moves = cploss.measure(make_spec(FIRST_MOVE, "first", None, [], False), full,
                                        _positions(), limit, missing)
    assert missing.searches == 0
    assert [p.loss_cp for p in again_moves] == [p.loss_cp for p in weak_moves]
    assert again.mean_loss_cp == weak.mean_loss_cp


@needs_stockfish
def test_the_command_line_prints_a_row_per_level(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    epd = tmp_path / "two.epd"
    epd.write_text("\n".join(chess.Board(fen).epd(id=name) for name, fen in
                             [("queen", HANGING_QUEEN), ("mate", BACK_RANK_MATE)]) + "\n")
    out = tmp_path / "table.md"
    assert cploss.main(["--engine", FIRST_MOVE, "--level", "first", "--depth", "1",
                        "--positions-file", str(epd), "--reference-depth",
                        str(REFERENCE_DEPTH), "--cache", str(tmp_path / "c.json"),
                        "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    row = next(line for line in printed.splitlines() if line.startswith("| first |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == "2"
    assert float(cells[2].split()[0]) >= cploss.BLUNDER_CP
    assert cells[3].startswith("100.0%")
    assert row in out.read_text()


def test_an_engine_without_the_level_s_options_is_refused_by_name() -> None:
    # the first-move engine declares no option at all: no level can be set on it
    with pytest.raises(SystemExit, match="declares no UCI option UCI_LimitStrength, UCI_Elo"):
        cploss.play_positions(make_spec(FIRST_MOVE, "first", None, [], False),
                              cploss.elo_level("1400"), _positions(),
                              chess.engine.Limit(depth=1))
    with pytest.raises(SystemExit, match="declares no UCI option Skill Level"):
        cploss.check_options(make_spec(FIRST_MOVE, "first", None, [("Skill Level", "0")],
                                        False))


def test_repeats_average_each_position_first_and_count_blunders_over_every_move() -> None:
    # two positions, two seeds each: means 150 and 0; one blunder among four moves
    summary = cploss.summarize_repeats([[0, 300], [0, 0]], [1.0, 1.0, 2.0, 2.0])
    assert (summary.positions, summary.moves) == (2, 4)
    assert summary.mean_loss_cp == pytest.approx(75.0)
    # the interval comes from the two position means (150 and 0), not from four moves
    assert summary.loss_margin_cp == pytest.approx(1.959964 * 106.066 / 2 ** 0.5, rel=1e-4)
    assert summary.blunders == 1 and summary.blunder_share == 0.25
    assert summary.mean_move_s == pytest.approx(1.5)
    assert "| 1400 | 2 x 2 |" in cploss.table_row("1400", summary)
    # one move a position reads as before
    assert "| 1400 | 2 |" in cploss.table_row("1400", cploss.summarize([0, 300]))
    with pytest.raises(ValueError, match="no positions"):
        cploss.summarize_repeats([[0], []])


def test_seeds_need_an_engine_that_declares_seed() -> None:
    reference = cploss.Reference(make_spec("/nonexistent/stockfish", None, None, [], False),
                                 REFERENCE_DEPTH, None)
    first = make_spec(FIRST_MOVE, "first", None, [], False)
    with pytest.raises(SystemExit, match="no UCI option Seed: it cannot play level full "
                                         "with a seed"):
        cploss.measure(first, cploss.Level("full", {}), _positions(),
                       chess.engine.Limit(depth=1), reference, seeds=2)
    with pytest.raises(ValueError, match="seeds must be at least 1"):
        cploss.measure(first, cploss.Level("full", {}), _positions(),
                       chess.engine.Limit(depth=1), reference, seeds=0)
