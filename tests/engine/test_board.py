"""Position: FEN in and out, make/unmake, null moves, keys, accumulators, UCI move text."""

from __future__ import annotations

import chess
import chess.polyglot
import pytest

from engine.board import (
    STARTPOS_FEN,
    FenError,
    Position,
    compute_key,
    is_repetition,
    make_move,
    make_null,
    state_is_consistent,
    unmake_move,
    unmake_null,
)
from engine.constants import (
    FLAG_CASTLE,
    FLAG_DOUBLE,
    FLAG_EP,
    S_EP,
    S_HALFMOVE,
    S_MG,
    S_PHASE,
    S_SIDE,
    STACK_SIZE,
    WHITE,
    parse_square,
)
from engine.psqt import PHASE_MAX
from tests.engine.conftest import eval_terms_from_scratch, state_snapshot

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
DOUBLE_CHECK = "B6b/8/8/8/2K5/5k2/8/b6B b - - 0 1"


def test_startpos() -> None:
    pos = Position.startpos()
    assert pos.fen() == STARTPOS_FEN
    assert pos.key == chess.polyglot.zobrist_hash(chess.Board()) == 0x463B96181691FC9C
    assert pos.side_to_move == WHITE and not pos.chess960 and not pos.in_check()
    assert pos.field(S_MG) == 0 and pos.field(S_PHASE) == PHASE_MAX
    assert len(pos.legal_moves()) == 20


@pytest.mark.parametrize(
    "fen",
    [
        KIWIPETE,
        DOUBLE_CHECK,
        "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
        "4k3/8/8/8/8/8/8/4K2R w K - 37 90",
    ],
)
def test_fen_round_trip_and_key(fen: str) -> None:
    pos = Position.from_fen(fen)
    assert pos.fen() == fen
    board = chess.Board(fen)
    assert pos.key == chess.polyglot.zobrist_hash(board)
    assert state_is_consistent(*pos.arrays)


def test_double_check_position_loads() -> None:
    pos = Position.from_fen(DOUBLE_CHECK)
    assert pos.in_check()
    assert sorted(pos.move_to_uci(m) for m in pos.legal_moves()) == sorted(
        chess.Board(DOUBLE_CHECK).uci(m) for m in chess.Board(DOUBLE_CHECK).legal_moves
    )


def test_epd_style_four_fields() -> None:
    pos = Position.from_fen("4k3/8/8/8/8/8/8/4K3 w - -")
    assert pos.fen() == "4k3/8/8/8/8/8/8/4K3 w - - 0 1"


def test_ep_square_kept_only_when_a_pawn_can_capture() -> None:
    # no black pawn beside e4: the key and the FEN drop the en passant square, as Polyglot does
    pos = Position.from_fen("4k3/8/8/8/4P3/8/8/4K3 b - e3 0 1")
    assert pos.field(S_EP) == 0 and " - 0 1" in pos.fen()
    board = chess.Board("4k3/8/8/8/4P3/8/8/4K3 b - e3 0 1")
    assert pos.key == chess.polyglot.zobrist_hash(board)
    pos = Position.from_fen("4k3/8/8/8/3pP3/8/8/4K3 b - e3 0 1")
    assert pos.field(S_EP) == parse_square("e3")


def test_shredder_and_xfen_castling() -> None:
    pos = Position.from_fen("rk5r/8/8/8/8/8/8/RK5R b HAha - 0 1")
    assert pos.chess960
    assert pos.fen() == "rk5r/8/8/8/8/8/8/RK5R b KQkq - 0 1"
    assert pos.fen(shredder=True) == "rk5r/8/8/8/8/8/8/RK5R b HAha - 0 1"
    # a rook that is not the outermost one keeps its file letter in X-FEN
    fen = "1r2k1rr/8/8/8/8/8/8/1R2K1RR w Gg - 0 1"
    pos = Position.from_fen(fen)
    board = chess.Board(fen, chess960=True)
    assert pos.fen() == board.fen() == fen
    assert pos.fen(shredder=True) == board.fen(shredder=True)
    assert pos.key == chess.polyglot.zobrist_hash(board)


def test_standard_letters_read_as_outermost_rook() -> None:
    pos = Position.from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    assert not pos.chess960
    assert pos.fen(shredder=True) == "r3k2r/8/8/8/8/8/8/R3K2R w HAha - 0 1"
    forced = Position.from_fen("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", chess960=True)
    assert forced.chess960


