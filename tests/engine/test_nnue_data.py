"""The learned evaluation's training data: the record format and a self-play game."""

from __future__ import annotations

import random
import signal
from pathlib import Path

import chess
import numpy as np
import pytest

from engine import nnue
from tools.nnue import data as nnue_data
from tools.nnue.features import PiecesRepeat, record_pieces


def _tiny_net(path: Path, scale: int) -> Path:
    rng = np.random.default_rng(2)
    path.write_bytes(nnue.encode_net(np.round(rng.uniform(-60, 60, (nnue.FEATURES, 8))),
                                     np.full(8, 100.0), np.round(rng.uniform(-90, 90, 16)), 0,
                                     activation=nnue.ACT_SCRELU, qa=255, qb=64, scale=scale))
    return path


def test_records_round_trip_the_position_score_and_result() -> None:
    rng = random.Random(4)
    for fen in (chess.STARTING_FEN, "r3k2r/pPp1qppp/2n2n2/3pP3/1b4b1/2N2N2/PP1Q1PPP/R3K2R b - -",
                "8/8/4k3/8/8/4K3/4P3/8 w - - 0 1"):
        board = chess.Board(fen)
        score = rng.randrange(-5000, 5000)
        data = nnue_data.encode(board, score, 2)
        assert len(data) == nnue_data.RECORD_BYTES == 32
        record = np.frombuffer(data, dtype=nnue_data.RECORD_DTYPE)[0]
        decoded = nnue_data.decode_board(record)
        assert decoded.board_fen() == board.board_fen() and decoded.turn == board.turn
        assert int(record["score"]) == max(-3000, min(3000, score))
        assert int(record["result"]) == 2


def test_the_middle_game_is_repeated_by_the_pieces_on_the_board() -> None:
    """``--repeat-pieces MIN=N``: the positions with MIN or more pieces (kings included, as
    python-chess counts them) N times, the others once; a bad spec is refused by its part."""
    fens = (chess.STARTING_FEN,  # 32
            "r3k2r/pPp1qppp/2n2n2/3pP3/1b4b1/2N2N2/PP1Q1PPP/R3K2R b - -",  # 27
            "r3k2r/pPp1qppp/2n2n2/3pP3/1b6/2N2N2/PP1Q1PPP/R3K2R b - -",  # 26
            "8/8/4k3/8/8/4K3/4P3/8 w - - 0 1")  # 3
    records = np.frombuffer(b"".join(nnue_data.encode(chess.Board(fen), i, 1)
                                     for i, fen in enumerate(fens)),
                            dtype=nnue_data.RECORD_DTYPE)
    assert list(record_pieces(records)) == [len(chess.Board(f).piece_map()) for f in fens]
    assert list(record_pieces(records)) == [32, 27, 26, 3]
    repeated = PiecesRepeat.parse("27=3").apply(records)
    assert sorted(int(s) for s in repeated["score"]) == [0, 0, 0, 1, 1, 1, 2, 3]
    assert sorted(int(s) for s in PiecesRepeat.parse("3=2").apply(records)["score"]) == [
        0, 0, 1, 1, 2, 2, 3, 3]
    for spec, named in (("25", "MIN=N"), ("x=2", "whole"), ("2=2", "MIN must"),
                        ("33=2", "MIN must"), ("25=1", "N must"), ("25=two", "whole")):
        with pytest.raises(ValueError, match=named):
            PiecesRepeat.parse(spec)


def test_a_self_play_game_keeps_only_quiet_scored_positions() -> None:
    data, count, result = nnue_data.play_game(random.Random(9), 300, 2)
    records = np.frombuffer(data, dtype=nnue_data.RECORD_DTYPE)
    assert count == len(records) > 0
    # one game, one result: the one returned
    assert {int(r) for r in records["result"]} == {nnue_data.RESULT_CODE[result]}
    for record in records:
        board = nnue_data.decode_board(record)
        assert board.is_valid() or board.status() == chess.STATUS_BAD_CASTLING_RIGHTS
        assert not board.is_check()
        assert abs(int(record["score"])) <= nnue_data.MAX_SCORE_CP


