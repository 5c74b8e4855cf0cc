"""PGN records of our games: Lichess headers, ``[%clk]`` per move, our ``[%eval]`` and PV.

A :class:`GameRecord` follows one game from its ``gameFull`` and ``gameState``
events and notes our search after each of our moves. When the game ends,
:func:`render_pgn` builds the PGN and :func:`write_pgn` appends it to the file
the ``pgn.grouping`` key chooses. A record started in the middle of a game
(after a restart) has no clocks for the earlier moves; :func:`merge_export`
completes it from the server's own export of the finished game. A game that
ended while no visit watched it (correspondence) is written from the export
alone (:func:`save_unwatched`).
"""

from __future__ import annotations

import asyncio
import enum
import io
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import chess
import chess.engine
import chess.pgn

from bot.engines.searchline import SearchLine
from bot.game.hooks import GameContext, SourcedMove
from bot.game.position import common_prefix
from bot.lichess.client import export_path
from bot.lichess.events import STARTPOS, Color, GameFull, GameState, GameStatus, Player
from bot.lichess.variants import PGN_NAMES, new_board
from bot.ops.config import PgnConfig

log = logging.getLogger(__name__)

SINGLE_FILE_NAME = "games.pgn"
EXPORT_TIMEOUT_S = 10.0  # the game export after a restart: worth a little wait, not forever
# Game status -> the Termination header Lichess writes.
TERMINATIONS = {
    "outoftime": "Time forfeit",
    "timeout": "Abandoned",
    "noStart": "Abandoned",
    "aborted": "Abandoned",
    "cheat": "Rules infraction",
    "unknownFinish": "Unterminated",
    "started": "Unterminated",
    "created": "Unterminated",
}
_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9_-]")


class PgnGrouping(enum.StrEnum):
    GAME = "game"  # one file per game: <game id>.pgn
    OPPONENT = "opponent"  # one file per opponent: <opponent>.pgn
    SINGLE = "single"  # every game in games.pgn


@dataclass(frozen=True, slots=True)
class SearchNote:
    """The search line behind one of our moves (None: no search chose it, a book move say;
    its PV starts with the move) and the source that chose it."""

    line: SearchLine | None
    source: str | None = None  # "book", "tablebase", ...: named in a comment when not the engine


