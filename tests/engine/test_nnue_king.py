"""King input buckets: the engine's scores and accumulators, the trainer's indices, the file."""

from __future__ import annotations

import random
from pathlib import Path

import chess
import numpy as np
import numpy.typing as npt
import pytest

from engine import nnue
from engine.board import Position
from engine.constants import M_PLY, MAILBOX, S_KING, StackArray
from tests.engine.conftest import random_boards, random_net, random_net_bytes
from tests.engine.test_nnue import SPECIAL_FENS, _numpy_score
from tools.nnue.data import RECORD_DTYPE, encode
from tools.nnue.features import (
    KING_LAYOUTS,
    KingLayout,
    features,
    file_mirror,
    inputs_of,
    mirror_of_bucket,
    pieces,
)

# kings castled on both wings, in the centre, on the e-h half and far up the board
KING_FENS = (
    chess.STARTING_FEN,
    "r4rk1/pp3ppp/2n1pn2/8/3P4/2N2N2/PP3PPP/2KR3R w - - 0 14",
    "2kr3r/pp3ppp/2n1pn2/8/3P4/2N2N2/PP3PPP/R4RK1 b - - 0 14",
    "8/5k2/8/4p3/3K4/8/4P3/8 w - - 0 40",
    "8/1k6/8/8/6K1/8/p7/8 b - - 0 50",
    "6k1/p4pp1/8/8/3P4/8/P4P2/1K6 w - - 0 30",
)


@pytest.mark.parametrize("name", sorted(KING_LAYOUTS))
def test_a_king_bucketed_net_scores_as_computed_by_hand(tmp_path: Path, name: str) -> None:
    layout = KING_LAYOUTS[name]
    made = random_net(tmp_path / "k.nnue", seed=31, hidden=8, buckets=2,
                      king_table=layout.table, king_mirror=layout.mirror)
    assert made.net.king_buckets == layout.buckets and made.net.inputs == 768 * layout.buckets
    assert np.array_equal(made.net.king_table, layout.table)
    assert made.net.king_mirror == layout.mirror
    for fen in (*KING_FENS, *SPECIAL_FENS):
        learned = nnue.raw_net_score(Position.from_fen(fen), made.net)
        expected = _numpy_score(fen, made.q, nnue.ACT_SCRELU, layout.table, layout.mirror)
        assert abs(learned - expected) <= 1.0, (fen, learned, expected)
    # the buckets' rows differ (and mirroring moves every square), so the king's square must
    # move the score: the same pieces with white's king one square across the d/e line
    a = nnue.raw_net_score(Position.from_fen("4k3/pppppppp/8/8/8/8/PPPPPPPP/3K4 w - - 0 1"),
                           made.net)
    b = nnue.raw_net_score(Position.from_fen("4k3/pppppppp/8/8/8/8/PPPPPPPP/4K3 w - - 0 1"),
                           made.net)
    assert a != b


@pytest.mark.parametrize("name", ["wings8", "mirror4"])
def test_incremental_accumulators_refresh_a_side_whose_king_changes_bucket(
        tmp_path: Path, name: str) -> None:
    layout = KING_LAYOUTS[name]
    net = random_net(tmp_path / "k.nnue", seed=13, hidden=16, king_table=layout.table,
                     king_mirror=layout.mirror).net
    acc = nnue.new_accumulators(net.hidden)
    fresh = nnue.new_accumulators(net.hidden)
    rng = random.Random(2029)
    rebucketed = checked = 0
    for fen in (*KING_FENS, *SPECIAL_FENS):
        for _ in range(3):
            pos = Position.from_fen(fen)
            board, stack, _, meta = pos.arrays
            nnue.refresh(board, int(meta[M_PLY]), net.net16, net.net_meta, acc)
            for _ in range(80):
                moves = pos.legal_moves()
                if not moves:
                    break
                kings = [m for m in moves if pos.move_to_uci(m)[:2] in _king_names(pos)]
                move = rng.choice(kings if kings and rng.random() < 0.5 else moves)
                before = _views(stack, int(meta[M_PLY]), net)
                pos.push_unchecked(move)
                row = int(meta[M_PLY])
                rebucketed += before != _views(stack, row, net)
                nnue.push(board, stack, meta, net.net16, net.net_meta, acc)
                nnue.refresh(board, row, net.net16, net.net_meta, fresh)
                assert np.array_equal(acc[row], fresh[row]), (fen, pos.fen())
                checked += 1
    assert checked > 500 and rebucketed > 30, (checked, rebucketed)