def test_a_game_with_a_net_is_played_by_the_net(tmp_path: Path) -> None:
    """The same opening and node count with a net (``--evalfile``): other scores, because the
    net evaluates instead of the hand-written terms."""
    net = _tiny_net(tmp_path / "tiny.nnue", 400)
    hand, _, _ = nnue_data.play_game(random.Random(9), 300, 2)
    learned, count, _ = nnue_data.play_game(random.Random(9), 300, 2, nnue.load_net(net))
    assert count > 0 and learned != hand
    with pytest.raises(SystemExit, match=r"--evalfile: net file .*absent\.nnue: cannot be read"):
        nnue_data.main(["--out", str(tmp_path / "d.bin"), "--evalfile",
                        str(tmp_path / "absent.nnue")])


def test_a_run_appends_whole_games_and_gives_back_the_sigterm_handler(tmp_path: Path) -> None:
    """A run in the caller's process (as here) writes its games and leaves SIGTERM as it
    found it: the handler that ends a run as Ctrl-C does is the run's alone."""
    out = tmp_path / "d.bin"
    nnue_data.meta_path(out).write_text('{"k": 250}')  # left beside no games: rewritten
    before = signal.getsignal(signal.SIGTERM)
    assert nnue_data.main(["--out", str(out), "--nodes", "100", "--jobs", "1",
                           "--games", "1"]) == 0
    assert signal.getsignal(signal.SIGTERM) is before
    records = nnue_data.read_records(out)
    assert len(records) > 0 and len({int(r) for r in records["result"]}) == 1
    # the sidecar names the hand-written evaluation and its K; games of a net at another K
    # are refused before any is played, the file and its sidecar untouched
    assert nnue_data.data_k(out) == nnue_data.HAND_WRITTEN_K_CP == 400
    sidecar = nnue_data.meta_path(out)
    assert sidecar.name == "d.bin.json" and "hand-written" in sidecar.read_text()
    size, meta = out.stat().st_size, sidecar.read_text()
    net = _tiny_net(tmp_path / "k250.nnue", 250)
    with pytest.raises(SystemExit, match=r"d\.bin: its games were played at K 400 .*"
                                         r"at K 250 \(net [0-9a-f]{8}\): write them to another"):
        nnue_data.main(["--out", str(out), "--evalfile", str(net), "--games", "1"])
    assert out.stat().st_size == size and sidecar.read_text() == meta


def test_the_trainer_takes_each_file_s_k_from_its_sidecar_or_as_given(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``file_ks``: the sidecar's K per file; ``--k`` overrides it (one for all or one per
    file), and a file without a sidecar, or with a broken one, is refused by name."""
    old, new, broken = tmp_path / "old.bin", tmp_path / "new.bin", tmp_path / "broken.bin"
    nnue_data.meta_path(new).write_text('{"evaluation": "net 0123abcd", "k": 240}\n')
    assert nnue_data.file_ks([new], None) == [240.0]
    with pytest.raises(SystemExit, match=r"--data .*old\.bin: no sidecar old\.bin\.json "
                                         r"names its K: give --k \(400 for the hand-written"):
        nnue_data.file_ks([new, old], None)
    assert nnue_data.file_ks([new, old], [400.0]) == [400.0, 400.0]
    assert "new.bin: K 400 as given, where its sidecar says 240" in capsys.readouterr().err
    assert nnue_data.file_ks([new, old], [240.0, 400.0]) == [240.0, 400.0]
    with pytest.raises(SystemExit, match=r"--k: give one positive K, or one for each of the "
                                         r"2 --data files \(got 3\)"):
        nnue_data.file_ks([new, old], [1.0, 2.0, 3.0])
    for text, reason in (("{not json", "not a data file's sidecar"),
                         ('{"k": 0}', "no positive whole 'k' in it"),
                         ('{"k": "240"}', "no positive whole 'k' in it")):
        nnue_data.meta_path(broken).write_text(text)
        with pytest.raises(SystemExit, match=rf"--data .*broken\.bin: .*broken\.bin\.json: "
                                             rf"{reason}"):
            nnue_data.file_ks([broken], None)
