"""Syzygy root probing: the ranking rules, what needs no file, and real tables when present."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import chess
import pytest

from bot.features.tablebase import Probe, Syzygy, TablebaseError, rank_root_moves

# Directory with downloaded 3-4-5 piece Syzygy tables; none ship with the project.
SYZYGY_DIR = os.environ.get("KIBITZ_SYZYGY_PATH", "")


def _probe_by_last_move(table: Mapping[str, tuple[int, int | None]]) -> Probe:
    """A prober keyed by the move just played: the verdict for the opponent to move."""

    def probe(board: chess.Board) -> tuple[int, int | None]:
        return table[board.peek().uci()]

    return probe


# White: Kg1, Qd1, pawn a2; black: Kh8, pawn h7. Many legal moves; the prober
# below gives each a verdict for black to move after it.
BOARD = chess.Board("7k/7p/8/8/8/8/P7/3Q2K1 w - - 0 40")


def _table(default: tuple[int, int], **moves: tuple[int, int]) -> dict[str, tuple[int, int]]:
    table = {move.uci(): default for move in BOARD.legal_moves}
    table.update(moves)
    return table


def test_the_fastest_win_is_chosen_and_all_wins_are_kept() -> None:
    table = _table((0, 0), d1d4=(-2, -9), d1d5=(-2, -3), d1e2=(-1, -40), g1h1=(2, 5))
    found = rank_root_moves(BOARD.copy(), _probe_by_last_move(table))
    assert found is not None
    assert found.wdl == 2 and found.best_move.uci() == "d1d5" and found.dtz == 3
    assert set(m.uci() for m in found.keeping_moves) == {"d1d4", "d1d5"}
    assert not found.is_draw and not found.is_loss


def test_a_winning_zeroing_move_beats_a_lower_dtz() -> None:
    table = _table((0, 0), d1d5=(-2, -3), a2a4=(-2, -20))
    found = rank_root_moves(BOARD.copy(), _probe_by_last_move(table))
    assert found is not None and found.best_move.uci() == "a2a4"


def test_mate_in_one_is_played_without_probing_the_mated_position() -> None:
    board = chess.Board("7k/8/6K1/8/8/8/8/3Q4 w - - 0 1")
    table = {m.uci(): (-2, -10) for m in board.legal_moves}
    found = rank_root_moves(board, _probe_by_last_move(table))
    assert found is not None
    after = board.copy()
    after.push(found.best_move)
    assert after.is_checkmate()


def test_a_lost_position_picks_the_longest_resistance() -> None:
    table = _table((2, 7), g1f2=(2, 31), g1h2=(2, 12))
    found = rank_root_moves(BOARD.copy(), _probe_by_last_move(table))
    assert found is not None and found.wdl == -2 and found.is_loss
    assert found.best_move.uci() == "g1f2" and found.dtz == -31


def test_a_draw_keeps_only_drawing_moves() -> None:
    table = _table((2, 5), d1h5=(0, 0), d1d8=(1, 60))  # d1d8: a cursed win for black
    found = rank_root_moves(BOARD.copy(), _probe_by_last_move(table))
    assert found is not None
    assert found.wdl == 0 and found.is_draw
    assert [m.uci() for m in found.keeping_moves] == ["d1h5"]


def test_without_dtz_the_ranking_is_by_wdl_and_says_so() -> None:
    table: dict[str, tuple[int, int | None]] = {m.uci(): (0, None) for m in BOARD.legal_moves}
    table.update(d1d5=(-2, None), d1d4=(-2, None))
    found = rank_root_moves(BOARD.copy(), _probe_by_last_move(table))
    assert found is not None and found.wdl == 2 and not found.dtz_known
    assert {m.uci() for m in found.keeping_moves} == {"d1d4", "d1d5"}


def test_a_move_outside_the_tables_means_no_verdict() -> None:
    def probe(board: chess.Board) -> tuple[int, int]:
        raise chess.syzygy.MissingTableError("did not find wdl table")

    assert rank_root_moves(BOARD.copy(), probe) is None


def test_finished_games_are_not_probed(tmp_path: Path) -> None:
    tablebase = Syzygy([tmp_path])
    assert tablebase.max_pieces == 2  # an empty directory: only bare kings
    assert tablebase.probe_root(chess.Board("8/8/8/4k3/8/8/8/4K3 w - - 0 1")) is None
    assert tablebase.probe_root(chess.Board("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1")) is None


def test_positions_needing_missing_tables_give_no_verdict(tmp_path: Path) -> None:
    (tmp_path / "KPvK.rtbw").write_bytes(b"")  # counted, never opened: not a real table
    tablebase = Syzygy([tmp_path])
    assert tablebase.max_pieces == 3
    # Kxd4 reaches bare kings, but every other king move needs KPvK.
    assert tablebase.probe_root(chess.Board("8/8/8/8/3p4/3K4/8/7k w - - 0 1")) is None
    assert not tablebase.covers(chess.Board())  # 32 pieces and castling rights
    assert not tablebase.covers(chess.Board("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1"))


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(TablebaseError, match="nowhere"):
        Syzygy([tmp_path / "nowhere"])


@pytest.mark.skipif(
    not SYZYGY_DIR,
    reason="needs downloaded Syzygy tables (KQvK at least): "
    "set KIBITZ_SYZYGY_PATH to their directory",
)
def test_real_tables_win_kqvk() -> None:
    tablebase = Syzygy([SYZYGY_DIR])
    board = chess.Board("8/8/8/4k3/8/8/8/3QK3 w - - 0 1")
    assert tablebase.max_pieces >= 3
    verdict = tablebase.probe_root(board)
    assert verdict is not None and verdict.wdl == 2
    board.push(verdict.best_move)
    assert tablebase.probe_root(board) is not None
