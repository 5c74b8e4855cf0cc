"""Self-play for training data: its fast paths agree with python-chess and with a plain game
loop built from python-chess's own rules, move for move."""

from __future__ import annotations

import random
import time
from collections import Counter

import chess

from engine import params
from engine.board import Position
from engine.search import Searcher
from engine.timeman import GoLimits, TimeBudget
from tools.common import selfplay
from tools.common.openings import random_opening

ENDGAME_FENS = (  # few pieces: mates, stalemates, repetitions and fifty quiet moves come soon
    "8/8/8/4k3/8/8/8/R3K3 w Q - 0 1",
    "8/8/8/4k3/8/8/8/3QK3 w - - 0 1",
    "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1",
    "r3k3/8/8/8/8/8/8/4K2R b Kq - 90 80",
    "4k3/8/8/8/8/8/8/4KB1N w - - 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",
    "7k/8/8/6Q1/8/8/8/K7 w - - 0 1",
)


def _reference_end(board: chess.Board, start_ply: int) -> str | None:
    """The game's end as python-chess rules it: ``outcome()``, then the claims a player has."""
    outcome = board.outcome()
    if outcome is not None:
        return outcome.result()
    if board.is_repetition(3) or board.halfmove_clock >= 100 \
            or board.ply() - start_ply >= selfplay.MAX_PLIES:
        return "1/2-1/2"
    return None


def _ending_kind(board: chess.Board, start_ply: int) -> str:
    if board.is_checkmate():
        return "checkmate"
    if board.is_stalemate():
        return "stalemate"
    if board.is_insufficient_material():
        return "insufficient"
    if board.is_repetition(3):
        return "repetition"
    if board.halfmove_clock >= 100:
        return "fifty"
    assert board.ply() - start_ply >= selfplay.MAX_PLIES
    return "length"


def _next_move(board: chess.Board, rng: random.Random) -> chess.Move:
    """A random move, steered towards the endings: often one that ends the game, often the
    one taking back the mover's last move (repetitions)."""
    moves = list(board.legal_moves)
    if rng.random() < 0.5:
        for move in moves:
            board.push(move)
            over = board.is_checkmate() or board.is_stalemate()
            board.pop()
            if over:
                return move
    if len(board.move_stack) >= 2 and rng.random() < 0.3:
        last = board.move_stack[-2]
        back = chess.Move(last.to_square, last.from_square)
        if back in moves:
            return back
    return rng.choice(moves)


def test_game_end_agrees_with_python_chess_over_random_games() -> None:
    rng = random.Random(5)
    kinds: Counter[str] = Counter()
    for game in range(70):
        fen = ENDGAME_FENS[game % len(ENDGAME_FENS)] if game % 4 else chess.STARTING_FEN
        board = chess.Board(fen)
        position = Position.from_fen(fen)
        start_ply = board.ply() - rng.randrange(2) * (selfplay.MAX_PLIES - 40)
        while True:
            expected = _reference_end(board, start_ply)
            assert selfplay.game_end(board, position, start_ply) == expected, board.fen()
            if expected is not None:
                kinds[_ending_kind(board, start_ply)] += 1
                break
            move = _next_move(board, rng)
            board.push(move)
            position.push_uci(move.uci())
    # every way a game ends was met, so every one was compared
    assert set(kinds) == {"checkmate", "stalemate", "insufficient", "repetition", "fifty",
                          "length"}, kinds


def _reference_game(rng: random.Random, nodes: int,
                    random_plies: int) -> tuple[list[tuple[str, int]], str]:
    """One game as the plain loop plays it: a new searcher, python-chess's rules each ply."""
    board = random_opening(rng, random_plies)
    searcher = Searcher(selfplay.HASH_MB)
    kept: list[tuple[str, int]] = []
    white_scores: list[int] = []
    start_ply = board.ply()
    position = Position.from_fen(board.fen())
    while (result := _reference_end(board, start_ply)) is None:
        found = searcher.think(position, GoLimits(nodes=nodes), TimeBudget(None, None),
                               time.monotonic(), lambda _: None)
        assert found.best_move is not None
        move = chess.Move.from_uci(found.best_move)
        if (not board.is_check() and not board.is_capture(move) and move.promotion is None
                and abs(found.score) < params.MATE_BOUND
                and board.ply() - start_ply >= selfplay.SKIP_PLIES):
            kept.append((board.fen(), found.score))
        white_scores.append(found.score if board.turn == chess.WHITE else -found.score)
        recent = white_scores[-selfplay.WIN_PLIES:]
        if len(recent) == selfplay.WIN_PLIES and all(s >= selfplay.WIN_CP for s in recent):
            return kept, "1-0"
        if len(recent) == selfplay.WIN_PLIES and all(s <= -selfplay.WIN_CP for s in recent):
            return kept, "0-1"
        board.push(move)
        position.push_uci(found.best_move)
    return kept, result


def test_a_reused_player_plays_the_games_of_the_plain_loop() -> None:
    """One player's searcher, emptied between games, plays each game as a new searcher does,
    and its endings are python-chess's: the same moves, kept positions, scores and results."""
    player = selfplay.SelfPlay()
    fast, plain = random.Random(11), random.Random(11)
    for _ in range(4):
        kept, result = player.play_game(fast, 400, 4)
        assert ([(board.fen(), score) for board, score in kept], result) \
            == _reference_game(plain, 400, 4)
    assert fast.random() == plain.random()  # both drew the same openings
