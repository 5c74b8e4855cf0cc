"""The learned evaluation: incremental accumulators, inference arithmetic, net file checks."""

from __future__ import annotations

import io
import math
import random
from pathlib import Path

import chess
import numpy as np
import numpy.typing as npt
import pytest

from engine import nnue, params
from engine import uci as uci_module
from engine.board import Position, make_null, unmake_null
from engine.constants import (
    FLAG_CAPTURE,
    FLAG_CASTLE,
    FLAG_EP,
    M_PLY,
    MOVE_PROMO_MASK,
    MOVE_PROMO_SHIFT,
    SQ64,
    STACK_SIZE,
    VARIANT_KING_OF_THE_HILL,
    VARIANT_THREE_CHECK,
    WHITE,
)
from engine.psqt import MG_VALUE
from engine.search import Searcher
from engine.timeman import GoLimits, TimeBudget
from engine.uci import UciEngine
from tests.engine.conftest import FloatArray, random_net, random_net_bytes
from tests.engine.uci_process import UciProcess

# start positions rich in castling (both wings, chess960 set-ups), en passant and promotions
SPECIAL_FENS = (
    "r3k2r/pPp1qppp/2n2n2/3pP3/1b4b1/2N2N2/PP1Q1PPP/R3K2R w KQkq d6 0 1",
    "r3k2r/1P4p1/8/2pP4/8/8/1p4P1/R3K2R w KQkq c6 0 1",
    "4k3/1P6/8/8/8/8/6p1/4K2R b K - 0 1",
)


def _numpy_score(fen: str, q: dict[str, FloatArray], activation: int,
                 king_table: npt.NDArray[np.int64] | None = None,
                 king_mirror: bool = False) -> float:
    """The net's score by hand: dequantised weights, float arithmetic, python-chess squares;
    the output layer of the bucket that the board's piece count falls in (2 .. 32 pieces in
    even ranges).  With a king table each side reads the rows of its own king's bucket, with
    ``king_mirror`` the board mirrored across the d/e line when that king is on files e-h."""
    board = chess.Board(fen)
    hidden = q["b1"].shape[0]
    buckets = q["w2"].shape[0]
    bucket = (len(board.piece_map()) - 2) * buckets // 32
    accs = []
    for perspective in (chess.WHITE, chess.BLACK):
        a = q["b1"] / 255.0
        flip = 0 if perspective == chess.WHITE else 56
        base = 0
        if king_table is not None:
            king = board.king(perspective)
            assert king is not None
            if king_mirror and chess.square_file(king) >= 4:
                flip ^= 7
            base = int(king_table[king ^ flip]) * 768
        for square, piece in board.piece_map().items():
            relation = 0 if piece.color == perspective else 1
            sq = square ^ flip
            a = a + q["w1"][base + (relation * 6 + piece.piece_type - 1) * 64 + sq] / 255.0
        accs.append(np.clip(a, 0.0, 1.0))
    us, them = (accs[0], accs[1]) if board.turn == chess.WHITE else (accs[1], accs[0])
    x = np.concatenate([us, them])
    if activation == nnue.ACT_SCRELU:
        x = x * x
    out = float(x @ (q["w2"][bucket] / 64.0)) + float(q["b2"][bucket]) / (255.0 * 64.0)
    assert x.shape == (2 * hidden,)
    return out * 400


@pytest.mark.parametrize("activation", [nnue.ACT_CRELU, nnue.ACT_SCRELU])
def test_a_tiny_net_scores_as_computed_by_hand(tmp_path: Path, activation: int) -> None:
    tiny = random_net(tmp_path / "tiny.nnue", seed=7, hidden=8, activation=activation)
    net, q = tiny.net, tiny.q
    assert net.hidden == 8 and len(net.hash) == 8
    # pawns on both sides: never shrunk as drawish (see the test below)
    fens = [chess.STARTING_FEN, *SPECIAL_FENS, "4k3/4p3/8/8/8/8/4P3/3QK3 b - - 0 1"]
    for fen in fens:
        _, learned = nnue.static_scores(Position.from_fen(fen), net)
        assert learned is not None
        expected = _numpy_score(fen, q, activation)
        # the accumulators are exact integers; only the final integer divisions round down
        assert abs(learned - expected) <= 1.0, (fen, learned, expected)


