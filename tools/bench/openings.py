"""Openings that learn, measured on the sandbox: rated games against one deterministic
sparring opponent, with and without the memory of each pairing, and with and without a book
learned from the first series' games.

Both sides play the 1-ply sparring engine of the tests (tests/bot/sparring_engine.py): the
same position always gets the same move, so any variety comes from the bot's deviations and
its book. Every series starts on a fresh sandbox with a fresh state directory.

    python -m tools.bench.openings GAMES_PER_SERIES [WORKDIR]

Series: `first` (memory, no book), then a book is learned from its games (`kibitz book
build`), `book` (memory, that book), `again` (memory, no book: `first` replayed), `nomemory`
(no memory, no book). Prints one line per series: the bot's score, and the games the sandbox
left unrated (lila's botFarming).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import chess

from bot.app import run_bot
from bot.cli import run as kibitz
from bot.ops.config import Config, parse_config
from sandbox.server import SandboxServer

ROOT = Path(__file__).resolve().parents[2]
SPARRING = [sys.executable, str(ROOT / "tests" / "bot" / "sparring_engine.py")]
BOT = "kibitz"
OPPONENT = "sparring"
GAME_GUARD_S = 600.0  # a game that never ends is a bug: stop the measure
POLL_S = 0.1


@dataclass
class Series:
    name: str
    games: int
    points: float
    unrated: int
    seconds: float

    def line(self) -> str:
        return (f"{self.name}: {self.games} games, score {self.points:g}/{self.games} "
                f"({100 * self.points / max(1, self.games):.0f}%), {self.unrated} left unrated, "
                f"{self.seconds:.0f} s")


def config_for(workdir: Path, *, memory: bool, book: Path | None) -> Config:
    command = ", ".join(json.dumps(part) for part in SPARRING)
    book_section = (f'book: {{enabled: true, books: {{standard: ["{book}"]}}, '
                    f'selection: weighted_random}}' if book is not None else "")
    return parse_config(f"""
state_dir: "{workdir / 'state'}"
engine:
  command: [{command}]
  first_move_s: 0.5
chat: {{kibitz_every: 0}}
pgn: {{dir: "{workdir / 'games'}"}}
log: {{status_interval_s: 0, level: warning, game_log: false}}
watch: {{enabled: false}}
openings: {{memory: {'true' if memory else 'false'}}}
{book_section}
""", "openings bench")


async def series(name: str, workdir: Path, games: int, *, memory: bool,
                 book: Path | None) -> Series:
    started = time.monotonic()
    server = SandboxServer()
    await server.start("127.0.0.1", 0)
    token = server.add_account(BOT, bot=True)
    stop = asyncio.Event()
    points = 0.0
    try:
        await server.start_opponent(OPPONENT, bot=True, engine=SPARRING, movetime_s=0.01)
        bot = asyncio.create_task(run_bot(config_for(workdir, memory=memory, book=book),
                                          url=server.url, token=token, stop=stop,
                                          handle_signals=False))
        for number in range(games):
            ours = chess.WHITE if number % 2 == 0 else chess.BLACK
            white, black = (BOT, OPPONENT) if ours == chess.WHITE else (OPPONENT, BOT)
            game_id = await server.pair(white, black, 180, 2, rated=True)
            record = await server.wait_for_game_end(game_id, GAME_GUARD_S)
            won = record.winner == ("white" if ours == chess.WHITE else "black")
            points += 1.0 if won else 0.5 if record.winner is None else 0.0
            # The bot is through with the game once its PGN is written (the memory after it).
            pgn = workdir / "games" / f"{game_id}.pgn"
            async with asyncio.timeout(GAME_GUARD_S):
                while not _through(pgn, workdir, game_id, memory=memory):  # noqa: ASYNC110
                    await asyncio.sleep(POLL_S)  # files on disk: no event to wait on
        stop.set()
        await asyncio.wait_for(bot, 60)
        unrated = len(server.lobby.unrated_games)
    finally:
        stop.set()
        await server.stop()
    return Series(name, games, points, unrated, time.monotonic() - started)


def _through(pgn: Path, workdir: Path, game_id: str, *, memory: bool) -> bool:
    """The game's PGN is written, and with the memory the game is remembered."""
    if not pgn.exists():
        return False
    pairings = workdir / "state" / "pairings.json"
    return not memory or (pairings.exists() and game_id in pairings.read_text())


async def measure(games: int, workdir: Path) -> list[Series]:
    results = [await series("first", workdir / "first", games, memory=True, book=None)]
    print(results[-1].line(), flush=True)
    book = workdir / "learned.bin"
    code = kibitz(["book", "build", "--no-records", str(workdir / "first" / "games"),
                   "--out", str(book)])
    if code != 0:
        raise SystemExit(f"the book build failed ({code})")
    for name, memory, with_book in (("book", True, True), ("again", True, False),
                                    ("nomemory", False, False)):
        results.append(await series(name, workdir / name, games, memory=memory,
                                    book=book if with_book else None))
        print(results[-1].line(), flush=True)
    return results


def main(argv: list[str]) -> int:
    if not argv or not argv[0].isdigit():
        print(__doc__, file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("sandbox").setLevel(logging.ERROR)
    workdir = Path(argv[1]) if len(argv) > 1 else Path(tempfile.mkdtemp(prefix="openings-"))
    asyncio.run(measure(int(argv[0]), workdir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
