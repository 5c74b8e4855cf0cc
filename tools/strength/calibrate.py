"""Calibrate an engine's ``UCI_Elo`` against Stockfish's, and chain the levels below its floor.

Calibration: the engine at ``UCI_LimitStrength=true, UCI_Elo=L`` plays Stockfish at the same
two options (Stockfish 15.1 calibrates its UCI_Elo on CCRL's 40/4 scale), GAMES games per level
at 10 s + 0.1 s.  A level is calibrated when the measured Elo difference is within
WITHIN_ELO of 0 (a 50% score).

Chain (``--chain``): below Stockfish's floor (1,350) there is no reference, so the engine at L
plays itself at L + STEP_ELO: if each step measures STEP_ELO, the levels below the calibrated
1,400 follow the same scale.

    python -m tools.strength.calibrate                       # 1400 1800 2200 2600, 100 games
    python -m tools.strength.calibrate --chain 1200 1000 800 --games 50
    python -m tools.strength.calibrate --cploss --out docs/calibration.md

Stockfish 15.1 plays a limited level by picking among its MultiPV moves once its iterative
deepening reaches depth 1 + int(level), level = ((UCI_Elo - 1346.6) / 143.4) ** (1 / 0.806)
(src/search.cpp, struct Skill): depth 1 at 1400, 5 at 1800, 10 at 2200, 15 at 2600 -- then
it searches on, spending its clock as at full strength.  So CPU contention barely changes its
play at the low levels, but at 2200 and 2600 a starved Stockfish may not reach that depth in
time and picks from a shallower search (weaker than its label); and any starved engine loses
on time, the referee (tools.match) keeping the clocks.  Run the calibration with no more games
than idle cores, not under ``nice`` on a busy machine; every row counts its games lost on
time, and the table says so when there are any.  (Stockfish fitted its UCI_Elo at 60 s +
0.6 s; the issue asks for 10 s + 0.1 s, where its 2600 may play a little below 2600.)
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from tools.common.engines import EngineSpec, bench_signature, check_installed, make_spec
from tools.common.openings import load_openings
from tools.common.referee import (
    STOPPED_EXIT,
    MatchConfig,
    Tally,
    elo_estimate,
    parse_option,
    parse_time_control,
    run_match,
)
from tools.common.scores import MATE_CP
from tools.common.signals import sigterm_as_interrupt
from tools.strength import cploss
from tools.strength.positions import load_positions

LEVELS = (1400, 1800, 2200, 2600)
CHAIN_LEVELS = (1200, 1000, 800)
STEP_ELO = 200
GAMES = 100
TIME_CONTROL = "10+0.1"
WITHIN_ELO = 70.0
CPLOSS_POSITIONS = None  # --cploss measures every position of the set unless told fewer
# A level's pick is random: four moves a position (Seed 1..4) average out most of one draw's
# luck, so neighbouring levels' losses differ by more than their intervals.
CPLOSS_SEEDS = 4
# One game per core (see above).  Stockfish 1400 against 1600, nice'd on 2 cores that other
# jobs kept at a load of 10: 8 of 10 games lost on time at 4 games at once, 3 of 4 at 2
# (between plies 28 and 56).  The calibration wants an idle machine.
CONCURRENCY = os.cpu_count() or 1
MAX_PLIES = 400
# No adjudication but the move limit.  tools.match adjudicates a win when the engines' own
# scores agree for some plies, and a draw when they stay level; a limited engine reports the
# score of its search, not of the (weaker) move it then plays, so its scores say little about
# how the game will end: a "won" position it would throw away, or a level one it would lose,
# must be played out, since converting (or not) is part of the strength being measured.
# Draws still come by the rules (repetition, fifty moves, dead material) or at MAX_PLIES.
NO_WIN_CP = 10 * MATE_CP  # above any score, mates included: never adjudicated
NO_DRAW_MIN_PLY = 10_000  # after any game's end


def limited(engine: str, elo: int, options: Sequence[tuple[str, str]] = ()) -> EngineSpec:
    return make_spec(engine, f"{Path(engine).name} {elo}", None,
                     [*options, ("UCI_LimitStrength", "true"), ("UCI_Elo", str(elo))], False)


def match_config(time_control: str, max_plies: int = MAX_PLIES) -> MatchConfig:
    base_s, increment_s = parse_time_control(time_control)
    return MatchConfig(base_s=base_s, increment_s=increment_s, win_cp=NO_WIN_CP, win_plies=8,
                       draw_cp=0, draw_plies=20, draw_min_ply=NO_DRAW_MIN_PLY,
                       max_plies=max_plies)


@dataclass(frozen=True)
class Row:
    level: str  # the engine's level
    opponent: str  # the opponent's name and level
    wins: int
    draws: int
    losses: int
    target_elo: float  # the Elo difference the level should measure (0, or -STEP_ELO)
    time_losses: int = 0
    cp: cploss.Summary | None = None

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games

    def elo(self) -> tuple[float, float, float] | None:
        """(Elo, low, high) of the engine against its opponent; None when every game went
        one way (no finite estimate)."""
        if self.games == 0 or self.score in (0.0, 1.0):
            return None
        return elo_estimate(self.wins, self.draws, self.losses)

    def within(self) -> bool:
        estimate = self.elo()
        return estimate is not None and abs(estimate[0] - self.target_elo) <= WITHIN_ELO


def row_of(level: str, opponent: str, tally: Tally, target_elo: float,
           cp: cploss.Summary | None = None) -> Row:
    return Row(level, opponent, tally.wins, tally.draws, tally.losses, target_elo,
               sum(tally.time_losses.values()), cp)


# tools.match's logistic Elo clamps a score of 0 or 1 to +-2400: an interval that reaches
# past either end of the score is unbounded on that side.
UNBOUNDED_ELO = 2000.0


def _signed(elo: float) -> str:
    """'+12', '-40', '+0' for a -0.4 (no '-0'), and '+inf' past UNBOUNDED_ELO."""
    if abs(elo) >= UNBOUNDED_ELO:
        return "+inf" if elo > 0 else "-inf"
    rounded = round(elo)
    return f"{rounded:+d}"


def table(rows: Sequence[Row]) -> str:
    has_cp = any(row.cp is not None for row in rows)
    header = ["level", "opponent", "games", "W/D/L", "score", "Elo (95% interval)", "target",
              f"within ±{WITHIN_ELO:g}", "time losses"]
    if has_cp:
        header += ["mean cp loss", "blunders"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if row.games == 0:
            cells = [row.level, row.opponent, "0", "-", "-", "-", f"{row.target_elo:+.0f}",
                     "-", str(row.time_losses)]
        else:
            estimate = row.elo()
            if estimate is None:
                elo_text = "+inf" if row.score == 1.0 else "-inf"
            else:
                elo, low, high = (_signed(x) for x in estimate)
                elo_text = f"{elo} ({low} .. {high})"
            cells = [row.level, row.opponent, str(row.games),
                     f"{row.wins}/{row.draws}/{row.losses}", f"{100 * row.score:.1f}%",
                     elo_text, f"{row.target_elo:+.0f}", "yes" if row.within() else "no",
                     str(row.time_losses)]
        if has_cp:
            if row.cp is None:
                cells += ["-", "-"]
            else:
                cells += [f"{row.cp.mean_loss_cp:.1f} ± {row.cp.loss_margin_cp:.1f}",
                          f"{100 * row.cp.blunder_share:.1f}%"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def play(engine: EngineSpec, opponent: EngineSpec, args: argparse.Namespace,
         log: TextIO) -> Tally:
    for spec in (engine, opponent):
        check_installed(spec)
        # an undeclared option would lose every game as an engine failure, or (ignored) play
        # the level at full strength
        cploss.check_options(spec)
    print(f"{engine.name} vs {opponent.name}: {args.games} games at {args.tc}, "
          f"concurrency {args.concurrency}", file=log, flush=True)
    openings = load_openings(args.openings)
    return run_match((engine, opponent), openings, args.games,
                     match_config(args.tc, args.max_plies), args.concurrency, args.pgn, out=log)


def commit() -> str:
    run = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True, check=False, cwd=Path(__file__).resolve().parents[2])
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False,
                           cwd=Path(__file__).resolve().parents[2]).stdout.strip()
    return (run.stdout.strip() or "unknown") + (" (with uncommitted changes)" if dirty else "")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.strength.calibrate",
        description="Match an engine's UCI_Elo levels against Stockfish's (or, with --chain, "
        "against its own level one step up) and print the calibration table.")
    parser.add_argument("--levels", nargs="+", type=int, default=list(LEVELS),
                        help=f"UCI_Elo levels to calibrate (default {' '.join(map(str, LEVELS))})")
    parser.add_argument("--chain", nargs="*", type=int,
                        help=f"instead: each level L against the engine at L + {STEP_ELO} "
                        f"(default levels {' '.join(map(str, CHAIN_LEVELS))})")
    parser.add_argument("--step", type=int, default=STEP_ELO, help="the chain's step in Elo")
    parser.add_argument("--engine", default="kibitz",
                        help="engine calibrated: alias or command line (default kibitz)")
    parser.add_argument("--opponent", default="stockfish",
                        help="reference engine with a calibrated UCI_Elo (default stockfish)")
    parser.add_argument("--engine-option", action="append", type=parse_option, default=[],
                        metavar="NAME=VALUE", help="option of the engine at every level "
                        "(repeatable)")
    parser.add_argument("--opponent-option", action="append", type=parse_option, default=[],
                        metavar="NAME=VALUE", help="option of the opponent at every level "
                        "(repeatable)")
    parser.add_argument("--games", type=int, default=GAMES, help=f"games per level ({GAMES})")
    parser.add_argument("--tc", default=TIME_CONTROL, help=f"BASE+INC s ({TIME_CONTROL})")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY,
                        help=f"games at once (default {CONCURRENCY}: twice the cores)")
    parser.add_argument("--max-plies", type=int, default=MAX_PLIES,
                        help=f"a game still running after this many plies is a draw "
                        f"({MAX_PLIES})")
    parser.add_argument("--openings", type=Path, help="FEN/EPD openings (default built-in)")
    parser.add_argument("--pgn", type=Path, help="append the games to this PGN file")
    parser.add_argument("--cploss", action="store_true",
                        help="also measure each level's centipawn loss (tools.strength.cploss)")
    parser.add_argument("--cploss-positions", type=int, default=CPLOSS_POSITIONS,
                        help="positions for --cploss (default all of the set)")
    parser.add_argument("--cploss-seeds", type=int, default=CPLOSS_SEEDS,
                        help="--cploss plays every position this many times, Seed 1..K, "
                        "when the engine declares Seed "
                        f"({CPLOSS_SEEDS})")
    parser.add_argument("--cache", type=Path, default=cploss.DEFAULT_CACHE,
                        help="reference scores cache of --cploss")
    parser.add_argument("--bench", action="store_true",
                        help="print the engine's bench signature in the header")
    parser.add_argument("--quiet", action="store_true", help="no line per game")
    parser.add_argument("--out", type=Path, help="also append the table to this file")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    parse_time_control(args.tc)  # a bad time control is refused before any game
    if args.games < 1:
        raise SystemExit("--games must be at least 1")
    if args.concurrency < 1:
        raise SystemExit("--concurrency must be at least 1")
    log: TextIO = io.StringIO() if args.quiet else sys.stderr
    chain = args.chain is not None
    levels = (args.chain or list(CHAIN_LEVELS)) if chain else args.levels
    engine_name = Path(args.engine).name
    header = [f"{'chain' if chain else 'calibration'} of {engine_name} at commit {commit()}, "
              f"{args.games} games per level at {args.tc}"]
    if args.bench:
        signature = bench_signature(make_spec(args.engine, None, None, [], True))
        header.append(f"bench: {signature[0] if signature else 'none'} nodes")
    print("\n".join(header), flush=True)
    reference = None
    positions = load_positions()[: args.cploss_positions] if args.cploss else []
    if args.cploss:
        reference = cploss.Reference(make_spec("stockfish", None, None, [], False),
                                     cache_path=args.cache)
    rows: list[Row] = []
    stopped = False
    # ``timeout`` stops a run with SIGTERM: end it as Ctrl-C does, with the games played
    previous = signal.signal(signal.SIGTERM, sigterm_as_interrupt)
    try:
        for level in levels:
            engine = limited(args.engine, level, args.engine_option)
            if chain:
                opponent = limited(args.engine, level + args.step, args.engine_option)
                target = -float(args.step)
            else:
                opponent = limited(args.opponent, level, args.opponent_option)
                target = 0.0
            tally = play(engine, opponent, args, log)
            cp = None
            if reference is not None:
                # an engine without a Seed option (Stockfish) plays each position once
                seeds = (args.cploss_seeds if args.cploss_seeds > 1
                         and cploss.declares(engine, cploss.SEED_OPTION) else 1)
                cp, _ = cploss.measure(engine, cploss.elo_level(str(level)), positions,
                                       cploss.parse_go(None, None, None, None), reference,
                                       seeds)
            rows.append(row_of(str(level), opponent.name, tally, target, cp))
            if tally.stopped:
                stopped = True
                print(f"stopped after {tally.games} games of level {level}", flush=True)
                break
    finally:
        signal.signal(signal.SIGTERM, previous)
        if reference is not None:
            reference.close()
    lines = [table(rows)]
    forfeits = sum(row.time_losses for row in rows)
    if forfeits:
        lines.append(f"\n{forfeits} games lost on time: a level's score then measures the "
                     "machine's load too; rerun on an idle machine, not under nice, or with "
                     "fewer games at once (--concurrency)")
    text = "\n".join([*header, "", *lines])
    print("\n" + "\n".join(lines), flush=True)
    if args.out is not None:
        with args.out.open("a") as out:
            out.write(text + "\n\n")
    return STOPPED_EXIT if rows and stopped else 0


if __name__ == "__main__":
    sys.exit(main())