# From 32 pieces down to 4: every output bucket of an 8-bucket net, pawns on both sides (never
# shrunk as drawish)
BUCKET_FENS = (
    chess.STARTING_FEN,
    "r1bqk2r/pp2bppp/2n1pn2/3p4/3P4/2N1PN2/PP3PPP/R2QKB1R w KQkq - 0 8",  # 26
    "r4rk1/pp3ppp/2n1pn2/8/3P4/2N2N2/PP3PPP/R4RK1 b - - 0 14",  # 22
    "r4rk1/pp3ppp/4p3/8/3P4/8/PP3PPP/R4RK1 w - - 0 18",  # 18
    "5rk1/pp3ppp/4p3/8/3P4/8/PP3PPP/5RK1 w - - 0 22",  # 16
    "6k1/pp3ppp/4p3/8/3P4/8/PP3PP1/6K1 b - - 0 25",  # 13
    "6k1/p4pp1/8/8/3P4/8/P4P2/6K1 w - - 0 30",  # 8
    "8/5k2/8/4p3/8/8/4P3/4K3 b - - 0 40",  # 4
)


def test_a_net_is_written_with_the_declared_quantisation_unless_told(tmp_path: Path) -> None:
    """The scales are declared once, in the format module: ``encode_net`` writes them (as
    the trainer does) when not given others, and a file's own are what loading reads."""
    w1, b1, w2 = np.zeros((nnue.FEATURES, 4)), np.zeros(4), np.zeros(8)
    path = tmp_path / "n.nnue"
    defaults = nnue.encode_net(w1, b1, w2, 0)
    told = nnue.encode_net(w1, b1, w2, 0, qa=127, qb=64, scale=300)
    for data, expected in ((defaults, (nnue.QA, nnue.QB, nnue.SCALE)), (told, (127, 64, 300))):
        path.write_bytes(data)
        meta = nnue.load_net(path).net_meta
        assert (meta[nnue.NM_QA], meta[nnue.NM_QB], meta[nnue.NM_SCALE]) == expected
    assert (nnue.QA, nnue.QB, nnue.SCALE) == (255, 512, 400)


