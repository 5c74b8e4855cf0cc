"""Average centipawn loss and blunder share of an engine, level by level, over fixed middlegames.

For each position of ``middlegames.epd`` (``tools.strength.positions``) the engine under test
picks a move as in a game (by default ``go wtime 8000 btime 8000 winc 100 binc 100``: a
typical move of a 10 s + 0.1 s game), each position a new game.  Stockfish 15.1 at depth 12
(the reference) then scores both the position's best move and the move played, and

    loss = max(0, best - played)

with both scores capped at +-CAP_CP (a mate counts as CAP_CP), so that one missed mate does
not outweigh a hundred positions.  A *blunder* is a loss of BLUNDER_CP or more.

How the played move is scored: the reference searches the same position, to the same depth,
restricted to that move (``go depth 12 searchmoves MOVE``), after an unrestricted search has
given the best move and its score.  Both numbers then come from one root, one side to move and
one horizon, so their difference is the move's cost and nothing else.  Scoring the position
after the move at depth 11 from the opponent's side instead would compare searches of
different depth parity and root (the root gets extensions and move ordering of its own), and
a noise of tens of centipawns would show up as loss even when the engine played the best move.
The hash is cleared before every reference search (a new game), so each score depends only on
(position, move, depth): that is what makes the cache file exact, whatever order runs come in.

Repeats (``--seeds K``): a limited level's choice is random, so one move a position mixes the
level's loss with the luck of one draw.  With K > 1 every position is played K times, with the
engine's ``Seed`` option set to 1..K (the engine must declare it); the mean loss and its
interval are taken over the positions' mean losses (the positions, not the K-fold moves, are
the independent samples), and the blunder share over all moves played.

    python -m tools.strength.cploss --elo 800 1000 1200 full
    python -m tools.strength.cploss --elo 500 800 --seeds 4
    python -m tools.strength.cploss --engine stockfish --level skill0 "Skill Level=0" \\
        --level full --positions 30
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.engine

from tools.common.engines import EngineSpec, check_installed, make_spec, open_engine
from tools.common.referee import Z_95
from tools.common.scores import MATE_CP  # a mate in n reads as MATE_CP - n; capping makes it CAP_CP
from tools.strength.positions import POSITIONS_FILE, load_positions

CAP_CP = 1000
BLUNDER_CP = 300
REFERENCE_DEPTH = 12
REFERENCE_HASH_MB = 16
DEFAULT_CLOCK = "8000+100"  # wtime/btime + winc/binc in ms: 10 s + 0.1 s, a few moves in
LOAD_TIMEOUT_S = 1800.0
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kibitz" \
    / "strength-reference.json"
FULL = "full"
SEED_OPTION = "Seed"  # the engine's seed of its random choices (Kibitz declares it)


@dataclass(frozen=True)
class Level:
    """A strength setting of the engine under test: a label and the UCI options that make it."""

    label: str
    options: dict[str, str]


def elo_level(text: str) -> Level:
    """``full`` (no option set: the engine's default strength) or a UCI_Elo number."""
    if text == FULL:
        return Level(FULL, {})
    try:
        elo = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a level is a UCI_Elo number or {FULL!r}, got {text!r}") from None
    return Level(str(elo), {"UCI_LimitStrength": "true", "UCI_Elo": str(elo)})


def option_level(words: Sequence[str]) -> Level:
    """``LABEL [NAME=VALUE ...]``: a level made of any UCI options (e.g. Skill Level)."""
    options: dict[str, str] = {}
    for word in words[1:]:
        name, sep, value = word.partition("=")
        if not sep or not name:
            raise SystemExit(f"--level {words[0]}: an option must be NAME=VALUE, got {word!r}")
        options[name] = value
    return Level(words[0], options)


def parse_go(clock: str | None, movetime_ms: int | None, depth: int | None,
             nodes: int | None) -> chess.engine.Limit:
    """The engine under test's ``go``: a simulated clock (default), a move time, depth or nodes."""
    if movetime_ms is not None:
        return chess.engine.Limit(time=movetime_ms / 1000)
    if depth is not None:
        return chess.engine.Limit(depth=depth)
    if nodes is not None:
        return chess.engine.Limit(nodes=nodes)
    text = clock or DEFAULT_CLOCK
    base, _, increment = text.partition("+")
    try:
        base_ms, increment_ms = int(base), int(increment or 0)
    except ValueError:
        raise SystemExit(f"--clock must be TIME_MS+INC_MS (e.g. {DEFAULT_CLOCK}), got {text!r}")\
            from None
    return chess.engine.Limit(white_clock=base_ms / 1000, black_clock=base_ms / 1000,
                              white_inc=increment_ms / 1000, black_inc=increment_ms / 1000)


def capped(score_cp: int) -> int:
    return max(-CAP_CP, min(CAP_CP, score_cp))


def move_loss_cp(best_cp: int, played_cp: int) -> int:
    """The centipawn loss of a move: capped scores (side to move's view), never below 0."""
    return max(0, capped(best_cp) - capped(played_cp))


@dataclass(frozen=True)
class Summary:
    positions: int
    mean_loss_cp: float
    loss_margin_cp: float  # half-width of the mean's 95% interval (normal approximation)
    blunders: int
    blunder_low: float  # Wilson 95% interval of the blunder share
    blunder_high: float
    mean_move_s: float
    moves: int = 0  # moves played (positions x seeds); 0: one a position

    @property
    def blunder_share(self) -> float:
        return self.blunders / (self.moves or self.positions)


def wilson(successes: int, trials: int) -> tuple[float, float]:
    """95% Wilson score interval of a proportion (sane at 0 and n successes)."""
    share = successes / trials
    denominator = 1 + Z_95**2 / trials
    centre = (share + Z_95**2 / (2 * trials)) / denominator
    half = Z_95 * math.sqrt(share * (1 - share) / trials + Z_95**2 / (4 * trials**2)) \
        / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def summarize(losses_cp: Sequence[int], move_times_s: Sequence[float] = ()) -> Summary:
    """One move a position."""
    return summarize_repeats([[loss] for loss in losses_cp], move_times_s)


def summarize_repeats(losses_cp: Sequence[Sequence[int]],
                      move_times_s: Sequence[float] = ()) -> Summary:
    """Several moves a position (one per seed): the mean and its interval over the
    positions' mean losses, the blunder share over every move."""
    if not losses_cp or not all(losses_cp):
        raise ValueError("no positions measured")
    n = len(losses_cp)
    means = [sum(moves) / len(moves) for moves in losses_cp]
    mean = sum(means) / n
    variance = sum((x - mean) ** 2 for x in means) / (n - 1) if n > 1 else 0.0
    every = [loss for moves in losses_cp for loss in moves]
    blunders = sum(1 for x in every if x >= BLUNDER_CP)
    low, high = wilson(blunders, len(every))
    mean_move_s = sum(move_times_s) / len(move_times_s) if move_times_s else 0.0
    return Summary(n, mean, Z_95 * math.sqrt(variance / n), blunders, low, high, mean_move_s,
                   moves=len(every))


class Reference:
    """Stockfish at a fixed depth scoring (position, move), with a JSON cache on disk.

    Cache keys name the depth, so a cache made at another depth is never mistaken for this
    one; values are the side to move's score before capping (a mate as MATE_CP - n).
    """

    def __init__(self, spec: EngineSpec, depth: int = REFERENCE_DEPTH,
                 cache_path: Path | None = DEFAULT_CACHE) -> None:
        self.spec = spec
        self.depth = depth
        self.cache_path = cache_path
        self.cache: dict[str, list[str | int]] = {}
        if cache_path is not None and cache_path.is_file():
            try:
                self.cache = json.loads(cache_path.read_text())
            except json.JSONDecodeError as error:
                raise SystemExit(f"{cache_path}: not a reference cache ({error}); "
                                 "delete it to start a new one") from None
        self.engine: chess.engine.SimpleEngine | None = None
        self.searches = 0  # reference searches run (not answered by the cache)

    def _engine(self) -> chess.engine.SimpleEngine:
        if self.engine is None:
            check_installed(self.spec)
            self.engine = open_engine(self.spec)
            self.engine.configure({"Threads": 1, "Hash": REFERENCE_HASH_MB})
        return self.engine

    def _search(self, board: chess.Board, move: chess.Move | None) -> tuple[str, int]:
        self.searches += 1
        info = self._engine().analyse(
            board, chess.engine.Limit(depth=self.depth),
            root_moves=None if move is None else [move], game=object())
        score = info["score"].relative.score(mate_score=MATE_CP)
        pv = info.get("pv")
        first = pv[0] if pv else move
        if score is None or first is None:
            raise SystemExit(f"reference {self.spec.name}: no score for {board.fen()}")
        return first.uci(), score

    def _key(self, board: chess.Board, what: str) -> str:
        return f"d{self.depth} {board.fen()} {what}"

    def best(self, board: chess.Board) -> tuple[str, int]:
        """The best move (UCI) and its score."""
        key = self._key(board, "best")
        if key not in self.cache:
            self.cache[key] = list(self._search(board, None))
        move, score = self.cache[key]
        return str(move), int(score)

    def score(self, board: chess.Board, move: chess.Move) -> int:
        """The score of ``move`` (the best move's score when it is the best move)."""
        best_move, best_score = self.best(board)
        if move.uci() == best_move:
            return best_score
        key = self._key(board, move.uci())
        if key not in self.cache:
            self.cache[key] = list(self._search(board, move))
        return int(self.cache[key][1])

    def save(self) -> None:
        if self.cache_path is None:
            return
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        staging = self.cache_path.with_suffix(".tmp")
        staging.write_text(json.dumps(self.cache, sort_keys=True, indent=0))
        staging.replace(self.cache_path)

    def close(self) -> None:
        self.save()
        if self.engine is not None:
            self.engine.quit()
            self.engine = None


@dataclass(frozen=True)
class Played:
    name: str
    move: chess.Move
    loss_cp: int
    move_s: float


def missing_options(engine: chess.engine.SimpleEngine, names: Sequence[str]) -> list[str]:
    return [name for name in names if name not in engine.options]


def declares(spec: EngineSpec, name: str) -> bool:
    """Whether the engine declares the UCI option ``name``."""
    engine = open_engine(dataclasses.replace(spec, options={}))
    try:
        engine.timeout = LOAD_TIMEOUT_S
        return not missing_options(engine, [name])
    finally:
        engine.quit()


def check_options(spec: EngineSpec, names: Sequence[str] = ()) -> None:
    """Refuse, by name, an engine that does not declare an option it is to be given (its
    ``spec.options`` and ``names``): a UCI engine would ignore it and play at full strength."""
    engine = open_engine(dataclasses.replace(spec, options={}))
    try:
        engine.timeout = LOAD_TIMEOUT_S
        missing = missing_options(engine, [*spec.options, *names])
    finally:
        engine.quit()
    if missing:
        raise SystemExit(f"engine {spec.name!r} declares no UCI option "
                         f"{', '.join(missing)}: it cannot be set to that level")


def play_positions(spec: EngineSpec, level: Level,
                   positions: Sequence[tuple[str, chess.Board]],
                   limit: chess.engine.Limit,
                   seed: int | None = None) -> list[tuple[str, chess.Board, chess.Move, float]]:
    """The engine at ``level`` picks a move in every position (each a new game), with its
    ``Seed`` option set to ``seed`` when one is given."""
    check_installed(spec)
    engine = open_engine(spec)
    moves: list[tuple[str, chess.Board, chess.Move, float]] = []
    options = dict(level.options)
    if seed is not None:
        options[SEED_OPTION] = str(seed)
    try:
        missing = missing_options(engine, list(options))
        if missing:
            raise SystemExit(f"engine {spec.name!r} declares no UCI option "
                             f"{', '.join(missing)}: it cannot play level {level.label}"
                             + (" with a seed" if SEED_OPTION in missing else ""))
        if options:
            engine.configure(options)
        # loading is not charged to the first move, and may take minutes (numba compiles
        # Kibitz's engine after a change to it, slower still on a busy machine)
        engine.timeout = LOAD_TIMEOUT_S
        engine.ping()
        for name, board in positions:
            started = time.monotonic()
            result = engine.play(board, limit, game=object())
            move_s = time.monotonic() - started
            if result.move is None or result.move not in board.legal_moves:
                raise SystemExit(f"{spec.name} at {level.label}: no legal move in {name} "
                                 f"({board.fen()}): {result.move}")
            moves.append((name, board, result.move, move_s))
    finally:
        engine.quit()
    return moves


def measure(spec: EngineSpec, level: Level, positions: Sequence[tuple[str, chess.Board]],
            limit: chess.engine.Limit, reference: Reference,
            seeds: int = 1) -> tuple[Summary, list[Played]]:
    """One level's summary and its moves: one a position, or ``seeds`` a position (the
    engine's Seed 1..seeds) when ``seeds`` > 1."""
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1, got {seeds}")
    played: list[Played] = []
    losses: dict[str, list[int]] = {name: [] for name, _ in positions}
    for seed in ([None] if seeds == 1 else range(1, seeds + 1)):
        for name, board, move, move_s in play_positions(spec, level, positions, limit, seed):
            _, best_cp = reference.best(board)
            loss = move_loss_cp(best_cp, reference.score(board, move))
            played.append(Played(name, move, loss, move_s))
            losses[name].append(loss)
        reference.save()
    return summarize_repeats(list(losses.values()), [p.move_s for p in played]), played


TABLE_HEADER = ("| level | positions | mean cp loss (95%) | blunders >= 300 cp (95%) "
                "| mean move s |\n|---|---|---|---|---|")


def table_row(label: str, summary: Summary) -> str:
    moves = f" x {summary.moves // summary.positions}" if summary.moves > summary.positions \
        else ""
    return (f"| {label} | {summary.positions}{moves} "
            f"| {summary.mean_loss_cp:.1f} ± {summary.loss_margin_cp:.1f} "
            f"| {100 * summary.blunder_share:.1f}% ({100 * summary.blunder_low:.1f}–"
            f"{100 * summary.blunder_high:.1f}%) | {summary.mean_move_s:.2f} |")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.strength.cploss",
        description="Centipawn loss and blunder share of an engine by level, scored by "
        f"Stockfish at depth {REFERENCE_DEPTH}, over fixed middlegame positions.")
    parser.add_argument("--engine", default="kibitz",
                        help="engine under test: alias or command line (default kibitz)")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                        help="an option of the engine under test at every level (repeatable)")
    parser.add_argument("--elo", nargs="+", type=elo_level, default=[],
                        help=f"levels as UCI_Elo numbers or {FULL!r} "
                        "(UCI_LimitStrength=true, UCI_Elo=N)")
    parser.add_argument("--level", nargs="+", action="append", default=[],
                        metavar=("LABEL", "NAME=VALUE"),
                        help="a level of any options, e.g. --level skill0 'Skill Level=0' "
                        "(repeatable)")
    go = parser.add_mutually_exclusive_group()
    go.add_argument("--clock", help="simulated clock TIME_MS+INC_MS for both sides "
                    f"(default {DEFAULT_CLOCK})")
    go.add_argument("--movetime-ms", type=int, help="go movetime instead of a clock")
    go.add_argument("--depth", type=int, help="go depth instead of a clock")
    go.add_argument("--nodes", type=int, help="go nodes instead of a clock")
    parser.add_argument("--positions", type=int,
                        help="only the first N positions of the set (default all)")
    parser.add_argument("--positions-file", type=Path, default=POSITIONS_FILE)
    parser.add_argument("--seeds", type=int, default=1,
                        help="play every position this many times, the engine's Seed 1..K "
                        "(default 1: one move a position, Seed untouched)")
    parser.add_argument("--reference", default="stockfish",
                        help="the scoring engine (alias or command; default stockfish)")
    parser.add_argument("--reference-depth", type=int, default=REFERENCE_DEPTH)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help=f"reference scores cache (default {DEFAULT_CACHE})")
    parser.add_argument("--no-cache", action="store_true", help="keep no cache file")
    parser.add_argument("--out", type=Path, help="also append the table to this file")
    return parser


