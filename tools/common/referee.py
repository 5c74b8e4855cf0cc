"""The referee of a game between two engines (UCI or XBoard): it keeps the clocks (the wall
time of every move is charged to the mover, and an engine whose clock runs out loses on time,
whatever it reports), adjudicates clear wins and long level endgames, and counts the results
of a match in game pairs with an Elo estimate. The match command line (``tools.match``) and
the strength calibration (``tools.strength.calibrate``) play their games with it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import math
import re
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
    EngineSpec,
    open_engine,
    play_watched,
)
from tools.common.openings import Opening
from tools.common.scores import MATE_CP
from tools.common.sprt import SprtSpec, llr, pair_index

WAKE_S = 0.5  # the longest a signal waits for the main thread while games run
STOPPED_EXIT = 130  # a match stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it)
# A move still running this long after its clock (or, at fixed nodes, after it began) has hung:
# the engine is killed and loses the game (python-chess gives a clocked search no timeout).
HUNG_AFTER_S = 60.0
# Moves of one engine process, after which the seat starts a fresh one between games: Ethereal
# 12 keeps a thread's stack mapped for every search and stops answering at about 32,000.
MOVES_PER_PROCESS = 10_000


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


Z_95 = 1.959964  # the normal quantile of a two-sided 95% interval


def elo_from_score(score: float) -> float:
    """Logistic Elo difference for an expected score in (0, 1)."""
    score = min(max(score, 1e-6), 1 - 1e-6)
    return -400.0 * math.log10(1.0 / score - 1.0)


def elo_estimate(wins: int, draws: int, losses: int) -> tuple[float, float, float]:
    """(Elo difference, lower and upper bound of its 95% confidence interval)."""
    score, variance = score_variance(wins, draws, losses)
    margin = Z_95 * math.sqrt(variance / (wins + draws + losses))
    return elo_from_score(score), elo_from_score(score - margin), elo_from_score(score + margin)


def score_variance(wins: int, draws: int, losses: int) -> tuple[float, float]:
    """(score, the variance of one game's points about it)."""
    games = wins + draws + losses
    if games == 0:
        raise ValueError("no games played")
    score = (wins + 0.5 * draws) / games
    return score, (wins * (1 - score) ** 2 + draws * (0.5 - score) ** 2
                   + losses * score**2) / games


def elo_difference_unpaired(a: tuple[int, int, int],
                            b: tuple[int, int, int]) -> tuple[float, float, float]:
    """A's Elo minus B's, with its 95% interval, from two samples of games (wins, draws, losses)
    against the same opponent that share no openings: the score difference spread evenly about
    the two mean scores, where the Elo curve is read (``tools.match.compare`` reads paired runs
    the same way)."""
    score_a, variance_a = score_variance(*a)
    score_b, variance_b = score_variance(*b)
    diff = score_a - score_b
    margin = Z_95 * math.sqrt(variance_a / sum(a) + variance_b / sum(b))
    middle = (score_a + score_b) / 2
    return (elo_of_score_difference(diff, middle),
            elo_of_score_difference(diff - margin, middle),
            elo_of_score_difference(diff + margin, middle))


def elo_of_score_difference(diff: float, middle: float) -> float:
    """The Elo apart of two scores ``diff`` apart, spread evenly about their mean ``middle``
    (``elo_from_score`` keeps a score inside (0, 1))."""
    return elo_from_score(middle + diff / 2) - elo_from_score(middle - diff / 2)


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
        self.moves = 0  # asked of this process

    def get(self) -> chess.engine.SimpleEngine:
        if self.closed.is_set():
            raise chess.engine.EngineTerminatedError("the match was stopped")
        if self.engine is None:
            self.engine = open_engine(self.spec)
            self.engine.ping()  # let it load or compile before any clock runs
            self.moves = 0
        return self.engine

    def new_game(self) -> None:
        """Between games: a process that has made ``MOVES_PER_PROCESS`` moves is replaced."""
        if self.moves >= MOVES_PER_PROCESS:
            self.discard()

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
    return score.white().score(mate_score=MATE_CP)


def move_comment(info: chess.engine.InfoDict, spent_s: float) -> str:
    """The mover's score in pawns, its depth and its time, as cutechess writes them
    (``+0.31/15 0.523s``, ``-M4/22 1.002s``), so that a match's PGN shows where each
    engine's view and clock went."""
    score = info.get("score")
    if score is None:
        text = "?"
    else:
        pov = score.relative
        mate = pov.mate()
        if mate is not None:
            text = f"{'+' if mate > 0 else '-'}M{abs(mate)}"
        else:
            text = f"{pov.score(mate_score=MATE_CP) / 100:+.2f}"
    depth = info.get("depth")
    return f"{text}/{depth if depth is not None else '?'} {spent_s:.3f}s"


# move_comment's text read back: the score ("+0.31", "-M4" or "?"), the depth, the seconds
MOVE_COMMENT = re.compile(r"^([+-]\d+\.\d\d|[+-]M\d+|\?)/(\d+|\?) (\d+\.\d+)s$")


@dataclass(frozen=True)
class MoveComment:
    """What ``move_comment`` wrote of a move."""

    score_cp: float | None  # the mover's view; +-inf for a mate, None without a score
    depth: int | None
    spent_s: float


def read_move_comment(comment: str) -> MoveComment | None:
    """``move_comment``'s text read back; None for any other comment."""
    found = MOVE_COMMENT.match(comment.strip())
    if found is None:
        return None
    score, depth, spent = found.groups()
    if score == "?":
        score_cp = None
    elif score[1] == "M":
        score_cp = math.inf if score[0] == "+" else -math.inf
    else:
        score_cp = float(score) * 100.0
    return MoveComment(score_cp, None if depth == "?" else int(depth), float(spent))


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
    for seat in seats:
        seat.new_game()
    by_colour = {chess.WHITE: white, chess.BLACK: black}
    clock_s = {chess.WHITE: config.base_s, chess.BLACK: config.base_s}
    scores: list[int | None] = []
    comments: list[str] = []
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
        allowed_s = HUNG_AFTER_S + (0.0 if config.nodes is not None
                                    else clock_s[mover] + config.increment_s)
        try:
            engine = seat.get()  # (re)starting an engine is not charged to its clock
            started = time.monotonic()
            seat.moves += 1
            played = play_watched(engine, board, limit, allowed_s, info=chess.engine.INFO_SCORE
                                  | chess.engine.INFO_BASIC, game=game_key)
        except (chess.engine.EngineError, chess.engine.EngineTerminatedError, TimeoutError) as e:
            seat.discard()
            result = "0-1" if mover == chess.WHITE else "1-0"
            termination = f"{seat.spec.name} failed: {e}"
            break
        spent_s = time.monotonic() - started
        clock_s[mover] -= spent_s
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
        comments.append(move_comment(played.info, spent_s))
        board.push(played.move)
        verdict = _adjudicate(board, scores, config)
        if verdict is not None:
            result, termination = verdict, "adjudication"
            break
    game = chess.pgn.Game.from_board(board)
    # the engines' moves are the last len(comments) of the main line (the opening's come first)
    nodes = list(game.mainline())
    for node, comment in zip(nodes[len(nodes) - len(comments):], comments, strict=True):
        node.comment = comment
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
