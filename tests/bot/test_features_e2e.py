"""Game features end to end on the sandbox: draw offers, resignation, no takeback with a bot
and a game across a restart, chat commands, PGN files, and the book and online sources in a
real game."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

import aiohttp
import chess
import chess.pgn
from aiohttp import web

from bot.features.book import OpeningBook
from bot.features.commands import CommandResponder
from bot.features.movesource import MoveSources
from bot.features.online import OnlineEndpoints, OnlineSources, SourceSettings
from bot.game.hooks import ChatCommandHandler, GameHooks
from sandbox.online import register_online_routes
from sandbox.server import GameRecord, SandboxServer
from tests.bot.book_files import write_book
from tests.bot.e2e_support import (
    BOT,
    GUARD_S,
    UNBUDGETED,
    UNLIMITED,
    AlarmClock,
    assert_legal,
    make_config,
    post_as,
    quiet_logs,
    running_bot,
)
from tests.bot.loopback import serving

# Rook against rook: level, so the bot offers a draw with its move.
LEVEL_FEN = "4k2r/8/8/8/8/8/R7/4K3 w - - 0 40"
# The bot (black) has a bare king against two queens: it resigns.
HOPELESS_FEN = "8/8/8/3k4/8/8/8/QQ2K3 w - - 0 40"
# The bot (white) has an extra queen: it declines a draw.
WINNING_FEN = "4k3/8/8/8/8/8/3QK3/8 w - - 0 40"

# abort_after_s in the !wait game, on the alarms's test clock
WAIT_ABORT_S = 60.0

FEATURES = """
draw: {offer: true, accept: true, margin_cp: 100, moves: 1, min_move: 0}
resign: {enabled: true, threshold_cp: -800, moves: 1}
takeback: {max_per_game: 1}
"""


async def until(condition: Callable[[], object], timeout_s: float = GUARD_S,
                what: str = "") -> None:
    """Poll ``condition()`` until it holds."""
    try:
        async with asyncio.timeout(timeout_s):
            while True:
                if condition():
                    return
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what or condition}") from None


class Human:
    """A sandbox account the test plays by hand over the Board API."""

    def __init__(self, server: SandboxServer, name: str) -> None:
        self.server = server
        self.name = name
        self.token = server.add_account(name, bot=False)

    async def post(self, game_id: str, tail: str) -> None:
        status = await post_as(self.server, self.token, f"/api/board/game/{game_id}/{tail}")
        assert status == 200, f"{self.name}: {tail} refused with {status}"

    async def say(self, game_id: str, text: str, room: str = "player") -> None:
        async with aiohttp.ClientSession(
                headers={"Authorization": f"Bearer {self.token}"}) as session, session.post(
                f"{self.server.url}/api/board/game/{game_id}/chat",
                data={"room": room, "text": text}) as reply:
            assert reply.status == 200, await reply.text()

    async def move_after(self, game_id: str, plies: int, uci: str | None = None) -> None:
        """Wait until the game has ``plies`` moves, then play ``uci`` (or any quiet move)."""
        server = self.server
        await until(lambda: game_id in server.lobby.games, what=f"{game_id} accepted")
        await until(lambda: len(server.game_record(game_id).moves) >= plies
                    or server.game_record(game_id).finished, what=f"{game_id} ply {plies}")
        record = server.game_record(game_id)
        if record.finished:
            return
        if uci is None:
            board = chess.Board(record.fen)
            uci = next(m for m in board.legal_moves
                       if not board.is_capture(m) and not board.gives_check(m)).uci()
        await self.post(game_id, f"move/{uci}")


def safe_move(fen: str) -> str:
    """A quiet move after which the opponent can capture nothing: the level stays level."""
    board = chess.Board(fen)
    for move in board.legal_moves:
        if board.is_capture(move) or board.gives_check(move):
            continue
        board.push(move)
        hangs = any(board.is_capture(reply) for reply in board.legal_moves)
        board.pop()
        if not hangs:
            return move.uci()
    raise AssertionError(f"no safe move in {fen}")


def bot_lines(record: GameRecord, room: str | None = None) -> list[str]:
    return [line.text for line in record.chat
            if line.username.lower() == BOT and (room is None or line.room == room)]


def system_lines(record: GameRecord) -> list[str]:
    return [line.text for line in record.chat if line.username == "lichess"]


def read_games(path: Path) -> list[chess.pgn.Game]:
    stream = io.StringIO(path.read_text())
    games = []
    while (game := chess.pgn.read_game(stream)) is not None:
        games.append(game)
    return games


def bot_nodes(game: chess.pgn.Game, bot_color: chess.Color) -> Iterable[chess.pgn.ChildNode]:
    return [node for node in game.mainline() if node.turn() != bot_color]


async def test_draws_resignation_chat_commands_and_pgn(tmp_path: Path) -> None:
    quiet_logs()
    book = write_book(tmp_path / "book.bin", [(chess.Board(), "g1f3", 1)])
    config = make_config(tmp_path, FEATURES + f"""
