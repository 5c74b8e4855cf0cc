"""The data factory: self-play positions piled up in a data directory across many runs.

``run`` resumes generation into the directory (default ``~/kibitz-data``): one process per job
plays games at a fixed node count with a net (the engine's default one unless ``--evalfile``
says otherwise) and appends each finished game to a shard of its own (``tools.nnue.shards``),
so the run may be killed at any moment and loses only the games in flight.  It stops after
``--seconds`` (or ``--games`` per job), on SIGTERM or Ctrl-C, seals its shards and writes its
line in the ledger (``tools.nnue.ledger``).  ``status`` prints the directory's totals, the
engine's score by net against each opponent (each net read against the engine's default net
there, or ``--reference NET``'s), and any mismatch with the ledger (exit status 1 when there
is one).

    make datagen DATAGEN_S=3600 JOBS=1       # nice'd, with a timeout as the hard bound
    make datagen-status
    python -m tools.nnue.factory run --dir ~/kibitz-data --jobs 2 --nodes 3000 --seconds 600
    python -m tools.nnue.factory status --dir ~/kibitz-data

One run writes to a directory at a time (a lock file): a run seals the shards that a killed
run left open, and must not seal those of a run still writing.

With ``--opponent ENGINE`` (an alias of ``tools.match``, such as ``ethereal-chess``, or a
command line) the games are the engine against that engine at ``--opponent-nodes`` (or
``--opponent-depth``) a move, the colours alternating (source ``versus``): self-play's two
sides share their blind spots, so its results cannot show them; a stronger opponent's can.
The engine still searches every position for its label.  The ledger line keeps the engine's
wins, draws and losses.  Ethereal 12 ignores ``go nodes``: give it a depth.

    make datagen DATAGEN_ARGS="--opponent ethereal-chess --opponent-depth 9"

``--opponent-share F`` with ``--seconds``: that share of the time against the opponent, then
self-play for the rest, as two runs (``phases``).
"""

from __future__ import annotations

import argparse
import fcntl
import multiprocessing as mp
import os
import queue
import random
import resource
import signal
import sys
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import chess

from tools.common.engines import EngineSpec, check_installed, make_spec
from tools.common.opponent import OpponentLimit
from tools.common.referee import elo_difference_unpaired, elo_estimate, parse_option
from tools.nnue import ledger
from tools.nnue.data import HAND_WRITTEN_K_CP
from tools.nnue.shards import (
    OPEN_SUFFIX,
    SEALED_SUFFIX,
    ShardError,
    ShardWriter,
    read_shard,
    seal,
)

DEFAULT_DIR = Path("~/kibitz-data")
DEFAULT_NODES = 3000
DEFAULT_RANDOM_PLIES = 4
PROGRESS_EVERY_S = 60.0  # a progress line this often (the first game's at once)
POLL_S = 1.0
LOCK_NAME = ".lock"
REPO_DIR = Path(__file__).resolve().parents[2]
FIRST_GAME_LINE = "first game written"  # printed once a run's first game is on disk
# a finished game: job, positions, the job's CPU s playing, and the engine's outcome against
# an opponent ("win", "draw" or "loss"; "" in self-play)
Event = tuple[int, int, float, str]
OUTCOMES = ("win", "draw", "loss")


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def data_dir(value: Path) -> Path:
    """The directory, made if missing; refused inside the repository."""
    directory = value.expanduser().resolve()
    if directory.is_relative_to(REPO_DIR):
        raise SystemExit(f"--dir {value}: inside the repository; data lives outside it")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold the directory's lock, or refuse: another run is writing to it."""
    fd = os.open(directory / LOCK_NAME, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SystemExit(f"{directory}: another run is writing to it (lock "
                             f"{LOCK_NAME} held)") from None
        yield
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Evaluation:
    """The evaluation that plays a run's games: its file (empty: the hand-written one)."""

    eval_file: str
    name: str  # "kibitz-9.nnue", or "hand-written"
    hash: str  # the net's, or "" for the hand-written evaluation
    k: int
    # The file as the run read it at its start, handed to the players: the ledger names this
    # net, whatever becomes of the file during the run (a checkout, a new default). Empty for
    # the hand-written evaluation.
    net_bytes: bytes = field(default=b"", repr=False)

    @property
    def label(self) -> str:
        return f"net {self.hash}" if self.hash else "hand-written"


def evaluation(eval_file: str, option: str = "--evalfile") -> Evaluation:
    if not eval_file:
        return Evaluation("", "hand-written", "", HAND_WRITTEN_K_CP)
    from engine.nnue import NetFileError, read_net

    try:
        data, net = read_net(eval_file)
    except NetFileError as exc:
        raise SystemExit(f"{option}: {exc}") from None
    return Evaluation(eval_file, Path(eval_file).name, net.hash, net.scale, data)


@dataclass
class RunStart:
    """What a run found in the directory when it started."""

    run: str
    started: str
    started_s: float
    found_shards: int
    found_positions: int
    bad: list[str]
    ledger_total: int
    recovered: dict[str, int] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)


