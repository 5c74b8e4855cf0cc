"""The UCI protocol: read commands from stdin, search in a worker thread, answer on stdout.

The reader never blocks on a search: ``go`` starts a worker thread (the compiled search releases
the GIL), and ``stop``, ``ponderhit``, ``quit`` and the hard-limit timer end it through the
searcher's stop flag.  Every command is checked; anything malformed or unknown is answered with
``info string error ...`` and otherwise ignored.  Compiling (or loading the compiled code from
numba's cache) starts in the background after ``uciok`` and ``isready`` waits for it.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TextIO

from engine import tt
from engine.board import FenError, Position
from engine.params import DEFAULT_MOVE_OVERHEAD_MS
from engine.perft import divide_lines
from engine.search import Iteration, Searcher, warm_up
from engine.timeman import GoLimits, TimeBudget, plan

ENGINE_NAME = "Kibitz 0.1"
ENGINE_AUTHOR = "the Kibitz developers"
MAX_MOVE_OVERHEAD_MS = 10_000
MAX_PERFT_DEPTH = 12

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


class UciError(ValueError):
    """Input that cannot be obeyed; the message goes to the GUI as ``info string error``."""


def parse_go(tokens: list[str], report: Callable[[str], None]) -> tuple[GoLimits, int | None]:
    """The limits of ``go`` and a perft depth (None when not perft).

    A parameter with a bad value is reported and left out; the rest of the command still
    counts, so a GUI always gets its ``bestmove``.  A bad ``perft`` depth rejects the command
    (``UciError``): it asked for a count, not a search.
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
                report(f"go: {word} needs a number")
                continue
            text = tokens[i]
            i += 1
            try:
                number = int(text)
            except ValueError:
                report(f"go: {word} needs an integer, got {text!r}")
                continue
            if word in ("depth", "nodes", "mate", "movestogo", "movetime") and number <= 0:
                report(f"go: {word} must be positive, got {number}")
            elif word in ("winc", "binc"):
                values[_INT_PARAMS[word]] = max(0, number)
            elif word in ("wtime", "btime"):
                values[_INT_PARAMS[word]] = max(0, number)  # a flagged clock still needs a move
            else:
                values[_INT_PARAMS[word]] = number
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


def parse_position(tokens: list[str], chess960: bool) -> Position:
    """``startpos | fen <FEN>`` followed by optional ``moves ...``; ``UciError`` when bad."""
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
            position = Position.startpos()
            position.chess960 = chess960
        elif head[0] == "fen":
            if len(head) < 2:
                raise UciError("position: 'fen' needs a FEN")
            position = Position.from_fen(" ".join(head[1:]), chess960=True if chess960 else None)
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


