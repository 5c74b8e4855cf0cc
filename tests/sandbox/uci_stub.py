"""A small UCI engine for tests: it logs every command it receives and plays the first legal
move in UCI order.

    python uci_stub.py LOG [--elo MIN MAX]

With --elo it declares `UCI_LimitStrength` and `UCI_Elo` (range MIN-MAX), as Stockfish
does; without, no option at all.
"""

from __future__ import annotations

import sys

import chess


def position(words: list[str]) -> chess.Board:
    """The board of a `position startpos|fen <fen> [moves ...]` command."""
    moves_at = words.index("moves") if "moves" in words else len(words)
    board = chess.Board() if words[1] == "startpos" else chess.Board(" ".join(words[2:moves_at]))
    for uci in words[moves_at + 1:]:
        board.push_uci(uci)
    return board


def main(argv: list[str]) -> int:
    log_path = argv[1]
    elo_range = (argv[argv.index("--elo") + 1], argv[argv.index("--elo") + 2]) \
        if "--elo" in argv else None
    board = chess.Board()
    with open(log_path, "a", encoding="utf-8") as log:
        for raw in sys.stdin:
            line = raw.strip()
            log.write(line + "\n")
            log.flush()
            words = line.split()
            if line == "uci":
                print("id name uci-stub")
                if elo_range is not None:
                    low, high = elo_range
                    print("option name UCI_LimitStrength type check default false")
                    print(f"option name UCI_Elo type spin default {high} min {low} max {high}")
                print("uciok", flush=True)
            elif line == "isready":
                print("readyok", flush=True)
            elif words and words[0] == "position":
                board = position(words)
            elif words and words[0] == "go":
                move = min(board.legal_moves, key=lambda m: m.uci())
                print(f"bestmove {move.uci()}", flush=True)
            elif line == "quit":
                break
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