def begin_run(directory: Path) -> RunStart:
    """Seal the shards a killed run left open and check the directory against the ledger.
    Call with the lock held."""
    # the start time first (shards sort by it), then what no other run shares: two runs of one
    # process in the same second must not count each other's shards
    run = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + f"-{os.getpid()}-{os.urandom(3).hex()}"
    started = utc_now()
    for path in sorted(directory.glob(f"*{OPEN_SUFFIX}")):
        try:
            seal(path)
        except ShardError as exc:
            print(f"cannot seal {exc}: left as it is", flush=True)
    check = ledger.audit(directory)
    recovered = dict(check.unledgered)
    for note in check.notes:
        print(f"found: {note}", flush=True)
    for mismatch in check.mismatches:
        print(f"MISMATCH: {mismatch}", flush=True)
    return RunStart(run, started, time.monotonic(), len(check.scan.good),
                    check.scan.positions, [m.split(":", 1)[0] for m in check.scan.bad],
                    check.ledger_total, recovered, check.mismatches)


def finish_run(directory: Path, start: RunStart, source: str, ev: Evaluation, nodes: int,
               jobs: int, games: int, extra: dict[str, Any] | None = None,
               cpu_s: float | None = None) -> dict[str, Any]:
    """Seal the run's open shards and write its ledger line (returned); ``cpu_s``: the CPU
    time its players took, where it is known."""
    for path in sorted(directory.glob(f"{start.run}-*{OPEN_SUFFIX}")):
        try:
            seal(path)
        except ShardError as exc:
            print(f"cannot seal {exc}: left as it is", flush=True)
    shards: dict[str, int] = {}
    for path in sorted(directory.glob(f"{start.run}-*{SEALED_SUFFIX}")):
        try:
            shards[path.name] = len(read_shard(path).records)
        except ShardError as exc:
            print(f"MISMATCH: {exc}", flush=True)
    added = sum(shards.values())
    seconds = time.monotonic() - start.started_s
    line: dict[str, Any] = {
        "run": start.run, "source": source, "start": start.started, "end": utc_now(),
        "seconds": round(seconds, 1), "jobs": jobs, "nodes": nodes, "net": ev.name,
        "net_hash": ev.hash, "k": ev.k, "games": games, "added": added,
        "positions_per_hour": round(added * 3600 / max(seconds, 1e-9)),
        "found": {"shards": start.found_shards, "positions": start.found_positions,
                  "bad": start.bad},
        "ledger_total": start.ledger_total,
        "recovered": start.recovered,
        "mismatches": start.mismatches,
        "shards": shards,
        **(extra or {}),
    }
    if cpu_s is not None:
        line["cpu_s"] = round(cpu_s, 1)
        line["positions_per_cpu_hour"] = round(added * 3600 / max(cpu_s, 1e-9))
    ledger.append_line(directory, line)
    return line


