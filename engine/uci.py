"""The UCI protocol: read commands from stdin, search in a worker thread, answer on stdout.

Commands are obeyed in order and never wait for a search: ``go`` starts a worker thread (the
compiled search releases the GIL), and ``stop``, ``ponderhit``, ``quit`` and the hard-limit
timer end it through the searcher's stop flag.  A thread of its own reads the input, so a
``quit`` is seen while an earlier command still works: the table work under way or queued
(clearing, allocating, waiting for the warm-up) is dropped and the process ends at once.
Every command is checked; anything malformed or unknown is answered with ``info string error
...`` and otherwise ignored.  Compiling (or loading the compiled code from numba's cache)
starts in the background after ``uciok`` and ``isready`` waits for it.
"""

from __future__ import annotations

import contextlib
import os
import queue
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import NoReturn, TextIO

import chess
import chess.variant
import numpy as np

from engine import nnue, strength, tt
from engine.board import FenError, Position
from engine.constants import VARIANT_CHESS, VARIANT_KING_OF_THE_HILL, VARIANT_THREE_CHECK
from engine.info import Iteration
from engine.jit import uncompiled
from engine.nnue import static_scores
from engine.params import DEFAULT_EVAL_FILE, DEFAULT_MOVE_OVERHEAD_MS, DEFAULT_THREADS
from engine.perft import divide_lines
from engine.search import SINGLE_PV, Searcher, SearchShape, warm_up
from engine.timeman import GoLimits, TimeBudget, plan
from engine.variant import RESULT_NONE, UCI_VARIANTS, variant_result

ENGINE_NAME = "Kibitz 0.1"
ENGINE_AUTHOR = "the Kibitz developers"
MAX_MOVE_OVERHEAD_MS = 10_000
MAX_PERFT_DEPTH = 12
WARM_POLL_S = 0.005  # how often a search waiting for the warm-up checks for a stop
MAX_MULTIPV = 64
MAX_SEED = 2**31 - 1

_INT_PARAMS = {
    "wtime": "wtime_ms",
    "btime": "btime_ms",
    "winc": "winc_ms",
    "binc": "binc_ms",
    "movestogo": "movestogo",
    "movetime": "movetime_ms",
    "depth": "depth",
    "nodes": "nodes",
    "mate": "mate",
}
_GO_KEYWORDS = {*_INT_PARAMS, "infinite", "ponder", "searchmoves", "perft"}


def max_threads() -> int:
    """The most search threads ``Threads`` allows: one per core of the machine."""
    return os.cpu_count() or 1


class UciError(ValueError):
    """Input that cannot be obeyed; the message goes to the GUI as ``info string error``."""


class _Quitting(Exception):
    """``quit`` arrived while a command waited: the command is dropped."""


def parse_go(tokens: list[str], report: Callable[[str], None]) -> tuple[GoLimits, int | None]:
    """The limits of ``go`` and a perft depth (None when not perft).

    A limit with a missing or bad value rejects the command (``UciError``): searching without
    it could run for ever or for the wrong time.  An unknown word is reported and ignored.
    """
    values: dict[str, object] = {}
    searchmoves: list[str] = []
    perft: int | None = None
    i = 0
    while i < len(tokens):
        word = tokens[i]
        i += 1
        if word == "perft":
            text = tokens[i] if i < len(tokens) else ""
            if not text.isdigit() or not 1 <= int(text) <= MAX_PERFT_DEPTH:
                raise UciError(f"go: perft needs a depth of 1-{MAX_PERFT_DEPTH}, got {text!r}")
            perft = int(text)
            i += 1
        elif word in _INT_PARAMS:
            if i >= len(tokens) or tokens[i] in _GO_KEYWORDS:
                raise UciError(f"go: {word} needs a number")
            text = tokens[i]
            i += 1
            try:
                number = int(text)
            except ValueError:
                raise UciError(f"go: {word} needs an integer, got {text!r}") from None
            if word in ("depth", "nodes", "mate", "movestogo", "movetime") and number <= 0:
                raise UciError(f"go: {word} must be positive, got {number}")
            if word in ("winc", "binc") and number < 0:
                raise UciError(f"go: {word} must not be negative, got {number}")
            # a negative wtime/btime is a flagged clock: it still needs a move, at once
            values[_INT_PARAMS[word]] = max(0, number)
        elif word == "infinite":
            values["infinite"] = True
        elif word == "ponder":
            values["ponder"] = True
        elif word == "searchmoves":
            while i < len(tokens) and tokens[i] not in _GO_KEYWORDS:
                searchmoves.append(tokens[i])
                i += 1
        else:
            report(f"go: unknown parameter {word!r} ignored")
    limits = GoLimits(**values)  # type: ignore[arg-type]
    if searchmoves:
        limits = replace(limits, searchmoves=tuple(searchmoves))
    return limits, perft


