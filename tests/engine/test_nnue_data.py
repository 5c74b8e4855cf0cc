"""The learned evaluation's training data: the record format and a self-play game."""

from __future__ import annotations

import random
import signal
from pathlib import Path

import chess
import numpy as np
import pytest

from engine import nnue
from tools import nnue_data


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


def test_a_self_play_game_keeps_only_quiet_scored_positions() -> None:
    data, count = nnue_data.play_game(random.Random(9), 300, 2)
    records = np.frombuffer(data, dtype=nnue_data.RECORD_DTYPE)
    assert count == len(records) > 0
    assert len({int(r) for r in records["result"]}) == 1  # one game, one result
    for record in records:
        board = nnue_data.decode_board(record)
        assert board.is_valid() or board.status() == chess.STATUS_BAD_CASTLING_RIGHTS
        assert not board.is_check()
        assert abs(int(record["score"])) <= nnue_data.MAX_SCORE_CP


def test_a_game_with_a_net_is_played_by_the_net(tmp_path: Path) -> None:
    """The same opening and node count with a net (``--evalfile``): other scores, because the
    net evaluates instead of the hand-written terms."""
    net = tmp_path / "tiny.nnue"
    rng = np.random.default_rng(2)
    net.write_bytes(nnue.encode_net(np.round(rng.uniform(-60, 60, (nnue.FEATURES, 8))),
                                    np.full(8, 100.0), np.round(rng.uniform(-90, 90, 16)), 0,
                                    activation=nnue.ACT_SCRELU, qa=255, qb=64, scale=400))
    hand, _ = nnue_data.play_game(random.Random(9), 300, 2)
    learned, count = nnue_data.play_game(random.Random(9), 300, 2, str(net))
    assert count > 0 and learned != hand
    with pytest.raises(SystemExit, match=r"--evalfile: net file .*absent\.nnue: cannot be read"):
        nnue_data.main(["--out", str(tmp_path / "d.bin"), "--evalfile",
                        str(tmp_path / "absent.nnue")])


def test_a_run_appends_whole_games_and_gives_back_the_sigterm_handler(tmp_path: Path) -> None:
    """A run in the caller's process (as here) writes its games and leaves SIGTERM as it
    found it: the handler that ends a run as Ctrl-C does is the run's alone."""
    out = tmp_path / "d.bin"
    before = signal.getsignal(signal.SIGTERM)
    assert nnue_data.main(["--out", str(out), "--nodes", "100", "--jobs", "1",
                           "--games", "1"]) == 0
    assert signal.getsignal(signal.SIGTERM) is before
    records = nnue_data.read_records(out)
    assert len(records) > 0 and len({int(r) for r in records["result"]}) == 1