def engine_outcome(result: str, opponent_color: chess.Color) -> str:
    """The engine's outcome of a game against an opponent that played ``opponent_color``."""
    if result == "1/2-1/2":
        return "draw"
    return "loss" if (result == "1-0") == (opponent_color == chess.WHITE) else "win"


def _exit_on_sigterm(events: mp.Queue[Event]) -> None:
    """SIGTERM (the run stopping its jobs) as an exit, so that the opponent's process is
    closed on the way out, not orphaned (``stop_or_defer``: not while one starts)."""
    from tools.common.opponent import stop_or_defer

    def handler(signum: int, frame: object) -> None:
        events.cancel_join_thread()  # the run reads no more events: exit without flushing
        stop_or_defer()

    signal.signal(signal.SIGTERM, handler)


def _worker(directory: str, stem: str, meta: dict[str, Any], seed: int, nodes: int,
            random_plies: int, games: int, ev: Evaluation, job: int, events: mp.Queue[Event],
            opponent_spec: EngineSpec | None = None,
            opponent_limit: OpponentLimit | None = None) -> None:
    """Play games until ``games`` (0: until stopped), appending each to this job's shards;
    after each, an event: (job, positions, CPU seconds spent playing since the warm-up, the
    outcome against the opponent).  With ``opponent_spec``, against that engine, this job's
    first game with white and the colours alternating."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    from engine.nnue import parse_net
    from engine.search import warm_up
    from tools.common.opponent import EngineOpponent, OpponentError, stops_deferred
    from tools.nnue.data import play_game

    net = parse_net(ev.net_bytes, ev.eval_file) if ev.net_bytes else None
    opponent = None
    try:
        if opponent_spec is not None and opponent_limit is not None:
            _exit_on_sigterm(events)
            try:
                with stops_deferred():  # a stop exits once ``opponent`` is there to close
                    opponent = EngineOpponent(opponent_spec, opponent_limit)
            except OpponentError as exc:
                print(f"job {job}: {exc}", file=sys.stderr, flush=True)
                return
        warm_up(net)  # the net's functions too: the first game's CPU time is a game's
        warm_cpu_s = time.process_time()
        parent = os.getppid()
        rng = random.Random(seed)
        writer = ShardWriter(Path(directory), stem, meta)
        played = 0
        while games == 0 or played < games:
            opponent_color = chess.BLACK if played % 2 == 0 else chess.WHITE
            try:
                data, count, result = play_game(rng, nodes, random_plies, net, opponent,
                                                opponent_color)
            except OpponentError as exc:  # this job stops; the games it wrote are kept
                print(f"job {job}: {exc}", file=sys.stderr, flush=True)
                break
            if os.getppid() != parent:  # the run was killed: nobody would seal or count this
                return
            if count:
                writer.add(data)
            played += 1
            outcome = engine_outcome(result, opponent_color) if opponent is not None else ""
            events.put((job, count, time.process_time() - warm_cpu_s, outcome))
        writer.close()
    finally:
        if opponent is not None:
            opponent.close()


def run(args: argparse.Namespace) -> bool:
    """One run: its players until its time, its games or a stop; True when it was stopped
    (SIGTERM or Ctrl-C), so that no later phase starts."""
    directory = data_dir(args.dir)
    ev = evaluation(args.evalfile)
    spec: EngineSpec | None = args.opponent_spec
    with locked(directory):
        start = begin_run(directory)
        print(f"{directory}: {start.found_positions} positions in {start.found_shards} shards "
              f"(ledger total {start.ledger_total}, {len(start.recovered)} shard(s) of "
              f"stopped runs recovered); run {start.run}: {args.jobs} job(s), {args.nodes} "
              f"nodes, {ev.name} ({ev.label}, K {ev.k})"
              + (f", against {spec.name} at {args.opponent_limit}" if spec else ""), flush=True)
        source = "selfplay" if spec is None else "versus"
        meta = {"k": ev.k, "evaluation": ev.label, "net": ev.name, "nodes": args.nodes,
                "random_plies": args.random_plies, "source": source, "run": start.run}
        versus: dict[str, Any] = {}
        if spec is not None:
            versus = {"opponent": spec.name, "opponent_limit": str(args.opponent_limit)}
            meta.update(versus)
        context = mp.get_context("spawn")  # a fresh interpreter each: no numba state forked
        events: mp.Queue[Event] = context.Queue()
        workers = [
            context.Process(
                target=_worker, daemon=True,
                args=(str(directory), f"{start.run}-j{job}", {**meta, "job": job},
                      zlib.crc32(f"{start.run}/{job}/{args.seed}".encode()), args.nodes,
                      args.random_plies, args.games, ev, job, events, spec,
                      args.opponent_limit))
            for job in range(args.jobs)
        ]
        for worker in workers:
            worker.start()
        games = done = 0
        play_cpu_s = [0.0] * args.jobs  # each job's CPU time in the games it finished
        played = [0] * args.jobs
        outcomes: Counter[str] = Counter()
        stopped = False
        deadline = start.started_s + args.seconds if args.seconds else None
        last_report = time.monotonic()
        previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
        try:
            while any(w.is_alive() for w in workers) or not events.empty():
                if deadline is not None and time.monotonic() >= deadline:
                    break
                try:
                    job, count, play_cpu_s[job], outcome = events.get(timeout=POLL_S)
                except queue.Empty:
                    continue
                outcomes[outcome] += 1
                played[job] += count
                games += 1
                done += count
                now = time.monotonic()
                if count and done == count:  # a game without a quiet position writes nothing
                    print(f"{FIRST_GAME_LINE}: {count} positions", flush=True)
                if now - last_report >= PROGRESS_EVERY_S:
                    last_report = now
                    rate = done * 3600 / max(now - start.started_s, 1e-9)
                    print(f"{utc_now()} {games} games, {done} positions "
                          f"({rate:.0f} positions/hour)", flush=True)
        except KeyboardInterrupt:
            stopped = True
            print("stopping", flush=True)
        finally:
            for worker in workers:
                worker.terminate()  # a game in flight is simply not written
            for worker in workers:
                worker.join()
            signal.signal(signal.SIGTERM, previous)
        # the workers' own CPU time: positions per CPU hour do not depend on what else the
        # machine runs, where positions per hour do
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_s = usage.ru_utime + usage.ru_stime
        if spec is not None:
            versus["engine_score"] = {o: outcomes[o] for o in OUTCOMES}
        line = finish_run(directory, start, source, ev, args.nodes, args.jobs, games,
                          {**versus, "random_plies": args.random_plies,
                           "play_cpu_s": round(sum(play_cpu_s), 1),
                           "positions_per_play_cpu_hour": round(
                               sum(played) * 3600 / max(sum(play_cpu_s), 1e-9))}, cpu_s)
    print(f"run {start.run}: {line['added']} positions added in {len(line['shards'])} "
          f"shard(s), {games} games, {line['seconds']:.0f} s "
          f"({line['positions_per_hour']} positions/hour); the ledger's total is now "
          f"{ledger.ledger_total(ledger.read_ledger(directory))}", flush=True)
    if spec is not None:
        score = versus["engine_score"]
        print(f"against {spec.name} at {args.opponent_limit}: {score['win']} won, "
              f"{score['draw']} drawn, {score['loss']} lost", flush=True)
    return stopped


def phases(args: argparse.Namespace) -> Iterator[argparse.Namespace]:
    """The runs of one ``run`` command: one, or with ``--opponent-share`` two, the games
    against the opponent first (its share of ``--seconds``), then self-play until the
    command's deadline. Two runs, two ledger lines: a line keeps one net and one matchup, so
    the status's scores against the opponent stay whole. The best net so far learnt from
    both kinds of game (self-play and about a fifth of its positions against Ethereal); the
    games against the opponent also keep the default net's score there, which the status
    reads every candidate against."""
    if args.opponent_share is None:
        yield args
        return
    deadline_s = time.monotonic() + args.seconds
    yield argparse.Namespace(**{**vars(args), "seconds": args.seconds * args.opponent_share})
    left_s = deadline_s - time.monotonic()
    if left_s > 0:
        yield argparse.Namespace(**{**vars(args), "seconds": left_s, "opponent_spec": None})


def _sigterm_as_interrupt(signum: int, frame: object) -> None:
    """SIGTERM (``timeout``) as Ctrl-C, once: the shards are sealed and the line written."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def _reference_hash(reference: str | None) -> str:
    """The hash of the net ``status`` reads the others against (default: the engine's)."""
    if reference is None:
        from engine.params import DEFAULT_EVAL_FILE

        reference = DEFAULT_EVAL_FILE
    return evaluation(reference, "--reference").hash