def _king_names(pos: Position) -> set[str]:
    board = chess.Board(pos.fen())
    king = board.king(board.turn)
    return set() if king is None else {chess.square_name(king)}


def _views(stack: StackArray, row: int, net: nnue.Net) -> tuple[int, int]:
    return (nnue.view(0, int(stack[row, S_KING]), net.net_meta),
            nnue.view(1, int(stack[row, S_KING + 1]), net.net_meta))


@pytest.mark.parametrize("name", [None, *sorted(KING_LAYOUTS)])
def test_the_trainers_input_indices_are_the_engines(tmp_path: Path, name: str | None) -> None:
    layout = None if name is None else KING_LAYOUTS[name]
    net = random_net(tmp_path / "k.nnue", seed=3, hidden=4,
                     king_table=None if layout is None else layout.table,
                     king_mirror=layout is not None and layout.mirror).net
    boards = random_boards(seed=41, games=12, chess960=False, max_plies=120)
    boards += [chess.Board(fen) for fen in KING_FENS]
    records = np.frombuffer(b"".join(encode(board, 0, 1) for board in boards),
                            dtype=RECORD_DTYPE)
    white, black, stm = features(records, layout)
    pad = inputs_of(layout)
    assert pad == net.inputs
    assert np.array_equal(pieces(white, pad), [len(b.piece_map()) for b in boards])
    for i, board in enumerate(boards):
        assert stm[i] == (0 if board.turn == chess.WHITE else 1)
        for side, indices in ((0, white[i]), (1, black[i])):
            colour = chess.WHITE if side == 0 else chess.BLACK
            king = board.king(colour)
            assert king is not None
            side_view = nnue.view(side, int(MAILBOX[king]), net.net_meta)
            expected = sorted(
                nnue.feature_in_view(side, side_view,
                                     (piece.piece_type) | (0 if piece.color else 8),
                                     int(MAILBOX[square]))
                for square, piece in board.piece_map().items())
            assert sorted(int(x) for x in indices if x != pad) == expected, (board.fen(), side)


@pytest.mark.parametrize("name", [None, *sorted(KING_LAYOUTS)])
def test_the_trainers_mirror_of_a_position_is_the_mirrored_board_s_inputs(
        name: str | None) -> None:
    layout = None if name is None else KING_LAYOUTS[name]
    lookup = file_mirror(layout)
    if layout is not None and layout.mirror:
        assert lookup is None  # the layout mirrors the board itself: nothing to add
        return
    assert lookup is not None
    boards = random_boards(seed=43, games=10, chess960=False, max_plies=120)
    boards += [chess.Board(fen) for fen in KING_FENS]
    mirrored = [board.transform(chess.flip_horizontal) for board in boards]

    def records(of: list[chess.Board]) -> npt.NDArray[np.void]:
        return np.frombuffer(b"".join(encode(board, 0, 1) for board in of), dtype=RECORD_DTYPE)

    white, black, _ = features(records(boards), layout)
    white_m, black_m, _ = features(records(mirrored), layout)
    pad = inputs_of(layout)
    assert lookup[pad] == pad
    for got, want in ((lookup[white], white_m), (lookup[black], black_m)):
        assert np.array_equal(np.sort(got, axis=1), np.sort(want, axis=1))
    moved = sum(board.king(chess.WHITE) != mirror.king(chess.WHITE)
                for board, mirror in zip(boards, mirrored, strict=True))
    assert moved > len(boards) // 2  # the kings really moved between buckets' squares