@dataclass
class GameRecord:
    """What we know of one game, fed by the game loop."""

    game_id: str
    site: str
    variant: str
    rated: bool
    speed: str
    initial_fen: str
    white: Player
    black: Player
    clock_initial_s: float | None
    clock_increment_s: float | None
    annotator: str
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    moves: list[str] = field(default_factory=list)
    clocks_s: dict[int, float] = field(default_factory=dict)  # ply -> mover's clock after it
    notes: dict[int, SearchNote] = field(default_factory=dict)  # ply -> our search
    first_seen_ply: int = 0  # plies already played when we joined (a restart)

    @classmethod
    def from_game_full(cls, full: GameFull, *, server_url: str, me: str) -> GameRecord:
        record = cls(
            game_id=full.id, site=f"{server_url.rstrip('/')}/{full.id}", variant=full.variant,
            rated=full.rated, speed=full.speed, initial_fen=full.initial_fen,
            white=full.white, black=full.black, clock_initial_s=full.clock_initial_s,
            clock_increment_s=full.clock_increment_s, annotator=me,
            first_seen_ply=len(full.state.moves),
        )
        record.moves = list(full.state.moves)
        return record

    @property
    def complete(self) -> bool:
        """True when we saw the game from its first move (clocks for every move)."""
        return self.first_seen_ply == 0

    def update(self, state: GameState) -> None:
        """Follow a gameState: new moves get the mover's clock, a takeback drops moves."""
        moves = list(state.moves)
        if moves[: len(self.moves)] != self.moves:  # a takeback (or a rebuilt list)
            common = common_prefix(tuple(moves), tuple(self.moves))
            self.clocks_s = {p: c for p, c in self.clocks_s.items() if p < common}
            self.notes = {p: n for p, n in self.notes.items() if p < common}
            self.first_seen_ply = min(self.first_seen_ply, common)
        grew = len(moves) > len(self.moves)
        self.moves = moves
        if grew and moves:
            last = len(moves) - 1
            mover = chess.WHITE if self._mover(last) == "white" else chess.BLACK
            self.clocks_s[last] = state.clock_for(mover).time_s

    def note_search(self, ply: int, note: SearchNote) -> None:
        """Our search behind the move at ``ply`` (0-based index in the game's move list)."""
        self.notes[ply] = note

    def _mover(self, ply: int) -> Color:
        white_first = self.start_board().turn == chess.WHITE
        return "white" if (ply % 2 == 0) == white_first else "black"

    def start_board(self) -> chess.Board:
        """The game's starting position, on the variant's board."""
        return new_board(self.variant, self.initial_fen)

    def headers(self, result: str, termination: str) -> dict[str, str]:
        """The PGN tag pairs, in the order Lichess writes them."""
        tags = {
            "Event": f"{'Rated' if self.rated else 'Casual'} {self.speed.capitalize()} game",
            "Site": self.site,
            "Date": self.started_at.strftime("%Y.%m.%d"),
            "Round": "-",
            "White": self.white.name,
            "Black": self.black.name,
            "Result": result,
            "GameId": self.game_id,
            "UTCDate": self.started_at.strftime("%Y.%m.%d"),
            "UTCTime": self.started_at.strftime("%H:%M:%S"),
            "WhiteElo": str(self.white.rating) if self.white.rating is not None else "?",
            "BlackElo": str(self.black.rating) if self.black.rating is not None else "?",
        }
        if self.white.title:
            tags["WhiteTitle"] = self.white.title
        if self.black.title:
            tags["BlackTitle"] = self.black.title
        tags["Variant"] = PGN_NAMES.get(self.variant, self.variant)
        tags["TimeControl"] = _time_control(self.clock_initial_s, self.clock_increment_s)
        if self.initial_fen != STARTPOS or self.variant == "chess960":
            tags["FEN"] = self.start_board().fen()
            tags["SetUp"] = "1"
        tags["Termination"] = termination
        tags["Annotator"] = self.annotator
        return tags


def game_result(status: str, winner: Color | None) -> str:
    if winner == "white":
        return "1-0"
    if winner == "black":
        return "0-1"
    if status in ("created", "started", "aborted", "noStart", "unknownFinish"):
        return "*"
    return "1/2-1/2"


def termination(status: str) -> str:
    return TERMINATIONS.get(status, "Normal")


def build_game(record: GameRecord, status: str, winner: Color | None) -> chess.pgn.Game:
    """The finished game as a python-chess tree, from our record alone."""
    game = chess.pgn.Game()
    game.setup(record.start_board())
    for name, value in record.headers(game_result(status, winner), termination(status)).items():
        game.headers[name] = value
    node: chess.pgn.GameNode = game
    for ply, uci in enumerate(record.moves):
        try:
            move = node.board().parse_uci(uci)
        except ValueError:
            log.warning("game %s: move %d %r is not legal; the PGN stops there",
                        record.game_id, ply + 1, uci)
            break
        node = node.add_variation(move)
        if ply in record.clocks_s:
            node.set_clock(record.clocks_s[ply])
    _annotate(game, record)
    return game


def _annotate(game: chess.pgn.Game, record: GameRecord) -> None:
    """Our evals as [%eval] comments on our moves, each PV as a variation after the move."""
    nodes = list(game.mainline())
    for ply, note in record.notes.items():
        if ply >= len(nodes):
            continue
        node, line = nodes[ply], note.line
        if line is not None and line.score is not None:
            node.set_eval(line.score, line.depth)
        if note.source and note.source != "engine":
            node.comment = f"{note.source} {node.comment}".strip()
        pv = line.pv if line is not None else ()
        _add_pv(node, pv[1:] if pv[:1] == (node.move,) else ())


