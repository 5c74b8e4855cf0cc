"""Training data for the learned evaluation: quiet positions from fixed-node self-play.

Games start from the match tool's generated openings plus random plies (``random_opening``),
and the engine plays both sides at a fixed node count per move.  A position is kept when it is
quiet: the side to move is not in check, the move the search chose is neither a capture nor a
promotion, and the score is no mate.  Each kept position is written with the search score
(side to move's view, centipawns) and, once the game ends, its result.

Records are 32 bytes, little-endian (``RECORD_DTYPE``)::

    occupancy  uint64    bit s set when square s (a1 = 0 .. h8 = 63) holds a piece
    pieces     16 bytes  one nibble per occupied square, in square order, low nibble first:
                         type - 1 (pawn 0 .. king 5) + 8 for black
    stm        uint8     0 white to move, 1 black
    result     uint8     white's result: 0 loss, 1 draw, 2 win
    score      int16     the search score, side to move's view (cp)
    pad        4 bytes

One process per core (``--jobs``) plays games and appends each finished game with one write
to the output file (``O_APPEND``: the games of different processes never interleave), so the
run can be stopped at any point and resumed by running it again (each run draws its games
from a seed mixed with the file's size, so a resumed run plays new games).  The file belongs
outside the repository.

    python -m tools.nnue.data --out ~/kibitz-data/selfplay.bin --nodes 5000 --jobs 1

With ``--evalfile NET`` both sides play with that net: the data of the next generation.

Beside the file, ``FILE.json`` names the evaluation that played its games and its sigmoid scale
K (``data_k``): a net's scores are in its own centipawns (its header scale a unit), so the
trainer reads each file's K there.  A run refuses to append games of another K to a file; a
file written before these sidecars has none, and the trainer needs its K given (``--k``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import random
import signal
import struct
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import chess
import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from engine.nnue import Net
    from tools.common.opponent import Opponent

RECORD_DTYPE = np.dtype([
    ("occupancy", "<u8"), ("pieces", "u1", (16,)), ("stm", "u1"), ("result", "u1"),
    ("score", "<i2"), ("pad", "u1", (4,)),
])
RECORD_BYTES = RECORD_DTYPE.itemsize
_RECORD = struct.Struct("<Q16sBBh4x")  # RECORD_DTYPE's fields, packed from Python
assert _RECORD.size == RECORD_BYTES
MAX_SCORE_CP = 3000  # scores are clipped here (the int16 field, and beyond it all are wins)
RESULT_CODE = {"1-0": 2, "1/2-1/2": 1, "0-1": 0}
# K of the hand-written evaluation's scores: the usual 400 cp per unit of the sigmoid, whose
# centipawns the search's margins are in
HAND_WRITTEN_K_CP = 400
PROGRESS_EVERY_S = 1.0
BAR_WIDTH = 30

Records = npt.NDArray[np.void]


def encode(board: chess.Board, score_cp: int, result: int) -> bytes:
    """One record: ``board``, the score from its side to move's view, white's result code."""
    occupancy = board.occupied
    white = board.occupied_co[chess.WHITE]
    packed = bytearray(16)
    for index, square in enumerate(chess.scan_forward(occupancy)):
        piece_type = board.piece_type_at(square)
        assert piece_type is not None  # an occupied square
        nibble = piece_type - 1 + (0 if white >> square & 1 else 8)
        packed[index // 2] |= nibble << (4 * (index % 2))
    return _RECORD.pack(occupancy, bytes(packed), 0 if board.turn == chess.WHITE else 1, result,
                        max(-MAX_SCORE_CP, min(MAX_SCORE_CP, score_cp)))


def decode_board(record: np.void) -> chess.Board:
    """The position of one record (castling and en passant are not kept: the net ignores them)."""
    board = chess.Board(None)
    occupancy = int(record["occupancy"])
    packed = bytes(record["pieces"])
    index = 0
    for square in range(64):
        if occupancy >> square & 1:
            nibble = packed[index // 2] >> (4 * (index % 2)) & 15
            board.set_piece_at(square, chess.Piece(nibble % 8 + 1, nibble < 8))
            index += 1
    board.turn = chess.WHITE if int(record["stm"]) == 0 else chess.BLACK
    return board


def read_records(path: Path) -> Records:
    """Every whole record of a data file (a partly written last record is left out)."""
    count = path.stat().st_size // RECORD_BYTES
    return np.fromfile(path, dtype=RECORD_DTYPE, count=count)


def play_game(rng: random.Random, nodes: int, random_plies: int, net: Net | None = None,
              opponent: Opponent | None = None, opponent_color: chess.Color = chess.BLACK,
              ) -> tuple[bytes, int, str]:
    """One self-play game (with ``net``, or the hand-written evaluation when it is None), or
    one against ``opponent`` playing ``opponent_color``: its kept positions as records, how
    many, and the result ('1-0', '0-1' or '1/2-1/2')."""
    from tools.common import selfplay  # in the worker: the engine is imported there, not here

    kept, result = selfplay.play_game(rng, nodes, random_plies, net, opponent, opponent_color)
    code = RESULT_CODE[result]
    return b"".join(encode(board, score, code) for board, score in kept), len(kept), result


def meta_path(data: Path) -> Path:
    """The sidecar of a data file: which evaluation played its games, at which K."""
    return data.with_name(data.name + ".json")


def data_k(data: Path) -> int | None:
    """The K of ``data``'s scores as its sidecar records it; None where it has no sidecar.

    Raises ``ValueError`` naming the sidecar when it cannot be read or holds no K."""
    path = meta_path(data)
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a data file's sidecar ({exc})") from None
    k = meta.get("k") if isinstance(meta, dict) else None
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        raise ValueError(f"{path}: no positive whole 'k' in it")
    return k


def file_ks(paths: Sequence[Path], given: Sequence[float] | None) -> list[float]:
    """The K of each data file: ``given`` (one for all, or one per file) where the caller names
    it, else the file's sidecar (``data_k``).  Raises ``SystemExit`` naming what is wrong."""
    recorded: list[int | None] = []
    for path in paths:
        try:
            recorded.append(data_k(path))
        except ValueError as exc:
            raise SystemExit(f"--data {path}: {exc}") from None
    if given is None:
        for path, k in zip(paths, recorded, strict=True):
            if k is None:
                raise SystemExit(
                    f"--data {path}: no sidecar {meta_path(path).name} names its K: give --k "
                    f"({HAND_WRITTEN_K_CP} for the hand-written evaluation's games, a net's "
                    "header scale for the net's)")
        return [float(k) for k in recorded if k is not None]
    if len(given) not in (1, len(paths)) or min(given) <= 0.0:
        raise SystemExit(f"--k: give one positive K, or one for each of the {len(paths)} "
                         f"--data files (got {len(given)})")
    ks = list(given) * len(paths) if len(given) == 1 else list(given)
    for path, k_given, said in zip(paths, ks, recorded, strict=True):
        if said is not None and said != k_given:
            print(f"--data {path}: K {k_given:g} as given, where its sidecar says {said}",
                  file=sys.stderr)
    return ks


