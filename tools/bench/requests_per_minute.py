"""Requests per minute of a many-game session on the sandbox, under Lichess's overall limit.

The sandbox enforces one limit per token on every request (180 a minute, a bare 429 past
it, as lichess.org's proxy does); the bot runs with its default configuration and request
budget, so it posts its PV to the spectator room after every move. Printed: games and
results, every request the bot made and its replies by status, the busiest rolling minute,
the average per minute, moves and chat lines sent.

    python -m tools.bench.requests_per_minute [--games 8] [--base 60] [--increment 0]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bot.app import run_bot
from bot.game.metrics import Metrics
from tools.bench.session import engine_command, session_config

BOT = "kibitz"
SAMPLE_S = 0.5  # how often the sandbox's rolling minute is read


async def measure(args: argparse.Namespace) -> int:
    from sandbox.opponent import ChallengeSpec
    from sandbox.ratelimit import RateLimits
    from sandbox.server import SandboxServer

    logging.basicConfig(level=logging.WARNING)
    limits = RateLimits()
    async with SandboxServer(keepalive_s=2.0, limits=limits) as server:
        token = server.add_account(BOT, bot=True)
        with tempfile.TemporaryDirectory() as tmp:
            config = session_config(Path(tmp), engine_command("builtin"), args.games)
            metrics = Metrics()
            stop = asyncio.Event()
            ready = asyncio.Event()
            peak = 0
            started = 0.0

            async def session() -> None:
                nonlocal peak, started
                await ready.wait()
                started = time.monotonic()
                for index in range(args.games):
                    await server.start_opponent(
                        f"rival{index}", seed=index, movetime_s=0.05,
                        challenge=ChallengeSpec(BOT, args.base, args.increment, repeat=False))
                while metrics.games_finished < args.games:
                    peak = max(peak, server.lobby.limiters.requests.count(BOT))
                    await asyncio.sleep(SAMPLE_S)
                stop.set()

            async with asyncio.TaskGroup() as tg:
                watcher = tg.create_task(session())
                code = await run_bot(config, url=server.url, token=token, stop=stop,
                                     handle_signals=True, metrics=metrics,
                                     on_ready=lambda _me: ready.set())
                watcher.cancel()
            elapsed_s = time.monotonic() - started
    replies = Counter({status: n for (user, status), n in server.lobby.replies.items()
                       if user == BOT})
    total = sum(replies.values())
    results = Counter(outcome.status for outcome in metrics.games)
    print(f"games: {metrics.games_finished} {args.base}+{args.increment} at once "
          f"({', '.join(f'{k} {v}' for k, v in results.items())}) in {elapsed_s:.0f} s")
    print(f"sandbox limit: {limits.requests_per_minute} requests a minute per token")
    print(f"bot requests: {total} ({', '.join(f'{k}: {v}' for k, v in sorted(replies.items()))})")
    print(f"busiest rolling minute: {peak} requests; average {60 * total / elapsed_s:.0f} "
          "a minute")
    print(f"moves sent: {metrics.moves_sent}, chat lines sent: {metrics.chat_lines}")
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.requests_per_minute",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=8)
    parser.add_argument("--base", type=int, default=60, help="clock base in seconds")
    parser.add_argument("--increment", type=int, default=0)
    return asyncio.run(measure(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