@pytest.mark.parametrize(
    ("fen", "message"),
    [
        ("", "0 fields"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 extra", "7 fields"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1", "7 ranks"),
        ("rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "empty-square count"),
        ("rnbqkbnr/pppppppp/44/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "empty-square count"),
        ("rnbqkbnr/ppppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "more than 8"),
        ("rnbqkbnr/ppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "7 squares"),
        ("rnbqkbnr/pppxpppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "unknown piece letter"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQ1BNR w kq - 0 1", "one white king"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBKKBNR w kq - 0 1", "one white king"),
        ("k6P/8/8/8/8/8/8/K7 w - - 0 1", "pawn stands on h8"),
        ("4k3/8/8/8/8/8/8/4K3 x - - 0 1", "side to move"),
        ("4k3/8/8/8/8/8/8/4K2R w Z - 0 1", "unknown letter"),
        ("4k3/8/8/8/8/8/8/4K3 w K - 0 1", "no white rook on the king side"),
        ("4k3/8/8/8/8/8/8/4K2R w KK - 0 1", "same right twice"),
        ("4k3/8/8/8/8/8/4K3/7R w K - 0 1", "not on its back rank"),
        ("4k3/8/8/8/8/8/8/4K3 w C - 0 1", "no white rook on that file"),
        ("4k3/8/8/8/8/8/8/4K3 w - e9 0 1", "not a square"),
        ("4k3/8/8/8/4P3/8/8/4K3 b - e4 0 1", "wrong rank"),
        ("4k3/8/8/8/8/8/8/4K3 b - e3 0 1", "no pawn"),
        ("4k3/8/8/8/8/8/8/4K3 w - - x 1", "halfmove clock"),
        ("4k3/8/8/8/8/8/8/4K3 w - - -1 1", "halfmove clock"),
        ("4k3/8/8/8/8/8/8/4K3 w - - 0 0", "below 1"),
        ("4k3/8/8/8/8/8/8/4R1K1 w - - 0 1", "not to move is in check"),
    ],
)
def test_malformed_fen(fen: str, message: str) -> None:
    with pytest.raises(FenError, match=message):
        Position.from_fen(fen)


def test_fen_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        Position.from_fen("not a fen")
    with pytest.raises(FenError, match="string"):
        Position.from_fen(None)  # type: ignore[arg-type]  # a wrong type on purpose: refused


def test_make_unmake_restores_everything() -> None:
    pos = Position.from_fen(KIWIPETE)
    moves = pos.legal_moves()
    before = state_snapshot(pos)
    for move in moves:
        make_move(*pos.arrays, move)
        assert state_is_consistent(*pos.arrays)
        unmake_move(pos.board, pos.stack, pos.meta)
        assert state_snapshot(pos) == before


def test_move_flags_and_ep_capture() -> None:
    pos = Position.from_fen("4k3/8/8/8/5p2/8/4P3/4K3 w - - 0 1")
    move = pos.parse_uci("e2e4")
    assert move & FLAG_DOUBLE
    pos.push(move)
    assert pos.field(S_EP) == parse_square("e3")
    ep = pos.parse_uci("f4e3")
    assert ep & FLAG_EP
    pos.push(ep)
    assert pos.fen() == "4k3/8/8/8/8/4p3/8/4K3 w - - 0 2"
    assert pos.key == chess.polyglot.zobrist_hash(chess.Board(pos.fen()))


def test_null_move() -> None:
    pos = Position.from_fen("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3")
    before = state_snapshot(pos)
    make_null(*pos.arrays)
    assert pos.field(S_SIDE) == 1 and pos.field(S_EP) == 0
    assert pos.field(S_HALFMOVE) == 1
    board = chess.Board(pos.fen())
    assert pos.fen() == "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR b KQkq - 1 3"
    assert pos.key == chess.polyglot.zobrist_hash(board)
    assert compute_key(pos.board, pos.stack, pos.meta) == pos.key
    unmake_null(pos.stack, pos.meta)
    assert state_snapshot(pos) == before
    make_null(*pos.arrays)
    assert pos.pop() == 1 and state_snapshot(pos) == before


def test_repetition() -> None:
    pos = Position.startpos()
    for uci in ("g1f3", "g8f6", "f3g1", "f6g8"):
        assert not is_repetition(pos.stack, pos.keys, pos.meta, 0)
        pos.push_uci(uci)
    assert is_repetition(pos.stack, pos.keys, pos.meta, 0)
    pos.push_uci("e2e4")  # a pawn move: nothing before it can repeat
    assert not is_repetition(pos.stack, pos.keys, pos.meta, 0)


def test_no_repetition_across_a_null_move() -> None:
    pos = Position.startpos()
    pos.push_uci("g1f3")
    make_null(*pos.arrays)
    pos.push_uci("f3g1")
    make_null(*pos.arrays)
    assert pos.key == pos.keys[0]  # the start position again, but only through passes
    assert not is_repetition(pos.stack, pos.keys, pos.meta, 0)


def test_uci_text_castling_both_forms() -> None:
    pos = Position.from_fen(KIWIPETE)
    short = pos.parse_uci("e1g1")
    assert short & FLAG_CASTLE
    assert pos.parse_uci("e1h1") == short
    assert pos.move_to_uci(short) == "e1g1"
    pos.chess960 = True
    assert pos.move_to_uci(short) == "e1h1"
    assert pos.parse_uci("e1g1") == short
    pos.push(short)
    assert pos.fen().startswith("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R4RK1 b kq")


def test_uci_text_chess960_king_step_is_not_castling() -> None:
    # king b1 may step to c1 or castle queen side (landing on c1): c1 text is the step
    pos = Position.from_fen("4k3/8/8/8/8/8/8/RK6 w A - 0 1", chess960=True)
    step = pos.parse_uci("b1c1")
    assert not step & FLAG_CASTLE
    castle = pos.parse_uci("b1a1")
    assert castle & FLAG_CASTLE
    assert pos.move_to_uci(castle) == "b1a1"


def test_uci_text_promotions() -> None:
    pos = Position.from_fen("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1")
    texts = {pos.move_to_uci(m) for m in pos.legal_moves()}
    assert {"b7b8q", "b7b8r", "b7b8b", "b7b8n"} <= texts
    pos.push_uci("b7b8n")
    assert pos.fen() == "1N2k3/8/8/8/8/8/8/4K3 b - - 0 1"


@pytest.mark.parametrize("text", ["", "e2", "e2e9", "e2e4x", "e7e8k", "i2i4", None])
def test_uci_text_malformed(text: str) -> None:
    with pytest.raises(ValueError, match="not a UCI move"):
        Position.startpos().parse_uci(text)


def test_uci_text_illegal() -> None:
    with pytest.raises(ValueError, match="illegal move e2e5"):
        Position.startpos().parse_uci("e2e5")
    with pytest.raises(ValueError, match="not legal"):
        Position.startpos().push(0)


def test_pop_at_start_raises() -> None:
    with pytest.raises(IndexError):
        Position.startpos().pop()


def test_accumulators_from_scratch_after_a_game() -> None:
    pos = Position.startpos()
    board = chess.Board()
    for uci in [
        "e2e4",
        "d7d5",
        "e4d5",
        "g8f6",
        "f1b5",
        "c7c6",
        "d5c6",
        "d8d2",
        "b1d2",
        "e8d8",
        "c6b7",
        "c8d7",
        "b7a8q",
    ]:
        pos.push_uci(uci)
        board.push_uci(uci)
        for field, value in eval_terms_from_scratch(pos).items():
            assert pos.field(field) == value, (uci, field)
        assert pos.key == chess.polyglot.zobrist_hash(board)
    while pos.ply:
        pos.pop()
    assert pos.fen() == STARTPOS_FEN


def test_long_game_history_is_compacted() -> None:
    """A game longer than the state stack keeps its positions since the last pawn move."""
    pos = Position.startpos()
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"]
    pawn_pairs = iter(
        (f"{f}{a}{f}{b}", f"{f}{c}{f}{d}")
        for f in "abcdegh"  # the f-pawns stay: the knights need f3 and f6
        for a, b, c, d in (("2", "3", "7", "6"), ("3", "4", "6", "5"))
    )
    for round_number in range(1, (STACK_SIZE + 200) // 4):
        for uci in shuffle:
            pos.push_uci(uci)
        if round_number % 50 == 0:
            for uci in next(pawn_pairs):
                pos.push_uci(uci)
    assert pos.ply < STACK_SIZE
    assert pos.field(S_HALFMOVE) <= pos.ply
    assert state_is_consistent(*pos.arrays)
    assert pos.key == chess.polyglot.zobrist_hash(chess.Board(pos.fen()))
    for uci in shuffle:
        pos.push_uci(uci)
    assert is_repetition(pos.stack, pos.keys, pos.meta, 0)
