"""Training positions from game records (the bot's PGN files), rescored by the engine.

Each game's positions are searched at the generator's node count with the generator's net,
and kept as self-play keeps its own (``tools.nnue.data``): the side to move not in check, the
search's best move neither a capture nor a promotion, no mate score, and not in the first
``SKIP_PLIES`` plies (still book-like).  The game's result labels them.  They go to the data
directory as shards (``tools.nnue.shards``) under a ledger line of their own (source ``pgn``),
so the trainer reads them with the self-play ones and ``make datagen-status`` counts them.

    python -m tools.nnue.from_pgn ~/kibitz/pgn/games.pgn --dir ~/kibitz-data

A game is imported once: the ledger keeps each imported game's key (its ``Site``, a Lichess
game's address, or else a hash of its moves), so a record file that grows may be given again.
Games of a variant other than standard chess, and unfinished ones, are skipped.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import chess
import chess.pgn

from tools.nnue import factory, ledger
from tools.nnue.data import RESULT_CODE, encode
from tools.nnue.shards import ShardWriter

SKIP_PLIES = 8  # as self-play: the first plies after the start are not sampled
HASH_MB = 16
STANDARD_VARIANTS = ("", "standard", "from position")  # the PGN Variant headers of chess


def game_key(game: chess.pgn.Game) -> str:
    """What identifies a game across imports: its address, or a hash of its moves."""
    site = game.headers.get("Site", "")
    if site.startswith("http"):
        return site
    text = " ".join([game.headers.get("FEN", ""), *(m.uci() for m in game.mainline_moves()),
                     game.headers.get("White", ""), game.headers.get("Black", ""),
                     game.headers.get("Date", "")])
    return "sha1:" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def read_games(paths: Sequence[Path]) -> Iterator[tuple[Path, chess.pgn.Game]]:
    for path in paths:
        with path.open(encoding="utf-8", errors="replace") as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                yield path, game


def skip_reason(game: chess.pgn.Game) -> str | None:
    """Why a game gives no positions (None: it does)."""
    if game.errors:
        return "unreadable"
    if game.headers.get("Variant", "").lower() not in STANDARD_VARIANTS:
        return "variant"
    if game.headers.get("Result", "*") not in RESULT_CODE:
        return "unfinished"
    return None


class Rescorer:
    """Searches positions at a fixed node count with one searcher, emptied before each game
    (as self-play does)."""

    def __init__(self, nodes: int, eval_file: str) -> None:
        from engine.nnue import net_for
        from engine.search import Searcher, warm_up

        self.net = net_for(eval_file) if eval_file else None
        warm_up(self.net)
        self.searcher = Searcher(HASH_MB)
        self.nodes = nodes

    def positions(self, game: chess.pgn.Game) -> list[tuple[chess.Board, int]]:
        """The game's quiet positions (past ``SKIP_PLIES``) with the search's score."""
        from engine import params
        from engine.board import Position
        from engine.timeman import GoLimits, TimeBudget

        searcher = self.searcher
        searcher.clear()
        searcher.set_net(self.net)
        limits = GoLimits(nodes=self.nodes)
        budget = TimeBudget(None, None)
        board = game.board()
        # the engine's own position follows the game, so its search sees the repetitions
        position = Position.from_fen(board.fen())
        kept: list[tuple[chess.Board, int]] = []
        for ply, move in enumerate(game.mainline_moves()):
            if ply >= SKIP_PLIES and not board.is_check():
                found = searcher.think(position, limits, budget, time.monotonic(),
                                       lambda _: None)
                if found.best_move is not None:
                    best = chess.Move.from_uci(found.best_move)
                    if best.promotion is None and not board.is_capture(best) \
                            and abs(found.score) < params.MATE_BOUND:
                        kept.append((board.copy(stack=False), found.score))
            board.push(move)
            position.push_uci(move.uci())
        return kept


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nnue.from_pgn", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pgn", type=Path, nargs="+", help="PGN files")
    parser.add_argument("--dir", type=Path, default=factory.DEFAULT_DIR,
                        help=f"the data directory (default {factory.DEFAULT_DIR})")
    parser.add_argument("--nodes", type=int, default=factory.DEFAULT_NODES,
                        help="nodes per position (the generator's)")
    parser.add_argument("--evalfile", default=None,
                        help="the net that scores (default: the engine's; '' for the "
                             "hand-written evaluation)")
    args = parser.parse_args(argv)
    for path in args.pgn:
        if not path.is_file():
            raise SystemExit(f"{path}: no such PGN file")
    if args.nodes < 1:
        raise SystemExit("--nodes must be positive")
    if args.evalfile is None:
        from engine.params import DEFAULT_EVAL_FILE

        args.evalfile = DEFAULT_EVAL_FILE
    directory = factory.data_dir(args.dir)
    ev = factory.evaluation(args.evalfile)
    with factory.locked(directory):
        start = factory.begin_run(directory)
        seen = {key for line in ledger.read_ledger(directory)
                for key in line.get("pgn_games", [])}
        rescorer = Rescorer(args.nodes, ev.eval_file)
        meta = {"k": ev.k, "evaluation": ev.label, "net": ev.name, "nodes": args.nodes,
                "source": "pgn", "run": start.run}
        writer = ShardWriter(directory, f"{start.run}-pgn", meta)
        skipped: Counter[str] = Counter()
        imported: list[str] = []
        positions = 0
        cpu_started_s = time.process_time()  # the rescoring's own CPU, whatever else runs
        try:
            for path, game in read_games(args.pgn):
                key = game_key(game)
                reason = "imported before" if key in seen else skip_reason(game)
                if reason is not None:
                    skipped[reason] += 1
                    continue
                code = RESULT_CODE[game.headers["Result"]]
                kept = rescorer.positions(game)
                if kept:
                    writer.add(b"".join(encode(board, score, code) for board, score in kept))
                positions += len(kept)
                seen.add(key)
                imported.append(key)
                print(f"{path.name}: {game.headers.get('White', '?')} - "
                      f"{game.headers.get('Black', '?')}: {len(kept)} positions", flush=True)
        except KeyboardInterrupt:
            print("stopping", flush=True)
        finally:
            writer.close()
        line = factory.finish_run(directory, start, "pgn", ev, args.nodes, 1, len(imported),
                                  {"pgn": [str(p) for p in args.pgn], "pgn_games": imported,
                                   "skipped": dict(skipped)},
                                  cpu_s=time.process_time() - cpu_started_s)
    print(f"{len(imported)} games, {line['added']} positions in {len(line['shards'])} shard(s); "
          f"skipped: {dict(skipped) or 'none'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
