"""Three-check and king of the hill: rules, perft and FEN against python-chess's variant boards,
the evaluation terms, and the UCI engine playing them (``UCI_Variant``)."""

from __future__ import annotations

import random
import sys

import chess
import chess.engine
import chess.variant
import numpy as np
import pytest

from engine import params
from engine.board import FenError, Position
from engine.constants import (
    BLACK,
    VARIANT_CHESS,
    VARIANT_KING_OF_THE_HILL,
    VARIANT_THREE_CHECK,
    WHITE,
)
from engine.evaluate import evaluate, new_scratch
from engine.perft import perft, perft_checked
from engine.variant import UCI_VARIANTS
from tests.engine.conftest import python_chess_perft
from tests.engine.uci_process import ROOT, UciProcess

BOARDS: dict[int, type[chess.Board]] = {
    VARIANT_THREE_CHECK: chess.variant.ThreeCheckBoard,
    VARIANT_KING_OF_THE_HILL: chess.variant.KingOfTheHillBoard,
}

# (variant, FEN as python-chess reads it, depth): openings, endings, and positions one move
# from the variant's end or already past it (no moves).
PERFT_CASES = [
    (VARIANT_THREE_CHECK, "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 3+3 0 1", 3),
    # white has given two checks: Bxf7+ and Qxf7+ end the game, each a leaf with no children
    (VARIANT_THREE_CHECK,
     "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 1+2 2 3", 3),
    # both sides two checks from the end, Lichess's spelling (checks given, after the counters)
    (VARIANT_THREE_CHECK,
     "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1 +2+2", 2),
    (VARIANT_THREE_CHECK, "4k3/8/8/8/8/8/8/R3K2R w KQ - 2+2 0 1", 3),
    (VARIANT_THREE_CHECK, "4k3/8/8/8/8/8/8/R3K2R w KQ - 1+1 0 1", 3),
    (VARIANT_THREE_CHECK, "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 2+1 0 1", 3),
    # black in check from the third check: the game is over, nothing to count
    (VARIANT_THREE_CHECK,
     "rnbqkbnr/ppp2ppp/8/1B1pp3/4P3/8/PPPP1PPP/RNBQK1NR b KQkq - 0+3 1 3", 2),
    (VARIANT_KING_OF_THE_HILL, "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 3),
    (VARIANT_KING_OF_THE_HILL,
     "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 2),
    # kings next to the hill
    (VARIANT_KING_OF_THE_HILL, "8/8/8/8/8/2k5/8/K4Q2 b - - 0 1", 3),
    (VARIANT_KING_OF_THE_HILL,
     "r1bq1bnr/pppp1ppp/2n1k3/4p3/3PP3/5N2/PPP2PPP/RNBQKB1R w KQ - 0 1", 3),
    (VARIANT_KING_OF_THE_HILL, "8/8/4k3/8/2K5/8/8/8 w - - 0 1", 4),
    # a king on the hill: the game is over
    (VARIANT_KING_OF_THE_HILL, "rnbq1bnr/ppp2ppp/8/3kp3/8/8/PPPPPPPP/RNBQKBNR w KQ - 0 1", 2),
]


def _case_id(case: tuple[int, str, int]) -> str:
    return f"{'3check' if case[0] == VARIANT_THREE_CHECK else 'koth'}-{case[1].split()[0][:12]}"


@pytest.mark.parametrize("case", PERFT_CASES, ids=[_case_id(c) for c in PERFT_CASES])
def test_perft_equals_python_chess(case: tuple[int, str, int]) -> None:
    variant, fen, depth = case
    board = BOARDS[variant](fen)
    position = Position.from_fen(fen, variant=variant)
    for d in range(1, depth + 1):
        assert perft(*position.arrays, d) == python_chess_perft(board, d), (fen, d)
    errors = np.zeros(1, dtype=np.int64)
    perft_checked(*position.arrays, depth, errors)
    assert errors[0] == 0  # the key (check counts included) and eval terms at every node


def test_the_end_positions_of_the_cases_have_no_moves() -> None:
    """The set includes both ends, so the end rules are really tested."""
    ended = [c for c in PERFT_CASES if BOARDS[c[0]](c[1]).is_variant_end()]
    assert {c[0] for c in ended} == {VARIANT_THREE_CHECK, VARIANT_KING_OF_THE_HILL}
    for variant, fen, _ in ended:
        assert Position.from_fen(fen, variant=variant).legal_moves() == []


@pytest.mark.parametrize("variant", [VARIANT_THREE_CHECK, VARIANT_KING_OF_THE_HILL])
def test_random_games_agree_with_python_chess(variant: int) -> None:
    """Legal moves, FEN (check counts included) and the game's end, move by move."""
    rng = random.Random(variant)
    ends = 0
    for _ in range(30):
        board = BOARDS[variant]()
        position = Position.startpos(variant)
        for _ in range(200):
            assert position.fen() == board.fen()
            ours = sorted(position.move_to_uci(m) for m in position.legal_moves())
            assert ours == sorted(m.uci() for m in board.legal_moves), board.fen()
            if not ours:
                ends += board.is_variant_end()
                break
            # checks and king walks first half of the time, so games reach the variant's end
            moves = list(board.legal_moves)
            eager = [m for m in moves if board.gives_check(m) or board.piece_type_at(
                m.from_square) == chess.KING]
            move = rng.choice(eager if eager and rng.random() < 0.5 else moves)
            board.push(move)
            position.push_uci(move.uci())
    assert ends > 0


def test_check_counts_are_part_of_the_key() -> None:
    fens = [f"4k3/8/8/8/8/8/8/R3K2R w KQ - {w}+{b} 0 1" for w in (3, 2) for b in (3, 1)]
    keys = {Position.from_fen(fen, variant=VARIANT_THREE_CHECK).key for fen in fens}
    assert len(keys) == len(fens)
    chess_key = Position.from_fen("4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1").key
    assert chess_key not in keys  # nor is a three-check position's key a chess position's
    assert Position.startpos(VARIANT_KING_OF_THE_HILL).key != Position.startpos().key


def test_both_check_field_spellings_read_the_same() -> None:
    lichess = Position.from_fen("4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1 +1+2",
                                variant=VARIANT_THREE_CHECK)
    fairy = Position.from_fen("4k3/8/8/8/8/8/8/R3K2R w KQ - 2+1 0 1", variant=VARIANT_THREE_CHECK)
    assert lichess.fen() == fairy.fen() == "4k3/8/8/8/8/8/8/R3K2R w KQ - 2+1 0 1"
    assert lichess.checks_given(WHITE) == 1 and lichess.checks_given(BLACK) == 2


@pytest.mark.parametrize(("fen", "variant", "words"), [
    ("4k3/8/8/8/8/8/8/R3K2R w KQ - 2+1 0 1", VARIANT_CHESS, "only three-check"),
    ("4k3/8/8/8/8/8/8/R3K2R w KQ - 2+x 0 1", VARIANT_THREE_CHECK, "two counts"),
    ("4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1 +4+0", VARIANT_THREE_CHECK, "two counts"),
    ("4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1 +1+1+1", VARIANT_THREE_CHECK, "two counts"),
])
def test_bad_check_fields_are_named(fen: str, variant: int, words: str) -> None:
    with pytest.raises(FenError, match=words):
        Position.from_fen(fen, variant=variant)


def _side_score(fen: str, variant: int) -> int:
    return int(evaluate(*Position.from_fen(fen, variant=variant).arrays[:2], 0, new_scratch()))


def test_checks_given_are_worth_more_the_more_there_are() -> None:
    scores = [_side_score(f"r3k3/8/8/8/8/8/8/4K2R w K - {3 - given}+3 0 1", VARIANT_THREE_CHECK)
              for given in (0, 1, 2)]
    assert scores[0] < scores[1] < scores[2]
    assert scores[2] - scores[1] > scores[1] - scores[0]
    gained = params.THREE_CHECK_GIVEN_CP[2] - params.THREE_CHECK_GIVEN_CP[0]
    assert scores[2] - scores[0] == gained


def test_a_king_near_the_hill_is_worth_more_in_king_of_the_hill() -> None:
    near, far = "8/8/8/8/2K5/8/8/7k w - - 0 1", "8/8/8/8/8/8/8/K6k w - - 0 1"
    hill = VARIANT_KING_OF_THE_HILL
    assert _side_score(near, hill) - _side_score(far, hill) > (
        _side_score(near, VARIANT_CHESS) - _side_score(far, VARIANT_CHESS))


# --- the UCI engine -------------------------------------------------------------------------


def _search(engine: UciProcess, variant: str, fen: str, depth: int) -> list[str]:
    """The lines of ``go depth`` in ``variant`` from ``fen``, up to ``bestmove``."""
    engine.send(f"setoption name UCI_Variant value {variant}")
    engine.send(f"position fen {fen}")
    engine.send(f"go depth {depth}")
    return engine.expect("bestmove")


def _final_info(lines: list[str]) -> str:
    return [line for line in lines if line.startswith("info depth") and "bound" not in line][-1]


def test_the_variant_option_is_declared(engine: UciProcess) -> None:
    engine.send("uci")
    lines = engine.expect("uciok")
    option = next(line for line in lines if line.startswith("option name UCI_Variant "))
    assert option.split("type ")[1].split() == [
        "combo", "default", "chess", *[w for name in UCI_VARIANTS for w in ("var", name)]]


def test_the_third_check_is_found_as_a_win(engine: UciProcess) -> None:
    fen = "rnbqkbnr/ppp2ppp/8/3pp3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 1+3 0 3"
    lines = _search(engine, "3check", fen, 4)
    assert " score mate 1 " in _final_info(lines)
    board = chess.variant.ThreeCheckBoard(fen)
    move = chess.Move.from_uci(lines[-1].split()[1])
    assert move in board.legal_moves and board.gives_check(move)


def test_the_hill_is_found_as_a_win(engine: UciProcess) -> None:
    lines = _search(engine, "kingofthehill", "8/8/8/8/8/2k5/8/K4Q2 b - - 0 1", 4)
    assert " score mate 1 " in _final_info(lines)
    assert lines[-1] == "bestmove c3d4"


def test_the_hill_is_defended_against(engine: UciProcess) -> None:
    """In chess Kd4 is just a move; here white must stop it (or lose at once)."""
    fen = "8/8/8/8/8/2k5/8/K4Q2 w - - 0 1"
    lines = _search(engine, "kingofthehill", fen, 5)
    board = chess.variant.KingOfTheHillBoard(fen)
    board.push_uci(lines[-1].split()[1])  # raises unless legal
    assert not any(m.to_square in (chess.D4, chess.E4, chess.D5, chess.E5)
                   and board.piece_type_at(m.from_square) == chess.KING
                   for m in board.legal_moves)


@pytest.mark.parametrize(("variant", "fen", "reason"), [
    ("3check", "rnbqkbnr/ppp2ppp/8/1B1pp3/4P3/8/PPPP1PPP/RNBQK1NR b KQkq - 0+3 1 3",
     "three checks"),
    ("kingofthehill", "rnbq1bnr/ppp2ppp/8/3kp3/8/8/PPPPPPPP/RNBQKBNR w KQ - 0 1", "hill"),
])
def test_an_ended_game_is_answered_with_the_null_move(
    engine: UciProcess, variant: str, fen: str, reason: str
) -> None:
    lines = _search(engine, variant, fen, 3)
    assert lines[-1] == "bestmove 0000"
    assert any(line.startswith("info string no legal move: the game is over")
               and reason in line for line in lines)


def test_perft_over_uci_counts_in_the_variant(engine: UciProcess) -> None:
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 1+2 2 3"
    engine.send("setoption name UCI_Variant value 3check")
    engine.send(f"position fen {fen}")
    engine.send("go perft 2")
    lines = engine.expect("Nodes searched")
    expected = python_chess_perft(chess.variant.ThreeCheckBoard(fen), 2)
    assert lines[-1] == f"Nodes searched: {expected}"
    engine.send("setoption name UCI_Variant value chess")
    engine.send(f"position fen {fen}")  # a check count means nothing in chess: refused
    engine.send("isready")
    lines = engine.expect("readyok")
    assert any("only three-check" in line for line in lines
               if line.startswith("info string error"))


def test_an_unknown_variant_is_refused_by_name(engine: UciProcess) -> None:
    engine.send("setoption name UCI_Variant value atomic")
    engine.send("isready")
    lines = engine.expect("readyok")
    assert any("'atomic'" in line and "3check" in line for line in lines
               if line.startswith("info string error"))


@pytest.mark.parametrize("variant", [VARIANT_THREE_CHECK, VARIANT_KING_OF_THE_HILL])
def test_python_chess_plays_a_variant_game_with_the_engine(variant: int) -> None:
    """The bot's path: python-chess sees the option, sets it, and sends variant FENs."""
    with chess.engine.SimpleEngine.popen_uci([sys.executable, "-m", "engine"],
                                             cwd=ROOT) as uci:
        board = BOARDS[variant]()
        variants = uci.options["UCI_Variant"].var
        assert variants is not None and board.uci_variant in variants
        for _ in range(16):
            if board.is_game_over():
                break
            move = uci.play(board, chess.engine.Limit(depth=2)).move
            assert move is not None and move in board.legal_moves
            board.push(move)
