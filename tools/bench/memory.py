"""The bot's memory with 1, 2, 4 and 8 games of the built-in engine running, and its start-up
and speed through the engine host.

Memory: the sum of `Pss` (/proc/PID/smaps_rollup: shared pages split among the processes
sharing them) over the bot's process tree (the bot, the engine host, every game's engine and
the spare), sampled while N games run on the sandbox, each has made a few engine moves and
the spare engine runs (a new game clears its hash table, so all of its pages count), then the
marginal cost per game.
`--no-fork-host` measures each game's engine in its own process (`engine.fork_host: false`).

Start-up and speed (`--speed`): from starting the engine command to `uciok`, and the nodes per
second of fixed-depth searches, forked by the host against in a process of its own.

    python -m tools.bench.memory [--games 1 2 4 8] [--hash 64] [--no-fork-host] [--speed]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import chess
import chess.engine

from bot.app import run_bot
from bot.engines.host import EngineHost
from bot.engines.pool import SEARCH_INFO
from bot.game.metrics import Metrics
from bot.lichess.client import ClientTimings
from bot.ops.config import Config
from tools.bench.session import start_sandbox

SAMPLES = 3  # Pss samples per measurement, a second apart; the median is reported
SAMPLE_GAP_S = 1.0
SPEED_DEPTH = 10  # kibitz-engine bench's depth and positions: the node count is its signature
SPEED_ROUNDS = 3  # each engine in turn; the best round counts (the least disturbed by others)
UCIOK_STARTS = 5


def parent_pids() -> dict[int, int]:
    """pid -> parent pid of every process."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: fields follow the last ')'
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(entry)] = int(fields[1])
    return parents


