"""The bot's own overhead per move, measured over a sandbox session of many games.

Overhead = from the moment a gameState arrives to the moment the move request is sent, minus
the engine's thinking time: board sync, clock planning, move sources, the UCI round trip's
bookkeeping, and the event loop's own delays. The sandbox and its opponents run in a separate
process, so their work does not share the bot's event loop.

    python -m tools.bench_bot [--games 24] [--concurrency 4] [--engine builtin|stockfish|CMD]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bot.app import run_bot
from bot.game.game import Metrics
from bot.lichess.client import ClientTimings
from bot.ops.config import Config

BOT = "kibitz"
SERVE_FLAG = "--serve"


async def serve(opponents: int, minutes_s: int, increment_s: int) -> None:
    """The sandbox side: a bot account and `opponents` random movers challenging it forever."""
    from sandbox.opponent import ChallengeSpec
    from sandbox.ratelimit import RateLimits
    from sandbox.server import SandboxServer

    server = SandboxServer(keepalive_s=2.0, limits=RateLimits(moves_per_minute=100_000))
    url = await server.start("127.0.0.1", 0)
    token = server.add_account(BOT, bot=True)
    for index in range(opponents):
        await server.start_opponent(f"rival{index}", seed=index, movetime_s=0.01,
                                    challenge=ChallengeSpec(BOT, minutes_s, increment_s))
    print(f"url: {url}", flush=True)
    print(f"token: {token}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await server.stop()


def engine_command(choice: str) -> tuple[str, ...]:
    if choice == "builtin":
        return (sys.executable, "-m", "engine")
    if choice == "stockfish":
        return (shutil.which("stockfish") or "/usr/games/stockfish",)
    return tuple(shlex.split(choice))


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def bench(args: argparse.Namespace) -> int:
    sandbox = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tools.bench_bot", SERVE_FLAG, str(args.concurrency),
        str(args.base), str(args.increment),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    assert sandbox.stdout is not None
    try:
        url = (await sandbox.stdout.readline()).decode().split(": ", 1)[1].strip()
        token = (await sandbox.stdout.readline()).decode().split(": ", 1)[1].strip()
        with tempfile.TemporaryDirectory() as tmp:
            base = Config()
            config = dataclasses.replace(
                base,
                state_dir=Path(tmp) / "state",
                engine=dataclasses.replace(
                    base.engine, command=engine_command(args.engine), options={"Hash": 16},
                    max_move_s=args.max_move_s, first_move_s=args.max_move_s),
                challenge=dataclasses.replace(base.challenge, concurrency=args.concurrency),
                pgn=dataclasses.replace(base.pgn, enabled=False),
                log=dataclasses.replace(base.log, status_interval_s=0, game_log=False),
            )
            metrics = Metrics()
            stop = asyncio.Event()
            ready = asyncio.Event()
            started = time.monotonic()

            async def stop_after_games() -> None:
                await ready.wait()
                while len(metrics.games) < args.games:  # noqa: ASYNC110
                    await asyncio.sleep(0.2)
                stop.set()

            async with asyncio.TaskGroup() as tg:
                watcher = tg.create_task(stop_after_games())
                code = await run_bot(
                    config, url=url, token=token, stop=stop, handle_signals=True,
                    metrics=metrics, timings=ClientTimings(moves_per_minute=100_000),
                    on_ready=lambda _me: ready.set(),
                )
                watcher.cancel()
            elapsed_s = time.monotonic() - started
    finally:
        sandbox.terminate()
        await sandbox.wait()
    report(metrics, elapsed_s, args)
    return code


def report(metrics: Metrics, elapsed_s: float, args: argparse.Namespace) -> None:
    engine_moves = [m for m in metrics.moves if m.source == "engine"]
    overheads_ms = [m.overhead_s * 1000 for m in engine_moves]
    thinks_ms = [m.think_s * 1000 for m in engine_moves]
    results = Counter(outcome.status for outcome in metrics.games)
    print(f"games: {len(metrics.games)} ({', '.join(f'{k} {v}' for k, v in results.items())}) "
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
    if argv and argv[0] == SERVE_FLAG:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(int(argv[1]), int(argv[2]), int(argv[3])))
        return 0
    parser = argparse.ArgumentParser(prog="python -m tools.bench_bot", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=24, help="games to play (default 24)")
    parser.add_argument("--concurrency", type=int, default=4, help="games at once (default 4)")
    parser.add_argument("--engine", default="builtin",
                        help="builtin, stockfish, or an engine command (default builtin)")
    parser.add_argument("--max-move-s", type=float, default=0.05,
                        help="engine time per move (default 0.05)")
    parser.add_argument("--base", type=int, default=60, help="clock base in s (default 60)")
    parser.add_argument("--increment", type=int, default=0, help="increment in s (default 0)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return asyncio.run(bench(args))


if __name__ == "__main__":
    sys.exit(main())
