"""A small UCI engine for the level tests: it declares the options it is told to, logs every
line it receives to a file of its own, and plays the first legal move in UCI order.

    python level_engine.py LOG_DIR [OPTION ...]

Each process writes LOG_DIR/<pid>.log. An OPTION is one of UCI_LimitStrength,
UCI_Elo:<min>:<max>, UCI_Opponent, UCI_RatingAdv, or any other name (a spin option 0-100);
with none, the engine declares no option at all.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import chess


def declarations(options: list[str]) -> list[str]:
    """The `option` lines of the options asked for."""
    lines = []
    for option in options:
        name, _, bounds = option.partition(":")
        if name == "UCI_LimitStrength":
            lines.append("option name UCI_LimitStrength type check default false")
        elif name == "UCI_Elo":
            low, high = bounds.split(":")
            lines.append(f"option name UCI_Elo type spin default {high} min {low} max {high}")
        elif name == "UCI_Opponent":
            lines.append("option name UCI_Opponent type string default <empty>")
        elif name == "UCI_RatingAdv":
            lines.append("option name UCI_RatingAdv type spin default 0 min -10000 max 10000")
        else:
            lines.append(f"option name {name} type spin default 0 min 0 max 100")
    return lines


def position(words: list[str]) -> chess.Board:
    """The board of a `position startpos|fen <fen> [moves ...]` command."""
    moves_at = words.index("moves") if "moves" in words else len(words)
    board = chess.Board() if words[1] == "startpos" else chess.Board(" ".join(words[2:moves_at]))
    for uci in words[moves_at + 1:]:
        board.push_uci(uci)
    return board


def main(argv: list[str]) -> int:
    log_path = Path(argv[1]) / f"{os.getpid()}.log"
    board = chess.Board()
    with log_path.open("a", encoding="utf-8") as log:
        for raw in sys.stdin:
            line = raw.strip()
            log.write(line + "\n")
            log.flush()
            words = line.split()
            if line == "uci":
                print("id name level-engine")
                for declared in declarations(argv[2:]):
                    print(declared)
                print("uciok", flush=True)
            elif line == "isready":
                print("readyok", flush=True)
            elif words and words[0] == "position":
                board = position(words)
            elif words and words[0] == "go":
                move = min(board.legal_moves, key=lambda m: m.uci())
                print(f"info depth 1 score cp 0 pv {move.uci()}")
                print(f"bestmove {move.uci()}", flush=True)
            elif line == "quit":
                break
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
