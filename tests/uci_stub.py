"""The UCI loop of the tests' small engines: each names itself, declares the options it is
given, and plays the first legal move in UCI text order, a deterministic answer a test can
predict. A stub run as a script imports this module after putting the repository root on
its path (the `tests` package is not installed).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

import chess


def board_of(position: str) -> chess.Board:
    """The board of a UCI `position startpos|fen <fen> [moves ...]` command."""
    words = position.split()
    moves_at = words.index("moves") if "moves" in words else len(words)
    board = chess.Board() if words[1] == "startpos" else chess.Board(" ".join(words[2:moves_at]))
    for uci in words[moves_at + 1:]:
        board.push_uci(uci)
    return board


def first_legal(board: chess.Board) -> chess.Move:
    """The move every stub plays: the first legal one in UCI text order."""
    return min(board.legal_moves, key=lambda move: move.uci())


def serve(name: str, options: Sequence[str] = (), *, log: TextIO | None = None,
          info: bool = True, answer_go: bool = True, exit_on_go: int | None = None,
          outlive_input: bool = False,
          info_of: Callable[[chess.Board], str] | None = None) -> None:
    """Answer UCI commands on stdin until `quit` or its end. `options`: the `option` lines
    `uci` declares; `log`: where each line received is written (stripped) as it comes;
    `info`: send an `info ... pv` line before each `bestmove`, as engines do; `answer_go`
    False: read `go` and never answer, as a hung engine does; `exit_on_go`: exit with this
    status at the first `go`, as an engine that crashes does; `outlive_input`: keep running
    after the end of stdin, so that only `quit` (or a signal) ends the process; `info_of`:
    the score words of that `info` line for a board (`score cp 0` without it)."""
    board = chess.Board()
    for raw in sys.stdin:
        line = raw.strip()
        if log is not None:
            log.write(line + "\n")
            log.flush()
        words = line.split()
        command = words[0] if words else ""
        if command == "uci":
            print(f"id name {name}", *options, "uciok", sep="\n", flush=True)
        elif command == "isready":
            print("readyok", flush=True)
        elif command == "position":
            board = board_of(line)
        elif command == "go" and exit_on_go is not None:
            sys.exit(exit_on_go)
        elif command == "go" and answer_go:
            move = first_legal(board).uci()
            if info:
                words = "score cp 0" if info_of is None else info_of(board)
                print(f"info depth 1 {words} pv {move}")
            print(f"bestmove {move}", flush=True)
        elif command == "quit":
            return
    while outlive_input:  # the end of stdin is not `quit`: wait to be killed
        time.sleep(60)