def test_a_layout_that_is_not_symmetric_has_no_mirror() -> None:
    table = KING_LAYOUTS["wings4"].table.copy()
    assert list(mirror_of_bucket(KING_LAYOUTS["wings4"])) == [2, 1, 0, 3]
    table[0] = 1  # a1 joins d-e's bucket, while h1 stays with f-h
    with pytest.raises(ValueError, match="not symmetric across the d/e line"):
        file_mirror(KingLayout(table, False))


def test_king_tables_and_files_are_checked(tmp_path: Path) -> None:
    table = KING_LAYOUTS["mirror4"].table
    lopsided = table.copy()
    lopsided[7] = 2  # h1 apart from a1
    with pytest.raises(ValueError, match="mirror across the d/e line"):
        nnue.check_king_table(lopsided, mirror=True)
    assert nnue.check_king_table(lopsided, mirror=False) == 4  # the whole board is read
    gap = np.where(table == 3, 4, table)  # buckets 0, 1, 2, 4
    with pytest.raises(ValueError, match="leaves one of them unused"):
        nnue.check_king_table(gap, mirror=True)
    with pytest.raises(ValueError, match="64 squares"):
        nnue.check_king_table(table[:32], mirror=True)
    with pytest.raises(ValueError, match=r"\(3072, N\)"):
        nnue.encode_net(np.zeros((768, 4)), np.zeros(4), np.zeros(8), 0, king_table=table)
    data, _ = random_net_bytes(seed=2, hidden=4, king_table=table, king_mirror=True)
    header = nnue._HEADER.size + 4  # the king bucket count follows the output buckets
    assert int.from_bytes(data[8:12], "little") == nnue.FORMAT_VERSION_KING
    wrong = data[:header] + (3).to_bytes(4, "little") + data[header + 4:]
    with pytest.raises(nnue.NetFileError, match="3 king buckets declared"):
        nnue.parse_net(wrong, "wrong.nnue")
    flag = data[:header + 4] + (2).to_bytes(4, "little") + data[header + 8:]
    with pytest.raises(nnue.NetFileError, match="king mirror flag 2"):
        nnue.parse_net(flag, "flag.nnue")
    short = data[:-2]
    with pytest.raises(nnue.NetFileError, match=r"4 king buckets.*truncated"):
        nnue.parse_net(short, "short.nnue")
    # what layers reads back, encode_net writes again, byte for byte
    net = nnue.parse_net(data, "k.nnue")
    w1, b1, w2, b2 = nnue.layers(net)
    assert w1.shape == (4 * 768, 4)
    again = nnue.encode_net(w1, b1, w2[0], int(b2[0]), activation=nnue.ACT_SCRELU, qa=255,
                            qb=64, scale=400, king_table=net.king_table, king_mirror=True)
    assert again == data


def test_a_net_copied_into_every_bucket_of_a_layout_that_keeps_the_board_scores_as_it(
        tmp_path: Path) -> None:
    """What lets a net without king buckets start a bucketed one exactly (the trainer's
    ``load_init``): with the board not mirrored, each bucket holding the net's weights is the
    net.  Mirrored, the positions with a king on files e-h score as the net's mirror image."""
    plain = random_net(tmp_path / "plain.nnue", seed=23, hidden=8, buckets=2)
    w1, b1, w2, b2 = nnue.layers(plain.net)
    copies = {}
    for name in ("wings4", "mirror4"):
        layout = KING_LAYOUTS[name]
        copies[name] = nnue.parse_net(
            nnue.encode_net(np.tile(w1, (layout.buckets, 1)), b1, w2, b2, qa=255, qb=64,
                            scale=400, king_table=layout.table, king_mirror=layout.mirror),
            name)
    boards = random_boards(seed=43, games=6, chess960=False, max_plies=100)
    mirrored_apart = 0
    for board in boards:
        position = Position.from_fen(board.fen())
        score = nnue.raw_net_score(position, plain.net)
        assert nnue.raw_net_score(position, copies["wings4"]) == score, board.fen()
        mirrored_apart += nnue.raw_net_score(position, copies["mirror4"]) != score
    assert mirrored_apart > len(boards) // 4
