"""The calibration tool: its table and Elo arithmetic, its adjudication, and a tiny real run."""

from __future__ import annotations

import shutil
from pathlib import Path

import chess
import pytest

from tools.common.referee import _adjudicate
from tools.common.scores import MATE_CP
from tools.strength import calibrate
from tools.strength.cploss import Summary

STOCKFISH = shutil.which("stockfish") or "/usr/games/stockfish"
needs_stockfish = pytest.mark.skipif(not Path(STOCKFISH).is_file(),
                                     reason="stockfish is not installed (make stockfish)")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def test_an_even_score_is_calibrated_and_a_lopsided_one_is_not() -> None:
    even = calibrate.Row("1400", "stockfish 1400", 30, 40, 30, 0.0)
    assert even.games == 100 and even.score == 0.5
    estimate = even.elo()
    assert estimate is not None
    assert estimate[0] == pytest.approx(0.0, abs=1e-6)
    assert estimate[1] < -40 and estimate[2] > 40  # 100 games: an interval of about +-55
    assert even.within()
    # 70%: +147 Elo, outside +-70 of an even score
    strong = calibrate.Row("1800", "stockfish 1800", 60, 20, 20, 0.0)
    strong_elo = strong.elo()
    assert strong_elo is not None and strong_elo[0] == pytest.approx(147.2, abs=0.1)
    assert not strong.within()
    # a chain step should measure -200: 30% (-147) is within 70 of it, 50% is not
    assert calibrate.Row("1200", "kibitz 1400", 20, 20, 60, -200.0).within()
    assert not calibrate.Row("1200", "kibitz 1400", 30, 40, 30, -200.0).within()


def test_the_table_has_a_row_per_level_with_its_interval_and_time_losses() -> None:
    cp = Summary(positions=180, mean_loss_cp=85.25, loss_margin_cp=9.5, blunders=18,
                 blunder_low=0.06, blunder_high=0.15, mean_move_s=0.4)
    rows = [calibrate.Row("1400", "stockfish 1400", 30, 40, 30, 0.0, time_losses=2, cp=cp),
            calibrate.Row("2600", "stockfish 2600", 10, 0, 0, 0.0)]
    lines = calibrate.table(rows).splitlines()
    assert _cells(lines[0])[:9] == ["level", "opponent", "games", "W/D/L", "score",
                                    "Elo (95% interval)", "target", "within ±70", "time losses"]
    first = _cells(lines[2])
    assert first[:5] == ["1400", "stockfish 1400", "100", "30/40/30", "50.0%"]
    assert first[5].startswith("+0 (-") and first[6:9] == ["+0", "yes", "2"]
    assert first[9:] == ["85.2 ± 9.5", "10.0%"]
    # every game won: no finite Elo, and not calibrated
    second = _cells(lines[3])
    assert second[2:9] == ["10", "10/0/0", "100.0%", "+inf", "+0", "no", "0"]
    assert second[9:] == ["-", "-"]
    # three wins of four: an interval unbounded above, not a clamped +2400
    few = _cells(calibrate.table([calibrate.Row("1400", "x", 3, 0, 1, 0.0)]).splitlines()[2])
    assert few[5].startswith("+191 (") and few[5].endswith(" .. +inf)")


def test_calibration_games_are_never_adjudicated_on_the_engines_scores() -> None:
    config = calibrate.match_config("10+0.1")
    board = chess.Board()
    for _ in range(100):
        board.push(next(iter(board.legal_moves)))
    # scores that tools.match would call a win (every recent one far above its threshold),
    # or a dead draw, decide nothing here: the limited engines play it out
    assert _adjudicate(board, [5000] * 20, config) is None
    assert _adjudicate(board, [0] * 40, config) is None
    assert _adjudicate(board, [MATE_CP - 1] * 20, config) is None
    assert (config.base_s, config.increment_s) == (10.0, 0.1)
    assert config.max_plies == calibrate.MAX_PLIES


@needs_stockfish
def test_a_short_run_prints_its_table(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "calibration.md"
    # Stockfish calibrated against itself: two short games cut at 20 plies, and its centipawn
    # loss over two positions of the set
    assert calibrate.main(["--engine", "stockfish", "--levels", "1400", "--games", "2",
                           "--tc", "1+0.01", "--max-plies", "20", "--concurrency", "2",
                           "--cploss", "--cploss-positions", "2",
                           "--cache", str(tmp_path / "reference.json"),
                           "--quiet", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    row = next(line for line in printed.splitlines() if line.startswith("| 1400 |"))
    cells = _cells(row)
    assert cells[1] == "stockfish 1400" and cells[2] == "2"
    wins, draws, losses = (int(n) for n in cells[3].split("/"))
    assert wins + draws + losses == 2
    mean_cp, margin_cp = (float(x) for x in cells[9].split(" ± "))
    assert mean_cp >= 0 and margin_cp >= 0 and cells[10].endswith("%")
    assert row in out.read_text()