def check_limits(limits: GoLimits, white_to_move: bool) -> None:
    """``UciError`` unless the search has an end: ``infinite``, or a limit it can keep.

    A bare ``go``, one with increments only, or a clock for the side not to move alone would
    search for ever (``stop`` is for ``infinite`` and ``ponder``).
    """
    clock = limits.wtime_ms if white_to_move else limits.btime_ms
    ends = (limits.depth, limits.nodes, limits.mate, limits.movetime_ms, clock)
    if limits.infinite or any(limit is not None for limit in ends):
        return
    side = "wtime" if white_to_move else "btime"
    raise UciError(
        f"go: no limit for this search (give depth, nodes, mate, movetime, {side} for the side "
        "to move, or infinite)"
    )


def parse_position(tokens: list[str], chess960: bool, variant: int = VARIANT_CHESS) -> Position:
    """``startpos | fen <FEN>`` followed by optional ``moves ...``; ``UciError`` when bad.

    ``variant`` is the rules set by ``UCI_Variant``.
    """
    if not tokens:
        raise UciError("position: expected 'startpos' or 'fen'")
    if "moves" in tokens:
        split = tokens.index("moves")
        head, moves = tokens[:split], tokens[split + 1 :]
    else:
        head, moves = tokens, []
    try:
        if head[0] == "startpos":
            if len(head) > 1:
                raise UciError(f"position: unexpected {' '.join(head[1:])!r} after startpos")
            position = Position.startpos(variant)
            position.chess960 = chess960
        elif head[0] == "fen":
            if len(head) < 2:
                raise UciError("position: 'fen' needs a FEN")
            position = Position.from_fen(
                " ".join(head[1:]), chess960=True if chess960 else None, variant=variant
            )
        else:
            raise UciError(f"position: expected 'startpos' or 'fen', got {head[0]!r}")
    except FenError as error:
        raise UciError(f"position: bad FEN: {error}") from None
    for number, text in enumerate(moves, start=1):
        try:
            position.push_uci(text)
        except ValueError:
            raise UciError(
                f"position: move {number} ({text!r}) is not legal in {position.fen()}; "
                "the position is left as it was"
            ) from None
    return position


PERFT_THREAD = "perft"  # the worker thread's name while it counts


