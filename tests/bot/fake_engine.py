"""A misbehaving UCI engine for fault tests: plays a random legal move, but on its Nth `go`
it crashes, hangs (never answers), answers an illegal move, or answers a move other than the
one its last info line's PV starts with (as a search stopped mid-iteration may).

    python tests/bot/fake_engine.py crash|hang|illegal|stalepv|none N
"""

from __future__ import annotations

import os
import random
import sys

import chess


def main(argv: list[str]) -> None:
    mode, nth = argv[0], int(argv[1])
    board = chess.Board()
    searches = 0
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        command = words[0]
        if command == "uci":
            print("id name Fake", "option name Hash type spin default 16 min 1 max 64",
                  "option name UCI_Chess960 type check default false", "uciok",
                  sep="\n", flush=True)
        elif command == "isready":
            print("readyok", flush=True)
        elif command == "position":
            board = position(words[1:])
        elif command == "go":
            searches += 1
            if searches == nth and mode == "crash":
                os._exit(3)
            if searches == nth and mode == "hang":
                continue  # never answers, not even to stop
            move = random.choice(list(board.legal_moves))
            if searches == nth and mode == "illegal":
                print("bestmove a1a1", flush=True)
                continue
            shown = move
            if searches == nth and mode == "stalepv":
                shown = next(m for m in board.legal_moves if m != move)
            print(f"info depth 1 score cp 0 nodes 1 nps 1000 pv {shown.uci()}", flush=True)
            print(f"bestmove {move.uci()}", flush=True)
        elif command == "quit":
            return


def position(words: list[str]) -> chess.Board:
    if words[0] == "startpos":
        board, rest = chess.Board(), words[1:]
    else:
        end = words.index("moves") if "moves" in words else len(words)
        board, rest = chess.Board(" ".join(words[1:end])), words[end:]
    if rest and rest[0] == "moves":
        for uci in rest[1:]:
            board.push_uci(uci)
    return board


if __name__ == "__main__":
    main(sys.argv[1:])
