"""The `kibitz` command: play, demo, sandbox, check-config, upgrade, tournament, book,
version."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata
import os
import platform
import shutil
import sys
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path

from bot.ops.config import (
    LOG_LEVELS,
    Config,
    ConfigError,
    EngineConfig,
    dump_config,
    load_config,
    parse_url,
)
from bot.ops.token import Token, TokenError, resolve_token
from sandbox import cli as sandbox_cli

# check-config starts each engine a rule names, to read the variants it declares
ENGINE_CHECK_TIMEOUT_S = 60.0

class ExitCode(IntEnum):
    OK = 0
    ERROR = 1            # the bot stopped on an error, or an action was not confirmed
    USAGE = 2            # bad command-line arguments
    CONFIG = 3           # the configuration (or a book or tablebase it names) is unusable
    TOKEN = 4            # no usable token, or the account cannot play (not a BOT, no scope)
    UNREACHABLE = 5      # the server could not be reached or failed
    INTERRUPTED = 130    # stopped with Ctrl-C before it could finish


EXIT_CODES_HELP = """\
exit codes:
  0    success (play: stopped cleanly on SIGTERM or Ctrl-C)
  1    error: the bot stopped on an unexpected error, or an upgrade was not confirmed
  2    bad command-line arguments
  3    the configuration is invalid, or a file it names (book, tablebase) is unusable
  4    no usable token, or the account cannot play (not a BOT account, no bot:play scope)
  5    the server could not be reached, or answered with an error
  130  interrupted with Ctrl-C"""

TOKEN_HELP = """\
token: the Lichess API token comes from LICHESS_BOT_TOKEN, else the file named
by the config key token_file, else $CREDENTIALS_DIRECTORY/lichess-token (the
systemd credential). It is never printed in full."""


def _version() -> str:
    try:
        return importlib.metadata.version("kibitz")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the line breaks of the epilogs (exit codes, token sources)."""


def _add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", type=Path, metavar="FILE",
                        help="configuration file (YAML; see config.yml for every key). "
                             "Default: none, i.e. the documented defaults")


def _add_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", metavar="URL", type=_server_url,
                        help="server base URL, overriding the config key url "
                             "(e.g. a sandbox at http://127.0.0.1:8080)")