def process_tree(root: int, exclude: set[int]) -> list[int]:
    """`root` and its descendants, without the subtrees of `exclude`."""
    children: dict[int, list[int]] = {}
    for pid, parent in parent_pids().items():
        children.setdefault(parent, []).append(pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in exclude:
            continue
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def pss_kb(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0  # ended meanwhile
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def role(pid: int, root: int, parents: dict[int, int]) -> str:
    """What a process of the bot's tree is, from its command line."""
    if pid == root:
        return "bot"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone"
    if b"host" in argv:  # a forked engine keeps the host's command line
        return "engine host" if parents.get(pid) == root else "forked engine"
    if b"connect" in argv:
        return "launcher"
    return "engine process" if b"engine" in argv else "other"


def tree_pss_mb(root: int, exclude: set[int]) -> tuple[float, int, dict[str, list[float]]]:
    """Total Pss of the tree in MB, how many processes it has, and each role's Pss values."""
    pids = process_tree(root, exclude)
    parents = parent_pids()
    roles: dict[str, list[float]] = {}
    total_kb = 0
    for pid in pids:
        kb = pss_kb(pid)
        total_kb += kb
        roles.setdefault(role(pid, root, parents), []).append(kb / 1024)
    return total_kb / 1024, len(pids), roles


def engines(roles: dict[str, list[float]]) -> int:
    return len(roles.get("forked engine", [])) + len(roles.get("engine process", []))


@dataclasses.dataclass(frozen=True)
class Sample:
    games: int
    pss_mb: float
    processes: int
    roles: dict[str, list[float]]

    def breakdown(self) -> str:
        return "; ".join(f"{name} {len(values)} x {statistics.fmean(values):.1f} MB"
                         for name, values in sorted(self.roles.items()))


async def measure(games: int, args: argparse.Namespace) -> Sample:
    sandbox, url, token = await start_sandbox(games, 600, 0, args.opponent_movetime_s)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = Config()
            config = dataclasses.replace(
                base,
                state_dir=Path(tmp) / "state",
                engine=dataclasses.replace(
                    base.engine, command=None, fork_host=args.fork_host,
                    options={"Hash": args.hash}, max_move_s=args.move_s,
                    first_move_s=args.move_s),
                challenge=dataclasses.replace(base.challenge, concurrency=games),
                game=dataclasses.replace(base.game, shutdown_grace_s=0,
                                         shutdown_action="abandon"),
                pgn=dataclasses.replace(base.pgn, enabled=False),
                log=dataclasses.replace(base.log, status_interval_s=0, game_log=False),
            )
            metrics = Metrics()
            stop = asyncio.Event()
            ready = asyncio.Event()
            samples: list[tuple[float, int, dict[str, list[float]]]] = []

            def playing() -> int:
                """Games still running that have made `args.moves` engine moves."""
                ended = {outcome.game_id for outcome in metrics.games}
                counts: dict[str, int] = {}
                for move in metrics.moves:
                    if move.source == "engine" and move.game_id not in ended:
                        counts[move.game_id] = counts.get(move.game_id, 0) + 1
                return sum(1 for count in counts.values() if count >= args.moves)

            async def sample_then_stop() -> None:
                await ready.wait()
                while len(samples) < SAMPLES:
                    while True:
                        if playing() >= games:
                            sample = tree_pss_mb(os.getpid(), {sandbox.pid})
                            if engines(sample[2]) == games + 1:  # the spare is running too
                                break
                        await asyncio.sleep(0.2)
                    samples.append(sample)
                    await asyncio.sleep(SAMPLE_GAP_S)
                stop.set()

            async with asyncio.TaskGroup() as tg:
                sampler = tg.create_task(sample_then_stop())
                await run_bot(config, url=url, token=token, stop=stop, handle_signals=True,
                              metrics=metrics,
                              timings=ClientTimings(requests_per_minute=100_000,
                                                    request_burst=1000),
                              on_ready=lambda _me: ready.set())
                sampler.cancel()
    finally:
        sandbox.terminate()
        await sandbox.wait()
    if len(samples) < SAMPLES:
        raise SystemExit(f"the bot stopped before {games} games ran")
    middle = sorted(samples, key=lambda sample: sample[0])[len(samples) // 2]
    return Sample(games, *middle)


def marginal_mb(samples: list[Sample]) -> float:
    """The least-squares slope of Pss against the number of games."""
    xs = [s.games for s in samples]
    ys = [s.pss_mb for s in samples]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


async def memory(args: argparse.Namespace) -> None:
    mode = "forked by the engine host" if args.fork_host else "each in its own process"
    print(f"built-in engine, Hash {args.hash} MB, engines {mode}")
    samples = []
    for games in args.games:
        sample = await measure(games, args)
        samples.append(sample)
        print(f"{games} games: Pss {sample.pss_mb:7.1f} MB over {sample.processes} processes "
              f"({sample.breakdown()})", flush=True)
    if len(samples) >= 2:
        slope = marginal_mb(samples)
        first, last = samples[0], samples[-1]
        step = (last.pss_mb - first.pss_mb) / (last.games - first.games)
        print(f"marginal per game: {slope:.1f} MB (least squares), {step:.1f} MB "
              f"({first.games} -> {last.games} games); hash table {args.hash} MB, "
              f"so {slope - args.hash:.1f} MB besides it")


async def time_to_uciok(command: list[str]) -> float:
    started = time.monotonic()
    transport, protocol = await chess.engine.popen_uci(command)
    elapsed_s = time.monotonic() - started
    await protocol.quit()
    transport.close()
    return elapsed_s


def cpu_s(pid: int) -> float:
    """User and system CPU time of a process, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def search_speed(command: list[str], host: EngineHost) -> tuple[int, float]:
    """Nodes and CPU seconds of `kibitz-engine bench`'s searches through UCI (each from an
    empty table), by the engine `command` starts (the forked child when there is one)."""
    from engine.bench import BENCH_FENS, BENCH_HASH_MB  # not before: numba would count as the bot's
    before = host.children()
    transport, protocol = await chess.engine.popen_uci(command)
    try:
        (pid,) = (host.children() - before) or {transport.get_pid()}
        await protocol.configure({"Hash": BENCH_HASH_MB})
        await protocol.play(chess.Board(), chess.engine.Limit(depth=2), game=object())
        nodes = 0
        started_s = cpu_s(pid)
        for fen in BENCH_FENS:
            result = await protocol.play(chess.Board(fen), chess.engine.Limit(depth=SPEED_DEPTH),
                                         game=object(), info=SEARCH_INFO)
            nodes += int(result.info.get("nodes", 0))
        return nodes, cpu_s(pid) - started_s
    finally:
        await protocol.quit()
        transport.close()


async def speed() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        host = EngineHost(Path(tmp) / "engine.sock")
        await host.start(900)
        try:
            commands = {"own process": [sys.executable, "-m", "engine"],
                        "forked by the host": list(host.engine_command)}
            for name, command in commands.items():
                await time_to_uciok(command)  # the OS caches the files: time warm starts
                starts = [await time_to_uciok(command) for _ in range(UCIOK_STARTS)]
                print(f"{name:20s}: uciok after {statistics.median(starts) * 1000:6.1f} ms "
                      f"(median of {UCIOK_STARTS} starts)", flush=True)
            best: dict[str, float] = {}
            for _ in range(SPEED_ROUNDS):
                for name, command in commands.items():
                    nodes, seconds = await search_speed(command, host)
                    best[name] = max(best.get(name, 0.0), nodes / seconds)
                    print(f"{name:20s}: bench depth {SPEED_DEPTH}: {nodes} nodes, "
                          f"{int(nodes / seconds)} nodes per CPU second", flush=True)
            ratio = best["forked by the host"] / best["own process"]
            print(f"forked / own process, best rounds: {ratio:.3f}")
        finally:
            await host.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.memory", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, nargs="+", default=[1, 2, 4, 8],
                        help="games at once to measure (default 1 2 4 8)")
    parser.add_argument("--hash", type=int, default=64, help="Hash in MB (default 64)")
    parser.add_argument("--no-fork-host", dest="fork_host", action="store_false",
                        help="each game's engine in its own process (engine.fork_host: false)")
    parser.add_argument("--moves", type=int, default=3,
                        help="engine moves each game makes before measuring (default 3)")
    parser.add_argument("--move-s", type=float, default=0.5,
                        help="engine time per move (default 0.5)")
    # Slow opponents make long games: all N are still running after a few moves each.
    parser.add_argument("--opponent-movetime-s", type=float, default=3.0,
                        help="the sandbox opponents' time per move (default 3.0)")
    parser.add_argument("--speed", action="store_true",
                        help="measure start-up and search speed instead of memory")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(speed() if args.speed else memory(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