def status(args: argparse.Namespace) -> int:
    directory = args.dir.expanduser().resolve()
    if not directory.exists():
        # a new machine: nothing made yet is a state, not an error
        print(f"{directory}: no data yet (no such directory; `make datagen` makes it)")
        return 0
    if not directory.is_dir():
        raise SystemExit(f"--dir {args.dir}: not a directory")
    check = ledger.audit(directory)
    good = check.scan.good
    sealed = sum(1 for s in good if s.sealed)
    size = sum(s.path.stat().st_size for s in good)
    print(f"{directory}: {check.scan.positions} positions in {len(good)} shards "
          f"({sealed} sealed, {len(good) - sealed} open; {size / 2**20:.1f} MiB), "
          f"{len(check.scan.bad)} refused")
    # by the net's hash (in its evaluation), not its file's name: a candidate that became the
    # default is one net; a shard without its evaluation named is keyed by its name as well
    by_evaluation: Counter[tuple[str, str, str]] = Counter()
    names: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for shard in good:
        meta = shard.meta
        name = str(meta.get("net", "?"))
        against = (f" against {meta['opponent']} at {meta.get('opponent_limit', '?')}"
                   if "opponent" in meta else "")
        key = (f"{meta.get('source', '?')}: ",
               f" ({meta.get('evaluation', '?')}, K {meta['k']}, {meta.get('nodes', '?')} nodes)"
               f"{against}", "" if "evaluation" in meta else name)
        by_evaluation[key] += len(shard.records)
        names[key].add(name)
    labels = [(f"{key[0]}{ledger.net_names(names[key])}{key[1]}", count)
              for key, count in by_evaluation.items()]
    for label, count in sorted(labels):
        print(f"  {count:>10}  {label}")
    lines = check.lines
    seconds = sum(float(line.get("seconds", 0)) for line in lines)
    added = sum(int(line.get("added", 0)) for line in lines)
    print(f"ledger: {len(lines)} run(s), total {check.ledger_total} positions "
          f"({added} added by runs that wrote their line, "
          f"{check.ledger_total - added} recovered from stopped ones) in {seconds / 3600:.2f} h"
          + (f", {added * 3600 / seconds:.0f} positions/hour" if seconds else ""))
    if lines:
        last = lines[-1]
        print(f"last run: {last.get('run')} {last.get('start')} .. {last.get('end')}, "
              f"{last.get('added')} positions, {last.get('jobs')} job(s), "
              f"{last.get('positions_per_hour')} positions/hour "
              f"({last.get('positions_per_cpu_hour', '?')} per CPU hour of its players), "
              f"{last.get('net')} {last.get('net_hash')}"
              + (f", merged from {last['merged'].get('from')}"
                 if isinstance(last.get("merged"), dict) else ""))
    print_versus_scores(lines, _reference_hash(args.reference))
    if check.unledgered:
        print(f"not yet in the ledger: {sum(check.unledgered.values())} positions in "
              f"{len(check.unledgered)} shard(s)")
    for note in check.notes:
        print(f"note: {note}")
    for mismatch in check.mismatches:
        print(f"MISMATCH: {mismatch}")
    if not check.mismatches:
        print("no mismatch: every shard the ledger lists is there, whole, with its count")
    return 1 if check.mismatches else 0


