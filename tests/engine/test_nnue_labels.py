"""The label-noise tool: what it samples, and that its scores are the searches they name."""

from __future__ import annotations

from pathlib import Path

import chess
import numpy as np
import pytest

from engine import params
from engine.board import Position
from engine.nnue import net_for, static_scores
from engine.search import Searcher
from tools.common.selfplay import HASH_MB
from tools.nnue import labels, shards
from tools.nnue.data import encode

META = {"k": 179, "evaluation": "net 7d573322", "net": "kibitz-10.nnue", "nodes": 3000,
        "source": "selfplay", "run": "20260101T000000Z-1"}
FENS = (
    "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
    "r2q1rk1/pp2bppp/2n1pn2/3p4/3P4/2NBPN2/PP3PPP/R2Q1RK1 w - - 0 11",
    "8/5pk1/6p1/3R4/5P2/6PK/r7/8 b - - 0 45",
    "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1",
)
STORED_CP = (35, -12, 140, 420)


def _shard_dir(directory: Path) -> Path:
    writer = shards.ShardWriter(directory, "r-j0", META)
    writer.add(b"".join(encode(chess.Board(fen), score, 1)
                        for fen, score in zip(FENS, STORED_CP, strict=True)))
    writer.close()
    return directory


def _piece_placement(fen: str) -> tuple[str, str]:
    board, side = fen.split()[:2]
    return board, side


def test_the_sample_is_records_of_the_data_with_their_scores_and_k(tmp_path: Path) -> None:
    fens, scores, ks = labels.sample([_shard_dir(tmp_path)], 3, seed=4)
    written = {_piece_placement(fen): score for fen, score in zip(FENS, STORED_CP, strict=True)}
    assert len(fens) == 3 and len(set(fens)) == 3
    assert [written[_piece_placement(fen)] for fen in fens] == scores
    assert ks == [179.0] * 3
    with pytest.raises(SystemExit, match="--positions 5: the data holds 4"):
        labels.sample([tmp_path], 5, seed=4)


def test_each_row_is_the_search_it_names(tmp_path: Path) -> None:
    fens, scores, ks = labels.sample([_shard_dir(tmp_path)], 4, seed=1)
    net = net_for(params.DEFAULT_EVAL_FILE)
    rows = {row.name: row for row in labels.measure(fens, scores, ks, net, [150, 600], 600)}
    assert list(rows) == ["stored label", "net, static", "search, 150 nodes",
                          "search, 600 nodes"]
    # a fresh search of the deep search's nodes is the deep search: the table is emptied
    # before each, so nothing of the one before leaks into it
    assert rows["search, 600 nodes"].mse_deep == 0.0
    assert rows["search, 600 nodes"].median_abs_deep_cp == 0.0
    assert rows["stored label"].mse_stored == 0.0
    # the static row is the net's own score of each position, in target space
    static = np.array([static_scores(Position.from_fen(fen), net)[1] for fen in fens],
                      dtype=np.float64)
    searcher = Searcher(HASH_MB)
    searcher.set_net(net)
    deep = np.array([labels.fresh_score(searcher, fen, 600) for fen in fens], dtype=np.float64)
    expected = np.mean((labels.target(static, net.scale) - labels.target(deep, net.scale)) ** 2)
    assert rows["net, static"].mse_deep == pytest.approx(float(expected), rel=1e-12)
    assert rows["net, static"].mse_deep > 0.0


def test_the_command_prints_a_row_for_each_score(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert labels.main(["--data", str(_shard_dir(tmp_path)), "--positions", "2",
                        "--deep", "300", "--nodes", "100"]) == 0
    out = capsys.readouterr().out
    assert "2 positions, against a search of 300 nodes" in out
    for name in ("| stored label |", "| net, static |", "| search, 100 nodes |"):
        assert name in out
