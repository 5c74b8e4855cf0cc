"""A stronger engine's judgement of sampled positions: the reference a net is measured against.

``python -m tools.nnue.reference --data DIR --out REF.tsv [--positions 10000] [--nodes 20000]
[--engine stockfish]``

A net's held-out loss on the factory's data measures how well it predicts the engine's own
search of the engine's own games: the labels come from the net that played them, and every
fine-tune of that net learns those labels.  Here the positions are scored instead by another
engine (Debian's Stockfish by default: far stronger, with a learned evaluation of its own) at
a fixed node count, and the file keeps its win expectation (``UCI_ShowWDL``: its own model
from score and material to win, draw and loss).  ``python -m tools.nnue.heldout NET ...
--reference REF.tsv`` then reads each net's error against it.

The positions are drawn evenly through the data files (the first of every ``len /
positions``), so a game gives a few of them at most.  Use data none of the compared nets was
trained on.

The file: a comment line naming the engine, its nodes and the data, then one line a position,
``FEN<TAB>cp<TAB>expectation`` (side to move's view; a mate is ``MATE_CP`` less its distance).

``--records OUT.bin`` also writes the judged positions as training records of
``tools.nnue.data`` (the reference's score, the game's result) with their sidecar, whose K is
the one that turns the reference's centipawns into its win expectations best (least squares):
a net can then be trained towards the stronger engine's judgement (``tools.nnue.train --data
OUT.bin``, its origin ``records``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.engine
import numpy as np

from tools.common.engines import check_installed, make_spec, open_engine, search_fresh
from tools.common.scores import MATE_CP
from tools.nnue.data import MAX_SCORE_CP, Records, decode_board, encode, meta_path
from tools.nnue.shards import training_sources

DEFAULT_POSITIONS = 10_000
# Stockfish 15.1 searches 20,000 nodes in about 20 ms a position on one core: 10,000 positions
# in about eight minutes.
DEFAULT_NODES = 20_000
DEFAULT_ENGINE = "stockfish"
DEFAULT_HASH_MB = 16
DEFAULT_TIMEOUT_S = 120.0
COMMENT = "#"
# The K of a reference's centipawns is searched on this grid (cp a unit of the sigmoid).
K_GRID_CP = np.arange(50, 801)


@dataclass(frozen=True)
class Judged:
    """One position and the reference engine's reading of it (side to move's view)."""

    fen: str
    score_cp: int
    expectation: float  # win + draw / 2, 0 .. 1


class ReferenceFileError(ValueError):
    """A reference file that cannot be read: the message names the file and the line."""


def sample(paths: Sequence[Path], positions: int) -> Records:
    """``positions`` records drawn evenly through the data's (all of them if fewer)."""
    records = np.concatenate([source.records for source in training_sources(paths, None)])
    step = max(1, len(records) // positions)
    return records[::step][:positions]


def fitted_k(judged: Sequence[Judged]) -> int:
    """The K (cp) whose ``sigmoid(cp / K)`` is nearest the reference's win expectations."""
    score = np.clip(np.array([j.score_cp for j in judged], dtype=np.float64),
                    -MAX_SCORE_CP, MAX_SCORE_CP)
    expectation = np.array([j.expectation for j in judged], dtype=np.float64)
    errors = [float(np.mean((1.0 / (1.0 + np.exp(-score / k)) - expectation) ** 2))
              for k in K_GRID_CP]
    return int(K_GRID_CP[int(np.argmin(errors))])


def write_records(out: Path, records: Records, judged: Sequence[Judged], engine: str) -> int:
    """The judged positions as training records (the reference's score, each record's game
    result) and their sidecar with the fitted K; the K."""
    k = fitted_k(judged)
    out.write_bytes(b"".join(encode(chess.Board(j.fen), j.score_cp, int(record["result"]))
                             for record, j in zip(records, judged, strict=True)))
    meta_path(out).write_text(json.dumps({"evaluation": engine, "k": k}) + "\n",
                              encoding="utf-8")
    return k


def judge(boards: Sequence[chess.Board], engine_text: str, nodes: int,
          timeout_s: float) -> list[Judged]:
    """The reference engine's score and win expectation of each board, each searched at
    ``nodes`` in a game of its own (nothing of one search is read in the next's table)."""
    spec = make_spec(engine_text, None, None, [], False)
    check_installed(spec)
    engine = open_engine(spec)
    judged = []
    try:
        if "UCI_ShowWDL" not in engine.options:
            raise SystemExit(f"engine {engine_text!r} has no UCI_ShowWDL option: the reference "
                             f"is its win expectation")
        settings: dict[str, str | int | bool] = {"UCI_ShowWDL": True}
        if "Hash" in engine.options:
            settings["Hash"] = DEFAULT_HASH_MB
        engine.configure(settings)
        for board in boards:
            found = search_fresh(engine, engine_text, board, nodes, timeout_s)
            score, wdl = found.info.get("score"), found.info.get("wdl")
            if score is None or wdl is None:
                raise SystemExit(f"engine {engine_text!r} gave no score and WDL in "
                                 f"{board.fen()}")
            judged.append(Judged(board.fen(), int(score.pov(board.turn).score(mate_score=MATE_CP)),
                                 float(wdl.pov(board.turn).expectation())))
    finally:
        # one the watchdog killed has nothing left to quit
        with contextlib.suppress(chess.engine.EngineError, chess.engine.EngineTerminatedError):
            engine.quit()
    return judged


def write(path: Path, judged: Sequence[Judged], header: str) -> None:
    lines = [f"{COMMENT} {header}"]
    lines += [f"{j.fen}\t{j.score_cp}\t{j.expectation:.4f}" for j in judged]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def read(path: Path) -> list[Judged]:
    """The positions of a reference file; a line that is not ``FEN<TAB>cp<TAB>expectation``
    is refused by its number."""
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as error:
        raise ReferenceFileError(f"{path}: cannot be read ({error})") from None
    judged = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith(COMMENT):
            continue
        fields = line.split("\t")
        try:
            if len(fields) != 3:
                raise ValueError(f"{len(fields)} fields, not FEN, cp and expectation")
            fen, score_cp, expectation = fields[0], int(fields[1]), float(fields[2])
            chess.Board(fen)
            if not 0.0 <= expectation <= 1.0:
                raise ValueError(f"expectation {expectation} is outside 0 .. 1")
        except ValueError as error:
            raise ReferenceFileError(f"{path}: line {number}: {error}") from None
        judged.append(Judged(fen, score_cp, expectation))
    if not judged:
        raise ReferenceFileError(f"{path}: no positions")
    return judged


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nnue.reference", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, nargs="+", required=True,
                        help="record files, shards or directories of shards (as the trainer's)")
    parser.add_argument("--out", type=Path, required=True, help="the reference file to write")
    parser.add_argument("--positions", type=int, default=DEFAULT_POSITIONS)
    parser.add_argument("--nodes", type=int, default=DEFAULT_NODES,
                        help="the reference engine's nodes a position")
    parser.add_argument("--engine", default=DEFAULT_ENGINE,
                        help="an alias of tools.match or a command line; it must report WDL")
    parser.add_argument("--timeout-s", type=float, default=DEFAULT_TIMEOUT_S,
                        help="an engine silent this long on one position is killed")
    parser.add_argument("--records", type=Path,
                        help="also write the positions as training records with the "
                             "reference's scores (and a sidecar with their K)")
    args = parser.parse_args(argv)
    if args.positions < 1 or args.nodes < 1 or args.timeout_s <= 0:
        parser.error("--positions, --nodes and --timeout-s must be positive")
    records = sample(args.data, args.positions)
    judged = judge([decode_board(record) for record in records], args.engine, args.nodes,
                   args.timeout_s)
    label = f"{args.engine} at {args.nodes} nodes"
    write(args.out, judged, f"{label}, {len(judged)} positions of "
                            f"{' '.join(str(p) for p in args.data)}")
    print(f"{args.out}: {len(judged)} positions judged by {label}")
    if args.records is not None:
        k = write_records(args.records, records, judged, label)
        print(f"{args.records}: {len(judged)} training records, K {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