def _claim_sidecar(out: Path, existing_bytes: int, k: int, evaluation: str) -> None:
    """Write ``out``'s sidecar for a new (or empty) file, or check that an existing file's
    games were played at the same K: one file, one K."""
    if existing_bytes == 0:  # a sidecar left beside no games describes nothing
        meta_path(out).write_text(json.dumps({"evaluation": evaluation, "k": k}) + "\n",
                                  encoding="utf-8")
        return
    try:
        recorded = data_k(out)
    except ValueError as exc:
        raise SystemExit(f"--out {out}: {exc}") from None
    if recorded is None:
        print(f"{out}: has no sidecar {meta_path(out).name}: give the trainer its K (--k)",
              file=sys.stderr)
    elif recorded != k:
        raise SystemExit(f"--out {out}: its games were played at K {recorded} "
                         f"({meta_path(out).name}); these would be at K {k} ({evaluation}): "
                         "write them to another file")


def _worker(out: str, seed: int, nodes: int, random_plies: int, games: int, net_bytes: bytes,
            net_name: str, progress: mp.Queue[int]) -> None:
    """Play games until ``games`` (0: until stopped), appending each as one write; with the
    net of ``net_bytes`` (the file as the run read it), or the hand-written evaluation when
    they are empty."""
    from engine.nnue import parse_net
    from engine.search import warm_up

    net = parse_net(net_bytes, net_name) if net_bytes else None
    warm_up(net)
    rng = random.Random(seed)
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        played = 0
        while games == 0 or played < games:
            data, count, _ = play_game(rng, nodes, random_plies, net)
            os.write(fd, data)
            played += 1
            progress.put(count)
    finally:
        os.close(fd)


