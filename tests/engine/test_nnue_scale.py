"""tools.nnue.scale: a net's centipawns fitted to the hand-written evaluation's."""

from __future__ import annotations

from pathlib import Path

import chess
import numpy as np
import pytest

from engine import nnue, params
from engine.board import Position
from tools.nnue import data as nnue_data
from tools.nnue import scale as nnue_scale

DATA = Path(__file__).resolve().parent.parent / "data"
EPD_FILES = ("arasan20.epd", "bratko_kopec24.epd", "kaufman25.epd", "perftsuite126.epd")


def _boards() -> list[chess.Board]:
    """Middlegames and endgames of the test suites (the positions the fit is run over)."""
    boards = []
    for name in EPD_FILES:
        for line in (DATA / name).read_text().splitlines():
            if line.strip():
                boards.append(chess.Board(" ".join(line.split()[:4]) + " 0 1"))
    return boards


def _default_net() -> nnue.Net:
    return nnue.load_net(nnue.resolve_eval_file(params.DEFAULT_EVAL_FILE))


def _rescaled(tmp_path: Path, net: nnue.Net, scale: int, name: str) -> nnue.Net:
    path = tmp_path / name
    path.write_bytes(nnue_scale.with_scale(Path(net.path).read_bytes(), scale))
    return nnue.load_net(path)


def test_a_fitted_scale_puts_the_net_on_the_hand_written_scale(tmp_path: Path) -> None:
    boards = _boards()
    net = _default_net()
    fit = nnue_scale.fit_scale(net, boards)
    assert fit.positions >= nnue_scale.MIN_FIT_POSITIONS
    assert fit.old_scale == int(net.net_meta[nnue.NM_SCALE])
    # whatever scale the file says, the fit finds the same centipawns
    doubled = nnue_scale.fit_scale(_rescaled(tmp_path, net, 2 * fit.old_scale, "x2.nnue"), boards)
    assert doubled.slope == pytest.approx(2 * fit.slope, rel=0.02)
    assert doubled.scale == pytest.approx(fit.scale, rel=0.02)
    # and at the fitted scale the net scores as the hand-written evaluation does, on average
    fitted = nnue_scale.fit_scale(_rescaled(tmp_path, net, fit.scale, "fit.nnue"), boards)
    assert fitted.slope == pytest.approx(1.0, abs=0.02)
    assert fitted.scale == pytest.approx(fit.scale, rel=0.02)


def test_a_rescaled_file_keeps_its_weights(tmp_path: Path) -> None:
    net = _default_net()
    other = _rescaled(tmp_path, net, 123, "s123.nnue")
    assert int(other.net_meta[nnue.NM_SCALE]) == 123
    assert np.array_equal(other.net16, net.net16)
    rest = [i for i in range(nnue.NET_META_SIZE) if i != nnue.NM_SCALE]
    assert np.array_equal(other.net_meta[rest], net.net_meta[rest])
    position = Position.from_fen("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    raw = nnue.raw_net_score(position, net)
    assert abs(nnue.raw_net_score(position, other) - raw * 123 / net.net_meta[nnue.NM_SCALE]) <= 1
    for bad in (0, nnue.MAX_SCALE + 1):
        with pytest.raises(ValueError, match="outside"):
            nnue_scale.with_scale(b"", bad)


def test_too_few_positions_or_a_net_that_disagrees_is_refused(tmp_path: Path) -> None:
    net = _default_net()
    with pytest.raises(nnue_scale.ScaleFitError, match="too few"):
        nnue_scale.fit_scale(net, _boards()[:10])
    # the same net with its output negated: it calls white's advantages black's
    w1, b1, w2, b2 = nnue.layers(net)
    meta = net.net_meta
    path = tmp_path / "negated.nnue"
    path.write_bytes(nnue.encode_net(
        w1, b1, -w2.astype(np.int32), -b2,
        activation=int(meta[nnue.NM_ACTIVATION]), qa=int(meta[nnue.NM_QA]),
        qb=int(meta[nnue.NM_QB]), scale=int(meta[nnue.NM_SCALE]),
        king_table=net.king_table if net.king_buckets > 1 else None,
        king_mirror=net.king_mirror))
    with pytest.raises(nnue_scale.ScaleFitError, match="against the hand-written"):
        nnue_scale.fit_scale(nnue.load_net(path), _boards())


def test_the_command_fits_from_a_data_file_or_sets_a_scale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "positions.bin"
    data.write_bytes(b"".join(nnue_data.encode(board, 0, 1) for board in _boards()))
    net = _default_net()
    expected = nnue_scale.fit_scale(
        net, [nnue_data.decode_board(r) for r in nnue_data.read_records(data)])
    out = tmp_path / "fitted.nnue"
    assert nnue_scale.main([net.path, "--data", str(data), "--out", str(out)]) == 0
    assert int(nnue.load_net(out).net_meta[nnue.NM_SCALE]) == expected.scale
    assert f"fitted scale {expected.scale}" in capsys.readouterr().out
    assert nnue_scale.main([net.path, "--scale", "300", "--out", str(out)]) == 0
    assert int(nnue.load_net(out).net_meta[nnue.NM_SCALE]) == 300
    for argv, message in (
        ([net.path], "give --data to fit a scale, or --scale"),
        ([net.path, "--data", str(data), "--scale", "300"], "give --data"),
        ([net.path, "--scale", "300"], "--scale needs --out"),
        ([net.path, "--scale", "0", "--out", str(out)], "outside"),
        ([net.path, "--data", str(tmp_path / "none.bin")], "no such file"),
        ([str(tmp_path / "none.nnue"), "--scale", "300", "--out", str(out)], "cannot be read"),
    ):
        with pytest.raises(SystemExit, match=message):
            nnue_scale.main(argv)
