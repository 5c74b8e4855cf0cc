"""A stronger engine's judgement as the measure of nets: the file, the engine, the fit."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import chess
import numpy as np
import pytest

from engine import nnue, params
from tests.engine.conftest import random_boards
from tests.engine.material_engine import material_reading
from tools.nnue import heldout, reference, shards
from tools.nnue.data import (
    RECORD_DTYPE,
    data_k,
    decode_board,
    encode,
    file_ks,
    read_records,
)

HERE = Path(__file__).resolve().parent
MATERIAL = f"{sys.executable} {HERE / 'material_engine.py'}"
FIRST_MOVE = f"{sys.executable} {HERE / 'first_move_engine.py'}"
STOCKFISH = shutil.which("stockfish") or "/usr/games/stockfish"
META = {"k": 153, "evaluation": "net 12c9826b", "net": "kibitz-16.nnue", "nodes": 3000,
        "source": "selfplay", "run": "20260101T000000Z-1"}
CANDIDATE = HERE.parents[1] / "engine/nets/candidates/c32b.nnue"


@pytest.fixture(scope="module")
def boards() -> list[chess.Board]:
    return [b for b in random_boards(seed=21, games=4, chess960=False, max_plies=120)
            if not b.is_game_over()][::2]


def _data(directory: Path, boards: list[chess.Board]) -> Path:
    writer = shards.ShardWriter(directory, "r-j0", META)
    writer.add(b"".join(encode(board, 0, 1) for board in boards))
    writer.close()
    return directory


def _placement(fen: str) -> str:
    return " ".join(fen.split()[:2])


def test_the_sample_is_drawn_evenly_through_the_data(
        tmp_path: Path, boards: list[chess.Board]) -> None:
    drawn = reference.sample([_data(tmp_path, boards)], 10)
    step = len(boards) // 10
    assert [_placement(decode_board(r).fen()) for r in drawn] == [
        _placement(b.fen()) for b in boards[::step][:10]]
    assert len(reference.sample([tmp_path], 10 * len(boards))) == len(boards)


def test_each_position_keeps_the_engines_score_and_win_expectation(
        tmp_path: Path, boards: list[chess.Board]) -> None:
    judged = reference.judge(boards[:12], MATERIAL, 100, 60.0)
    for board, found in zip(boards[:12], judged, strict=True):
        cp, wins, draws, _losses = material_reading(board)
        assert found.fen == board.fen() and found.score_cp == cp
        assert found.expectation == pytest.approx((wins + draws / 2) / 1000)
    path = tmp_path / "ref.tsv"
    reference.write(path, judged, "material at 100 nodes")
    assert path.read_text().startswith("# material at 100 nodes\n")
    assert [(j.fen, j.score_cp) for j in reference.read(path)] == [
        (j.fen, j.score_cp) for j in judged]


def test_an_engine_without_a_win_expectation_is_refused(boards: list[chess.Board]) -> None:
    with pytest.raises(SystemExit, match="has no UCI_ShowWDL option"):
        reference.judge(boards[:2], FIRST_MOVE, 100, 60.0)


@pytest.mark.skipif(not Path(STOCKFISH).is_file(), reason="stockfish is not installed "
                    "(make stockfish)")
def test_stockfish_judges_a_queen_up_as_a_win() -> None:
    up = chess.Board("4k3/8/8/8/8/8/8/3QK3 w - - 0 1")
    [judged] = reference.judge([up], "stockfish", 2000, 60.0)
    assert judged.score_cp > 500 and judged.expectation > 0.95


@pytest.mark.parametrize(("text", "error"), [
    ("8/8/8/8/8/8/8/K6k w - - 0 1\t0\n", "line 1: 2 fields"),
    ("# header\nnot a fen\t0\t0.5\n", "line 2: "),
    ("8/8/8/8/8/8/8/K6k w - - 0 1\tx\t0.5\n", "line 1: invalid literal"),
    ("8/8/8/8/8/8/8/K6k w - - 0 1\t0\t1.5\n", "line 1: expectation 1.5 is outside"),
    ("# only a header\n", "no positions"),
])
def test_a_bad_reference_file_is_refused_by_its_line(
        tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "ref.tsv"
    path.write_text(text)
    with pytest.raises(reference.ReferenceFileError, match=error):
        reference.read(path)


def test_each_net_is_measured_at_the_scale_that_fits_it(boards: list[chess.Board]) -> None:
    net = nnue.net_for(params.DEFAULT_EVAL_FILE)
    records = np.frombuffer(b"".join(encode(b, 0, 1) for b in boards),
                            dtype=RECORD_DTYPE)
    logits = heldout.net_logits(net, records)
    # a reference that reads the default net's own scores twice as decisively
    judged = [reference.Judged(b.fen(), 0, float(1 / (1 + np.exp(-2.0 * logit))))
              for b, logit in zip(boards, logits, strict=True)]
    first, other = heldout.compare_reference([net, nnue.load_net(CANDIDATE)], judged, 5)
    assert first.scale == pytest.approx(2.0) and first.loss < 1e-9
    assert other.loss > first.loss and other.diff == pytest.approx(other.loss - first.loss)
    assert other.diff_se > 0
    assert " scale " in heldout.table([first, other]).splitlines()[0]


def test_the_command_reads_a_reference_file_and_refuses_a_wdl_with_it(
        tmp_path: Path, boards: list[chess.Board], capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ref.tsv"
    reference.write(path, reference.judge(boards[:30], MATERIAL, 100, 60.0), "material")
    assert heldout.main(["kibitz-16.nnue", str(CANDIDATE), "--reference", str(path),
                         "--block", "10"]) == 0
    out = capsys.readouterr().out
    assert "30 positions of" in out and "in 3 blocks" in out and "c32b.nnue" in out
    with pytest.raises(SystemExit, match="--wdl is for --data"):
        heldout.main(["kibitz-16.nnue", "--reference", str(path), "--wdl", "0.1"])
    with pytest.raises(SystemExit, match="--data needs --wdl"):
        heldout.main(["kibitz-16.nnue", "--data", str(tmp_path)])
    path.write_text("bad\n")
    with pytest.raises(SystemExit, match="line 1"):
        heldout.main(["kibitz-16.nnue", "--reference", str(path)])


def test_the_command_samples_judges_and_writes(
        tmp_path: Path, boards: list[chess.Board], capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data").mkdir()
    data = _data(tmp_path / "data", boards)
    out, records = tmp_path / "ref.tsv", tmp_path / "ref.bin"
    assert reference.main(["--data", str(data), "--out", str(out), "--positions", "8",
                           "--nodes", "100", "--engine", MATERIAL, "--records",
                           str(records)]) == 0
    judged = reference.read(out)
    assert len(judged) == 8
    printed = capsys.readouterr().out
    assert "8 positions judged" in printed and f"{records}: 8 training records" in printed
    # the records hold the reference's scores, the games' results, and the K that fits them
    written = read_records(records)
    assert written["score"].tolist() == [j.score_cp for j in judged]
    assert set(written["result"].tolist()) == {1}
    assert data_k(records) == reference.fitted_k(judged)
    assert file_ks([records], None) == [reference.fitted_k(judged)]


def test_the_fitted_k_turns_the_references_centipawns_into_its_expectations() -> None:
    fen = chess.STARTING_FEN
    judged = [reference.Judged(fen, cp, float(1 / (1 + np.exp(-cp / 250))))
              for cp in range(-600, 601, 40)]
    assert reference.fitted_k(judged) == 250