def _add_pv(node: chess.pgn.GameNode, line: Sequence[chess.Move]) -> None:
    """Hang ``line`` (what we expected after the move at ``node``) below it as a variation."""
    board = node.board()
    for index, move in enumerate(line):
        if not board.is_legal(move):
            return
        if not node.variations:  # the game ended here: a line would become the mainline
            return
        existing = next((v for v in node.variations if v.move == move), None)
        if existing is None:
            legal = []
            for rest in line[index:]:
                if not board.is_legal(rest):
                    break
                legal.append(rest)
                board.push(rest)
            node.add_line(legal)
            return
        node = existing
        board.push(move)


def read_export(game_id: str, exported_pgn: str) -> chess.pgn.Game | None:
    """The server's export of a game as a PGN game; None (and a warning) if unreadable."""
    try:
        game = chess.pgn.read_game(io.StringIO(exported_pgn))
    except (ValueError, KeyError) as exc:
        log.warning("game %s: the export cannot be read (%s)", game_id, exc)
        return None
    if game is None or game.errors:
        log.warning("game %s: the export is not a readable game", game_id)
        return None
    return game


def merge_export(record: GameRecord, exported_pgn: str) -> chess.pgn.Game | None:
    """The server's export of the game with our evals and PVs added; None if it does not fit.

    The export is the authority for headers and clocks; it fits when its moves
    are the moves we saw.
    """
    game = read_export(record.game_id, exported_pgn)
    if game is None:
        return None
    exported = [node.move.uci() for node in game.mainline()]
    ours = [m.uci() for m in (_uci_moves(record) or [])]
    if exported != ours:
        log.warning("game %s: the export's moves differ from ours", record.game_id)
        return None
    game.headers["Annotator"] = record.annotator
    _annotate(game, record)
    return game


def _uci_moves(record: GameRecord) -> list[chess.Move] | None:
    """Our moves normalised through a board (castling in the board's own notation)."""
    board = record.start_board()
    moves = []
    for uci in record.moves:
        try:
            move = board.parse_uci(uci)
        except ValueError:
            return None
        moves.append(move)
        board.push(move)
    return moves


def render_pgn(game: chess.pgn.Game) -> str:
    exporter = chess.pgn.StringExporter(headers=True, variations=True, comments=True)
    return game.accept(exporter) + "\n"


def pgn_path(directory: Path, grouping: PgnGrouping | str, *, game_id: str,
             opponent: str) -> Path:
    """The file a game goes to; user names are reduced to safe file-name characters."""
    grouping = PgnGrouping(grouping)
    if grouping is PgnGrouping.SINGLE:
        return directory / SINGLE_FILE_NAME
    name = game_id if grouping is PgnGrouping.GAME else opponent.lower()
    safe = _UNSAFE_FILE_CHARS.sub("_", name)[:64] or "unknown"
    return directory / f"{safe}.pgn"


def write_pgn(path: Path, text: str) -> None:
    """Append one game to ``path`` (creating the directory), a blank line between games."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        if out.tell() > 0:
            out.write("\n")
        out.write(text)


def finished_pgn(record: GameRecord, status: str, winner: Color | None,
                 exported_pgn: str | None = None) -> str:
    """The PGN of the finished game: from the export when our record is partial."""
    game = None
    if not record.complete and exported_pgn:
        game = merge_export(record, exported_pgn)
    if game is None:
        game = build_game(record, status, winner)
    return render_pgn(game)


def save_game(config: PgnConfig, record: GameRecord, *, status: str, winner: Color | None,
              opponent: str, exported_pgn: str | None = None) -> Path | None:
    """Write the finished game where ``config`` says; the file written, or None if disabled.

    Blocking file I/O: call it through ``asyncio.to_thread`` from the event loop.
    """
    if not config.enabled:
        return None
    path = pgn_path(config.dir, config.grouping, game_id=record.game_id, opponent=opponent)
    write_pgn(path, finished_pgn(record, status, winner, exported_pgn))
    return path


def unwatched_pgn(game_id: str, exported_pgn: str) -> str | None:
    """The PGN of a game that ended while we were not watching (a correspondence game between
    visits): the server's export, checked; None if it is unreadable or not finished."""
    game = read_export(game_id, exported_pgn)
    if game is None:
        return None
    if game.headers.get("Result", "*") == "*":
        log.warning("game %s: the export shows no result yet", game_id)
        return None
    return render_pgn(game)


