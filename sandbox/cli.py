"""The sandbox's one command line, shared by `kibitz sandbox` and `python -m sandbox`.

    add_arguments(parser)           every option, on any argparse parser
    SandboxOptions.from_args(args)  checked options (ValueError names what is wrong)
    main(argv)                      `python -m sandbox`
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from sandbox.accounts import MAX_RATING, MIN_RATING
from sandbox.faults import parse_fault
from sandbox.lobby import QUIRK_NAMES
from sandbox.server import (
    DEFAULT_BOT,
    DEFAULT_HUMAN,
    DEFAULT_HUMAN_RATINGS,
    _challenge_spec,
    run_sandbox,
)
from sandbox.tournaments import ARENA_FORMAT, parse_arena

DEFAULT_PORT = 8080
DEFAULT_KEEPALIVE_S = 6.0
MAX_PORT = 65535


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number, got {text!r}") from None
    if not 0 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"must be a port number 0-{MAX_PORT}, got {port}")
    return port


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected seconds, e.g. 6") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be more than 0 seconds")
    return seconds


def _ratings(text: str) -> tuple[int, ...]:
    ratings = []
    for part in text.split(","):
        try:
            rating = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{part!r}: expected ratings separated by commas, e.g. 1200,1600") from None
        if not MIN_RATING <= rating <= MAX_RATING:
            raise argparse.ArgumentTypeError(
                f"rating {rating}: use {MIN_RATING}-{MAX_RATING}")
        ratings.append(rating)
    return tuple(dict.fromkeys(ratings))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option of the sandbox's command line."""
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=_port, default=DEFAULT_PORT,
                        help="port to listen on; 0 picks a free one (default: %(default)s)")
    parser.add_argument("--keepalive", type=_seconds, default=DEFAULT_KEEPALIVE_S,
                        metavar="SECONDS",
                        help="seconds between keep-alive lines on streams (default: "
                             "%(default)s, as lichess.org)")
    parser.add_argument("--engine", metavar="COMMAND",
                        help="UCI engine command for the sandbox opponent, e.g. "
                             "fairy-stockfish for the variants (default: random moves)")
    parser.add_argument("--challenge", metavar="MIN+INC[:VARIANT]",
                        help=f"have the opponent challenge the bot account ({DEFAULT_BOT}) "
                             "again and again with this time control and Lichess variant "
                             "key, e.g. 3+2 or 1+1:crazyhouse")
    parser.add_argument("--no-opponent", action="store_true",
                        help=f"leave the human account ({DEFAULT_HUMAN}) free: no sandbox "
                             "opponent plays it, so a person or another Lichess client "
                             "(berserk, lichess-bot, BotLi) plays it with its token")
    parser.add_argument("--arena", metavar=ARENA_FORMAT,
                        help=f"create an arena the opponent ({DEFAULT_HUMAN}) joins, e.g. "
                             "1+0/5 (1+0 for five minutes, from now) or 3+2/20/60:nobots "
                             "(from a minute on, bots refused); its id is printed")
    parser.add_argument("--humans", type=_ratings, nargs="?", metavar="RATINGS",
                        const=DEFAULT_HUMAN_RATINGS, default=(),
                        help="add people of these ratings (accounts human<rating>, e.g. "
                             "human1200), played by --engine (default: the built-in one) at "
                             "that strength; they accept every challenge (without a value: "
                             f"{','.join(map(str, DEFAULT_HUMAN_RATINGS))})")
    parser.add_argument("--fault", action="append", default=[], metavar="SPEC",
                        help="inject a fault (repeatable), e.g. status=503,path=/api/stream/"
                             "event,count=2 or ratelimit=html,path=/api/bot/game/*/move/* or "
                             "drop=event,every=30")
    parser.add_argument("--quirk", action="append", default=[], choices=QUIRK_NAMES,
                        help="reproduce an odd lichess behaviour on game streams "
                             "(repeatable): " + ", ".join(QUIRK_NAMES))


@dataclass(frozen=True)
class SandboxOptions:
    """What the command line asked for, checked before anything starts."""

    host: str
    port: int
    keepalive_s: float
    engine: tuple[str, ...] | None
    challenge: str | None
    opponent: bool
    faults: tuple[str, ...]
    quirks: tuple[str, ...]
    arena: str | None = None
    humans: tuple[int, ...] = ()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SandboxOptions:
        """Raise ValueError with the reason if an option cannot be used."""
        for spec in args.fault:
            parse_fault(spec)
        if args.challenge:
            _challenge_spec(args.challenge, DEFAULT_BOT)
        if args.arena:
            parse_arena(args.arena)
        if args.no_opponent and (args.engine or args.challenge):
            raise ValueError("--no-opponent leaves the human account free: "
                             "--engine and --challenge need the sandbox opponent")
        return cls(host=args.host, port=args.port, keepalive_s=args.keepalive,
                   engine=tuple(shlex.split(args.engine)) if args.engine else None,
                   challenge=args.challenge or None, opponent=not args.no_opponent,
                   faults=tuple(args.fault), quirks=tuple(args.quirk),
                   arena=args.arena or None, humans=tuple(args.humans))

    async def serve(self) -> None:
        """Run the sandbox until Ctrl-C or SIGTERM."""
        await run_sandbox(self.host, self.port, keepalive_s=self.keepalive_s,
                          engine=self.engine, challenge=self.challenge, faults=self.faults,
                          quirks=self.quirks, opponent=self.opponent, arena=self.arena,
                          humans=self.humans)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m sandbox`: the same options as `kibitz sandbox`."""
    parser = argparse.ArgumentParser(prog="python -m sandbox",
                                     description="Run a local Lichess-compatible server.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        options = SandboxOptions.from_args(args)
    except ValueError as exc:
        parser.error(str(exc))
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(options.serve())
    except ValueError as exc:  # e.g. an engine that cannot start
        parser.error(str(exc))
    except OSError as exc:  # the address is taken or not ours
        print(f"{parser.prog}: cannot serve on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C is how it stops
        pass
    return 0
