"""The bot's own overhead per move, measured over a sandbox session of many games.

Overhead = from the moment a gameState arrives to the moment the move request is sent, minus
the engine's thinking time: board sync, clock planning, move sources, the UCI round trip's
bookkeeping, and the event loop's own delays. The sandbox and its opponents run in a separate
process, so their work does not share the bot's event loop. The opponents challenge for
exactly `--games` games between them, so the bot plays what it is asked.

With --page the session is played twice in the same run, first with nobody watching, then
with the status page open and streaming (a reader of its server-sent events in a process of
its own, as a browser would be): the ratio of the two overheads is the page's cost.

With --soak the bot plays many short games (300 at 30+0 unless told otherwise) and the
resident memory of the bot's process is reported at the start, after the warm-up, in the
middle and at the end: it must stay flat for a bot that runs for weeks.

    python -m tools.bench.bot [--games 24] [--concurrency 4] [--engine builtin|stockfish|CMD]
    python -m tools.bench.bot --soak [--games 300]
    python -m tools.bench.bot --page --games 24 --concurrency 8
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bot.app import run_bot
from bot.game.metrics import Metrics
from bot.lichess.client import ClientTimings
from bot.watch.server import Watch, WatchSettings
from tools.bench.session import engine_command, session_config, start_sandbox

READ_PAGE_FLAG = "--read-page"
READER_END_S = 10.0  # the page's reader ends with the bot's feed; killed if it lingers
SOAK_GAMES = 300  # --soak without --games
SOAK_BASE_S = 30  # --soak without --base: the shortest clock a bot may play (bullet)
WARM_UP_SHARE = 0.1  # the soak's memory growth is counted from this share of the games
SOAK_GROWTH_LIMIT = 0.10  # growth after the warm-up that the soak accepts
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_mb() -> float:
    """This process's resident memory now, in MB (Linux /proc; the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * PAGE_BYTES / 1e6
    except OSError:
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


@dataclass
class MemoryTrace:
    """Resident memory at the soak's milestones: (label, games finished, MB)."""

    samples: list[tuple[str, int, float]] = field(default_factory=list)

    def take(self, label: str, games: int) -> None:
        self.samples.append((label, games, resident_mb()))

    def growth_after_warm_up(self) -> float | None:
        by_label = {label: mb for label, _games, mb in self.samples}
        if "warm" not in by_label or "end" not in by_label:
            return None
        return by_label["end"] / by_label["warm"] - 1.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def read_page(url: str) -> None:
    """A page left open: read the feed's events until killed; their count and bytes at the
    end (on stdout)."""
    import aiohttp
    events = size = 0
    try:
        async with aiohttp.ClientSession() as session, session.get(
                url, timeout=aiohttp.ClientTimeout(total=None)) as resp:
            async for line in resp.content:
                size += len(line)
                events += line.startswith(b"event: ")
    finally:
        print(f"{events} {size}", flush=True)


@dataclass
class Session:
    metrics: Metrics
    elapsed_s: float
    code: int
    memory: MemoryTrace
    page: str = ""  # with a page open: what it received


async def bench(args: argparse.Namespace) -> int:
    if not args.page:
        run = await session(args, page=False)
        report(run.metrics, run.elapsed_s, args)
        if args.soak:
            return report_memory(run.memory) or run.code
        return run.code
    without = await session(args, page=False)
    with_page = await session(args, page=True)
    print("-- without the page")
    report(without.metrics, without.elapsed_s, args)
    print(f"-- with the page open and streaming ({with_page.page})")
    report(with_page.metrics, with_page.elapsed_s, args)
    compare(without.metrics, with_page.metrics)
    return without.code or with_page.code


def engine_overheads_ms(metrics: Metrics) -> list[float]:
    return [m.overhead_s * 1000 for m in metrics.moves if m.source == "engine"]


def compare(without: Metrics, with_page: Metrics) -> None:
    """The page's cost: its overheads over those without it (1.00 = no difference)."""
    base, page = engine_overheads_ms(without), engine_overheads_ms(with_page)
    if not base or not page:
        print("page cost: not measured (no engine moves)")
        return
    ratios = [(name, statistics.median(page) / statistics.median(base) if name == "median"
               else percentile(page, share) / percentile(base, share))
              for name, share in (("median", 0.5), ("p90", 0.9), ("p99", 0.99))]
    print("page cost (overhead with the page / without): " + ", ".join(
        f"{name} {ratio:.2f}x" for name, ratio in ratios))


