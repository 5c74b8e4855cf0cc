"""Rebuilding the board from the server's moves: both castling notations, chess960, set-ups;
takebacks; the clocks as of now."""

from __future__ import annotations

import chess
import pytest

from bot.game.hooks import GameContext
from bot.game.position import Position, Step, initial_board, replay, wire_uci
from bot.lichess.events import GameState, Player

CASTLE_READY = "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8"


@pytest.mark.parametrize("variant", ["standard", "fromPosition"])
@pytest.mark.parametrize(("white", "black"), [("e1g1", "e8c8"), ("e1h1", "e8a8")])
def test_both_castling_notations_replay(variant: str, white: str, black: str) -> None:
    board = replay(initial_board(variant, CASTLE_READY), (white, black))
    assert board.piece_at(chess.G1) == chess.Piece(chess.KING, chess.WHITE)
    assert board.piece_at(chess.F1) == chess.Piece(chess.ROOK, chess.WHITE)
    assert board.piece_at(chess.C8) == chess.Piece(chess.KING, chess.BLACK)
    assert board.piece_at(chess.D8) == chess.Piece(chess.ROOK, chess.BLACK)


def test_we_send_e1g1_in_standard_and_king_takes_rook_in_chess960() -> None:
    board = initial_board("fromPosition", CASTLE_READY)
    castle = board.parse_uci("e1h1")
    assert wire_uci(board, castle, "fromPosition") == "e1g1"
    assert wire_uci(board, board.parse_uci("e1c1"), "standard") == "e1c1"
    # Chess960 position 518 is the standard setup; king-takes-rook is the only safe notation.
    c960 = initial_board("chess960", CASTLE_READY.replace("KQkq", "HAha"))
    assert wire_uci(c960, c960.parse_uci("e1h1"), "chess960") == "e1h1"


def test_chess960_start_position_and_castling() -> None:
    fen = "bqnbrkrn/pppppppp/8/8/8/8/PPPPPPPP/BQNBRKRN w GEge - 0 1"
    board = initial_board("chess960", fen)
    assert board.chess960
    moves = ("e2e4", "e7e5", "f1g1")  # f1g1: the king takes its rook: O-O
    board = replay(board, moves)
    assert board.piece_at(chess.G1) == chess.Piece(chess.KING, chess.WHITE)
    assert board.piece_at(chess.F1) == chess.Piece(chess.ROOK, chess.WHITE)


def test_startpos_and_an_illegal_move() -> None:
    board = initial_board("standard", "startpos")
    assert board == chess.Board()
    with pytest.raises(ValueError):
        replay(board, ("e2e4", "e2e4"))
    with pytest.raises(ValueError):
        replay(initial_board("standard", "startpos"), ("zz99",))


def context(color: chess.Color = chess.WHITE, fen: str = "startpos") -> GameContext:
    return GameContext(game_id="g1", variant="standard", speed="blitz", rated=False, me="me",
                       color=color, white=Player("me", "me", None, None),
                       black=Player("you", "you", None, None), initial_fen=fen,
                       clock_initial_s=60.0, clock_increment_s=1.0)


def state(moves: tuple[str, ...], wtime_s: float = 50.0, btime_s: float = 40.0) -> GameState:
    return GameState(moves, wtime_s, btime_s, 1.0, 2.0, "started")


def test_a_move_list_that_grows_plays_on_and_a_takeback_says_what_stays() -> None:
    position = Position(context())
    assert position.sync(("e2e4", "e7e5")) == Step(new_ply=True)
    assert position.sync(("e2e4", "e7e5")) == Step(new_ply=False)
    assert position.sync(("e2e4",)) == Step(new_ply=True, kept=1)
    assert position.board.fen() == replay(chess.Board(), ("e2e4",)).fen()
    assert position.sync(("d2d4", "d7d5")) == Step(new_ply=True, kept=0)
    assert position.moves == ("d2d4", "d7d5") and position.our_turn


def test_moves_that_do_not_replay_leave_the_board_as_it_was() -> None:
    position = Position(context())
    position.sync(("e2e4",))
    with pytest.raises(ValueError):
        position.sync(("e2e4", "e2e4"))
    assert position.moves == ("e2e4",)
    assert position.board.move_stack == [chess.Move.from_uci("e2e4")]


def test_a_bad_initial_position_is_refused() -> None:
    with pytest.raises(ValueError):
        Position(context(fen="not a fen"))


def test_the_clock_of_the_side_to_move_runs_down_from_the_second_move() -> None:
    position = Position(context(chess.BLACK))
    assert position.clocks_s(now=100.0) == (0.0, 0.0)  # no state yet
    position.sync(("e2e4",))
    position.record(state(("e2e4",)), received=100.0)
    assert position.clocks_s(now=103.0) == (40.0, 50.0)  # one move: no clock runs yet
    position.sync(("e2e4", "e7e5"))
    position.record(state(("e2e4", "e7e5")), received=100.0)
    assert position.clocks_s(now=103.0) == (40.0, 47.0)  # white to move: theirs runs
    assert not position.our_turn and not position.abortable
