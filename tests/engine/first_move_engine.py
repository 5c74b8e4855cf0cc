"""A UCI engine that always plays its first legal move in UCI text order: the weakest, and
deterministic, player for the strength tools' tests (Stockfish's Skill Level draws its
weakening from a time-seeded generator, so no test could be sure what it plays).

    python tests/engine/first_move_engine.py
"""

from __future__ import annotations

import sys

import chess


def main() -> None:
    board = chess.Board()
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "uci":
            print("id name FirstMove", "uciok", sep="\n", flush=True)
        elif words[0] == "isready":
            print("readyok", flush=True)
        elif words[0] == "position":
            board = position(words)
        elif words[0] == "go":
            move = min(board.legal_moves, key=lambda m: m.uci())
            print("info depth 1 score cp 0 pv", move.uci(), flush=True)
            print("bestmove", move.uci(), flush=True)
        elif words[0] == "quit":
            return


def position(words: list[str]) -> chess.Board:
    rest = words[1:]
    if rest[0] == "startpos":
        board, rest = chess.Board(), rest[1:]
    else:
        end = rest.index("moves") if "moves" in rest else len(rest)
        board, rest = chess.Board(" ".join(rest[1:end])), rest[end:]
    for text in rest[1:]:
        board.push_uci(text)
    return board


if __name__ == "__main__":
    main()