def _add_log_level(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", choices=LOG_LEVELS, metavar="LEVEL",
                        help=f"one of {', '.join(LOG_LEVELS)}; overrides the config key "
                             "log.level")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kibitz", formatter_class=_Formatter,
        description="Kibitz: a Lichess bot with its own chess engine that kibitzes its "
                    "thinking (score, depth, principal variation) in the game chat.",
        epilog=f"Run `kibitz COMMAND --help` for each command.\n\n{EXIT_CODES_HELP}")
    parser.add_argument("--version", action="version", version=f"kibitz {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, summary: str, description: str,
                epilog: str = EXIT_CODES_HELP) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=summary, description=description,
                                   epilog=epilog, formatter_class=_Formatter)

    play = command(
        "play", "play on Lichess (or any compatible server) until stopped",
        "Check the token, warm up the engine, then accept challenges by the configured "
        "rules and play them until SIGTERM or Ctrl-C. On SIGTERM running games get "
        "game.shutdown_grace_s seconds to finish. A second Ctrl-C stops at once.",
        f"{TOKEN_HELP}\n\n{EXIT_CODES_HELP}")
    _add_config(play)
    _add_url(play)
    _add_log_level(play)
    play.set_defaults(run=cmd_play)

    demo = command(
        "demo", "watch the bot play one short game on a local sandbox (no account needed)",
        "Start a local sandbox server, the bot and a sandbox opponent in this process, "
        "and play one short game you can watch here: moves, clocks, the bot's score and "
        "principal variation, and the result. Then say where the PGN was written. "
        "Needs no account and no network.")
    demo.add_argument("--clock", default="1+1", metavar="MIN+INC", type=_clock,
                      help="time control: minutes + increment seconds (default: %(default)s)")
    demo.add_argument("--opponent", choices=("random", "engine"), default="random",
                      help="random: a random mover; engine: a second copy of the built-in "
                           "engine (default: %(default)s)")
    demo.add_argument("--games-dir", type=Path, metavar="DIR",
                      help="where the PGN goes (default: the config key pgn.dir)")
    _add_config(demo)
    demo.add_argument("--log-level", choices=LOG_LEVELS, metavar="LEVEL", default="warning",
                      help="the bot's own log lines below this level are hidden, so the "
                           "game is easy to follow (default: %(default)s)")
    demo.set_defaults(run=cmd_demo)

    sandbox = command(
        "sandbox", "run a local Lichess-compatible server for testing",
        "Run the sandbox server until Ctrl-C. It prints its URL and the tokens of its "
        "accounts; point `kibitz play --url URL` at it with LICHESS_BOT_TOKEN set to the "
        "bot account's token.")
    sandbox_cli.add_arguments(sandbox)
    _add_log_level(sandbox)
    sandbox.set_defaults(run=cmd_sandbox)

    check = command(
        "check-config", "validate the configuration and show what is in effect",
        "Validate the configuration file and print the effective configuration (every "
        "key, defaults filled in) and where the token comes from (masked). With "
        "--check-token, also ask the server whether the token is valid, has the bot:play "
        "scope, and belongs to a BOT account.",
        f"{TOKEN_HELP}\n\n{EXIT_CODES_HELP}")
    _add_config(check)
    _add_url(check)
    check.add_argument("--check-token", action="store_true",
                       help="test the token against the server (needs the network)")
    check.set_defaults(run=cmd_check_config)

    upgrade = command(
        "upgrade", "turn the token's account into a BOT account (irreversible)",
        "Upgrade the Lichess account the token belongs to into a BOT account, after you "
        "type its name to confirm. This cannot be undone: the account can then only play "
        "through the Bot API, never again on the website. It must not have played any "
        "game; a fresh account is best.",
        f"{TOKEN_HELP}\n\n{EXIT_CODES_HELP}")
    _add_config(upgrade)
    _add_url(upgrade)
    upgrade.add_argument("--yes", action="store_true",
                         help="do not ask for confirmation (for scripts)")
    upgrade.set_defaults(run=cmd_upgrade)

    tournament = command(
        "tournament", "join, withdraw from or list arenas while the bot runs",
        "Ask the running bot (`kibitz play` with the same configuration) to join or "
        "withdraw from a Lichess arena, or list the arenas it plays with its rank, score, "
        "games and time left. The request goes through the state directory "
        "(<state_dir>/tournaments/), so the bot picks it up within a second without a "
        "restart; one written while the bot is stopped is taken when it starts. Arenas "
        "that stay for good belong in the config key tournaments.arenas. A stop of the "
        "bot (SIGTERM, Ctrl-C, a restart) keeps its place in arenas that have not "
        "started; withdraw before a stop for good. Swiss tournaments refuse bots.")
    tournament.add_argument("action", choices=("join", "withdraw", "list"))
    tournament.add_argument("arena", nargs="?", metavar="ID",
                            help="the arena's id or URL (join, withdraw)")
    tournament.add_argument("--team", help="the team to play for (team battles)")
    tournament.add_argument("--password", help="the entry code of a private arena")
    _add_config(tournament)
    tournament.set_defaults(run=cmd_tournament)

    book = command(
        "book", "build the opening book learned from the bot's own games",
        "Books the bot learns from its own games (`kibitz book build --help`).")
    book_actions = book.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = book_actions.add_parser(
        "build", help="write the learned book from the bot's PGN records",
        formatter_class=_Formatter, epilog=EXIT_CODES_HELP,
        description="Learn a Polyglot book from the bot's PGN records (the directory "
        "pgn.dir) and any PGN files or directories given: from each position, the moves the "
        "bot played, weighted by how it scored with them (2 for a win, 1 for a draw, 0 for "
        "a loss, plus 1 so one loss does not erase a move), up to book.learn_max_plies "
        "plies into the game, for the side the bot played (the player named in the "
        "Annotator header, or --account). Standard chess and games from a set-up position "
        "only: Polyglot keys describe no other variant. A record that cannot be read stops "
        "the build with its file and game named, and the previous book stays as it was.")
    build.add_argument("pgn", nargs="*", type=Path, metavar="PGN",
                       help="more PGN files or directories of them")
    build.add_argument("--out", "-o", type=Path, metavar="FILE",
                       help="the book to write (default: the learned book in the state "
                            "directory, the one book.learn plays from)")
    build.add_argument("--account", metavar="NAME",
                       help="the bot's account name, for games whose Annotator header "
                            "does not name it")
    build.add_argument("--min-games", type=int, metavar="N",
                       help="a move needs this many games (default: book.learn_min_games)")
    build.add_argument("--max-plies", type=int, metavar="N",
                       help="learn this many plies into each game (default: "
                            "book.learn_max_plies)")
    build.add_argument("--no-records", action="store_true",
                       help="learn from the files given only, not from pgn.dir")
    build.add_argument("--memory-mb", type=int, metavar="MIB",
                       help="bound the build's address space (the bot's rebuilds use "
                            "book.learn_memory_mb); a build beyond it fails, writing nothing")
    build.add_argument("--nice", type=int, default=0, metavar="N",
                       help="run at this much lower priority (default: %(default)s)")
    _add_config(build)
    build.set_defaults(run=cmd_book)

    version = command("version", "print the version of Kibitz and its main parts",
                      "Print the version of Kibitz, Python and the main libraries.")
    version.set_defaults(run=cmd_version)
    return parser