def levels_of(args: argparse.Namespace) -> list[Level]:
    levels: list[Level] = list(args.elo) + [option_level(words) for words in args.level]
    return levels or [Level(FULL, {})]


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    options = []
    for text in args.option:
        name, sep, value = text.partition("=")
        if not sep or not name:
            raise SystemExit(f"--option must be NAME=VALUE, got {text!r}")
        options.append((name, value))
    spec = make_spec(args.engine, None, None, options, False)
    check_installed(spec)
    positions = load_positions(args.positions_file)
    if args.positions is not None:
        if args.positions < 1:
            raise SystemExit("--positions must be at least 1")
        positions = positions[: args.positions]
    if args.seeds < 1:
        raise SystemExit(f"--seeds must be at least 1, got {args.seeds}")
    limit = parse_go(args.clock, args.movetime_ms, args.depth, args.nodes)
    reference = Reference(make_spec(args.reference, None, None, [], False),
                          args.reference_depth, None if args.no_cache else args.cache)
    repeats = f", {args.seeds} seeds each" if args.seeds > 1 else ""
    lines = [f"{spec.name} over {len(positions)} positions of {args.positions_file.name}{repeats}, "
             f"reference {reference.spec.name} depth {reference.depth}", "", TABLE_HEADER]
    print("\n".join(lines), flush=True)
    try:
        for level in levels_of(args):
            summary, _ = measure(spec, level, positions, limit, reference, args.seeds)
            lines.append(table_row(level.label, summary))
            print(lines[-1], flush=True)
    finally:
        reference.close()
    if args.out is not None:
        with args.out.open("a") as out:
            out.write("\n".join(lines) + "\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