def _elo_text(estimate: tuple[float, float, float]) -> str:
    elo, low, high = (round(value) for value in estimate)  # round: no "-0"
    return f"{elo:+d} Elo ({low:+d} .. {high:+d})"


def print_versus_scores(lines: list[dict[str, Any]], reference_hash: str) -> None:
    """The engine's score by net against each opponent, from the ledger, and each net's Elo
    against the reference net (by its hash; "" is the hand-written evaluation's) where it
    played, else against the one that played most there (its games unpaired: other openings)."""
    for matchup, players in sorted(ledger.versus_scores(lines).items(),
                                   key=lambda item: str(item[0])):
        played = [(player, wdl) for player, wdl in players.items() if sum(wdl)]
        if not played:
            continue
        # the reference first, then by games: a candidate is read against the net it would
        # replace, which need not be the one with the most games
        played.sort(key=lambda item: (item[0].net_hash != reference_hash, -sum(item[1])))
        openings = (f", {matchup.random_plies} random plies" if matchup.random_plies >= 0
                    else "")
        print(f"against {matchup.opponent} at {matchup.opponent_limit}, "
              f"{matchup.nodes} nodes a move{openings}:")
        reference, reference_wdl = played[0]
        for player, wdl in played:
            wins, draws, losses = wdl
            text = (f"  {player.net} ({player.net_hash}): +{wins} ={draws} -{losses} in "
                    f"{sum(wdl)} games, {(wins + draws / 2) / sum(wdl):.1%}, "
                    f"{_elo_text(elo_estimate(*wdl))}")
            if player != reference:
                text += (f"; against {reference.net} ({reference.net_hash}) "
                         f"{_elo_text(elo_difference_unpaired(wdl, reference_wdl))}")
            print(text)


