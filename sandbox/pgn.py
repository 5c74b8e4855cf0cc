"""Game export (`GET /game/export/{id}`): PGN with lichess's tags, or GameJson."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import chess
import chess.pgn

from sandbox.accounts import Account
from sandbox.games import Game, color_name
from sandbox.timecontrol import VARIANTS, variant_board

TERMINATIONS = {
    "outoftime": "Time forfeit",
    "timeout": "Abandoned",
    "noStart": "Abandoned",
    "aborted": "Abandoned",
}


@dataclass(frozen=True)
class ExportOptions:
    moves: bool = True
    tags: bool = True
    clocks: bool = False
    pgn_in_json: bool = False

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> ExportOptions:
        def flag(name: str, default: bool) -> bool:
            raw = query.get(name)
            return default if raw is None else raw.lower() in ("true", "1", "yes")

        return cls(moves=flag("moves", True), tags=flag("tags", True),
                   clocks=flag("clocks", False), pgn_in_json=flag("pgnInJson", False))


def result(game: Game) -> str:
    if game.playing or (game.status in ("aborted", "noStart") and game.winner is None):
        return "*"
    if game.winner is None:
        return "1/2-1/2"
    return "1-0" if game.winner == chess.WHITE else "0-1"


def _clock_comment(ms: int) -> str:
    seconds = ms // 1000
    return f"[%clk {seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}]"


def export(game: Game, base_url: str, options: ExportOptions) -> str:
    """The game as lichess exports it (tags, SAN moves, optional %clk comments)."""
    start = variant_board(game.variant, game.initial_fen)
    pgn_game = chess.pgn.Game()
    if game.initial_fen:
        pgn_game.setup(start)
    node: chess.pgn.GameNode = pgn_game
    for ply, move in enumerate(game.board.move_stack):
        node = node.add_variation(move)
        if options.clocks and ply < len(game.clock_ms_history):
            node.comment = _clock_comment(game.clock_ms_history[ply])
    headers = pgn_game.headers
    created = datetime.datetime.fromtimestamp(game.created_at_ms / 1000, tz=datetime.UTC)
    white, black = game.players[chess.WHITE], game.players[chess.BLACK]
    headers["Event"] = f"{'Rated' if game.rated else 'Casual'} {game.speed} game"
    headers["Site"] = f"{base_url}/{game.id}"
    headers["Date"] = created.strftime("%Y.%m.%d")
    headers["Round"] = "-"
    headers["White"] = white.username
    headers["Black"] = black.username
    headers["Result"] = result(game)
    headers["GameId"] = game.id
    headers["UTCDate"] = created.strftime("%Y.%m.%d")
    headers["UTCTime"] = created.strftime("%H:%M:%S")
    headers["WhiteElo"] = str(game.ratings_before[chess.WHITE])
    headers["BlackElo"] = str(game.ratings_before[chess.BLACK])
    if game.rating_diffs:
        headers["WhiteRatingDiff"] = f"{game.rating_diffs[chess.WHITE]:+d}"
        headers["BlackRatingDiff"] = f"{game.rating_diffs[chess.BLACK]:+d}"
    for color, account in game.players.items():
        if account.title:
            headers[f"{color_name(color).capitalize()}Title"] = account.title
    headers["Variant"] = VARIANTS[game.variant][0]
    headers["TimeControl"] = game.time_control.pgn_tag()
    headers["Termination"] = TERMINATIONS.get(game.status, "Normal")
    if game.playing:
        headers["Termination"] = "Unterminated"
    exporter = chess.pgn.StringExporter(headers=options.tags, variations=False,
                                        comments=options.clocks)
    text = pgn_game.accept(exporter)
    if not options.moves:
        text = text.split("\n\n")[0] + "\n\n" + result(game)
    return text + "\n\n\n"


def game_json(game: Game, base_url: str, options: ExportOptions | None = None,
              requester: Account | None = None) -> dict[str, Any]:
    """schemas/GameJson.yaml, as lila modules/api/src/main/GameApiV2.scala `toJson` makes
    it: `fullId` for a player asking with their token, `provisional` ratings, `moves`
    unless moves=false, `pgn` with pgnInJson=true."""
    options = options or ExportOptions()
    start = variant_board(game.variant, game.initial_fen)
    body: dict[str, Any] = {
        "id": game.id,
        "rated": game.rated,
        "variant": game.variant,
        "speed": game.speed,
        "perf": game.perf,
        "createdAt": game.created_at_ms,
        "lastMoveAt": game.last_move_at_ms,
        "status": game.status,
        "source": game.source,
        "players": {
            color_name(color): {
                "user": {"name": account.username, "id": account.id,
                         **({"title": account.title} if account.title else {})},
                "rating": game.ratings_before[color],
                **({"ratingDiff": game.rating_diffs[color]} if game.rating_diffs else {}),
                **({"provisional": True} if account.provisional(game.perf) else {}),
            }
            for color, account in game.players.items()
        },
    }
    mine = None if requester is None else game.color_of(requester)
    if mine is not None:
        body["fullId"] = game.full_id(mine)
    if options.moves:
        body["moves"] = _san_moves(start, game)
    if options.pgn_in_json:
        body["pgn"] = export(game, base_url, options)
    if game.initial_fen:
        body["initialFen"] = game.initial_fen
    if game.winner is not None:
        body["winner"] = color_name(game.winner)
    if game.clock is not None:
        limit = game.clock.initial_ms // 1000
        increment = game.clock.increment_ms // 1000
        body["clock"] = {"initial": limit, "increment": increment,
                         "totalTime": limit + 40 * increment}
    if game.time_control.days is not None:
        body["daysPerTurn"] = game.time_control.days
    return body


def _san_moves(start: chess.Board, game: Game) -> str:
    board = start.copy()
    sans = []
    for move in game.board.move_stack:
        sans.append(board.san(move))
        board.push(move)
    return " ".join(sans)
