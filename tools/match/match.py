"""Play a match between two engines (UCI or XBoard) and report the score with an Elo estimate.

Each opening is played twice, once with each engine as White: the two games are a *pair*, and
the pairs' scores are counted as pentanomial results.  Clocks are kept by this tool (the
referee): the wall time of every move is charged to the mover, and an engine whose clock runs
out loses on time, whatever it reports.  With ``--nodes N`` every move is a fixed-nodes search
instead and no clock runs.  Games are adjudicated when both engines agree the position is
clearly won, or when a long, level endgame is clearly drawn.

With ``--sprt elo0 elo1 alpha beta`` the match is a sequential probability ratio test
(``tools.match.sprt``): it stops by itself as soon as the log-likelihood ratio leaves its bounds.

Examples::

    python -m tools.match --engine2 sunfish --tc 10+0.1 --games 20
    python -m tools.match --engine2 stockfish --option2 UCI_LimitStrength=true \\
        --option2 UCI_Elo=2000 --tc 60+0.6 --games 10 --pgn games/sf2000.pgn
    python -m tools.match --engine2 kibitz@main --tc 2+0.02 --sprt 0 5 0.05 0.05
    python -m tools.match --engine2 fairy-stockfish --option2 "Skill Level=0" \
        --variant 3check --tc 10+0.1 --games 10
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import logging
import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import chess
import chess.engine
import chess.pgn
import chess.variant

from tools.common.engines import (
    ENGINE_ALIASES,
    PROTOCOLS,
    EngineSpec,
    bench_signature,
    check_installed,
    make_spec,
    open_engine,
)
from tools.common.openings import Opening, load_openings
from tools.common.signals import sigterm_as_interrupt
from tools.match.sprt import ELO_MODELS, SprtSpec, llr, pair_index

WAKE_S = 0.5  # the longest a signal waits for the main thread while games run
STOPPED_EXIT = 130  # a match stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it)
SPRT_MAX_GAMES = 20000  # an SPRT stops long before this unless the Elo sits between its bounds


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
    nodes: int | None = None  # fixed nodes per move instead of clocks
    # python-chess's board of the variant played: the referee, and through it `UCI_Variant`
    board_class: type[chess.Board] = chess.Board

    def describe(self) -> str:
        if self.nodes is not None:
            return f"{self.nodes} nodes/move"
        return f"{self.base_s:g}+{self.increment_s:g}"


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
    # pair scores of engine1 (0, 0.5, ... 2 points) as counts [LL, LD, DD+WL, WD, WW]
    pentanomial: list[int] = field(default_factory=lambda: [0] * 5)
    _half_pairs: dict[int, float] = field(default_factory=dict)
    llr: float = 0.0  # SPRT: the log-likelihood ratio after the last completed pair
    verdict: str | None = None  # SPRT: "H1" or "H0" once the LLR has left its bounds
    verdict_games: int = 0  # games counted when the verdict came
    stopped: bool = False  # Ctrl-C or SIGTERM ended the match: the games finished are counted

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def pairs(self) -> int:
        return sum(self.pentanomial)

    def add(self, result: GameResult) -> bool:
        """Count one game; True when it completes its pair (the same opening, both colours)."""
        if result.time_loss:
            self.time_losses[result.time_loss] = self.time_losses.get(result.time_loss, 0) + 1
        return self.count(result.index, result.engine1_points)

    def count(self, index: int, points: float) -> bool:
        """Count engine1's ``points`` of game ``index`` (0-based; games 2k and 2k + 1 are a
        pair); True when it completes its pair."""
        if points == 1.0:
            self.wins += 1
        elif points == 0.5:
            self.draws += 1
        else:
            self.losses += 1
        pair = index // 2
        partner = self._half_pairs.pop(pair, None)
        if partner is None:
            self._half_pairs[pair] = points
            return False
        self.pentanomial[pair_index(partner + points)] += 1
        return True


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


def parse_variant(text: str) -> type[chess.Board]:
    """python-chess's board for a variant name (``3check``, ``kingofthehill``, ...)."""
    try:
        return chess.variant.find_variant(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"unknown variant {text!r} (python-chess's names: chess, 3check, kingofthehill, "
            "atomic, ...)") from None




