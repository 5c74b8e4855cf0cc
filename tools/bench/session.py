"""A measured bot session's parts, shared by the bot's benches (`tools.bench.bot`,
`tools.bench.memory`, `tools.bench.requests_per_minute`): the sandbox in a process of its own
with opponents that challenge for a given number of games, and the bot's configuration.

    python -m tools.bench.session --serve OPPONENTS MINUTES_S INCREMENT_S [MOVETIME_S [GAMES]]
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shlex
import shutil
import sys
from pathlib import Path

from bot.ops.config import Config

BOT = "kibitz"
SERVE_FLAG = "--serve"


def quotas(games: int, opponents: int) -> list[int]:
    """Games per opponent: `games` in all, as even as can be."""
    return [games // opponents + (index < games % opponents) for index in range(opponents)]


async def serve(opponents: int, minutes_s: int, increment_s: int,
                movetime_s: float = 0.01, games: int | None = None) -> None:
    """The sandbox side: a bot account and `opponents` random movers challenging it for
    `games` games in all (None: forever)."""
    from sandbox.opponent import ChallengeSpec
    from sandbox.ratelimit import RateLimits
    from sandbox.server import SandboxServer

    server = SandboxServer(keepalive_s=2.0, limits=RateLimits(requests_per_minute=100_000))
    url = await server.start("127.0.0.1", 0)
    token = server.add_account(BOT, bot=True)
    shares = quotas(games, opponents) if games is not None else [None] * opponents
    for index, quota in enumerate(shares):
        if quota != 0:
            await server.start_opponent(
                f"rival{index}", seed=index, movetime_s=movetime_s,
                challenge=ChallengeSpec(BOT, minutes_s, increment_s, games=quota))
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


def session_config(tmp: Path, command: tuple[str, ...], concurrency: int,
                   **engine: float | None) -> Config:
    """A bot configuration for a measured session: files in `tmp`, no PGN, no game logs."""
    base = Config()
    return dataclasses.replace(
        base,
        state_dir=tmp / "state",
        engine=dataclasses.replace(base.engine, command=command, options={"Hash": 16},
                                   **engine),  # type: ignore[arg-type]
        challenge=dataclasses.replace(base.challenge, concurrency=concurrency),
        pgn=dataclasses.replace(base.pgn, enabled=False),
        log=dataclasses.replace(base.log, status_interval_s=0, game_log=False),
    )



async def start_sandbox(opponents: int, minutes_s: int, increment_s: int,
                        movetime_s: float = 0.01, games: int | None = None
                        ) -> tuple[asyncio.subprocess.Process, str, str]:
    """`serve` in a process of its own: the process, the server's URL and the bot's token."""
    sandbox = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tools.bench.session", SERVE_FLAG, str(opponents), str(minutes_s),
        str(increment_s), str(movetime_s), *([str(games)] if games is not None else []),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    assert sandbox.stdout is not None
    url = (await sandbox.stdout.readline()).decode().split(": ", 1)[1].strip()
    token = (await sandbox.stdout.readline()).decode().split(": ", 1)[1].strip()
    return sandbox, url, token


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] != SERVE_FLAG or len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(int(argv[1]), int(argv[2]), int(argv[3]),
                          float(argv[4]) if len(argv) > 4 else 0.01,
                          int(argv[5]) if len(argv) > 5 else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