PHASE_EDGES = (2, 11, 21, 33)  # pieces on the board (kings and pawns too): ending, middle, opening
BALANCE_EDGES_CP = (0, 50, 200, 600, 3001)  # |score|: level, an edge, a clear advantage, won


def describe(args: argparse.Namespace) -> int:
    """How the positions of each source differ: phase (pieces on the board) and balance
    (|score|, the side to move's, in the net's centipawns), and results."""
    import numpy as np

    from tools.nnue.features import record_pieces

    directory = args.dir.expanduser().resolve()
    found = ledger.scan(directory)
    for message in found.bad:
        print(f"refused: {message}")
    by_source: dict[str, list[Any]] = {}
    for shard in found.good:
        by_source.setdefault(str(shard.meta.get("source", "?")), []).append(shard.records)
    for source, parts in sorted(by_source.items()):
        records = np.concatenate(parts)
        count = record_pieces(records)
        score = np.abs(records["score"].astype(np.int64))
        phase = np.histogram(count, PHASE_EDGES)[0] / len(records)
        balance = np.histogram(score, BALANCE_EDGES_CP)[0] / len(records)
        results = np.bincount(records["result"], minlength=3) / len(records)
        print(f"{source}: {len(records)} positions; pieces mean {count.mean():.1f}, "
              f"median {np.median(count):.0f}; |score| median {np.median(score):.0f} cp, "
              f"mean {score.mean():.0f} cp")
        print("  phase    " + ", ".join(f"{lo}-{hi - 1} pieces {share:.1%}" for lo, hi, share
                                        in zip(PHASE_EDGES, PHASE_EDGES[1:], phase, strict=False)))
        print("  balance  " + ", ".join(f"{lo}-{hi - 1} cp {share:.1%}" for lo, hi, share
                                        in zip(BALANCE_EDGES_CP, BALANCE_EDGES_CP[1:],
                                               balance, strict=False)))
        print(f"  results  white wins {results[2]:.1%}, draws {results[1]:.1%}, "
              f"black wins {results[0]:.1%}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nnue.factory", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="generate into the directory")
    status_parser = commands.add_parser("status", help="totals, and mismatches with the ledger")
    describe_parser = commands.add_parser(
        "describe", help="phase and balance of the positions, by source (selfplay, pgn)")
    for sub in (run_parser, status_parser, describe_parser):
        sub.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                         help=f"the data directory (default {DEFAULT_DIR})")
    status_parser.add_argument("--reference", metavar="NET", default=None,
                               help="read each net's score against an opponent against this "
                                    "net's there (a path, or the name of a shipped net; "
                                    "default: the engine's); where it has not played, against "
                                    "the net that played most")
    run_parser.add_argument("--jobs", type=int, default=1, help="processes, one per core")
    run_parser.add_argument("--nodes", type=int, default=DEFAULT_NODES, help="nodes per move")
    run_parser.add_argument("--random-plies", type=int, default=DEFAULT_RANDOM_PLIES,
                            help="random moves after the opening")
    run_parser.add_argument("--seconds", type=float, default=0.0,
                            help="stop after this long (0: until stopped)")
    run_parser.add_argument("--games", type=int, default=0,
                            help="games per job (0: until stopped)")
    run_parser.add_argument("--evalfile", default=None,
                            help="the net that plays (a path, or the name of a shipped net; "
                                 "'' for the hand-written evaluation; default: the engine's)")
    run_parser.add_argument("--seed", type=int, default=1)
    run_parser.add_argument("--opponent", metavar="ENGINE", default=None,
                            help="play against this engine (an alias such as ethereal-chess, "
                                 "or a command line) instead of self-play")
    limit = run_parser.add_mutually_exclusive_group()
    limit.add_argument("--opponent-nodes", type=int, default=None,
                       help="the opponent's nodes per move (default: --nodes)")
    limit.add_argument("--opponent-depth", type=int, default=None,
                       help="the opponent's depth per move, instead of nodes (for an engine "
                            "that ignores `go nodes`, as Ethereal 12 does)")
    run_parser.add_argument("--opponent-option", metavar="NAME=VALUE", action="append",
                            type=parse_option, default=[],
                            help="a UCI option of the opponent (repeatable)")
    run_parser.add_argument("--opponent-share", metavar="FRACTION", type=float, default=None,
                            help="spend this share of --seconds against --opponent, then "
                                 "self-play for the rest (two runs, two ledger lines)")
    args = parser.parse_args(argv)
    if args.command == "status":
        return status(args)
    if args.command == "describe":
        return describe(args)
    if args.jobs < 1 or args.nodes < 1 or args.random_plies < 0 or args.seconds < 0 \
            or args.games < 0:
        raise SystemExit("--jobs and --nodes must be positive; --random-plies, --seconds and "
                         "--games at least 0")
    if args.evalfile is None:
        from engine.params import DEFAULT_EVAL_FILE

        args.evalfile = DEFAULT_EVAL_FILE
    args.opponent_spec = opponent_spec(args.opponent, args.opponent_option)
    if args.opponent_depth is None and args.opponent_nodes is None:
        args.opponent_nodes = args.nodes
    try:
        args.opponent_limit = OpponentLimit(args.opponent_nodes, args.opponent_depth)
    except ValueError:
        raise SystemExit("--opponent-nodes and --opponent-depth must be positive") from None
    if args.opponent_share is not None and not (
            args.opponent_spec is not None and args.seconds > 0 and 0 < args.opponent_share < 1):
        raise SystemExit(f"--opponent-share {args.opponent_share}: needs --opponent and "
                         f"--seconds, and a share between 0 and 1 (both excluded)")
    for phase in phases(args):
        if run(phase):
            break  # stopped: the time left is not the next phase's
    return 0


def opponent_spec(engine: str | None, options: list[tuple[str, str]]) -> EngineSpec | None:
    """The engine of ``--opponent`` with its ``--opponent-option``s, checked to be installed;
    None for self-play."""
    if engine is None:
        if options:
            raise SystemExit("--opponent-option without --opponent")
        return None
    spec = make_spec(engine, None, None, options, False)
    check_installed(spec)
    return spec


if __name__ == "__main__":
    sys.exit(main())