class Seat:
    """One engine process for one worker; reopened if it dies, until the match is stopped."""

    def __init__(self, spec: EngineSpec) -> None:
        self.spec = spec
        self.engine: chess.engine.SimpleEngine | None = None
        self.closed = threading.Event()

    def get(self) -> chess.engine.SimpleEngine:
        if self.closed.is_set():
            raise chess.engine.EngineTerminatedError("the match was stopped")
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

    def close(self) -> None:
        """The match is stopping: quit the engine (a game it is playing ends at once) and
        open no other."""
        self.closed.set()
        self.discard()


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
    board = config.board_class(opening.fen)
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
        if config.nodes is not None:
            limit = chess.engine.Limit(nodes=config.nodes)
        else:
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
        if clock_s[mover] < 0 and config.nodes is None:
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
    game.headers["TimeControl"] = config.describe()
    return GameResult(index, opening.name, engine1_white, result, termination, game, time_loss)


PlayFn = Callable[[int, Opening, bool, tuple["Seat", "Seat"], MatchConfig], GameResult]


def run_match(
    specs: tuple[EngineSpec, EngineSpec],
    openings: Sequence[Opening],
    games: int,
    config: MatchConfig,
    concurrency: int,
    pgn_path: Path | None,
    out: TextIO = sys.stdout,
    sprt: SprtSpec | None = None,
    play: PlayFn = play_game,
) -> Tally:
    """Play up to ``games`` games; with ``sprt``, stop starting games once it has a verdict.

    Games are started one by one as workers free up (never more than ``concurrency`` at a
    time), so a test that stops early has started only the games it needed; games already
    running when the verdict comes are played out and counted.  Ctrl-C (or SIGTERM, as
    ``main`` sets it up) stops the match: the games finished so far are the result
    (``Tally.stopped``), the engines of the games still running quit at once.
    """
    schedule: Iterator[tuple[int, Opening, bool]] = (
        (i, openings[(i // 2) % len(openings)], i % 2 == 0) for i in range(games)
    )
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
        return play(index, opening, engine1_white, seats(), config)

    pgn_file = pgn_path.open("a") if pgn_path else None
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=concurrency) as pool:
            running: set[concurrent.futures.Future[GameResult]] = set()

            def start_next() -> None:
                entry = next(schedule, None)
                if entry is not None:
                    running.add(pool.submit(job, *entry))

            for _ in range(concurrency):
                start_next()
            try:
                _collect(running, start_next, tally, specs, pgn_file, out, sprt)
            except KeyboardInterrupt:
                tally.stopped = True
                for future in running:
                    future.cancel()
                with lock:
                    for pair in all_seats:
                        for seat in pair:
                            seat.close()
    finally:
        if pgn_file is not None:
            pgn_file.close()
        for pair in all_seats:
            for seat in pair:
                seat.discard()
    return tally


def _collect(
    running: set[concurrent.futures.Future[GameResult]],
    start_next: Callable[[], None],
    tally: Tally,
    specs: tuple[EngineSpec, EngineSpec],
    pgn_file: TextIO | None,
    out: TextIO,
    sprt: SprtSpec | None,
) -> None:
    """Count the games as they finish, printing a line for each, and start the next ones
    until none is left (or the SPRT has its verdict)."""
    while running:
        # a wait with no timeout is not always woken by a signal: Ctrl-C and SIGTERM are
        # seen within WAKE_S
        done, _ = concurrent.futures.wait(
            running, timeout=WAKE_S, return_when=concurrent.futures.FIRST_COMPLETED
        )
        for future in done:
            running.discard(future)
            result = future.result()
            pair_done = tally.add(result)
            if pgn_file is not None:
                print(result.game, file=pgn_file, end="\n\n", flush=True)
            colour = "white" if result.engine1_white else "black"
            line = (f"game {result.index + 1:3d} {result.opening:24s} {specs[0].name} "
                    f"{colour}: {result.result:7s} ({result.termination})  "
                    f"score {tally.wins}-{tally.losses}-{tally.draws}")
            if sprt is not None and pair_done:
                tally.llr = llr(tally.pentanomial, sprt.elo0, sprt.elo1, sprt.model)
                line += f"  LLR {tally.llr:+.2f}"
                if tally.verdict is None:
                    tally.verdict = sprt.verdict(tally.llr)
                    if tally.verdict is not None:
                        tally.verdict_games = tally.games
            print(line, file=out, flush=True)
            if tally.verdict is None:
                start_next()


def sprt_report(tally: Tally, sprt: SprtSpec) -> str:
    pairs = "[" + ", ".join(str(n) for n in tally.pentanomial) + "]"
    if tally.verdict == "H1":
        outcome = f"H1 accepted: passed after {tally.verdict_games} games"
    elif tally.verdict == "H0":
        outcome = f"H0 accepted: failed after {tally.verdict_games} games"
    elif tally.stopped:
        outcome = f"no verdict after {tally.games} games (the match was stopped)"
    else:
        outcome = f"no verdict after {tally.games} games (the game limit came first)"
    return "\n".join([
        f"{sprt.describe()}",
        f"LLR {tally.llr:+.2f} ({sprt.lower_bound:+.2f}, {sprt.upper_bound:+.2f}): {outcome}",
        f"games {tally.games}: W {tally.wins} L {tally.losses} D {tally.draws}; "
        f"pentanomial [LL, LD, DD+WL, WD, WW] {pairs}",
    ])


def report(tally: Tally, specs: tuple[EngineSpec, EngineSpec]) -> str:
    if tally.games == 0:
        return f"{specs[0].name} vs {specs[1].name}: no game finished"
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
    if tally.pairs:
        lines.append("game pairs [LL, LD, DD+WL, WD, WW]: "
                     + ", ".join(str(n) for n in tally.pentanomial))
    return "\n".join(lines)


def parse_sprt(values: Sequence[str], model: str) -> SprtSpec:
    try:
        elo0, elo1, alpha, beta = (float(v) for v in values)
        return SprtSpec(elo0, elo1, alpha, beta, model)
    except ValueError as error:
        raise SystemExit(f"--sprt ELO0 ELO1 ALPHA BETA: {error}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.match",
        description="Play a match between two engines with referee-kept clocks, "
        "optionally as an SPRT.",
        epilog="Engines may be the aliases " + ", ".join(ENGINE_ALIASES)
        + ", kibitz@REV (this engine at git revision REV) or any command line.",
    )
    parser.add_argument("--engine1", default="kibitz", help="first engine (default: kibitz)")
    parser.add_argument("--engine2", default="sunfish", help="second engine (default: sunfish)")
    parser.add_argument("--proto1", choices=PROTOCOLS,
                        help="protocol of engine1 (default: the alias's, else uci)")
    parser.add_argument("--proto2", choices=PROTOCOLS,
                        help="protocol of engine2 (default: the alias's, else uci)")
    parser.add_argument("--name1", help="display name of engine1")
    parser.add_argument("--name2", help="display name of engine2")
    parser.add_argument("--option1", action="append", type=parse_option, default=[],
                        metavar="NAME=VALUE", help="engine option for engine1 (repeatable)")
    parser.add_argument("--option2", action="append", type=parse_option, default=[],
                        metavar="NAME=VALUE", help="engine option for engine2 (repeatable)")
    parser.add_argument("--tc", type=parse_time_control, default=(10.0, 0.1),
                        help="time control BASE+INC in seconds (default 10+0.1)")
    parser.add_argument("--nodes", type=int,
                        help="fixed nodes per move instead of a clock (screening)")
    parser.add_argument("--games", type=int,
                        help="number of games (default 20; with --sprt the most it may play, "
                        f"default {SPRT_MAX_GAMES})")
    parser.add_argument("--sprt", nargs=4, metavar=("ELO0", "ELO1", "ALPHA", "BETA"),
                        help="sequential probability ratio test of H0: elo0 against H1: elo1 "
                        "(engine1's Elo over engine2), e.g. 0 5 0.05 0.05; stops at a bound")
    parser.add_argument("--elo-model", choices=ELO_MODELS, default="normalized",
                        help="Elo of the SPRT bounds: normalized (fishtest's, the default) or "
                        "logistic")
    parser.add_argument("--no-bench", action="store_true",
                        help="skip the bench signatures printed before the match")
    parser.add_argument("--bench1", action="store_true",
                        help="engine1 is a command line whose `COMMAND bench` prints a "
                        "signature (aliases know whether they have one)")
    parser.add_argument("--bench2", action="store_true", help="the same for engine2")
    parser.add_argument("--openings", type=Path, help="file of FEN/EPD start positions")
    parser.add_argument("--variant", type=parse_variant, default=chess.Board,
                        help="play this variant (python-chess's name: 3check, kingofthehill, "
                             "...); python-chess sets UCI_Variant on both engines")
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
    # XBoard engines print lines the protocol does not define ('tellics ...'): not news
    logging.getLogger("chess.engine").setLevel(logging.ERROR)
    sprt = parse_sprt(args.sprt, args.elo_model) if args.sprt else None
    games = args.games if args.games is not None else (SPRT_MAX_GAMES if sprt else 20)
    if games < 1:
        raise SystemExit("--games must be at least 1")
    if sprt is not None and games < 2:
        raise SystemExit("--sprt plays game pairs: --games must be at least 2")
    if args.concurrency < 1:
        raise SystemExit("--concurrency must be at least 1")
    if args.nodes is not None and args.nodes < 1:
        raise SystemExit("--nodes must be at least 1")
    specs = (
        make_spec(args.engine1, args.name1, args.proto1, args.option1, args.bench1),
        make_spec(args.engine2, args.name2, args.proto2, args.option2, args.bench2),
    )
    for spec in specs:
        check_installed(spec)
    if specs[0].name == specs[1].name:
        specs = (dataclasses.replace(specs[0], name=specs[0].name + "-1"),
                 dataclasses.replace(specs[1], name=specs[1].name + "-2"))
    config = MatchConfig(
        base_s=args.tc[0], increment_s=args.tc[1], win_cp=args.win_cp, win_plies=args.win_plies,
        draw_cp=args.draw_cp, draw_plies=args.draw_plies, draw_min_ply=args.draw_min_ply,
        max_plies=args.max_plies, nodes=args.nodes, board_class=args.variant,
    )
    if args.pgn:
        args.pgn.parent.mkdir(parents=True, exist_ok=True)
    openings = load_openings(args.openings, args.variant)
    if not args.no_bench:
        for spec in specs:
            signature = bench_signature(spec)
            if signature is None:
                print(f"{spec.name}: no bench signature", flush=True)
            else:
                print(f"{spec.name}: bench {signature[0]} nodes, {signature[1]} nodes/s",
                      flush=True)
    limit = f"up to {games}" if sprt else str(games)
    variant = "" if args.variant is chess.Board else f" of {args.variant.uci_variant}"
    print(f"{specs[0].name} vs {specs[1].name}, {limit} games{variant} at {config.describe()}",
          flush=True)
    if sprt is not None:
        print(sprt.describe(), flush=True)
    # ``timeout`` (or systemd) stops a match with SIGTERM: end it as Ctrl-C does, with the
    # result of the games finished so far
    previous = signal.signal(signal.SIGTERM, sigterm_as_interrupt)
    try:
        tally = run_match(specs, openings, games, config, args.concurrency, args.pgn, sprt=sprt)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if tally.stopped:
        print(f"stopped after {tally.games} of {limit} games: the result of those", flush=True)
    print(report(tally, specs), flush=True)
    if sprt is not None:
        print(sprt_report(tally, sprt), flush=True)
    return STOPPED_EXIT if tally.stopped else 0


if __name__ == "__main__":
    sys.exit(main())
