"""Nets' losses on the same positions: the engine's scores, the trainer's loss, the noise."""

from __future__ import annotations

import math
from pathlib import Path

import chess
import numpy as np
import pytest

from engine import nnue, params
from engine.board import Position
from tests.engine.conftest import random_boards, random_net
from tools.nnue import heldout, shards
from tools.nnue.data import RECORD_DTYPE, encode
from tools.nnue.features import HELD_OUT_PHASES, KING_LAYOUTS

META = {"k": 150, "evaluation": "net 12c9826b", "net": "kibitz-16.nnue", "nodes": 3000,
        "source": "selfplay", "run": "20260101T000000Z-1"}
CANDIDATE = Path(__file__).resolve().parents[2] / "engine/nets/candidates/c32b.nnue"


def _records(boards: list[chess.Board], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    data = b"".join(encode(board, int(rng.integers(-400, 400)), int(rng.integers(0, 3)))
                    for board in boards)
    return np.frombuffer(data, dtype=RECORD_DTYPE)


def _shard(directory: Path, stem: str, records: np.ndarray) -> Path:
    writer = shards.ShardWriter(directory, stem, META)
    writer.add(records.tobytes())
    shard = writer.close()
    assert shard is not None
    return shard.path


@pytest.fixture(scope="module")
def boards() -> list[chess.Board]:
    # endings as well as full boards: every output bucket and king bucket is reached
    return random_boards(seed=11, games=6, chess960=False, max_plies=160)[::3]


def _engine_cp(net: nnue.Net, board: chess.Board) -> int:
    return nnue.raw_net_score(Position.from_fen(board.fen()), net)


@pytest.mark.parametrize("kind", ["default", "candidate", "crelu", "mirror4"])
def test_each_logit_is_the_engines_score_of_the_position(
        tmp_path: Path, boards: list[chess.Board], kind: str) -> None:
    if kind == "default":
        net = nnue.net_for(params.DEFAULT_EVAL_FILE)
    elif kind == "candidate":
        net = nnue.load_net(CANDIDATE)
    elif kind == "crelu":
        net = random_net(tmp_path / "n.nnue", 3, 16, nnue.ACT_CRELU, buckets=4).net
    else:
        layout = KING_LAYOUTS["mirror4"]
        net = random_net(tmp_path / "n.nnue", 5, 16, king_table=layout.table,
                         king_mirror=True).net
    logits = heldout.net_logits(net, _records(boards, 1))
    qa, qb = int(net.net_meta[nnue.NM_QA]), int(net.net_meta[nnue.NM_QB])
    # the logit is the engine's integer sum over QA * QB; the engine's centipawns are that
    # sum times the file's scale, rounded down
    sums = [round(logit * qa * qb) for logit in logits]
    assert [s * net.scale // (qa * qb) for s in sums] == [_engine_cp(net, b) for b in boards]


def test_the_loss_is_the_trainers_target_against_the_sigmoid(
        tmp_path: Path, boards: list[chess.Board]) -> None:
    records = _records(boards[:40], 2)
    positions = heldout.load_positions([_shard(tmp_path, "r-j0", records)], 1.0, 8)
    net = nnue.net_for(params.DEFAULT_EVAL_FILE)
    [row] = heldout.compare([net], positions, 0.25)
    expected = []
    for record, board in zip(records, boards[:40], strict=True):
        white_result = int(record["result"]) / 2
        result = white_result if board.turn == chess.WHITE else 1 - white_result
        target = 0.75 / (1 + math.exp(-int(record["score"]) / 150)) + 0.25 * result
        cp = _engine_cp(net, board)
        # the engine's centipawns lose the sum's last digits: the logit is read at that
        # precision here
        predicted = 1 / (1 + math.exp(-cp / net.scale))
        expected.append((predicted - target) ** 2)
    assert row.loss == pytest.approx(float(np.mean(expected)), rel=2e-2)
    assert row.diff == 0.0 and row.diff_se == 0.0


def test_a_second_net_is_paired_with_the_first(tmp_path: Path, boards: list[chess.Board]) -> None:
    records = _records(boards, 3)
    positions = heldout.load_positions([_shard(tmp_path, "r-j0", records)], 1.0, 10)
    first = nnue.net_for(params.DEFAULT_EVAL_FILE)
    second = nnue.load_net(CANDIDATE)
    reference, other = heldout.compare([first, second], positions, 0.1)
    assert reference.name == f"kibitz-16.nnue ({first.hash})"
    assert other.diff == pytest.approx(other.loss - reference.loss, abs=1e-12)
    assert other.diff != 0.0 and other.diff_se > 0.0
    assert set(other.by_phase) <= set(HELD_OUT_PHASES)
    text = heldout.table([reference, other])
    assert f"{100 * other.diff / reference.loss:+.2f}%" in text
    assert text.splitlines()[1].startswith("kibitz-16.nnue")


def test_the_standard_error_counts_blocks_not_positions() -> None:
    diff = np.array([1.0, 1.0, 3.0, 3.0])
    # two blocks of means 1 and 3: std(means) / sqrt(2) = 1
    assert heldout.block_se(diff, np.array([0, 0, 1, 1])) == pytest.approx(1.0)
    # the same values as four blocks: the spread is counted four times over, not twice
    assert heldout.block_se(diff, np.array([0, 1, 2, 3])) == pytest.approx(
        float(np.std(diff, ddof=1) / 2))
    # blocks of unequal size weigh by their positions
    unequal = heldout.block_se(np.array([0.0, 0.0, 0.0, 4.0]), np.array([0, 0, 0, 1]))
    # means 0 and 4 at weights 3/4 and 1/4: mean 1, spread (3/4 + 9/4) * 2 = 6
    assert unequal == pytest.approx(math.sqrt(6.0 * (0.75**2 + 0.25**2)))
    assert math.isnan(heldout.block_se(diff, np.zeros(4, dtype=np.int64)))


def test_blocks_stay_in_their_file_and_the_tail_is_the_trainers_held_out_share(
        tmp_path: Path, boards: list[chess.Board]) -> None:
    first = _records(boards[:50], 4)
    second = _records(boards[50:75], 5)
    _shard(tmp_path, "r-j0", first)
    _shard(tmp_path, "r-j1", second)
    positions = heldout.load_positions([tmp_path], 1.0, 20)
    assert len(positions.records) == 75
    # 50 = 20 + 20 + 10 (a last block of half a block stands); 25 = 20 + 5 (joins the one
    # before): no block holds positions of both files
    assert np.bincount(positions.block).tolist() == [20, 20, 10, 25]
    tail = heldout.load_positions([tmp_path], 0.2, 20)
    # each file's last fifth, as the trainer's --validation 0.2 holds out
    assert tail.records.tobytes() == first[40:].tobytes() + second[20:].tobytes()


def test_the_command_prints_the_table_and_refuses_bad_input(
        tmp_path: Path, boards: list[chess.Board], capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    _shard(data, "r-j0", _records(boards, 6))
    assert heldout.main(["kibitz-16.nnue", str(CANDIDATE), "--data", str(data),
                         "--wdl", "0.1", "--block", "16"]) == 0
    out = capsys.readouterr().out
    assert f"{len(boards)} positions in" in out and "c32b.nnue (f68c22d0)" in out
    with pytest.raises(SystemExit, match=r"--wdl must be 0\.\.1, not 1\.5"):
        heldout.main(["kibitz-16.nnue", "--data", str(data), "--wdl", "1.5"])
    with pytest.raises(SystemExit, match="--tail must be in"):
        heldout.main(["kibitz-16.nnue", "--data", str(data), "--wdl", "0.1", "--tail", "0"])
    broken = tmp_path / "broken.nnue"
    broken.write_bytes(b"not a net")
    with pytest.raises(SystemExit, match=r"broken\.nnue"):
        heldout.main([str(broken), "--data", str(data), "--wdl", "0.1"])