def _bar(done: int, target: int, rate: float, games: int) -> str:
    if target > 0:
        filled = min(BAR_WIDTH, done * BAR_WIDTH // target)
        head = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{target}"
    else:
        head = f"{done}"
    return f"\r{head} positions, {rate:.1f} positions/s, {games} games"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nnue.data", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="file the records go to")
    parser.add_argument("--nodes", type=int, default=5000, help="nodes per move")
    parser.add_argument("--random-plies", type=int, default=4,
                        help="random moves after the opening (default 4)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="processes, one per core (default: every core)")
    parser.add_argument("--positions", type=int, default=0,
                        help="stop after this many new positions (0: run until stopped)")
    parser.add_argument("--games", type=int, default=0,
                        help="games per process (0: run until stopped)")
    parser.add_argument("--evalfile", default="",
                        help="play with this net (a path, or the name of a shipped net) "
                             "instead of the hand-written evaluation: the next generation's data")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.jobs < 1 or args.random_plies < 0 or args.positions < 0 \
            or args.games < 0:
        raise SystemExit("--nodes and --jobs must be positive; --random-plies, --positions "
                         "and --games at least 0")
    from tools.common.engines import REPO_DIR
    from tools.common.signals import sigterm_as_interrupt

    out = args.out.resolve()
    if out.is_relative_to(REPO_DIR):
        raise SystemExit(f"--out {args.out}: inside the repository; data sets live outside it")
    out.parent.mkdir(parents=True, exist_ok=True)
    existing = out.stat().st_size if out.exists() else 0
    if existing % RECORD_BYTES:
        raise SystemExit(f"--out {args.out}: {existing} bytes is not a whole number of "
                         f"{RECORD_BYTES}-byte records (not a data file, or a torn write)")
    net_bytes = b""
    if args.evalfile:
        from engine.nnue import NetFileError, read_net

        try:  # refused here, with its reason, rather than in every worker
            net_bytes, net = read_net(args.evalfile)
        except NetFileError as exc:
            raise SystemExit(f"--evalfile: {exc}") from None
        print(f"playing with net {net.hash} ({args.evalfile})", file=sys.stderr)
        k, evaluation = net.scale, f"net {net.hash}"
    else:
        k, evaluation = HAND_WRITTEN_K_CP, "hand-written"
    _claim_sidecar(out, existing, k, evaluation)
    print(f"{out}: {existing // RECORD_BYTES} positions already", file=sys.stderr)
    progress: mp.Queue[int] = mp.get_context("spawn").Queue()
    context = mp.get_context("spawn")  # a fresh interpreter each: no numba state is forked
    workers = [
        context.Process(
            target=_worker, daemon=True,
            args=(str(out), hash((args.seed, job, existing)) & 0xFFFFFFFF, args.nodes,
                  args.random_plies, args.games, net_bytes, args.evalfile, progress))
        for job in range(args.jobs)
    ]
    for worker in workers:
        worker.start()
    # ``timeout`` (or systemd) stops a run with SIGTERM: end it as Ctrl-C does, workers
    # stopped and the summary printed.
    previous = signal.signal(signal.SIGTERM, sigterm_as_interrupt)
    started = time.monotonic()
    done = games = 0
    try:
        while any(w.is_alive() for w in workers) or not progress.empty():
            try:
                count = progress.get(timeout=PROGRESS_EVERY_S)
            except queue.Empty:
                count = -1
            if count >= 0:
                done += count
                games += 1
            rate = done / max(time.monotonic() - started, 1e-9)
            print(_bar(done, args.positions, rate, games), end="", file=sys.stderr, flush=True)
            if args.positions and done >= args.positions:
                break
    except KeyboardInterrupt:
        pass
    finally:
        for worker in workers:
            worker.terminate()  # a game cut short is simply not written
        for worker in workers:
            worker.join()
        # a caller in the same process (a test) keeps its own handler
        signal.signal(signal.SIGTERM, previous)
        print(file=sys.stderr)
    elapsed = time.monotonic() - started
    print(f"{done} positions in {games} games, {elapsed:.0f} s "
          f"({done * 3600 / max(elapsed, 1e-9):.0f} positions/hour)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
