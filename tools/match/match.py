"""Play a match between two engines (UCI or XBoard) and report the score with an Elo estimate.

Each opening is played twice, once with each engine as White: the two games are a *pair*, and
the pairs' scores are counted as pentanomial results.  Clocks are kept by this tool (the
referee): the wall time of every move is charged to the mover, and an engine whose clock runs
out loses on time, whatever it reports.  With ``--nodes N`` every move is a fixed-nodes search
instead and no clock runs.  Games are adjudicated when both engines agree the position is
clearly won, or when a long, level endgame is clearly drawn.

With ``--sprt elo0 elo1 alpha beta`` the match is a sequential probability ratio test
(``tools.common.sprt``): it stops by itself as soon as the log-likelihood ratio leaves its bounds.

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
import dataclasses
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

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
)
from tools.common.openings import load_openings
from tools.common.referee import (
    STOPPED_EXIT,
    MatchConfig,
    Tally,
    elo_estimate,
    parse_option,
    parse_time_control,
    parse_variant,
    run_match,
)
from tools.common.signals import sigterm_as_interrupt
from tools.common.sprt import ELO_MODELS, SprtSpec

SPRT_MAX_GAMES = 20000  # an SPRT stops long before this unless the Elo sits between its bounds


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
    parser.add_argument("--skip-openings", type=int, default=0, metavar="N",
                        help="start from the book's opening N + 1 and wrap round to its first "
                             "after its last: a stopped test goes on with openings its games "
                             "have not played (pool the logs with tools.match.sprt_pool)")
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
    if args.skip_openings < 0:
        raise SystemExit("--skip-openings must be at least 0")
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
    if args.skip_openings >= len(openings):
        raise SystemExit(f"--skip-openings {args.skip_openings}: the book has only "
                         f"{len(openings)} openings")
    # each opening keeps its name (``book.epd:LINE``), so the logs show where a test went on;
    # the book is rotated, not cut, because a long test cycles it: cut, it would replay only
    # the openings after N, over and over
    openings = openings[args.skip_openings:] + openings[:args.skip_openings]
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