book: {{enabled: true, books: {{standard: ["{book}"]}}, selection: best_move}}
""")
    # The alarms's clock stands still: no game here is aborted while the test, on a busy
    # machine, takes its time to move.
    async with SandboxServer(keepalive_s=0.5, limits=UNLIMITED) as server:
        peace, loser, rival, chatter = (Human(server, n) for n in
                                        ("peace", "loser", "rival", "chatter"))
        server.add_account("fan", bot=False)
        fan = server.account("fan")
        async with running_bot(server, config, timings=UNBUDGETED,
                               alarm_clock=AlarmClock()) as run:
            draw_id = await server.challenge("peace", BOT, 120, 1, variant="fromPosition",
                                             fen=LEVEL_FEN, color="white")
            resign_id = await server.challenge("loser", BOT, 120, 1, variant="fromPosition",
                                               fen=HOPELESS_FEN, color="white")
            decline_id = await server.challenge("rival", BOT, 120, 1, variant="fromPosition",
                                                fen=WINNING_FEN, color="black")
            chat_id = await server.challenge("chatter", BOT, 120, 1, color="black")

            async def draw_game() -> None:
                await peace.move_after(draw_id, 0, "a2a3")
                # The bot's first move cannot carry an offer on lila (the game is still
                # abortable, so not `drawable`): its second one does.
                await until(lambda: len(server.game_record(draw_id).moves) == 2)
                await peace.post(draw_id, f"move/{safe_move(server.game_record(draw_id).fen)}")
                game = server.game(draw_id)
                await until(lambda: chess.BLACK in game.draw_offers, what="the bot's offer")
                await peace.post(draw_id, "draw/yes")

            async def resign_game() -> None:
                await loser.move_after(resign_id, 0, "e1e2")
                await loser.move_after(resign_id, 2, "e2e1")

            async def decline_game() -> None:
                await rival.move_after(decline_id, 1)
                await rival.post(decline_id, "draw/yes")
                await until(lambda: "Draw offer declined" in system_lines(
                    server.game_record(decline_id)), what="the bot's refusal")
                await rival.post(decline_id, "resign")

            async def chat_game() -> None:
                await until(lambda: chat_id in server.lobby.games)
                await chatter.move_after(chat_id, 1)
                # The PV of the bot's second move (its first was the book's) is out before
                # the PV is switched off.
                await until(lambda: any(" | PV " in line for line in bot_lines(
                    server.game_record(chat_id), "player")), what="a kibitz line")
                for text in ("!help", "!name", "!eval", "!queue", "!ev@l <%s{0}>", "!pv off"):
                    await chatter.say(chat_id, text)
                server.game(chat_id).say(fan, "spectator", "!eval")
                await until(lambda: any("PV after each move: off" in line for line in
                                        bot_lines(server.game_record(chat_id))))
                for _ in range(2):  # two more moves each, with the PV switched off
                    plies = len(server.game_record(chat_id).moves)
                    await chatter.move_after(chat_id, plies + (plies + 1) % 2)
                    await until(lambda: len(server.game_record(chat_id).moves) % 2 == 1)
                # A PV line wrongly posted for the last move would still be found: the chat
                # is read only after the bot is through with the game.
                await chatter.post(chat_id, "resign")

            await asyncio.gather(draw_game(), resign_game(), decline_game(), chat_game())
            records = {gid: await server.wait_for_game_end(gid, GUARD_S)
                       for gid in (draw_id, resign_id, decline_id, chat_id)}
            await run.done_with(records)  # goodbyes, last kibitz lines and PGN files
            records = {gid: server.game_record(gid) for gid in records}

    for record in records.values():
        assert_legal(record)
    draw, resign, decline, chat = (records[g] for g in (draw_id, resign_id, decline_id, chat_id))
    assert draw.status == "draw" and "Black offers draw" in system_lines(draw)
    # Not while abortable (its first move), then at once: white, black, white played.
    assert resign.status == "resign" and resign.winner == "white" and len(resign.moves) == 3
    assert decline.status == "resign" and decline.winner == "white"

    player, spectator = bot_lines(chat, "player"), bot_lines(chat, "spectator")
    assert any(line.startswith("Hi chatter, I am kibitz") for line in player)
    assert "Commands: !help !name !eval !pv on|off !queue !wait" in player
    assert any(line.startswith("I am kibitz, running") for line in player)
    assert "I share my evaluation with spectators only." in player
    assert "Unknown command. Type !help for the list." in player
    assert "No challenges waiting." in player
    asked = next(i for i, line in enumerate(chat.chat) if line.username == "fan")
    assert any(line.username.lower() == BOT and line.room == "spectator"
               and line.text.startswith("depth ") for line in chat.chat[asked:])
    off_at = next(i for i, line in enumerate(player) if line.startswith("PV after each move: off"))
    assert not any("| PV " in line for line in player[off_at + 1:]), "PV posted after !pv off"
    assert any("| PV " in line for line in player[:off_at])
    assert all(len(line) <= 140 for line in player + spectator)

    games_dir = tmp_path / "games"
    draw_pgn = read_games(games_dir / f"{draw_id}.pgn")
    assert len(draw_pgn) == 1
    game = draw_pgn[0]
    assert game.headers["Result"] == "1/2-1/2" and game.headers["FEN"] == LEVEL_FEN
    assert game.headers["White"] == "peace" and game.headers["Black"] == "kibitz"
    assert [n.move.uci() for n in game.mainline()] == list(draw.moves)
    ours = bot_nodes(game, chess.BLACK)
    assert ours and all(node.eval() is not None and node.eval_depth() for node in ours)
    assert all(node.clock() is not None for node in game.mainline())
    assert chat.moves[0] == "g1f3"  # from the configured book
    chat_pgn = read_games(games_dir / f"{chat_id}.pgn")[0]
    first = chat_pgn.next()
    assert first is not None
    assert "book" in first.comment
    assert chat_pgn.headers["Result"] == "1-0" and chat_pgn.headers["Termination"] == "Normal"
    assert "(" in (games_dir / f"{chat_id}.pgn").read_text(), "no PV variation in the PGN"
    assert "[%eval" in (games_dir / f"{resign_id}.pgn").read_text()


async def test_wait_gives_the_opponent_one_more_abort_period(tmp_path: Path) -> None:
    quiet_logs()
    clock = AlarmClock()
    config = make_config(tmp_path, FEATURES)
    config = replace(config, game=replace(config.game, abort_after_s=WAIT_ABORT_S))
    async with SandboxServer(keepalive_s=0.5, limits=UNLIMITED) as server:
        slow = Human(server, "slowcoach")
        async with running_bot(server, config, alarm_clock=clock):
            # a challenge game: lila never expires those, so only the bot can abort it
            game_id = await server.challenge("slowcoach", BOT, 120, 1, color="black")
            await until(lambda: game_id in server.lobby.games
                        and len(server.game_record(game_id).moves) == 1, what="our first move")
            await slow.say(game_id, "!wait")
            await until(lambda: any(line.startswith("OK, I will wait") for line in bot_lines(
                server.game_record(game_id), "player")), what="the answer to !wait")
            clock.advance(1.5 * WAIT_ABORT_S)  # past one abort period, within the two
            await clock.looked_at()
            assert not server.game_record(game_id).finished, "aborted despite !wait"
            clock.advance(WAIT_ABORT_S)  # past both
            record = await server.wait_for_game_end(game_id, GUARD_S)
    assert record.status == "aborted" and len(record.moves) == 1


async def test_no_takeback_with_a_bot_and_the_pgn_completed_across_a_restart(
        tmp_path: Path) -> None:
    """On lila a BOT's takeback preference is NEVER (PrefApi.scala `setBot`), so a person's
    proposal is answered 200 and does nothing: the bot never sees one, grants none, and
    its game goes on, across a restart of the bot, to a complete PGN."""
    quiet_logs()
    config = make_config(tmp_path, FEATURES)
    # Stopping the bot leaves the game running, for the next bot process to take up.
    config = replace(config, game=replace(config.game, shutdown_grace_s=0.0,
                                          shutdown_action="abandon"))
    clock = AlarmClock()  # standing still: the test's own moves are never too slow
    async with SandboxServer(keepalive_s=0.5) as server:
        undoer = Human(server, "undoer")
        token = server.add_account(BOT, bot=True)
        ledger = tmp_path / "state" / "takebacks.json"
        async with running_bot(server, config, token=token, alarm_clock=clock):
            game_id = await server.challenge("undoer", BOT, 180, 2, color="white")
            await undoer.move_after(game_id, 0, "e2e4")
            await until(lambda: len(server.game_record(game_id).moves) == 2)
            await undoer.post(game_id, "takeback/yes")
            await undoer.move_after(game_id, 2, "d2d4")
            await until(lambda: len(server.game_record(game_id).moves) == 4)
            assert not server.game(game_id).takeback_offers
        # The bot is gone, the game goes on; a new bot process takes it up again.
        async with running_bot(server, config, token=token, alarm_clock=clock):
            await undoer.move_after(game_id, 4)
            await until(lambda: len(server.game_record(game_id).moves) == 6,
                        what="the restarted bot's move")
            await undoer.post(game_id, "takeback/yes")
            await undoer.move_after(game_id, 6)
            await until(lambda: len(server.game_record(game_id).moves) == 8)
            await undoer.post(game_id, "resign")
            record = await server.wait_for_game_end(game_id, GUARD_S)
            await until(lambda: (tmp_path / "games" / f"{game_id}.pgn").exists(),
                        what="the PGN file")
        assert not ledger.exists() or json.loads(ledger.read_text()) == {}

    assert record.status == "resign" and record.moves[0] == "e2e4"
    assert not [text for text in system_lines(record) if "akeback" in text]
    game = read_games(tmp_path / "games" / f"{game_id}.pgn")[0]
    nodes = list(game.mainline())
    assert [n.move.uci() for n in nodes] == list(record.moves)
    # The moves before the restart come with their clocks from the server's export ...
    assert nodes[0].clock() is not None and nodes[1].clock() is not None
    # ... and the bot's moves after the restart with its evaluation.
    assert nodes[5].eval() is not None and nodes[7].eval() is not None
    assert game.headers["Annotator"] == "kibitz" and game.headers["Result"] == "0-1"


def _online_hooks(book: OpeningBook, online_url: str,
                  session: aiohttp.ClientSession) -> GameHooks:
    on = SourceSettings(enabled=True, timeout_s=1.0, max_misses=2)
    endpoints = OnlineEndpoints(online_url, online_url, online_url)

    def online() -> OnlineSources:
        return OnlineSources(session, endpoints, explorer=on, cloud_eval=on, online_tablebase=on)

    def commands() -> ChatCommandHandler:
        return CommandResponder()

    sources = MoveSources(book=book, online=online)
    return GameHooks(move_sources=sources, chat_commands=commands)


async def test_book_and_online_sources_play_in_real_games(tmp_path: Path) -> None:
    quiet_logs()
    start = chess.Board()
    after_e4_e5 = chess.Board()
    for uci in ("e2e4", "e7e5"):
        after_e4_e5.push_uci(uci)
    rook_ending = chess.Board(LEVEL_FEN)
    rook_ending.push_uci("a2a3")
    book = OpeningBook({"standard": [write_book(tmp_path / "book.bin", [(start, "e2e4", 5)])]},
                       selection="best_move")
    app = web.Application()
    fixtures = register_online_routes(app)
    fixtures.add_explorer_move(after_e4_e5.fen(), "g1f3", white=50, draws=20, black=30)
    fixtures.add_tablebase(rook_ending.fen(), "draw", [("h8h1", "draw"), ("h8h2", "draw")])
    # Far from move 100: only the tablebase's draw can make the bot offer one.
    config = make_config(tmp_path, "draw: {offer: true, min_move: 100}")
    try:
        async with serving(app) as online_url, SandboxServer(keepalive_s=0.5) as server, \
                aiohttp.ClientSession() as session:
            opener, ender = Human(server, "opener"), Human(server, "ender")
            hooks = _online_hooks(book, online_url, session)
            async with running_bot(server, config, hooks=hooks):
                game_id = await server.challenge("opener", BOT, 120, 1, color="black")
                ending_id = await server.challenge("ender", BOT, 120, 1, variant="fromPosition",
                                                   fen=LEVEL_FEN, color="white")

                async def opening() -> None:
                    await opener.move_after(game_id, 1, "e7e5")
                    await opener.move_after(game_id, 3, "b8c6")
                    await opener.move_after(game_id, 5)
                    await until(lambda: len(server.game_record(game_id).moves) >= 7)
                    await opener.post(game_id, "resign")

                async def ending() -> None:
                    await ender.move_after(ending_id, 0, "a2a3")
                    # An offer with the bot's first move is too early on lila (abortable):
                    # the tablebase also knows the position after white's second move.
                    await until(lambda: len(server.game_record(ending_id).moves) == 2)
                    board = chess.Board(server.game_record(ending_id).fen)
                    quiet = next(m for m in board.legal_moves
                                 if not board.is_capture(m) and not board.gives_check(m))
                    board.push(quiet)
                    reply = next(iter(board.legal_moves)).uci()
                    fixtures.add_tablebase(board.fen(), "draw", [(reply, "draw")])
                    await ender.post(ending_id, f"move/{quiet.uci()}")
                    await until(lambda: chess.BLACK in server.game(ending_id).draw_offers,
                                what="a draw offer on the tablebase's word")
                    await ender.post(ending_id, "draw/yes")

                await asyncio.gather(opening(), ending())
                record = await server.wait_for_game_end(game_id, GUARD_S)
                ending_record = await server.wait_for_game_end(ending_id, GUARD_S)
    finally:
        book.close()
    assert ending_record.moves[0] == "a2a3" and len(ending_record.moves) == 4
    assert ending_record.moves[1] in ("h8h1", "h8h2") and ending_record.status == "draw"
    assert record.moves[0] == "e2e4"  # the book
    assert record.moves[2] == "g1f3"  # the explorer
    # Out of the explorer after two misses in a row: the engine plays and it stops asking.
    assert fixtures.requests["explorer"] == 3
    assert fixtures.requests["cloud_eval"] >= 2


async def test_online_sources_from_the_config_ask_the_configured_server(tmp_path: Path) -> None:
    """online.* switched on in the config, no hooks: the bot asks the server it plays on
    (here the sandbox's own stand-ins) and plays what they answer."""
    quiet_logs()
    start = chess.Board()
    after = chess.Board()
    for uci in ("b2b3", "e7e5"):
        after.push_uci(uci)
    online = """
online:
  explorer: {enabled: true, timeout_s: 1.0}
  cloud_eval: {enabled: true, timeout_s: 1.0, min_depth: 20}
"""
    config = make_config(tmp_path, online)
    async with SandboxServer(keepalive_s=0.5) as server:
        server.online.add_cloud_eval(start.fen(), "b2b3 e7e5", depth=30, cp=10)
        server.online.add_explorer_move(after.fen(), "c1b2", white=40, draws=30, black=30)
        rival = Human(server, "rival")
        async with running_bot(server, config):
            game_id = await server.challenge("rival", BOT, 120, 1, color="black")
            await rival.move_after(game_id, 1, "e7e5")
            await until(lambda: len(server.game_record(game_id).moves) >= 3,
                        what="the bot's second move")
            await rival.post(game_id, "resign")
            record = await server.wait_for_game_end(game_id, GUARD_S)
    assert record.moves[:3] == ("b2b3", "e7e5", "c1b2")
    assert server.online.requests["cloud_eval"] >= 1
    assert server.online.requests["explorer"] >= 2


async def test_a_suggesting_tablebase_leaves_the_engine_only_the_winning_moves(
        tmp_path: Path) -> None:
    """tablebase.quality suggest: the online tablebase names two winning moves (best first,
    as Lichess sorts them) and the engine must choose between them, over all the queen moves
    it would rather play."""
    quiet_logs()
    fen = "4k3/8/8/8/8/8/3Q4/4K3 w - - 0 1"
    config = make_config(tmp_path, """
tablebase: {quality: suggest}
online:
  online_tablebase: {enabled: true, timeout_s: 1.0}
""")
    async with SandboxServer(keepalive_s=0.5) as server:
        # A move's category is the opponent's outcome after it: "loss" wins for us.
        server.online.add_tablebase(fen, "win", [("e1f1", "loss"), ("e1e2", "loss"),
                                                 ("d2d1", "draw")])
        rival = Human(server, "rival")
        async with running_bot(server, config):
            game_id = await server.challenge("rival", BOT, 120, 1, variant="fromPosition",
                                             fen=fen, color="black")
            await until(lambda: game_id in server.lobby.games, what="the game")
            await until(lambda: len(server.game_record(game_id).moves) >= 1,
                        what="the bot's move")
            await rival.post(game_id, "resign")
            record = await server.wait_for_game_end(game_id, GUARD_S)
    assert record.moves[0] in ("e1f1", "e1e2")
    assert server.online.requests["tablebase"] >= 1