class UciEngine:
    """One UCI session: the current position, options, the searcher and its worker thread."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out if out is not None else sys.stdout
        self._out_lock = threading.Lock()
        self.hash_mb = tt.DEFAULT_HASH_MB
        self.move_overhead_ms = DEFAULT_MOVE_OVERHEAD_MS
        self.ponder = False
        self.chess960 = False
        self.position = Position.startpos()
        self._searcher: Searcher | None = None
        self._worker: threading.Thread | None = None
        self._warmer: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self._release = threading.Event()  # stop / ponderhit / quit: bestmove may be sent
        self._answered = threading.Event()  # the running search or perft has answered
        self._state_lock = threading.Lock()
        self._pondering = False
        self._budget = TimeBudget(None, None)
        self._clock_start_s: float | None = None

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
            self._searcher = Searcher(self.hash_mb)
        return self._searcher

    def start_warm_up(self) -> None:
        if self._warmer is None:
            self._warmer = threading.Thread(target=self._warm, name="warm-up", daemon=True)
            self._warmer.start()

    def _warm(self) -> None:
        """Load (or compile) the search and allocate the hash table, off the reader thread."""
        warm_up()
        _ = self.searcher

    def wait_warm(self) -> None:
        self.start_warm_up()
        assert self._warmer is not None
        self._warmer.join()

    @property
    def searching(self) -> bool:
        """A search or perft runs and has not answered yet."""
        if self._worker is None:
            return False
        if self._answered.is_set() or not self._worker.is_alive():
            self._worker.join()  # it has answered; only its last steps remain
            self._worker = None
            return False
        return True

    def run(self, stream: TextIO) -> None:
        """Read commands until ``quit`` or end of input."""
        while True:
            line = stream.readline()
            if not line:
                self.handle("quit")
                return
            if not self.handle(line):
                return

    def handle(self, line: str) -> bool:
        """Obey one command line; False after ``quit``.  Never raises."""
        tokens = line.split()
        if not tokens:
            return True
        command, args = tokens[0], tokens[1:]
        try:
            if command == "quit":
                self._stop_search()
                return False
            handler = self._handlers().get(command)
            if handler is None:
                self.error(f"unknown command {command!r}")
            else:
                handler(args)
        except UciError as error:
            self.error(str(error))
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
            "go": self._cmd_go,
            "stop": lambda _: self._stop_search(),
            "ponderhit": self._cmd_ponderhit,
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
            f"option name Move Overhead type spin default {DEFAULT_MOVE_OVERHEAD_MS} "
            f"min 0 max {MAX_MOVE_OVERHEAD_MS}"
        )
        self.send("option name Ponder type check default false")
        self.send("option name UCI_Chess960 type check default false")
        self.send("uciok")
        self.start_warm_up()

    def _cmd_isready(self, _: list[str]) -> None:
        self.wait_warm()
        self.send("readyok")

    def _cmd_ucinewgame(self, _: list[str]) -> None:
        self._stop_search()
        self.wait_warm()
        self.searcher.clear()
        self.position = Position.startpos()
        self.position.chess960 = self.chess960

    def _cmd_setoption(self, args: list[str]) -> None:
        if not args or args[0] != "name":
            raise UciError("setoption: expected 'setoption name <id> [value <x>]'")
        if "value" in args:
            split = args.index("value")
            name, value = " ".join(args[1:split]), " ".join(args[split + 1 :])
        else:
            name, value = " ".join(args[1:]), ""
        key = name.lower()
        self.wait_warm()  # the table is allocated by the warm-up thread
        if key == "clear hash":
            self._stop_search()
            self.searcher.clear()
        elif key == "hash":
            size = self._int_option(name, value, tt.MIN_HASH_MB, tt.MAX_HASH_MB)
            self._stop_search()
            self.hash_mb = size
            if self._searcher is not None:
                self._searcher.resize(size)
        elif key == "move overhead":
            self.move_overhead_ms = self._int_option(name, value, 0, MAX_MOVE_OVERHEAD_MS)
        elif key == "ponder":
            self.ponder = self._bool_option(name, value)
        elif key == "uci_chess960":
            self.chess960 = self._bool_option(name, value)
            self.position.chess960 = self.chess960 or self.position.chess960
        else:
            raise UciError(f"setoption: unknown option {name!r}")

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
        if self.searching:
            raise UciError("position: a search is running; send 'stop' first")
        self.position = parse_position(args, self.chess960)

    def _cmd_go(self, args: list[str]) -> None:
        if self.searching:
            raise UciError("go: a search is already running")
        limits, perft_depth = parse_go(args, self.error)
        position = self.position.copy()
        self._answered.clear()
        if perft_depth is not None:
            self._worker = threading.Thread(
                target=self._run_perft, args=(position, perft_depth), name="perft", daemon=True
            )
            self._worker.start()
            return
        self.wait_warm()
        if limits.searchmoves:
            for text in limits.searchmoves:
                try:
                    position.parse_uci(text)
                except ValueError:
                    self.error(f"go: searchmoves: {text!r} is not a legal move here, ignored")
        started = time.monotonic()
        budget = plan(limits, position.side_to_move == 0, self.move_overhead_ms)
        searcher = self.searcher
        searcher.stop[0] = 0
        self._release.clear()
        with self._state_lock:
            self._budget = budget
            self._pondering = limits.ponder
            self._clock_start_s = None if limits.ponder else started
            if not limits.ponder:
                self._arm_timer(budget)
        self._worker = threading.Thread(
            target=self._run_search, args=(position, limits, budget, started), name="search",
            daemon=True,
        )
        self._worker.start()

    def _cmd_ponderhit(self, _: list[str]) -> None:
        with self._state_lock:
            if not self._pondering:
                raise UciError("ponderhit: not pondering")
            self._pondering = False
            self._clock_start_s = time.monotonic()
            self._arm_timer(self._budget)
        self._release.set()

    # -- search thread -----------------------------------------------------------------------
    def _arm_timer(self, budget: TimeBudget) -> None:
        """Start the hard-limit timer (with the state lock held)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if budget.hard_ms is not None:
            self._timer = threading.Timer(budget.hard_ms / 1000.0, self.searcher.request_stop)
            self._timer.daemon = True
            self._timer.start()

    def _clock_start(self) -> float | None:
        with self._state_lock:
            return self._clock_start_s

    def _run_search(
        self, position: Position, limits: GoLimits, budget: TimeBudget, started: float
    ) -> None:
        try:
            result = self.searcher.think(
                position, limits, budget, started, self._report, self._clock_start
            )
            # Infinite and pondering searches wait for stop/ponderhit before answering.
            if limits.infinite or limits.ponder:
                self._release.wait()
            self._cancel_timer()
            if result.best_move is None:
                self.send("info string no legal move")
                answer = "bestmove 0000"
            elif result.ponder_move is not None:
                answer = f"bestmove {result.best_move} ponder {result.ponder_move}"
            else:
                answer = f"bestmove {result.best_move}"
        except Exception as error:  # never leave the GUI without a bestmove
            self._cancel_timer()
            self.error(f"search failed: {type(error).__name__}: {error}")
            legal = position.legal_moves()
            answer = f"bestmove {position.move_to_uci(legal[0]) if legal else '0000'}"
        # Answered before the line goes out: a GUI may send the next position at once.
        self._answered.set()
        self.send(answer)

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
            for line in divide_lines(position, depth):
                self.send(line)
        except Exception as error:
            self.error(f"perft failed: {type(error).__name__}: {error}")
        finally:
            self._answered.set()

    def _stop_search(self) -> None:
        if self._searcher is not None:
            self._searcher.request_stop()
        self._release.set()
        if self._worker is not None:
            self._worker.join()
            self._worker = None


def main(stream: TextIO | None = None, out: TextIO | None = None) -> None:
    """Run the UCI loop on stdin/stdout."""
    engine = UciEngine(out)
    engine.run(stream if stream is not None else sys.stdin)
