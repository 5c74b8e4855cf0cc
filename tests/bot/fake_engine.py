"""A misbehaving UCI engine for fault tests: plays a random legal move, but on its Nth `go`
it crashes, hangs (never answers), answers an illegal move, answers a move other than the
one its last info line's PV starts with (as a search stopped mid-iteration may), answers
the second of two MultiPV lines (as a limited level may: pick), or answers without any info
line (silent).

    python tests/bot/fake_engine.py crash|hang|illegal|stalepv|pick|silent|slowready|none N
        [VARIANT,...]
    python tests/bot/fake_engine.py heldready 0 GATE

`slowready` answers each `isready` N seconds late; `heldready` answers none until the file
GATE exists (a test creates it once what it checks has happened: no race with a clock).

With a list of variants (Fairy-Stockfish's names, e.g. `atomic`) it declares `UCI_Variant`
and plays those variants by python-chess's rules, taking a win at once when one is there.
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

import chess
import chess.variant

GATE_POLL_S = 0.01  # how often `heldready` looks for its gate file


def main(argv: list[str]) -> None:
    mode, nth = argv[0], int(argv[1])
    gate = Path(argv[2]) if mode == "heldready" else None
    variants = argv[2].split(",") if len(argv) > 2 and gate is None else []
    rules: type[chess.Board] = chess.Board
    board = chess.Board()
    searches = 0
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        command = words[0]
        if command == "uci":
            print("id name Fake", "option name Hash type spin default 16 min 1 max 64",
                  "option name UCI_Chess960 type check default false",
                  *([f"option name UCI_Variant type combo default chess var chess "
                     f"{' '.join(f'var {v}' for v in variants)}"] if variants else []),
                  "uciok", sep="\n", flush=True)
        elif command == "setoption" and words[1:4] == ["name", "UCI_Variant", "value"]:
            rules = chess.Board if words[4] == "chess" else \
                chess.variant.find_variant(words[4])
        elif command == "isready":
            if mode == "slowready":  # an engine still compiling: N seconds for each readyok
                time.sleep(nth)
            while gate is not None and not gate.exists():
                time.sleep(GATE_POLL_S)
            print("readyok", flush=True)
        elif command == "position":
            board = position(words[1:], rules)
        elif command == "go":
            searches += 1
            if searches == nth and mode == "crash":
                os._exit(3)
            if searches == nth and mode == "hang":
                continue  # never answers, not even to stop
            move = winning(board) or random.choice(list(board.legal_moves))
            if searches == nth and mode == "illegal":
                print("bestmove a1a1", flush=True)
                continue
            shown = move
            if searches == nth and mode == "stalepv":
                shown = next(m for m in board.legal_moves if m != move)
            if searches == nth and mode == "pick":
                print(pick_lines(board, move), flush=True)
                print(f"bestmove {move.uci()}", flush=True)
                continue
            if not (searches == nth and mode == "silent"):
                print(f"info depth 1 score cp 0 nodes 1 nps 1000 pv {shown.uci()}", flush=True)
            print(f"bestmove {move.uci()}", flush=True)
        elif command == "quit":
            return


def pick_lines(board: chess.Board, move: chess.Move) -> str:
    """Two MultiPV lines of which `move` is the second, as a limited level reports the line
    it then plays: its score -20, its PV `move` and a reply."""
    other = next(m for m in board.legal_moves if m != move)
    board.push(move)
    reply = next(iter(board.legal_moves))
    board.pop()
    return (f"info depth 3 multipv 1 score cp 50 nodes 40 nps 4000 pv {other.uci()}\n"
            f"info depth 3 multipv 2 score cp -20 nodes 40 nps 4000 pv {move.uci()} "
            f"{reply.uci()}")


def winning(board: chess.Board) -> chess.Move | None:
    """A move that wins by the variant's own rules (an exploded king, ...), if there is one."""
    if type(board) is chess.Board:
        return None
    for move in board.legal_moves:
        board.push(move)
        won = board.is_variant_loss()  # for the side now to move
        board.pop()
        if won:
            return move
    return None


def position(words: list[str], rules: type[chess.Board]) -> chess.Board:
    if words[0] == "startpos":
        board, rest = rules(), words[1:]
    else:
        end = words.index("moves") if "moves" in words else len(words)
        board, rest = rules(" ".join(words[1:end])), words[end:]
    if rest and rest[0] == "moves":
        for uci in rest[1:]:
            board.push_uci(uci)
    return board


if __name__ == "__main__":
    main(sys.argv[1:])
