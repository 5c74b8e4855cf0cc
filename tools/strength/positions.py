"""The fixed middlegame positions of the centipawn-loss measurement, and how they were made.

``middlegames.epd`` beside this module was generated once by::

    python -m tools.strength.positions --out tools/strength/middlegames.epd

Every built-in opening line of ``tools.common.openings`` is played forward LINES_PER_OPENING
times by Stockfish (Threads 1, a fixed node count per move, MultiPV GEN_MULTIPV): a seeded
random generator picks one of the lines within GEN_MARGIN_CP of the best, so the games differ
but no move is a blunder.  Each game draws a target ply between MIN_PLY and MAX_PLY and keeps
the first position from there on (up to MAX_PLY) that is a real middlegame:

- the side to move is not in check and the position is not over;
- the material balance is within MAX_IMBALANCE (pawn units, 1/3/3/5/9);
- each side keeps at least MIN_SIDE_PIECE_UNITS of pieces (knights to queens, pawn units)
  and the board has at least MIN_MEN men, kings included;
- Stockfish's own score there is within MAX_EVAL_CP, so no position is already decided
  (centipawn loss in a won or lost position says little about a level's play).

Fixed nodes, one thread and a fixed seed make the file reproducible with Stockfish 15.1.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path

import chess
import chess.engine

from tools.common.engines import check_installed, open_engine, resolve_engine
from tools.common.material import material_balance, side_material
from tools.common.openings import load_openings
from tools.common.scores import MATE_CP

POSITIONS_FILE = Path(__file__).resolve().parent / "middlegames.epd"

GEN_SEED = 64
LINES_PER_OPENING = 6
GEN_NODES = 5_000
GEN_MULTIPV = 3
GEN_MARGIN_CP = 40
MIN_PLY = 20
MAX_PLY = 40
MAX_IMBALANCE = 2
MIN_SIDE_PIECE_UNITS = 13  # e.g. a queen and a minor piece, or two rooks and a minor
MIN_MEN = 20
MAX_EVAL_CP = 200
HEADER = ("# Middlegames of the centipawn-loss measurement, made by "
          "`python -m tools.strength.positions` with Stockfish 15.1 (see its docstring)\n")


def is_middlegame(board: chess.Board) -> bool:
    """The static filters (all but Stockfish's score)."""
    if board.is_check() or board.is_game_over():
        return False
    return (abs(material_balance(board)) <= MAX_IMBALANCE
            and min(side_material(board, c, pawns=False) for c in chess.COLORS)
            >= MIN_SIDE_PIECE_UNITS
            and len(board.piece_map()) >= MIN_MEN)


def _play_line(engine: chess.engine.SimpleEngine, board: chess.Board,
               rng: random.Random) -> chess.Board | None:
    """Play on from ``board``; the first middlegame from a drawn ply on, None if none came."""
    target_ply = rng.randint(MIN_PLY, MAX_PLY)
    game = object()  # one game: Stockfish clears its hash at the start of each line only
    while board.ply() <= MAX_PLY and not board.is_game_over():
        infos = engine.analyse(board, chess.engine.Limit(nodes=GEN_NODES),
                               multipv=GEN_MULTIPV, game=game)
        scored = [(info["score"].relative.score(mate_score=MATE_CP), info["pv"][0])
                  for info in infos if info.get("pv")]
        if (board.ply() >= target_ply and abs(scored[0][0]) <= MAX_EVAL_CP
                and is_middlegame(board)):
            return board.copy(stack=False)
        good = [move for score, move in scored if score >= scored[0][0] - GEN_MARGIN_CP]
        board.push(good[rng.randrange(len(good))])
    return None


def generate(stockfish: str = "stockfish") -> list[str]:
    """The EPD lines of the position set (minutes: one Stockfish search per ply)."""
    spec = resolve_engine(stockfish)
    check_installed(spec)
    rng = random.Random(GEN_SEED)
    lines: list[str] = []
    engine = open_engine(spec)
    try:
        engine.configure({"Threads": 1, "Hash": 16})
        for opening in load_openings(None):
            for line in range(LINES_PER_OPENING):
                board = chess.Board(opening.fen)
                for move in opening.moves:
                    board.push(move)
                position = _play_line(engine, board, rng)
                if position is not None:
                    name = f"{opening.name} {line + 1} ply {position.ply()}"
                    lines.append(position.epd(id=name))
                    print(f"{len(lines)}: {name}", file=sys.stderr, flush=True)
    finally:
        engine.quit()
    return lines


def load_positions(path: Path = POSITIONS_FILE) -> list[tuple[str, chess.Board]]:
    """(name, board) of every EPD line of ``path``."""
    positions: list[tuple[str, chess.Board]] = []
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        try:
            board, operations = chess.Board.from_epd(text)
        except ValueError as error:
            raise SystemExit(f"{path}:{number}: not an EPD position: {error}") from None
        positions.append((str(operations.get("id", f"{path.name}:{number}")), board))
    if not positions:
        raise SystemExit(f"{path}: no positions")
    return positions


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.strength.positions",
                                     description="Generate the fixed middlegame set.")
    parser.add_argument("--out", type=Path, default=POSITIONS_FILE)
    parser.add_argument("--stockfish", default="stockfish",
                        help="the generating engine (alias or command; default stockfish)")
    args = parser.parse_args(argv)
    lines = generate(args.stockfish)
    args.out.write_text(HEADER + "\n".join(lines) + "\n")
    print(f"{len(lines)} positions written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
