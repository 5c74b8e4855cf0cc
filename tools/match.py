"""Play a match between two UCI engines and report the score with an Elo estimate.

Each opening is played twice, once with each engine as White.  Clocks are kept by this tool
(the referee): the wall time of every move is charged to the mover, and an engine whose clock
runs out loses on time, whatever it reports.  Games are adjudicated when both engines agree the
position is clearly won, or when a long, level endgame is clearly drawn.

Examples::

    python -m tools.match --engine2 sunfish --tc 10+0.1 --games 20
    python -m tools.match --engine2 stockfish --option2 UCI_LimitStrength=true \\
        --option2 UCI_Elo=2000 --tc 60+0.6 --games 10 --pgn games/sf2000.pgn
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import math
import shlex
import shutil
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import chess
import chess.engine
import chess.pgn

# Balanced opening lines (SAN), each played with both colours.
OPENINGS: tuple[tuple[str, str], ...] = (
    ("Ruy Lopez", "e4 e5 Nf3 Nc6 Bb5 a6"),
    ("Italian", "e4 e5 Nf3 Nc6 Bc4 Bc5"),
    ("Sicilian Najdorf", "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6"),
    ("Sicilian Taimanov", "e4 c5 Nf3 e6 d4 cxd4 Nxd4 Nc6"),
    ("French Classical", "e4 e6 d4 d5 Nc3 Nf6"),
    ("French Advance", "e4 e6 d4 d5 e5 c5 c3 Nc6"),
    ("Caro-Kann Advance", "e4 c6 d4 d5 e5 Bf5"),
    ("Caro-Kann Classical", "e4 c6 d4 d5 Nc3 dxe4 Nxe4 Bf5"),
    ("Queen's Gambit Declined", "d4 d5 c4 e6 Nc3 Nf6"),
    ("Slav", "d4 d5 c4 c6 Nf3 Nf6"),
    ("King's Indian", "d4 Nf6 c4 g6 Nc3 Bg7 e4 d6"),
    ("Nimzo-Indian", "d4 Nf6 c4 e6 Nc3 Bb4"),
    ("English", "c4 e5 Nc3 Nf6"),
    ("Reti", "Nf3 d5 g3 Nf6 Bg2"),
    ("Petrov", "e4 e5 Nf3 Nf6"),
    ("Queen's Indian", "d4 Nf6 c4 e6 Nf3 b6"),
    ("Scandinavian", "e4 d5 exd5 Qxd5 Nc3 Qa5"),
    ("Alekhine", "e4 Nf6 e5 Nd5 d4 d6"),
    ("Queen's Gambit Accepted", "d4 d5 c4 dxc4 Nf3 Nf6 e3 e6"),
    ("Vienna", "e4 e5 Nc3 Nf6"),
    ("Benoni", "d4 Nf6 c4 c5 d5 e6 Nc3 exd5 cxd5 d6"),
    ("Sicilian Alapin", "e4 c5 c3 Nf6 e5 Nd5"),
    ("Dutch", "d4 f5 g3 Nf6 Bg2"),
    ("Scotch", "e4 e5 Nf3 Nc6 d4 exd4 Nxd4"),
    ("Symmetrical English", "c4 c5 Nc3 Nc6 g3 g6"),
    ("Modern", "e4 g6 d4 Bg7 Nc3 d6"),
    ("London", "d4 d5 Bf4 Nf6 e3 e6"),
    ("Four Knights", "e4 e5 Nf3 Nc6 Nc3 Nf6"),
    ("Grunfeld", "d4 Nf6 c4 g6 Nc3 d5"),
    ("Pirc", "e4 d6 d4 Nf6 Nc3 g6"),
    ("Hedgehog English", "Nf3 Nf6 c4 b6 g3 Bb7 Bg2 e6"),
    ("Open Sicilian", "e4 c5 Nf3 Nc6 d4 cxd4 Nxd4"),
)

ENGINE_ALIASES = {
    "kibitz": [sys.executable, "-m", "engine"],
    "sunfish": [".venv-sunfish/bin/python", "-m", "sunfish"],
    "stockfish": [shutil.which("stockfish") or "/usr/games/stockfish"],
}


@dataclass(frozen=True)
class Opening:
    name: str
    fen: str
    moves: tuple[chess.Move, ...]


@dataclass(frozen=True)
class EngineSpec:
    name: str
    command: list[str]
    options: dict[str, str]


@dataclass(frozen=True)
class MatchConfig:
    base_s: float
    increment_s: float
    win_cp: int
    win_plies: int
    draw_cp: int
    draw_plies: int
    draw_min_ply: int
    max_plies: int


@dataclass
class GameResult:
    index: int
    opening: str
    engine1_white: bool
    result: str  # "1-0", "0-1" or "1/2-1/2"
    termination: str
    game: chess.pgn.Game
    time_loss: str | None = None  # name of the engine that lost on time

    @property
    def engine1_points(self) -> float:
        if self.result == "1/2-1/2":
            return 0.5
        white_won = self.result == "1-0"
        return 1.0 if white_won == self.engine1_white else 0.0


@dataclass
class Tally:
    wins: int = 0
    draws: int = 0
    losses: int = 0
    time_losses: dict[str, int] = field(default_factory=dict)

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def add(self, result: GameResult) -> None:
        points = result.engine1_points
        if points == 1.0:
            self.wins += 1
        elif points == 0.5:
            self.draws += 1
        else:
            self.losses += 1
        if result.time_loss:
            self.time_losses[result.time_loss] = self.time_losses.get(result.time_loss, 0) + 1


def elo_from_score(score: float) -> float:
    """Logistic Elo difference for an expected score in (0, 1)."""
    score = min(max(score, 1e-6), 1 - 1e-6)
    return -400.0 * math.log10(1.0 / score - 1.0)


def elo_estimate(wins: int, draws: int, losses: int) -> tuple[float, float, float]:
    """(Elo difference, lower and upper bound of its 95% confidence interval)."""
    games = wins + draws + losses
    if games == 0:
        raise ValueError("no games played")
    score = (wins + 0.5 * draws) / games
    variance = (wins * (1 - score) ** 2 + draws * (0.5 - score) ** 2 + losses * score**2) / games
    margin = 1.959964 * math.sqrt(variance / games)
    return elo_from_score(score), elo_from_score(score - margin), elo_from_score(score + margin)


def parse_time_control(text: str) -> tuple[float, float]:
    """'10+0.1' -> (10.0, 0.1) seconds."""
    base, _, increment = text.partition("+")
    try:
        base_s = float(base)
        increment_s = float(increment) if increment else 0.0
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"time control must look like BASE+INC in seconds (e.g. 10+0.1), got {text!r}"
        ) from None
    if base_s <= 0 or increment_s < 0:
        raise argparse.ArgumentTypeError(f"time control needs BASE > 0 and INC >= 0: {text!r}")
    return base_s, increment_s


def parse_option(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"engine option must be NAME=VALUE, got {text!r}")
    return name, value


def load_openings(path: Path | None) -> list[Opening]:
    """Built-in SAN lines, or one FEN/EPD position per line of ``path``."""
    openings: list[Opening] = []
    if path is None:
        for name, line in OPENINGS:
            board = chess.Board()
            moves = []
            for san in line.split():
                move = board.parse_san(san)
                moves.append(move)
                board.push(move)
            openings.append(Opening(name, chess.STARTING_FEN, tuple(moves)))
        return openings
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        try:
            board, _ = chess.Board.from_epd(text) if ";" in text else (chess.Board(text), {})
        except ValueError as error:
            raise SystemExit(f"{path}:{number}: not a FEN or EPD position: {error}") from None
        openings.append(Opening(f"{path.name}:{number}", board.fen(), ()))
    if not openings:
        raise SystemExit(f"{path}: no positions")
    return openings


def resolve_command(text: str) -> list[str]:
    return list(ENGINE_ALIASES.get(text, shlex.split(text)))


def open_engine(spec: EngineSpec) -> chess.engine.SimpleEngine:
    engine = chess.engine.SimpleEngine.popen_uci(spec.command, timeout=120.0)
    if spec.options:
        engine.configure(dict(spec.options))
    return engine


class Seat:
    """One engine process for one worker; reopened if it dies."""

    def __init__(self, spec: EngineSpec) -> None:
        self.spec = spec
        self.engine: chess.engine.SimpleEngine | None = None

    def get(self) -> chess.engine.SimpleEngine:
        if self.engine is None:
            self.engine = open_engine(self.spec)
            self.engine.ping()  # let it load or compile before any clock runs
        return self.engine

    def discard(self) -> None:
        if self.engine is not None:
            # a dead engine may fail to close; it is being replaced anyway
            with contextlib.suppress(Exception):
                self.engine.close()
            self.engine = None


def _white_pov(score: chess.engine.PovScore | None) -> int | None:
    if score is None:
        return None
    return score.white().score(mate_score=100_000)


def _adjudicate(board: chess.Board, scores: list[int | None], config: MatchConfig) -> str | None:
    """'1-0' / '0-1' / '1/2-1/2' when the recent engine scores make the result clear."""
    recent = [s for s in scores[-config.win_plies :] if s is not None]
    if len(scores) >= config.win_plies and len(recent) == config.win_plies:
        if all(s >= config.win_cp for s in recent):
            return "1-0"
        if all(s <= -config.win_cp for s in recent):
            return "0-1"
    if board.ply() >= config.draw_min_ply and len(scores) >= config.draw_plies:
        window = scores[-config.draw_plies :]
        if all(s is not None and abs(s) <= config.draw_cp for s in window):
            return "1/2-1/2"
    return None


def play_game(
    index: int,
    opening: Opening,
    engine1_white: bool,
    seats: tuple[Seat, Seat],
    config: MatchConfig,
) -> GameResult:
    board = chess.Board(opening.fen)
    for move in opening.moves:
        board.push(move)
    start_ply_count = len(board.move_stack)
    white, black = seats if engine1_white else (seats[1], seats[0])
    by_colour = {chess.WHITE: white, chess.BLACK: black}
    clock_s = {chess.WHITE: config.base_s, chess.BLACK: config.base_s}
    scores: list[int | None] = []
    game_key = object()
    result = termination = ""
    time_loss: str | None = None
    while True:
        outcome = board.outcome(claim_draw=True)
        if outcome is not None:
            result, termination = outcome.result(), outcome.termination.name.lower()
            break
        if len(board.move_stack) - start_ply_count >= config.max_plies:
            result, termination = "1/2-1/2", "adjudication: move limit"
            break
        mover = board.turn
        seat = by_colour[mover]
        limit = chess.engine.Limit(
            white_clock=clock_s[chess.WHITE],
            black_clock=clock_s[chess.BLACK],
            white_inc=config.increment_s,
            black_inc=config.increment_s,
        )
        try:
            engine = seat.get()  # (re)starting an engine is not charged to its clock
            started = time.monotonic()
            played = engine.play(board, limit, info=chess.engine.INFO_SCORE, game=game_key)
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError) as e:
            seat.discard()
            result = "0-1" if mover == chess.WHITE else "1-0"
            termination = f"{seat.spec.name} failed: {e}"
            break
        clock_s[mover] -= time.monotonic() - started
        if clock_s[mover] < 0:
            result = "0-1" if mover == chess.WHITE else "1-0"
            termination, time_loss = "time forfeit", seat.spec.name
            break
        clock_s[mover] += config.increment_s
        if played.move is None or played.move not in board.legal_moves:
            result = "0-1" if mover == chess.WHITE else "1-0"
            termination = f"{seat.spec.name} played an illegal move {played.move}"
            break
        scores.append(_white_pov(played.info.get("score")))
        board.push(played.move)
        verdict = _adjudicate(board, scores, config)
        if verdict is not None:
            result, termination = verdict, "adjudication"
            break
    game = chess.pgn.Game.from_board(board)
    game.headers["Event"] = "kibitz match"
    game.headers["Round"] = str(index + 1)
    game.headers["White"] = white.spec.name
    game.headers["Black"] = black.spec.name
    game.headers["Result"] = result
    game.headers["Termination"] = termination
    game.headers["Opening"] = opening.name
    game.headers["TimeControl"] = f"{config.base_s:g}+{config.increment_s:g}"
    return GameResult(index, opening.name, engine1_white, result, termination, game, time_loss)


def run_match(
    specs: tuple[EngineSpec, EngineSpec],
    openings: Sequence[Opening],
    games: int,
    config: MatchConfig,
    concurrency: int,
    pgn_path: Path | None,
    out: TextIO = sys.stdout,
) -> Tally:
    schedule = [(i, openings[(i // 2) % len(openings)], i % 2 == 0) for i in range(games)]
    tally = Tally()
    lock = threading.Lock()
    local = threading.local()
    all_seats: list[tuple[Seat, Seat]] = []

    def seats() -> tuple[Seat, Seat]:
        if not hasattr(local, "seats"):
            local.seats = (Seat(specs[0]), Seat(specs[1]))
            with lock:
                all_seats.append(local.seats)
        pair: tuple[Seat, Seat] = local.seats
        return pair

    def job(index: int, opening: Opening, engine1_white: bool) -> GameResult:
        return play_game(index, opening, engine1_white, seats(), config)

    pgn_file = pgn_path.open("a") if pgn_path else None
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=concurrency) as pool:
            futures = [pool.submit(job, *entry) for entry in schedule]
            for future in concurrent.futures.as_completed(futures):
                result = future.result()
                tally.add(result)
                if pgn_file is not None:
                    print(result.game, file=pgn_file, end="\n\n", flush=True)
                colour = "white" if result.engine1_white else "black"
                print(
                    f"game {result.index + 1:3d} {result.opening:24s} {specs[0].name} {colour}: "
                    f"{result.result:7s} ({result.termination})  "
                    f"score {tally.wins}-{tally.losses}-{tally.draws}",
                    file=out,
                    flush=True,
                )
    finally:
        if pgn_file is not None:
            pgn_file.close()
        for pair in all_seats:
            for seat in pair:
                seat.discard()
    return tally


def report(tally: Tally, specs: tuple[EngineSpec, EngineSpec]) -> str:
    elo, low, high = elo_estimate(tally.wins, tally.draws, tally.losses)
    points = tally.wins + 0.5 * tally.draws
    if points in (0, tally.games):
        bound = "below" if points == 0 else "above"
        return "\n".join([
            f"{specs[0].name} vs {specs[1].name}: +{tally.wins} -{tally.losses} ={tally.draws} "
            f"({points:g}/{tally.games})",
            f"Elo difference: unbounded {bound} (every game went one way; play more games or "
            "a stronger opponent)",
        ])
    lines = [
        f"{specs[0].name} vs {specs[1].name}: +{tally.wins} -{tally.losses} ={tally.draws} "
        f"({points:g}/{tally.games}, {100 * points / tally.games:.1f}%)",
        f"Elo difference: {elo:+.0f} (95% interval {low:+.0f} .. {high:+.0f}, "
        f"margin +-{(high - low) / 2:.0f})",
        "losses on time: "
        + (", ".join(f"{k} {v}" for k, v in sorted(tally.time_losses.items())) or "none"),
    ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.match",
        description="Play a match between two UCI engines with referee-kept clocks.",
        epilog="Engine commands may be the aliases " + ", ".join(ENGINE_ALIASES)
        + " or any command line.",
    )
    parser.add_argument("--engine1", default="kibitz", help="first engine (default: kibitz)")
    parser.add_argument("--engine2", default="sunfish", help="second engine (default: sunfish)")
    parser.add_argument("--name1", help="display name of engine1")
    parser.add_argument("--name2", help="display name of engine2")
    parser.add_argument("--option1", action="append", type=parse_option, default=[],
                        metavar="NAME=VALUE", help="UCI option for engine1 (repeatable)")
    parser.add_argument("--option2", action="append", type=parse_option, default=[],
                        metavar="NAME=VALUE", help="UCI option for engine2 (repeatable)")
    parser.add_argument("--tc", type=parse_time_control, default=(10.0, 0.1),
                        help="time control BASE+INC in seconds (default 10+0.1)")
    parser.add_argument("--games", type=int, default=20, help="number of games (default 20)")
    parser.add_argument("--openings", type=Path, help="file of FEN/EPD start positions")
    parser.add_argument("--pgn", type=Path, help="append the games to this PGN file")
    parser.add_argument("--concurrency", type=int, default=1, help="games played at once")
    parser.add_argument("--win-cp", type=int, default=1000,
                        help="adjudicate a win when every score of the last plies exceeds this")
    parser.add_argument("--win-plies", type=int, default=8,
                        help="plies of agreeing scores for a win adjudication (default 8)")
    parser.add_argument("--draw-cp", type=int, default=10,
                        help="adjudicate a draw when every recent score is within this")
    parser.add_argument("--draw-plies", type=int, default=20,
                        help="plies of level scores for a draw adjudication (default 20)")
    parser.add_argument("--draw-min-ply", type=int, default=80,
                        help="no draw adjudication before this ply (default 80)")
    parser.add_argument("--max-plies", type=int, default=400,
                        help="a game still running after this many plies is a draw")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.games < 1:
        raise SystemExit("--games must be at least 1")
    if args.concurrency < 1:
        raise SystemExit("--concurrency must be at least 1")
    specs = (
        EngineSpec(args.name1 or args.engine1, resolve_command(args.engine1), dict(args.option1)),
        EngineSpec(args.name2 or args.engine2, resolve_command(args.engine2), dict(args.option2)),
    )
    if specs[0].name == specs[1].name:
        specs = (EngineSpec(specs[0].name + "-1", specs[0].command, specs[0].options),
                 EngineSpec(specs[1].name + "-2", specs[1].command, specs[1].options))
    config = MatchConfig(
        base_s=args.tc[0], increment_s=args.tc[1], win_cp=args.win_cp, win_plies=args.win_plies,
        draw_cp=args.draw_cp, draw_plies=args.draw_plies, draw_min_ply=args.draw_min_ply,
        max_plies=args.max_plies,
    )
    if args.pgn:
        args.pgn.parent.mkdir(parents=True, exist_ok=True)
    openings = load_openings(args.openings)
    print(f"{specs[0].name} vs {specs[1].name}, {args.games} games at "
          f"{config.base_s:g}+{config.increment_s:g}", flush=True)
    tally = run_match(specs, openings, args.games, config, args.concurrency, args.pgn)
    print(report(tally, specs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