async def session(args: argparse.Namespace, *, page: bool) -> Session:
    sandbox, url, token = await start_sandbox(min(args.concurrency, args.games), args.base,
                                              args.increment, games=args.games)
    reader: asyncio.subprocess.Process | None = None
    watch = Watch(WatchSettings("127.0.0.1", 0, None), base_url=url, token=token)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = session_config(Path(tmp), engine_command(args.engine), args.concurrency,
                                    max_move_s=args.max_move_s, first_move_s=args.max_move_s)
            metrics = Metrics()
            memory = MemoryTrace()
            stop = asyncio.Event()
            ready = asyncio.Event()
            started = time.monotonic()
            milestones = [("warm", max(1, round(args.games * WARM_UP_SHARE))),
                          ("middle", max(1, args.games // 2)), ("end", args.games)]

            async def stop_after_games() -> None:
                nonlocal reader
                await ready.wait()
                if page:
                    reader = await asyncio.create_subprocess_exec(
                        sys.executable, "-m", "tools.bench.bot", READ_PAGE_FLAG,
                        f"http://127.0.0.1:{watch.port}/events",
                        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
                memory.take("start", 0)
                for label, count in milestones:
                    while metrics.games_finished < count:  # noqa: ASYNC110
                        await asyncio.sleep(0.2)
                    memory.take(label, metrics.games_finished)
                stop.set()

            async with asyncio.TaskGroup() as tg:
                watcher = tg.create_task(stop_after_games())
                code = await run_bot(
                    config, url=url, token=token, stop=stop, handle_signals=True,
                    metrics=metrics,
                    timings=ClientTimings(requests_per_minute=100_000, request_burst=1000),
                    on_ready=lambda _me: ready.set(), watch=watch,
                )
                watcher.cancel()
            elapsed_s = time.monotonic() - started
    finally:
        sandbox.terminate()
        await sandbox.wait()
    received = ""
    if reader is not None:
        try:  # the feed ends with the bot
            out, _ = await asyncio.wait_for(reader.communicate(), READER_END_S)
        except TimeoutError:
            reader.kill()
            out, _ = await reader.communicate()
        events, _, size = out.decode().strip().partition(" ")
        received = f"{events} events, {int(size or 0) / 1e6:.1f} MB received"
    return Session(metrics, elapsed_s, code, memory, received)


def report_memory(memory: MemoryTrace) -> int:
    """The soak's memory lines; 1 if the growth after the warm-up is over the limit."""
    print("resident memory of the bot process: " + ", ".join(
        f"{label} ({games} games) {mb:.1f} MB" for label, games, mb in memory.samples))
    growth = memory.growth_after_warm_up()
    if growth is None:
        print("memory growth after warm-up: not measured")
        return 1
    verdict = "ok" if growth < SOAK_GROWTH_LIMIT else "over the limit"
    print(f"memory growth after warm-up: {growth:+.1%} ({verdict}, limit "
          f"{SOAK_GROWTH_LIMIT:.0%})")
    return 0 if growth < SOAK_GROWTH_LIMIT else 1


def report(metrics: Metrics, elapsed_s: float, args: argparse.Namespace) -> None:
    engine_moves = [m for m in metrics.moves if m.source == "engine"]
    overheads_ms = [m.overhead_s * 1000 for m in engine_moves]
    thinks_ms = [m.think_s * 1000 for m in engine_moves]
    results = Counter(outcome.status for outcome in metrics.games)
    kept = len(metrics.games)
    window = f" among the last {kept}" if kept < metrics.games_finished else ""
    print(f"games: {metrics.games_finished} ("
          f"{', '.join(f'{k} {v}' for k, v in results.items())}{window}) "
          f"in {elapsed_s:.1f} s, {args.concurrency} at once, engine {args.engine}")
    if not overheads_ms:
        print("no engine moves measured")
        return
    print(f"moves measured: {len(overheads_ms)}; engine thinking median "
          f"{statistics.median(thinks_ms):.1f} ms")
    print(f"bot overhead per move: median {statistics.median(overheads_ms):.2f} ms, "
          f"p90 {percentile(overheads_ms, 0.9):.2f} ms, "
          f"p99 {percentile(overheads_ms, 0.99):.2f} ms, worst {max(overheads_ms):.2f} ms")
    worst = sorted(engine_moves, key=lambda m: m.overhead_s, reverse=True)[:5]
    print("worst moves (game, ply, ms): " + ", ".join(
        f"{m.game_id} {m.ply} {m.overhead_s * 1000:.1f}" for m in worst))
    print(f"rejected moves: {metrics.rejected_moves}, engine restarts: "
          f"{metrics.engine_restarts}, resyncs: {metrics.resyncs}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == READ_PAGE_FLAG:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(read_page(argv[1]))
        return 0
    parser = argparse.ArgumentParser(prog="python -m tools.bench.bot", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=None,
                        help=f"games to play (default 24; {SOAK_GAMES} with --soak)")
    parser.add_argument("--concurrency", type=int, default=4, help="games at once (default 4)")
    parser.add_argument("--engine", default="builtin",
                        help="builtin, stockfish, or an engine command (default builtin)")
    parser.add_argument("--max-move-s", type=float, default=0.05,
                        help="engine time per move (default 0.05)")
    parser.add_argument("--base", type=int, default=None,
                        help=f"clock base in s (default 60; {SOAK_BASE_S} with --soak)")
    parser.add_argument("--increment", type=int, default=0, help="increment in s (default 0)")
    parser.add_argument("--soak", action="store_true",
                        help="many short games; report the resident memory as they go")
    parser.add_argument("--page", action="store_true",
                        help="play the session twice: without, then with the status page open "
                             "and streaming; report the page's cost")
    args = parser.parse_args(argv)
    if args.games is None:
        args.games = SOAK_GAMES if args.soak else 24
    if args.base is None:
        args.base = SOAK_BASE_S if args.soak else 60
    if args.games < 1:
        parser.error("--games must be at least 1")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return asyncio.run(bench(args))


if __name__ == "__main__":
    sys.exit(main())
