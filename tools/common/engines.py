"""The engines of a match: aliases, ``kibitz@REV`` revisions and command lines, how each is
launched (UCI or XBoard), and its ``bench`` signature.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.engine

PROTOCOLS = ("uci", "xboard")


def _debian_engine(name: str) -> str:
    """Debian installs its chess engines in /usr/games, which may not be on PATH."""
    return shutil.which(name) or f"/usr/games/{name}"


# alias -> (command, protocol, has a `COMMAND bench`); `make match` installs the Debian ones.
# GNU Chess takes `bench` for something else and never ends; Phalanx's bench runs 5 minutes.
ENGINE_ALIASES: dict[str, tuple[list[str], str, bool]] = {
    "kibitz": ([sys.executable, "-m", "engine"], "uci", True),
    "sunfish": ([".venv-sunfish/bin/python", "-m", "sunfish"], "uci", False),
    "stockfish": ([_debian_engine("stockfish")], "uci", True),
    "gnuchess": ([_debian_engine("gnuchess"), "--uci"], "uci", False),
    "ethereal-chess": ([_debian_engine("ethereal-chess")], "uci", True),
    "phalanx": ([_debian_engine("phalanx")], "xboard", False),
    "fairy-stockfish": ([_debian_engine("fairy-stockfish")], "uci", False),  # the variants
}
KIBITZ_AT = "kibitz@"  # kibitz@REV: the engine as it was at git revision REV
BENCH_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class EngineSpec:
    name: str
    command: list[str]
    options: dict[str, str]
    protocol: str = "uci"
    cwd: str | None = None  # working directory (an exported revision of this engine)
    has_bench: bool = False  # `COMMAND bench` prints a node count and nodes/s


REPO_DIR = Path(__file__).resolve().parents[2]


def export_revision(revision: str, cache_root: Path | None = None) -> Path:
    """The ``engine/`` package of a git revision, exported once into a directory of its own.

    ``python -m engine`` run there plays that revision: the base of an SPRT test of a change.
    """
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--verify", f"{revision}^{{commit}}"], cwd=REPO_DIR,
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    except (subprocess.CalledProcessError, FileNotFoundError) as error:
        raise SystemExit(f"kibitz@{revision}: not a git revision of {REPO_DIR}: {error}") from None
    root = cache_root or Path(tempfile.gettempdir()) / "kibitz-revisions"
    target = root / sha[:12]
    if (target / "engine" / "__main__.py").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root, prefix=f".{sha[:12]}-"))
    archive = subprocess.run(["git", "archive", "--format=tar", sha, "engine"], cwd=REPO_DIR,
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(staging)], input=archive, check=True)
    try:
        staging.rename(target)  # atomic: a concurrent export of the same revision may win
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def resolve_engine(text: str, protocol: str | None = None, bench: bool = False) -> EngineSpec:
    """The engine of an alias, ``kibitz@REV`` or a command line (``bench``: it has one)."""
    if text.startswith(KIBITZ_AT):
        directory = export_revision(text[len(KIBITZ_AT):])
        return EngineSpec(text, [sys.executable, "-m", "engine"], {}, protocol or "uci",
                          str(directory), has_bench=True)
    if text in ENGINE_ALIASES:
        command, alias_protocol, has_bench = ENGINE_ALIASES[text]
        return EngineSpec(text, list(command), {}, protocol or alias_protocol, None, has_bench)
    command = shlex.split(text)
    if not command:
        raise SystemExit("an engine command is empty")
    return EngineSpec(text, command, {}, protocol or "uci", None, bench)


def open_engine(spec: EngineSpec) -> chess.engine.SimpleEngine:
    if spec.protocol == "xboard":
        engine = chess.engine.SimpleEngine.popen_xboard(spec.command, timeout=120.0, cwd=spec.cwd)
    else:
        engine = chess.engine.SimpleEngine.popen_uci(spec.command, timeout=120.0, cwd=spec.cwd)
    if spec.options:
        engine.configure(dict(spec.options))
    return engine


class EngineHung(chess.engine.EngineError):
    """An engine gave no move within its watchdog's time, and was killed."""