class UciEngine:
    """One UCI session: the current position, options, the searcher and its worker thread.

    Commands follow Stockfish's behaviour while a search runs: ``position`` and ``setoption
    name Move Overhead`` apply to the next ``go``; a ``go`` (or ``ucinewgame``, a change of
    ``Hash`` or ``Threads``) stops the running search, which answers its ``bestmove`` first,
    while a ``go`` during a perft waits for its count; ``isready`` answers at once.  A search's
    final line (``bestmove``, perft's ``Nodes searched``) goes out only when the engine is idle
    again (its helper threads ended too), so a command sent on reading it never meets a
    running search.  ``isready`` after ``ucinewgame`` answers once the table is empty, as UCI
    asks.
    """

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out if out is not None else sys.stdout
        self._out_lock = threading.Lock()
        self.hash_mb = tt.DEFAULT_HASH_MB
        self.threads = DEFAULT_THREADS
        self.move_overhead_ms = DEFAULT_MOVE_OVERHEAD_MS
        self.ponder = False
        self.chess960 = False
        self.variant = VARIANT_CHESS
        self.eval_file = DEFAULT_EVAL_FILE  # empty: the hand-written evaluation
        self.net: nnue.Net | None = None
        # None after a rejected ``position``: ``go`` must not answer for an older position
        self.position: Position | None = Position.startpos()
        self._searcher: Searcher | None = None
        self._worker: threading.Thread | None = None
        self._warmer: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self._release = threading.Event()  # stop / ponderhit / quit: bestmove may be sent
        self._stop_requested = threading.Event()  # stop / quit / the hard limit, this search
        self._perft_stop = np.zeros(1, dtype=np.int64)  # read by the compiled perft
        self._state_lock = threading.Lock()
        # ``quit`` read (or the input ended): table work under way or queued is pointless
        self._quitting = threading.Event()
        self._pondering = False
        self._budget = TimeBudget(None, None)
        self._clock_start_s: float | None = None
        self.multipv = 1
        self.limit_strength = False
        self.elo = strength.ELO_DEFAULT
        self.seed = 0  # 0: a fresh seed every game
        self._rng = random.Random()

    # -- output ----------------------------------------------------------------------------------
    def send(self, line: str) -> None:
        with self._out_lock:
            try:
                self._out.write(line + "\n")
                self._out.flush()
            except (BrokenPipeError, ValueError):
                pass  # the GUI has gone; the reader sees EOF and quits

    def error(self, message: str) -> None:
        self.send(f"info string error {message}")

    # -- lifecycle -------------------------------------------------------------------------------
    @property
    def searcher(self) -> Searcher:
        if self._searcher is None:
            self._searcher = Searcher(self.hash_mb, self.threads, self._quitting)
            self._searcher.set_net(self.net)
        return self._searcher

    def start_warm_up(self) -> None:
        if self._warmer is None:
            self._warmer = threading.Thread(target=self._warm, name="warm-up", daemon=True)
            self._warmer.start()

    def _warm(self) -> None:
        """Load (or compile) the search, with the net's entry points when there is one, and
        allocate the hash table, off the reader thread."""
        if self.eval_file and self.net is None:
            try:
                self.net = nnue.net_for(self.eval_file)
            except nnue.NetFileError as exc:  # the default net missing: say so, play on
                self.eval_file = ""
                self.send(f"info string error EvalFile: {exc}; using the hand-written "
                          "evaluation")
        warm_up(self.net)
        _ = self.searcher

    def wait_warm(self, timeout_s: float | None = None) -> bool:
        """Wait for the warm-up (at most ``timeout_s``); True once it is done."""
        self.start_warm_up()
        assert self._warmer is not None
        self._warmer.join(timeout_s)
        return not self._warmer.is_alive()

    def _warm_unless_quitting(self) -> None:
        """Wait for the warm-up; ``_Quitting`` if ``quit`` arrives first."""
        while not self.wait_warm(WARM_POLL_S):
            if self._quitting.is_set():
                raise _Quitting

    def run(self, stream: TextIO) -> None:
        """Obey commands until ``quit`` or end of input."""
        lines: queue.SimpleQueue[tuple[str, float]] = queue.SimpleQueue()
        reader = threading.Thread(target=self._read, args=(stream, lines), name="input",
                                  daemon=True)
        reader.start()
        while self.handle(*lines.get()):
            pass

    def _read(self, stream: TextIO, lines: queue.SimpleQueue[tuple[str, float]]) -> None:
        """Queue each line with the time it arrived, up to ``quit`` or the end of input,
        which also cut short what the commands before it are doing."""
        while True:
            line = stream.readline()
            received_s = time.monotonic()
            if not line or line.split()[:1] == ["quit"]:
                self._quitting.set()
                self._request_stop()
                lines.put(("quit", received_s))
                return
            lines.put((line, received_s))

    def handle(self, line: str, received_s: float | None = None) -> bool:
        """Obey one command line, read at ``received_s`` (default: now; the clock of a
        ``go`` runs from then); False after ``quit``.  Never raises."""
        if received_s is None:
            received_s = time.monotonic()
        tokens = line.split()
        if not tokens:
            return True
        command, args = tokens[0], tokens[1:]
        try:
            if command == "quit":
                self._stop_search()
                return False
            if command == "go":
                self._cmd_go(args, received_s)
                return True
            handler = self._handlers().get(command)
            if handler is None:
                self.error(f"unknown command {command!r}")
            else:
                handler(args)
        except UciError as error:
            self.error(str(error))
        except _Quitting:
            pass
        except Exception as error:  # the engine must outlive any input
            self.error(f"{command}: {type(error).__name__}: {error}")
        return True

    def _handlers(self) -> dict[str, Callable[[list[str]], None]]:
        return {
            "uci": self._cmd_uci,
            "isready": self._cmd_isready,
            "ucinewgame": self._cmd_ucinewgame,
            "setoption": self._cmd_setoption,
            "position": self._cmd_position,
            "stop": lambda _: self._stop_search(),
            "ponderhit": self._cmd_ponderhit,
            "eval": self._cmd_eval,
            "debug": lambda _: None,
            "register": lambda _: None,
        }

    # -- commands --------------------------------------------------------------------------------
    def _cmd_uci(self, _: list[str]) -> None:
        self.send(f"id name {ENGINE_NAME}")
        self.send(f"id author {ENGINE_AUTHOR}")
        self.send(
            f"option name Hash type spin default {tt.DEFAULT_HASH_MB} "
            f"min {tt.MIN_HASH_MB} max {tt.MAX_HASH_MB}"
        )
        self.send("option name Clear Hash type button")
        self.send(
            f"option name Threads type spin default {DEFAULT_THREADS} min 1 max {max_threads()}"
        )
        self.send(
            f"option name Move Overhead type spin default {DEFAULT_MOVE_OVERHEAD_MS} "
            f"min 0 max {MAX_MOVE_OVERHEAD_MS}"
        )
        self.send("option name Ponder type check default false")
        self.send("option name UCI_Chess960 type check default false")
        self.send(f"option name EvalFile type string default {self.eval_file or '<empty>'}")
        names = " ".join(f"var {name}" for name in UCI_VARIANTS)
        self.send(f"option name UCI_Variant type combo default chess {names}")
        self.send(f"option name MultiPV type spin default 1 min 1 max {MAX_MULTIPV}")
        self.send("option name UCI_LimitStrength type check default false")
        self.send(
            f"option name UCI_Elo type spin default {strength.ELO_DEFAULT} "
            f"min {strength.ELO_MIN} max {strength.ELO_MAX}"
        )
        self.send(f"option name Seed type spin default 0 min 0 max {MAX_SEED}")
        self.send("uciok")
        self.start_warm_up()

    def _cmd_isready(self, _: list[str]) -> None:
        self._warm_unless_quitting()
        self.send("readyok")

    def _cmd_ucinewgame(self, _: list[str]) -> None:
        self._stop_search()
        self._warm_unless_quitting()
        self.searcher.clear(self._quitting)
        self.position = Position.startpos(self.variant)
        self.position.chess960 = self.chess960
        self._reseed()

    def _cmd_setoption(self, args: list[str]) -> None:
        if not args or args[0] != "name":
            raise UciError("setoption: expected 'setoption name <id> [value <x>]'")
        if "value" in args:
            split = args.index("value")
            name, value = " ".join(args[1:split]), " ".join(args[split + 1 :])
        else:
            name, value = " ".join(args[1:]), ""
        key = name.lower()
        if key == "clear hash":
            self._stop_search()
            self._warm_unless_quitting()  # the table is allocated by the warm-up thread
            self.searcher.clear(self._quitting)
        elif key == "hash":
            size = self._int_option(name, value, tt.MIN_HASH_MB, tt.MAX_HASH_MB)
            self._stop_search()
            self._warm_unless_quitting()
            self.hash_mb = size
            if self._searcher is not None:
                self._searcher.resize(size, self._quitting)
        elif key == "threads":
            threads = self._int_option(name, value, 1, max_threads())
            self._stop_search()
            self._warm_unless_quitting()
            self.threads = threads
            if self._searcher is not None:
                self._searcher.set_threads(threads)
        elif key == "move overhead":
            self.move_overhead_ms = self._int_option(name, value, 0, MAX_MOVE_OVERHEAD_MS)
        elif key == "ponder":
            self.ponder = self._bool_option(name, value)
        elif key == "multipv":
            self.multipv = self._int_option(name, value, 1, MAX_MULTIPV)
        elif key == "uci_limitstrength":
            self.limit_strength = self._bool_option(name, value)
        elif key == "uci_elo":
            self._set_elo(name, value)
        elif key == "seed":
            self.seed = self._int_option(name, value, 0, MAX_SEED)
            self._reseed()
        elif key == "uci_chess960":
            self.chess960 = self._bool_option(name, value)
            if self.position is not None:
                # a castling set-up only chess960 can describe keeps its king-takes-rook moves
                self.position.chess960 = self.chess960 or self.position.needs_chess960()
        elif key == "evalfile":
            self._set_eval_file(value)
        elif key == "uci_variant":
            if value not in UCI_VARIANTS:
                raise UciError(
                    f"setoption: UCI_Variant {value!r} is not played here; "
                    f"the variants are {', '.join(UCI_VARIANTS)}"
                )
            if UCI_VARIANTS[value] != self.variant:
                # a position belongs to its rules: the new variant starts from its start position
                self.variant = UCI_VARIANTS[value]
                self.position = Position.startpos(self.variant)
                self.position.chess960 = self.chess960
        else:
            raise UciError(f"setoption: unknown option {name!r}")

    def _set_elo(self, name: str, value: str) -> None:
        """``UCI_Elo``: a level out of the range is clamped to it, and the GUI is told."""
        try:
            elo = int(value)
        except ValueError:
            raise UciError(f"setoption: {name} needs an integer, got {value!r}") from None
        self.elo = strength.clamp_elo(elo)
        if self.elo != elo:
            self.send(
                f"info string {name} {elo} is outside {strength.ELO_MIN}-{strength.ELO_MAX}; "
                f"set to {self.elo}"
            )

    def _reseed(self) -> None:
        """A new game's generator for the limited level's choices: ``Seed``, or fresh."""
        self._rng = random.Random(self.seed if self.seed else None)

    def _set_eval_file(self, value: str) -> None:
        """Load the net at ``value`` (empty or ``<empty>``: the hand-written evaluation).

        A file that cannot be used is reported and leaves the hand-written evaluation in
        place, so a bad path never leaves the engine without an evaluation.
        """
        path = "" if value.strip() in ("", "<empty>") else value.strip()
        net: nnue.Net | None = None
        failure: nnue.NetFileError | None = None
        if path:
            try:
                net = nnue.net_for(path)
            except nnue.NetFileError as exc:
                failure = exc
        self._stop_search()
        self._warm_unless_quitting()
        self.eval_file = path if net is not None else ""
        self.net = net
        self.searcher.set_net(net)
        if failure is not None:
            raise UciError(f"setoption: EvalFile: {failure}; using the hand-written evaluation")
        if net is not None:
            self.send(f"info string EvalFile {path} loaded: net {net.hash}, "
                      f"{net.inputs}->{net.hidden}x2->{net.buckets} {net.activation_name}"
                      + (f", {net.king_buckets} king buckets" if net.king_buckets > 1 else ""))

    def _cmd_eval(self, _: list[str]) -> None:
        """Print the static scores of the current position (side to move's view, cp)."""
        if self.position is None:
            raise UciError("eval: no position (the last 'position' command was rejected)")
        self._stop_search()
        self._warm_unless_quitting()
        hand, learned = static_scores(self.position, self.net)
        self.send(f"info string eval hand-written {hand} cp (side to move)")
        if self.net is None:
            self.send("info string eval net none (EvalFile is empty)")
        elif learned is None:
            self.send(f"info string eval net {self.net.hash} not used in this variant")
        else:
            self.send(f"info string eval net {self.net.hash} {learned} cp (side to move)")

    @staticmethod
    def _int_option(name: str, value: str, low: int, high: int) -> int:
        try:
            number = int(value)
        except ValueError:
            raise UciError(f"setoption: {name} needs an integer, got {value!r}") from None
        if not low <= number <= high:
            raise UciError(f"setoption: {name} must be {low}-{high}, got {number}")
        return number

    @staticmethod
    def _bool_option(name: str, value: str) -> bool:
        if value.lower() not in ("true", "false"):
            raise UciError(f"setoption: {name} must be true or false, got {value!r}")
        return value.lower() == "true"

    def _cmd_position(self, args: list[str]) -> None:
        # A running search works on its own copy: the new position is for the next ``go``.
        self.position = None
        self.position = parse_position(args, self.chess960, self.variant)

    def _cmd_go(self, args: list[str], received_s: float) -> None:
        # A go during a perft waits for its count (Stockfish counts on the reader thread, so
        # each of many piped ``go perft`` is answered); a go during a search stops it, and
        # that search answers first.
        self._await_perft()
        self._stop_search()
        try:
            limits, perft_depth = parse_go(args, self.error)
            if self.position is None:
                raise UciError("go: no position (the last 'position' command was rejected)")
            if perft_depth is None:
                check_limits(limits, self.position.side_to_move == 0)
        except UciError as error:
            self.error(str(error))
            if "perft" not in args:
                self.send("bestmove 0000")  # a GUI waits for it; no move is playable
            return
        position = self.position.copy()
        self._stop_requested.clear()
        self._perft_stop[0] = 0
        if perft_depth is not None:
            self._start_worker(self._run_perft, (position, perft_depth), PERFT_THREAD)
            return
        for text in limits.searchmoves:
            try:
                position.parse_uci(text)
            except ValueError:
                self.error(f"go: searchmoves: {text!r} is not a legal move here, ignored")
        budget = plan(limits, position.side_to_move == 0, self.move_overhead_ms)
        if self._searcher is not None:
            self._searcher.stop[0] = 0
        self._release.clear()
        with self._state_lock:
            self._budget = budget
            self._pondering = limits.ponder
            self._clock_start_s = None if limits.ponder else received_s
            if not limits.ponder:
                self._arm_timer(budget, received_s)
        self._start_worker(self._run_search, (position, limits, budget, received_s), "search")

    def _level(self) -> strength.Level | None:
        """The limited level of the next search, None at full strength."""
        return strength.level(self.elo) if self.limit_strength else None

    def _start_worker(
        self, target: Callable[..., None], args: tuple[object, ...], name: str
    ) -> None:
        self._worker = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._worker.start()

    def _cmd_ponderhit(self, _: list[str]) -> None:
        with self._state_lock:
            if not self._pondering:
                raise UciError("ponderhit: not pondering")
            self._pondering = False
            self._clock_start_s = time.monotonic()
            self._arm_timer(self._budget, self._clock_start_s)
        self._release.set()

    # -- search thread -----------------------------------------------------------------------
    def _arm_timer(self, budget: TimeBudget, start_s: float) -> None:
        """Start the hard-limit timer, counted from ``start_s`` (with the state lock held)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if budget.hard_ms is not None:
            delay_s = max(0.0, start_s + budget.hard_ms / 1000.0 - time.monotonic())
            self._timer = threading.Timer(delay_s, self._request_stop)
            self._timer.daemon = True
            self._timer.start()

    def _request_stop(self) -> None:
        """End the running search (or its wait for the warm-up) as soon as it can."""
        self._stop_requested.set()
        self._perft_stop[0] = 1
        if self._searcher is not None:
            self._searcher.request_stop()

    def _clock_start(self) -> float | None:
        with self._state_lock:
            return self._clock_start_s

    def _await_warm_up(self) -> bool:
        """Wait for the compiled search until the hard limit or a stop; True once it is ready.

        A cold start on a short clock plays a quick legal move instead (``_fallback_move``):
        any legal move beats a loss on time.
        """
        while not self.wait_warm(WARM_POLL_S):
            if self._stop_requested.is_set():
                return False
        if self._stop_requested.is_set():
            self.searcher.request_stop()  # the hard limit passed while warming: depth 1 only
        return True

    def _run_search(
        self, position: Position, limits: GoLimits, budget: TimeBudget, started: float
    ) -> None:
        level = self._level()
        think_ms = 0.0
        try:
            if self._await_warm_up():
                if level is None:
                    shape = (SINGLE_PV if self.multipv == 1
                             else SearchShape(multipv=self.multipv))
                    result = self.searcher.think(
                        position, limits, budget, started, self._report, self._clock_start,
                        shape,
                    )
                    best, ponder = result.best_move, result.ponder_move
                else:
                    best, ponder, think_ms = self._limited_search(
                        position, limits, budget, started, level
                    )
            else:
                best, ponder = _fallback_move(position), None
            # Infinite and pondering searches wait for stop/ponderhit before answering.
            if limits.infinite or limits.ponder:
                self._release.wait()
            if think_ms > 0:
                self._wait_for_clock(think_ms)
            self._cancel_timer()
            if best is None:
                self.send(f"info string no legal move: {_game_end(position)}")
                answer = "bestmove 0000"
            elif ponder is not None:
                answer = f"bestmove {best} ponder {ponder}"
            else:
                answer = f"bestmove {best}"
        except Exception as error:  # never leave the GUI without a bestmove
            self._cancel_timer()
            self.error(f"search failed: {type(error).__name__}: {error}")
            answer = f"bestmove {_fallback_move(position) or '0000'}"
        self._finish(answer)

    def _limited_search(
        self, position: Position, limits: GoLimits, budget: TimeBudget, started: float,
        level: strength.Level,
    ) -> tuple[str | None, str | None, float]:
        """A limited level's move: one thread, the level's lines (or MultiPV's, if
        more; every line searched is reported), the level's node budget, then the level's
        pick; with the clock, the time this level takes over the move (0 without one)."""
        nodes = level.nodes if limits.nodes is None else min(limits.nodes, level.nodes)
        shape = SearchShape(multipv=max(self.multipv, level.lines),
                            helpers=False, whole_first_depth=True)
        result = self.searcher.think(
            position, replace(limits, nodes=nodes), budget, started, self._report,
            self._clock_start, shape,
        )
        if result.best_move is None or not result.lines:
            return result.best_move, result.ponder_move, 0.0
        chosen = result.lines[strength.pick(result.lines, level, self._rng)]
        by_clock = limits.movetime_ms is None and not limits.infinite and (
            limits.depth is None and limits.nodes is None)
        think_ms = 0.0
        if by_clock and budget.soft_ms is not None:
            think_ms = strength.think_time_ms(level, budget, self._rng,
                                              strength.obvious(result.lines))
        self.send(
            f"info string UCI_Elo {level.elo}: searched {result.nodes} of {nodes} nodes, "
            f"depth {result.depth}, chose line "
            f"{result.lines.index(chosen) + 1} of {len(result.lines)}, "
            f"think {int(think_ms)} ms of the full-strength {int(budget.soft_ms or 0)} ms"
        )
        ponder = chosen.pv[1] if len(chosen.pv) > 1 else None
        return chosen.pv[0], ponder, think_ms

    def _wait_for_clock(self, think_ms: float) -> None:
        """Hold the move until ``think_ms`` after the clock started (at ponderhit when
        pondering); ``stop``, ``quit`` and the hard limit end the wait."""
        origin = self._clock_start()
        if origin is None:
            return
        remaining_s = origin + think_ms / 1000.0 - time.monotonic()
        if remaining_s > 0:
            self._stop_requested.wait(remaining_s)

    def _cancel_timer(self) -> None:
        """Disarm the hard-limit timer before answering, so it cannot stop the next search."""
        with self._state_lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _report(self, iteration: Iteration) -> None:
        self.send(iteration.uci())

    def _run_perft(self, position: Position, depth: int) -> None:
        try:
            lines = divide_lines(position, depth, self._perft_stop)
        except Exception as error:
            self.error(f"perft failed: {type(error).__name__}: {error}")
            lines = None
        if lines is None:
            self._finish("info string perft stopped" if self._perft_stop[0] else None)
            return
        for line in lines[:-1]:
            self.send(line)
        self._finish(lines[-1])

    def _finish(self, last_line: str | None) -> None:
        """The worker's last act: send the final line, after which it only exits.

        Nothing waits on a running search (``position`` and ``isready`` are answered during
        one; ``go`` joins it), so a command sent the moment this line arrives is obeyed.
        """
        if last_line is not None:
            self.send(last_line)

    def _await_perft(self) -> None:
        """Wait until a running perft has sent its count (``stop`` cuts it short)."""
        worker = self._worker
        if worker is not None and worker.name == PERFT_THREAD:
            worker.join()

    def _stop_search(self) -> None:
        """Stop the running search or perft and wait until it has answered."""
        self._request_stop()
        self._release.set()
        if self._worker is not None:
            self._worker.join()
            self._worker = None


_BOARDS: dict[int, type[chess.Board]] = {
    VARIANT_CHESS: chess.Board,
    VARIANT_THREE_CHECK: chess.variant.ThreeCheckBoard,
    VARIANT_KING_OF_THE_HILL: chess.variant.KingOfTheHillBoard,
}


def _game_end(position: Position) -> str:
    """Why a position without legal moves has none, for the ``info string``."""
    if uncompiled(variant_result)(position.stack, position.ply) != RESULT_NONE:
        if position.variant == VARIANT_THREE_CHECK:
            return "the game is over, three checks were given"
        return "the game is over, a king stands on the hill"
    return "checkmate" if position.in_check() else "stalemate"


def _fallback_move(position: Position) -> str | None:
    """A legal move found without compiled code (python-chess), or None if there is none.

    For a cold start whose clock runs out before the compiled search is loaded.  In chess960
    mode python-chess writes castling king-takes-rook, as the engine does.
    """
    board = _BOARDS[position.variant](
        position.fen(shredder=position.chess960), chess960=position.chess960
    )
    move = next(iter(board.legal_moves), None)
    return None if move is None else move.uci()


def main(stream: TextIO | None = None, out: TextIO | None = None) -> None:
    """Run the UCI loop on stdin/stdout."""
    engine = UciEngine(out)
    engine.run(stream if stream is not None else sys.stdin)


def main_process() -> NoReturn:
    """The UCI loop as the whole process (``kibitz-engine``), which ends once the loop does.

    It ends at once: the interpreter's own exit would first take numba's and LLVM's state
    apart, half a second after ``quit`` for nothing (every line has gone out, nothing is open
    for writing, and numba writes each cache file whole, by renaming it, as it compiles).
    """
    main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # the GUI has gone
            stream.flush()
    os._exit(0)