def save_unwatched(config: PgnConfig, game_id: str, *, opponent: str,
                   exported_pgn: str) -> Path | None:
    """Write a game that ended while we were away, from its export; the file written, or None
    (disabled, or an export that does not do). Blocking file I/O, as :func:`save_game`."""
    text = unwatched_pgn(game_id, exported_pgn) if config.enabled else None
    if text is None:
        return None
    path = pgn_path(config.dir, config.grouping, game_id=game_id, opponent=opponent)
    write_pgn(path, text)
    return path


def _time_control(initial_s: float | None, increment_s: float | None) -> str:
    if initial_s is None:
        return "-"
    return f"{round(initial_s)}+{round(increment_s or 0)}"


async def fetch_export(session: aiohttp.ClientSession, server_url: str,
                       game_id: str) -> str | None:
    """The server's PGN of a game (``GET /game/export/{id}`` with clocks), or None."""
    url = server_url.rstrip("/") + export_path(game_id)
    params = {"clocks": "true", "evals": "false", "literate": "false", "opening": "true"}
    try:
        async with session.get(url, params=params, headers={"Accept": "application/x-chess-pgn"},
                               timeout=aiohttp.ClientTimeout(total=EXPORT_TIMEOUT_S)) as reply:
            if reply.status != 200:
                log.warning("game %s: export answered HTTP %d", game_id, reply.status)
                return None
            return await reply.text()
    except (aiohttp.ClientError, TimeoutError, UnicodeDecodeError) as exc:
        log.warning("game %s: export failed (%s)", game_id, type(exc).__name__)
        return None


ExportFetcher = Callable[[str], Awaitable[str | None]]


class PgnObserver:
    """Keeps the PGN record of one game and writes it when the game ends (a game observer).

    A game joined in the middle (after a restart) is completed from the server's
    export, fetched with ``fetch_export`` when the game is over.
    """

    def __init__(self, config: PgnConfig, full: GameFull, context: GameContext, *,
                 server_url: str, fetch_export: ExportFetcher | None = None) -> None:
        self.config = config
        self.record = GameRecord.from_game_full(full, server_url=server_url, me=context.me)
        self.opponent = context.opponent.name
        self.fetch_export = fetch_export
        self.written: Path | None = None

    def game_state(self, state: GameState) -> None:
        self.record.update(state)

    def our_move(self, ply: int, board: chess.Board, chosen: SourcedMove) -> None:
        """Our move at ``ply`` and the search (or source) behind it."""
        self.record.note_search(ply, SearchNote(
            chosen.line, source=None if chosen.source == "engine" else chosen.source))

    async def game_finished(self, status: str, winner: str | None) -> None:
        if not self.config.enabled or status == GameStatus.ABORTED:  # an aborted game is no game
            return
        exported = None
        if not self.record.complete and self.fetch_export is not None:
            exported = await self.fetch_export(self.record.game_id)
        side: Color | None = "white" if winner == "white" else "black" if winner else None
        self.written = await asyncio.to_thread(
            save_game, self.config, self.record, status=status, winner=side,
            opponent=self.opponent, exported_pgn=exported)
        if self.written is not None:
            log.info("PGN written to %s", self.written)