def play_watched(engine: chess.engine.SimpleEngine, board: chess.Board,
                 limit: chess.engine.Limit, timeout_s: float,
                 **kwargs: object) -> chess.engine.PlayResult:
    """``engine.play``, the engine's process killed if it gives no move within ``timeout_s``
    (``EngineHung``).  python-chess waits for ever on a search limited by depth, nodes or a
    clock, so an engine that reads ``go`` and never answers would hang its caller: Ethereal 12
    does so once it can start no thread (``tools.common.opponent``)."""
    hung = threading.Event()
    pid = engine.transport.get_pid()

    def kill() -> None:
        hung.set()
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)

    watchdog = threading.Timer(timeout_s, kill)
    watchdog.daemon = True
    watchdog.start()
    try:
        return engine.play(board, limit, **kwargs)  # type: ignore[arg-type]
    except chess.engine.EngineTerminatedError:
        if hung.is_set():
            raise EngineHung(f"gave no move within {timeout_s:g} s: killed") from None
        raise
    finally:
        watchdog.cancel()


def search_fresh(engine: chess.engine.SimpleEngine, engine_text: str, board: chess.Board,
                 nodes: int, timeout_s: float) -> chess.engine.PlayResult:
    """One search of ``board`` at ``nodes``, in a game of its own (``ucinewgame``: nothing of
    the search before is read from the table), with the score in its info; an engine that
    gives no move within ``timeout_s`` is killed and named (``SystemExit``)."""
    try:
        return play_watched(engine, board, chess.engine.Limit(nodes=nodes), timeout_s,
                            info=chess.engine.INFO_SCORE, game=object())
    except EngineHung:
        raise SystemExit(f"engine {engine_text!r} gave no move within {timeout_s:g} s "
                         f"in {board.fen()}: killed") from None


# `bench` output: Stockfish and kibitz print "Nodes searched : N" and "Nodes/second : N",
# Ethereal "Nodes : N" and "NPS : N".
_BENCH_NODES = re.compile(r"^\s*Nodes(?: searched)?\s*:\s*(\d+)\s*$", re.MULTILINE)
_BENCH_NPS = re.compile(r"^\s*(?:Nodes/second|NPS)\s*:\s*(\d+)\s*$", re.MULTILINE)


def parse_bench(output: str) -> tuple[int, int] | None:
    """(nodes, nodes/s) from an engine's ``bench`` output, None if it printed neither."""
    nodes = _BENCH_NODES.findall(output)
    nps = _BENCH_NPS.findall(output)
    if not nodes or not nps:
        return None
    return int(nodes[-1]), int(nps[-1])


def bench_signature(spec: EngineSpec, timeout_s: float = BENCH_TIMEOUT_S) -> tuple[int, int] | None:
    """Run ``COMMAND bench`` (UCI engines that have it); None when it is not supported.

    The node count is the engine's signature (it changes exactly when its search or
    evaluation does), so a test names the builds it compared.
    """
    if not spec.has_bench:
        return None
    try:
        run = subprocess.run([*spec.command, "bench"], cwd=spec.cwd, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_bench(run.stdout + "\n" + run.stderr)


def make_spec(command_text: str, name: str | None, protocol: str | None,
              options: list[tuple[str, str]], bench: bool) -> EngineSpec:
    spec = resolve_engine(command_text, protocol, bench)
    return dataclasses.replace(spec, name=name or command_text, options=dict(options))


def check_installed(spec: EngineSpec) -> None:
    """Refuse an engine whose program is nowhere, before the match starts a game with it."""
    program = spec.command[0]
    if shutil.which(program) is None and not (Path(spec.cwd or ".") / program).is_file():
        hint = " (`make opponents` installs Debian's)" if program.startswith("/usr/games/") else ""
        raise SystemExit(f"engine {spec.name!r}: {program} is not installed{hint}")