@pytest.mark.parametrize("activation", [nnue.ACT_CRELU, nnue.ACT_SCRELU])
def test_a_bucketed_net_scores_each_position_with_its_buckets_weights(
    tmp_path: Path, activation: int
) -> None:
    made = random_net(tmp_path / "buckets.nnue", seed=23, hidden=8, activation=activation,
                      buckets=8)
    net, q = made.net, made.q
    assert net.buckets == 8 and made.data[8:12] == nnue.FORMAT_VERSION.to_bytes(4, "little")
    used = set()
    for fen in BUCKET_FENS:
        _, learned = nnue.static_scores(Position.from_fen(fen), net)
        assert learned is not None
        assert abs(learned - _numpy_score(fen, q, activation)) <= 1.0, fen
        used.add((len(chess.Board(fen).piece_map()) - 2) * 8 // 32)
    assert used == set(range(8))


def test_a_net_split_into_equal_buckets_scores_as_the_net_and_writes_back_the_same(
    tmp_path: Path,
) -> None:
    """One output layer copied into every bucket changes no score (what the trainer starts a
    bucketed model from), and ``layers`` reads back what ``encode_net`` wrote."""
    single = random_net(tmp_path / "single.nnue", seed=29, hidden=16)
    net, q = single.net, single.q
    assert net.buckets == 1 and single.data[8:12] == (1).to_bytes(4, "little")
    w1, b1, w2, b2 = nnue.layers(net)
    assert w2.shape == (1, 32) and b2.tolist() == [int(q["b2"][0])]
    split = tmp_path / "split.nnue"
    split.write_bytes(nnue.encode_net(w1, b1, np.repeat(w2, 5, axis=0), np.repeat(b2, 5),
                                      qa=255, qb=64, scale=400))
    bucketed = nnue.load_net(split)
    assert bucketed.buckets == 5
    got_layers: tuple[npt.NDArray[np.integer], ...] = nnue.layers(bucketed)
    want_layers: tuple[npt.NDArray[np.integer], ...] = (
        w1, b1, np.repeat(w2, 5, axis=0), np.repeat(b2, 5))
    for got, want in zip(got_layers, want_layers, strict=True):
        assert np.array_equal(got, want)
    rng = random.Random(31)
    for fen in BUCKET_FENS:
        pos = Position.from_fen(fen)
        for _ in range(20):
            assert nnue.raw_net_score(pos, bucketed) == nnue.raw_net_score(pos, net), pos.fen()
            moves = pos.legal_moves()
            if not moves:
                break
            pos.push_unchecked(rng.choice(moves))


def test_the_compiled_bucket_is_the_trainers() -> None:
    """``output_bucket`` (the engine's) and ``bucket_of`` (the trainer's, on arrays) agree, the
    buckets run from the fewest pieces up, and with up to 16 buckets none is empty."""
    counts = np.arange(2, nnue.MAX_PIECES + 1)
    for buckets in range(1, nnue.MAX_BUCKETS + 1):
        compiled = [nnue.output_bucket(int(n), buckets) for n in counts]
        assert compiled == nnue.bucket_of(counts, buckets).tolist()
        assert compiled == sorted(compiled) and set(compiled) == set(range(buckets))
    assert nnue.bucket_of([2, 5, 6, 31, 32], 8).tolist() == [0, 0, 1, 7, 7]


# Positions where the variant's term is not 0: white's king a step from the hill; white has
# given two checks (python-chess's "remaining checks" field: 1 left for white, 3 for black).
VARIANT_FENS = [
    ("rnbqkbnr/pppppppp/8/8/8/4K3/PPPPPPPP/RNBQ1BNR b kq - 0 1", VARIANT_KING_OF_THE_HILL),
    ("rnbqkbnr/pppppppp/8/8/8/4K3/PPPPPPPP/RNBQ1BNR w kq - 0 1", VARIANT_KING_OF_THE_HILL),
    ("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 1+3 0 2", VARIANT_THREE_CHECK),
]


def _net_score(position: Position, net: nnue.Net) -> int:
    """The search's score of ``position`` with ``net``, whatever rules the net plays."""
    board, stack, _, meta = position.arrays
    row = int(meta[M_PLY])
    acc = nnue.new_accumulators(net.hidden)
    nnue.refresh(board, row, net.net16, net.net_meta, acc)
    return int(nnue.net_score(stack, row, net.net16, net.net_meta, acc))


@pytest.mark.parametrize(("fen", "variant"), VARIANT_FENS)
def test_in_a_variant_the_net_score_gets_the_variant_term(
    tmp_path: Path, fen: str, variant: int
) -> None:
    """The net knows only chess: in three-check and king of the hill its score gets the same
    variant term the hand-written evaluation adds to its own.  Where the net does not play
    the variant (``NET_PLAYS_VARIANT``), ``eval`` shows the hand-written score alone."""
    net = random_net(tmp_path / "tiny.nnue", seed=11, hidden=8).net
    chess_position = Position.from_fen(" ".join(part for part in fen.split() if "+" not in part))
    variant_position = Position.from_fen(fen, variant=variant)
    term = nnue.static_scores(variant_position, net)[0] - nnue.static_scores(chess_position,
                                                                             net)[0]
    assert term != 0
    assert _net_score(variant_position, net) - _net_score(chess_position, net) == term
    shown = nnue.static_scores(variant_position, net)[1]
    if params.NET_PLAYS_VARIANT[variant]:
        assert shown == _net_score(variant_position, net)
    else:
        assert shown is None


def _drawish_divisor(board: chess.Board, white_score: float) -> int:
    """The hand-written evaluation's rule, from python-chess: the side the score favours has
    no pawns and at most a minor piece's worth more non-pawn material (the score is divided by
    ``DRAWISH_DIVISOR``), or two knights against a bare king (``TWO_KNIGHTS_DIVISOR``); 1 where
    the score is kept."""
    strong = white_score > 0
    if board.pieces(chess.PAWN, strong):
        return 1

    def npm(colour: bool) -> int:
        return sum(MG_VALUE[piece.piece_type] for piece in board.piece_map().values()
                   if piece.color == colour and piece.piece_type != chess.PAWN)

    if npm(strong) - npm(not strong) <= max(MG_VALUE[chess.KNIGHT], MG_VALUE[chess.BISHOP]):
        return params.DRAWISH_DIVISOR
    bare_king = chess.popcount(board.occupied_co[not strong]) == 1
    two_knights = chess.popcount(board.occupied_co[strong]) == 3 and len(
        board.pieces(chess.KNIGHT, strong)) == 2
    if bare_king and two_knights:
        return params.TWO_KNIGHTS_DIVISOR
    return 1


def test_the_net_score_shrinks_in_drawish_pawnless_endgames(tmp_path: Path) -> None:
    """As the hand-written evaluation shrinks its own: no pawns and at most a minor piece up."""
    net_path = tmp_path / "tiny.nnue"
    shrunk_seen = kept_seen = 0
    for seed in range(6):  # random nets favour either side; both outcomes must be seen
        made = random_net(net_path, seed=100 + seed, hidden=8)
        net, q = made.net, made.q
        for fen in ("4k3/8/8/8/8/8/8/3NK3 w - - 0 1", "3bk3/8/8/8/8/8/8/3RK3 b - - 0 1",
                    "4k3/8/8/8/8/8/8/2NNK3 w - - 0 1", "4k3/8/8/8/8/8/4P3/3NK3 b - - 0 1",
                    "2nnk3/8/8/8/8/8/8/3QK3 w - - 0 1", "4k3/4p3/8/8/8/8/4P3/3NK3 w - - 0 1",
                    "r3k3/pp6/8/8/8/8/PP6/R3K3 b - - 0 1"):
            board = chess.Board(fen)
            _, learned = nnue.static_scores(Position.from_fen(fen), net)
            assert learned is not None
            expected = _numpy_score(fen, q, nnue.ACT_SCRELU)
            # the raw output (the trainer's rounding check) is never shrunk
            assert abs(nnue.raw_net_score(Position.from_fen(fen), net) - expected) <= 1.0
            white = expected if board.turn == chess.WHITE else -expected
            divisor = _drawish_divisor(board, white)
            if divisor > 1:
                expected = math.trunc(expected / divisor)
                shrunk_seen += abs(expected) >= 2
            else:
                kept_seen += abs(expected) >= 2 * params.DRAWISH_DIVISOR
            assert abs(learned - expected) <= 1.0, (seed, fen, learned, expected)
    assert shrunk_seen >= 5 and kept_seen >= 5, (shrunk_seen, kept_seen)


def _kind(move: int) -> str:
    if move & FLAG_CASTLE:
        return "castle"
    if move & FLAG_EP:
        return "ep"
    if (move >> MOVE_PROMO_SHIFT) & MOVE_PROMO_MASK:
        return "promotion"
    if move & FLAG_CAPTURE:
        return "capture"
    return "quiet"


def test_incremental_accumulators_equal_a_refresh_after_every_move(tmp_path: Path) -> None:
    net = random_net(tmp_path / "n.nnue", seed=11, hidden=16).net
    acc = nnue.new_accumulators(net.hidden)
    fresh = nnue.new_accumulators(net.hidden)
    rng = random.Random(2027)
    starts = [(chess.STARTING_FEN, False), *((fen, False) for fen in SPECIAL_FENS)]
    starts.append(("4k3/8/8/8/1p1p1p1p/8/PPPPPPPP/4K3 w - - 0 1", False))  # en passant
    starts += [(chess.Board.from_chess960_pos(rng.randrange(960)).fen(), True) for _ in range(4)]
    seen: dict[str, int] = {}
    nulls = 0
    for fen, chess960 in starts:
        for _ in range(3):
            pos = Position.from_fen(fen, chess960=chess960)
            board, stack, keys, meta = pos.arrays
            nnue.refresh(board, int(meta[M_PLY]), net.net16, net.net_meta, acc)
            for _ in range(80):
                moves = pos.legal_moves()
                if not moves:
                    break
                special = [m for m in moves if _kind(m) in ("castle", "ep", "promotion")]
                move = rng.choice(special if special and rng.random() < 0.7 else moves)
                if not pos.in_check() and rng.random() < 0.1:
                    make_null(board, stack, keys, meta)  # costs nothing: no row is written
                    nulls += 1
                    moves = pos.legal_moves()
                    if not moves:
                        unmake_null(stack, meta)
                        continue
                    move = rng.choice(moves)
                pos.push_unchecked(move)
                seen[_kind(move)] = seen.get(_kind(move), 0) + 1
                row = int(meta[M_PLY])
                nnue.push(board, stack, meta, net.net16, net.net_meta, acc)
                nnue.refresh(board, row, net.net16, net.net_meta, fresh)
                assert np.array_equal(acc[row], fresh[row]), (fen, pos.fen(), _kind(move))
                score = nnue.evaluate_net(stack, row, net.net16, net.net_meta, acc)
                assert score == nnue.evaluate_net(stack, row, net.net16, net.net_meta, fresh)
    assert nulls > 10
    for kind in ("quiet", "capture", "castle", "ep", "promotion"):
        assert seen.get(kind, 0) >= 5, seen


def test_the_int32_output_sums_equal_the_int64_ones(tmp_path: Path) -> None:
    """Nets whose SCReLU sums cannot leave int32 sum in int32; the int64 sums of the same
    net agree everywhere, and a net with output weights too large for int32 sums uses int64."""
    path = tmp_path / "n.nnue"
    made = random_net(path, seed=17, hidden=32)
    net, q = made.net, made.q
    assert net.net_meta[nnue.NM_SUMS_FIT_INT32] == 1
    wide_meta = net.net_meta.copy()
    wide_meta[nnue.NM_SUMS_FIT_INT32] = 0
    big = nnue.encode_net(q["w1"], q["b1"], np.full(64, 32767), 0, qa=255, qb=64)
    path.write_bytes(big)
    assert nnue.load_net(path).net_meta[nnue.NM_SUMS_FIT_INT32] == 0
    acc = nnue.new_accumulators(net.hidden)
    rng = random.Random(99)
    scores = set()
    for fen in (chess.STARTING_FEN, *SPECIAL_FENS):
        pos = Position.from_fen(fen)
        board, stack, _, meta = pos.arrays
        for _ in range(60):
            moves = pos.legal_moves()
            if not moves:
                break
            pos.push_unchecked(rng.choice(moves))
            row = int(meta[M_PLY])
            nnue.refresh(board, row, net.net16, net.net_meta, acc)
            score = nnue.evaluate_net(stack, row, net.net16, net.net_meta, acc)
            assert score == nnue.evaluate_net(stack, row, net.net16, wide_meta, acc), pos.fen()
            scores.add(score)
    assert len(scores) > 50


def test_search_with_a_net_is_deterministic_and_refreshes_at_the_root(tmp_path: Path) -> None:
    net = random_net(tmp_path / "n.nnue", seed=3, hidden=16).net
    results = []
    for _ in range(2):
        searcher = Searcher(1)
        searcher.set_net(net)
        position = Position.from_fen(SPECIAL_FENS[0])
        results.append(searcher.think(position, GoLimits(depth=4), TimeBudget(None, None),
                                      0.0, lambda _: None))
    assert results[0] == results[1] and results[0].best_move is not None


OPENING_FEN = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"


@pytest.mark.parametrize("variant", [VARIANT_THREE_CHECK, VARIANT_KING_OF_THE_HILL])
def test_a_variant_the_net_does_not_play_is_searched_as_without_a_net(
    tmp_path: Path, variant: int
) -> None:
    """Node for node the hand-written search, and no accumulator is updated (none is read)."""
    if params.NET_PLAYS_VARIANT[variant]:
        pytest.skip("the net plays this variant")
    results = []
    for net in (None, random_net(tmp_path / "n.nnue", seed=5, hidden=16).net):
        searcher = Searcher(1)
        searcher.set_net(net)
        results.append(searcher.think(Position.from_fen(OPENING_FEN, variant=variant),
                                      GoLimits(depth=6), TimeBudget(None, None), 0.0,
                                      lambda _: None))
        if net is not None:
            assert searcher.tables.acc.shape == (STACK_SIZE, 32)
            assert not searcher.tables.acc.any()
    assert results[0] == results[1]
    assert results[0].depth == 6 and results[0].nodes > 1000


def _bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    good, _ = random_net_bytes(seed=1, hidden=4, activation=nnue.ACT_CRELU)
    files = {
        "missing": (tmp_path / "absent.nnue", "cannot be read"),
        "truncated": (tmp_path / "short.nnue", "truncated"),
        "header": (tmp_path / "header.nnue", "shorter than"),
        "magic": (tmp_path / "magic.nnue", "not a Kibitz net"),
        "version": (tmp_path / "version.nnue", "format version 9"),
        "shape": (tmp_path / "shape.nnue", "N=5"),
        "activation": (tmp_path / "act.nnue", "unknown activation 7"),
        "one bucket": (tmp_path / "one.nnue", "1 output buckets is outside 2..16"),
        "buckets": (tmp_path / "buckets.nnue", "17 output buckets is outside 2..16"),
        "bucket shape": (tmp_path / "bucket_shape.nnue", "N=4 and 3 buckets"),
    }
    files["truncated"][0].write_bytes(good[:-10])
    files["header"][0].write_bytes(good[:12])
    files["magic"][0].write_bytes(b"XXXXXXXX" + good[8:])
    files["version"][0].write_bytes(good[:8] + (9).to_bytes(4, "little") + good[12:])
    # a header claiming N=5 over N=4's weights: the wrong shape
    files["shape"][0].write_bytes(good[:12] + (5).to_bytes(4, "little") + good[16:])
    files["activation"][0].write_bytes(good[:16] + (7).to_bytes(4, "little") + good[20:])
    bucketed, _ = random_net_bytes(seed=1, hidden=4, activation=nnue.ACT_CRELU, buckets=4)
    files["one bucket"][0].write_bytes(bucketed[:32] + (1).to_bytes(4, "little") + bucketed[36:])
    files["buckets"][0].write_bytes(bucketed[:32] + (17).to_bytes(4, "little") + bucketed[36:])
    # 4 buckets' weights under a header of 3
    files["bucket shape"][0].write_bytes(bucketed[:32] + (3).to_bytes(4, "little")
                                         + bucketed[36:])
    return files


def test_unusable_net_files_are_refused_with_the_reason(tmp_path: Path) -> None:
    for path, reason in _bad_files(tmp_path).values():
        with pytest.raises(nnue.NetFileError, match=reason) as caught:
            nnue.load_net(path)
        assert str(path) in str(caught.value)


def test_uci_eval_file_loads_refuses_and_falls_back(tmp_path: Path) -> None:
    good = tmp_path / "good.nnue"
    good.write_bytes(random_net_bytes(seed=5, hidden=8)[0])
    bad = _bad_files(tmp_path)["truncated"][0]
    engine = UciProcess()
    try:
        lines = engine.handshake()
        assert any(line.startswith("option name EvalFile type string") for line in lines)
        engine.send(f"setoption name EvalFile value {good}")
        engine.send("position fen 4k3/8/8/8/8/8/8/3QK3 w - - 0 1")
        engine.send("eval")
        lines = engine.expect("info string eval net")
        assert any("loaded: net" in line for line in lines)
        net_line = lines[-1]
        assert nnue.load_net(good).hash in net_line and net_line.endswith("cp (side to move)")
        engine.send(f"setoption name EvalFile value {bad}")
        engine.send("eval")
        lines = engine.expect("info string eval net")
        assert any("error" in line and "truncated" in line and "hand-written" in line
                   for line in lines)
        assert "none" in lines[-1]
        engine.send("go depth 3")  # the hand-written evaluation still plays
        assert engine.expect("bestmove")[-1].split()[1] != "(none)"
    finally:
        assert engine.close() == 0


def test_feature_index_mirrors_for_black() -> None:
    e2 = 21 + 4 + 10  # mailbox e2
    e7 = 21 + 4 + 60
    assert SQ64[e2] == 12
    white_pawn = 1
    black_pawn = 1 | 8
    _, meta = nnue.no_net()  # no king buckets: a side's view is its flip alone
    white, black = nnue.view(WHITE, e2, meta), nnue.view(1, e7, meta)

    def feature(side: int, side_view: int, piece: int, sq: int) -> int:
        return int(nnue.feature_in_view(side, side_view, piece, sq))

    assert feature(WHITE, white, white_pawn, e2) == feature(1, black, black_pawn, e7) == 12
    assert feature(WHITE, white, black_pawn, e7) == feature(1, black, white_pawn, e2) == 384 + 52


def test_a_net_read_once_is_shared_until_its_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "shared.nnue"
    path.write_bytes(random_net_bytes(seed=2, hidden=4, activation=nnue.ACT_CRELU)[0])
    first = nnue.net_for(path)
    assert nnue.net_for(str(path)) is first  # what a forked game finds in the host's memory
    assert not first.net16.flags.writeable
    path.write_bytes(random_net_bytes(seed=3, hidden=6, activation=nnue.ACT_CRELU)[0])
    assert nnue.net_for(path).hidden == 6


def test_a_default_net_is_found_by_name_and_a_missing_one_leaves_the_hand_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = tmp_path / "nets"
    shipped.mkdir()
    net = random_net(shipped / "shipped.nnue", seed=5, hidden=8).net
    monkeypatch.setattr(nnue, "NETS_DIR", shipped)
    monkeypatch.chdir(tmp_path)  # the bare name is not in the working directory
    assert nnue.resolve_eval_file("shipped.nnue") == shipped / "shipped.nnue"
    assert nnue.resolve_eval_file("./shipped.nnue") == Path("shipped.nnue")  # a path stays

    def session(default: str) -> str:
        monkeypatch.setattr(uci_module, "DEFAULT_EVAL_FILE", default)
        out = io.StringIO()
        engine = UciEngine(out)
        for line in ("uci", "isready", "eval", "setoption name EvalFile value <empty>", "eval"):
            engine.handle(line)
        engine.handle("quit")
        return out.getvalue()

    text = session("shipped.nnue")
    assert "option name EvalFile type string default shipped.nnue" in text
    first, second = text.split("info string eval net", 1)[1], text.rsplit("eval net", 1)[1]
    assert first.split()[0] == net.hash and "none (EvalFile is empty)" in second
    assert "info string error" not in text
    text = session("absent.nnue")
    assert "info string error EvalFile: net file absent.nnue: cannot be read" in text
    assert "info string eval net none" in text


def test_each_candidate_net_in_the_repository_is_recorded_and_loads() -> None:
    """A candidate net (engine/nets/candidates/) is committed so that a fine-tune outlives the
    machine its data was made on; its README must carry its sha256 (the record of its data,
    recipe and SPRT state is keyed by it) and the file must be a net the engine reads."""
    import hashlib

    folder = nnue.NETS_DIR / "candidates"
    record = (folder / "README.md").read_text()
    for path in sorted(folder.glob("*.nnue")):
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        assert f"`{path.name}`" in record, f"{path.name} is not in {folder}/README.md"
        assert digest in record, f"{path.name}: sha256 {digest} is not in the README"
        assert nnue.parse_net(data, path.name).hidden > 0  # NetFileError names what is wrong