def _server_url(text: str) -> str:
    try:
        return parse_url(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _clock(text: str) -> str:
    from bot.demo import DemoError, parse_clock

    try:
        parse_clock(text)
    except DemoError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


# --- shared steps -------------------------------------------------------------------


def _error(message: str) -> None:
    print(f"kibitz: {message}", file=sys.stderr)


def _load(args: argparse.Namespace) -> Config:
    return load_config(args.config)


def _url(args: argparse.Namespace, config: Config) -> str:
    url: str | None = getattr(args, "url", None)
    return url or config.url


def _token(config: Config) -> Token:
    return resolve_token(config.token_file)


# --- commands -----------------------------------------------------------------------


def cmd_play(args: argparse.Namespace) -> int:
    from bot.ops.logs import setup_logging

    config = _load(args)
    token = _token(config)
    setup_logging(args.log_level or config.log.level, secrets=[token.value])
    return asyncio.run(_play(config, _url(args, config), token.value))


async def _play(config: Config, url: str, token: str) -> int:
    """The bot, with systemd told READY/STATUS/STOPPING and its watchdog fed from this loop."""
    from bot.app import run_bot  # the whole bot loads only when it is about to play
    from bot.ops import sdnotify

    watchdog = asyncio.create_task(sdnotify.run_watchdog(), name="systemd watchdog")
    try:
        return await run_bot(config, url=url, token=token, notify=sdnotify.notify)
    finally:
        watchdog.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watchdog


def cmd_demo(args: argparse.Namespace) -> int:
    from bot.demo import run_demo

    config = _load(args)
    return int(asyncio.run(run_demo(config, clock=args.clock, opponent=args.opponent,
                                games_dir=args.games_dir,
                                log_level=args.log_level)))


def cmd_sandbox(args: argparse.Namespace) -> int:
    from bot.ops.logs import setup_logging

    setup_logging(args.log_level or "info")
    try:
        asyncio.run(sandbox_cli.SandboxOptions.from_args(args).serve())
    except ValueError as error:  # a bad option, or an engine that cannot start
        _error(str(error))
        return ExitCode.USAGE
    except OSError as error:  # the port is taken, or the address is not ours to bind
        _error(f"cannot serve on {args.host}:{args.port}: {error.strerror or error}")
        return ExitCode.ERROR
    except KeyboardInterrupt:  # Ctrl-C is how the sandbox is meant to stop
        pass
    return ExitCode.OK


def cmd_check_config(args: argparse.Namespace) -> int:
    config = _load(args)
    url = _url(args, config)
    print(f"# configuration: {args.config or 'none given, the documented defaults'}")
    print(dump_config(config), end="")
    print(f"# server: {url}")
    from bot.engines.memory import memory_report

    usage, warning = memory_report(config)
    print(f"# {usage}")
    if warning is not None:
        print(f"# warning: {warning}")
    from bot.engines.cores import cores_report

    cores_warning = cores_report(config)
    if cores_warning is not None:
        print(f"# warning: {cores_warning}")
    from bot.engines.levels import level_table

    print("# levels by the strength rules (UCI_Elo; a Lichess rating + strength.lichess_offset "
          "of the speed), standard chess outside arenas:")
    for line in level_table(config):
        print(f"#   {line}")
    if config.engines is not None and config.engine != EngineConfig():
        print("# warning: engine: not used while engines is set (give each engine its "
              "settings in engines.entries)")
    problems = _unusable_files(config, url)
    for problem in problems:
        print(f"# problem: {problem}")
    try:
        token = _token(config)
    except TokenError as error:
        if args.check_token:
            raise
        print(f"# token: none usable: {error}")
        return ExitCode.CONFIG if problems else ExitCode.OK
    print(f"# token: {token}")
    if problems:
        return ExitCode.CONFIG
    if not args.check_token:
        return ExitCode.OK
    from bot.lichess.account import describe, fetch_account

    info = fetch_account(url, token.value)
    for line in describe(info):
        print(f"# {line}")
    return ExitCode.OK if info.can_play else ExitCode.TOKEN


def _unusable_files(config: Config, url: str) -> list[str]:
    """What would stop `play` at start: an engine program not found, books or tablebases
    that do not open (checked by opening them as the bot does), the status page beyond
    loopback with no password; with `engines`, also rules that never match and variants a
    rule's engine does not declare."""
    from bot.engines.rules import EngineTable, reachable, rule_problems
    from bot.features.wiring import FeatureError, Features

    problems = []
    table = EngineTable.from_config(config)
    for name in reachable(table):
        command = table.entries[name].command
        key = "engine" if config.engines is None else f"engines.entries.{name}"
        if command is not None and shutil.which(command[0]) is None:
            problems.append(f"{key}.command: cannot find the program {command[0]!r}")
    if config.engines is not None:
        problems += rule_problems(table, config.challenge)
        if not problems:
            problems += asyncio.run(_engine_variant_problems(config))
    try:
        Features(config, url=url, token="").close_files()
    except FeatureError as error:
        problems.append(str(error))
    if config.watch.enabled:
        from bot.watch.server import WatchError, WatchSettings

        try:  # the page beyond loopback with no password: `play` refuses to start
            WatchSettings.resolve(config.watch, os.environ)
        except WatchError as error:
            problems.append(str(error))
    return problems


async def _engine_variant_problems(config: Config) -> list[str]:
    """Start each engine some rule names (no search) to read the variants it declares, and
    report rules that send it others."""
    from bot.engines.pool import EngineFailure, EngineSpec, start_engine
    from bot.engines.rules import EngineTable, variant_problems

    table = EngineTable.from_config(config)
    declared: dict[str, frozenset[str]] = {}
    problems = []
    for name in dict.fromkeys(rule.engine for rule in table.rules if rule.variants):
        try:
            engine = await start_engine(EngineSpec.from_config(table.entries[name]),
                                        timeout_s=ENGINE_CHECK_TIMEOUT_S)
        except EngineFailure as error:
            problems.append(f"engines.entries.{name}: {error}")
            continue
        declared[name] = engine.variants
        await engine.close()
    return problems + variant_problems(table, declared)


def _confirmed(username: str) -> bool:
    """The user typed the account name (any case); end of input means no."""
    try:
        answer = input(f"Type the account name ({username}) to confirm: ")
    except EOFError:
        print()
        return False
    return answer.strip().lower() == username.lower()


def cmd_upgrade(args: argparse.Namespace) -> int:
    from bot.lichess.account import fetch_account, upgrade_to_bot

    config = _load(args)
    url = _url(args, config)
    token = _token(config)
    info = fetch_account(url, token.value)
    if info.is_bot:
        print(f"{info.username} is already a BOT account; nothing to do.")
        return ExitCode.OK
    print(f"This turns the Lichess account {info.username!r} on {url} into a BOT account.\n"
          "It cannot be undone: the account will only be able to play through the Bot API,\n"
          "never again on the website, and it must not have played any game yet.")
    if not args.yes and not _confirmed(info.username):
        _error("not confirmed; nothing was changed.")
        return ExitCode.ERROR
    upgrade_to_bot(url, token.value)
    print(f"{info.username} is now a BOT account. Next: kibitz play")
    return ExitCode.OK


def cmd_tournament(args: argparse.Namespace) -> int:
    from bot.ops.config import parse_arena_id
    from bot.tournaments.control import ControlDir, TournamentCommand

    control = ControlDir(_load(args).state_dir)
    if args.action == "list":
        try:
            arenas = control.status()
        except ValueError as error:
            _error(str(error))
            return ExitCode.ERROR
        if arenas is None:
            print(f"no arenas known: the bot has not run with {control.root} yet")
            return ExitCode.OK
        if not arenas:
            print("the bot plays no arenas now")
        for arena in arenas:
            print(_arena_line(arena))
        return ExitCode.OK
    if args.arena is None:
        _error(f"tournament {args.action}: which arena? give its id or URL")
        return ExitCode.USAGE
    try:
        arena_id = parse_arena_id(args.arena)
    except ValueError as error:
        _error(str(error))
        return ExitCode.USAGE
    if args.action == "withdraw" and (args.team or args.password):
        _error("tournament withdraw takes no --team or --password")
        return ExitCode.USAGE
    control.submit(TournamentCommand(args.action, arena_id, args.team, args.password))
    print(f"asked the bot to {args.action} arena {arena_id} (through {control.requests})")
    return ExitCode.OK


def _arena_line(arena: dict[str, object]) -> str:
    """One arena of `kibitz tournament list`."""
    parts = [f"{arena.get('id')}", str(arena.get("name") or "?"), str(arena.get("status"))]
    if arena.get("rank") is not None:
        parts.append(f"rank {arena['rank']}")
    if arena.get("score") is not None:
        parts.append(f"{arena['score']} points in {arena.get('games')} games")
    left = arena.get("seconds_to_finish") if arena.get("status") == "started" \
        else arena.get("seconds_to_start") if arena.get("status") == "created" else None
    if isinstance(left, (int, float)) and left > 0:
        verb = "left" if arena.get("status") == "started" else "to the start"
        parts.append(f"{int(left) // 60}:{int(left) % 60:02d} {verb}")
    if arena.get("withdrawn"):
        parts.append("withdrawn")
    if arena.get("problem"):
        parts.append(f"problem: {arena['problem']}")
    return "  ".join(parts)


def cmd_book(args: argparse.Namespace) -> int:
    from bot.features.learnbook import LearnError, build_book, learned_book_path

    if args.nice:
        os.nice(args.nice)
    if args.memory_mb is not None:
        import resource

        limit = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    config = _load(args)
    sources = list(args.pgn)
    if not args.no_records and config.pgn.dir.is_dir():
        sources.insert(0, config.pgn.dir)
    if not sources:
        _error(f"book build: no games to learn from (no directory {config.pgn.dir}, the "
               "config key pgn.dir, and no PGN files given)")
        return ExitCode.USAGE
    out = args.out or learned_book_path(config.state_dir)
    min_games = args.min_games if args.min_games is not None else config.book.learn_min_games
    max_plies = args.max_plies if args.max_plies is not None else config.book.learn_max_plies
    try:
        learned, entries = build_book(sources, out, account=args.account,
                                      min_games=min_games, max_plies=max_plies)
    except LearnError as error:
        _error(f"book build: {error}; nothing was written")
        return ExitCode.ERROR
    except MemoryError:
        _error(f"book build: more than --memory-mb {args.memory_mb} MiB needed; nothing "
               "was written")
        return ExitCode.ERROR
    skipped = [f"{count} {why}" for count, why in (
        (learned.skipped_variant, "of other variants"),
        (learned.skipped_unfinished, "unfinished"),
        (learned.skipped_not_ours, "not played by the account"))
        if count]
    print(f"{out}: {entries} move{'s' if entries != 1 else ''} from {learned.games} "
          f"game{'s' if learned.games != 1 else ''}"
          + (f" (skipped: {', '.join(skipped)})" if skipped else ""))
    return ExitCode.OK


def cmd_version(args: argparse.Namespace) -> int:
    parts = [f"kibitz {_version()}", f"python {platform.python_version()}"]
    for name in ("chess", "numba", "numpy", "aiohttp", "berserk"):
        try:
            parts.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{name} missing")
    print(", ".join(parts))
    return ExitCode.OK


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: parse, run the command, exit with its code."""
    sys.exit(run(argv))


def run(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit code (main() without the sys.exit)."""
    from bot.lichess.account import AccountError

    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except ConfigError as error:
        for problem in error.problems:
            _error(problem)
        _error("the configuration is not valid; nothing was started or changed")
        return ExitCode.CONFIG
    except TokenError as error:
        _error(str(error))
        return ExitCode.TOKEN
    except AccountError as error:
        _error(str(error))
        return ExitCode.UNREACHABLE if error.unreachable else ExitCode.TOKEN
    except KeyboardInterrupt:
        _error("interrupted")
        return ExitCode.INTERRUPTED
