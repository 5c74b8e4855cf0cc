"""Sandbox stand-ins for the Lichess opening explorer, cloud evaluation and tablebase.

They answer from tables that tests (or a demo) fill in, keyed by position
(the FEN without its move counters), in the shape the official services
reply with. Unknown positions get what the real services give: an explorer
reply with no moves, a 404 from cloud eval, "unknown" from the tablebase.
Faults can be injected per service: a delay, or an HTTP status instead of the
answer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import chess
from aiohttp import web

SERVICES = ("explorer", "cloud_eval", "tablebase")


def position_key(fen: str) -> str:
    """The FEN without halfmove clock and move number: what the tables are keyed by."""
    return " ".join(fen.replace("_", " ").split()[:4])


@dataclass
class OnlineFixtures:
    """What the sandbox's online services know, and the faults they inject."""

    explorer: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    cloud_eval: dict[str, dict[str, Any]] = field(default_factory=dict)
    tablebase: dict[str, dict[str, Any]] = field(default_factory=dict)
    delay_s: dict[str, float] = field(default_factory=dict)  # per service
    fail_status: dict[str, int] = field(default_factory=dict)  # per service
    requests: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SERVICES, 0))
    # Requests that carried an Authorization header, per service.
    authorized: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SERVICES, 0))

    def add_explorer_move(self, fen: str, uci: str, *, white: int = 10, draws: int = 10,
                          black: int = 10) -> None:
        """Record that ``uci`` was played in ``fen`` (that many games of each result)."""
        board = chess.Board(fen)
        move = board.parse_uci(uci)
        self.explorer.setdefault(position_key(fen), []).append({
            "uci": uci, "san": board.san(move), "averageRating": 2200,
            "white": white, "draws": draws, "black": black, "game": None, "opening": None,
        })

    def add_cloud_eval(self, fen: str, line: str, *, depth: int = 30, cp: int | None = 0,
                       mate: int | None = None) -> None:
        """A cloud evaluation of ``fen``: the PV (UCI, spaces) and a score for White."""
        pv: dict[str, Any] = {"moves": line}
        if mate is not None:
            pv["mate"] = mate
        else:
            pv["cp"] = cp
        self.cloud_eval[position_key(fen)] = {
            "fen": position_key(fen), "knodes": 1000, "depth": depth, "pvs": [pv]}

    def add_tablebase(self, fen: str, category: str, moves: list[tuple[str, str]], *,
                      variant: type[chess.Board] = chess.Board) -> None:
        """The tablebase verdict on ``fen`` and its moves (UCI, category after it), best
        first; ``variant``: the board class of the variant's tables (atomic, antichess)."""
        board = variant(fen)
        path = "/" + ("standard" if variant.uci_variant == "chess" else str(variant.uci_variant))
        self.tablebase[position_key(fen)] = {
            "path": path,
            "category": category, "dtz": None, "checkmate": False, "stalemate": False,
            "moves": [{"uci": uci, "san": board.san(board.parse_uci(uci)), "category": cat,
                       "dtz": None, "zeroing": False} for uci, cat in moves],
        }


def register_online_routes(app: web.Application,
                           fixtures: OnlineFixtures | None = None) -> OnlineFixtures:
    """Add ``/lichess``, ``/api/cloud-eval`` and the tablebase's ``/standard``, ``/atomic``
    and ``/antichess`` to ``app``; returns the tables."""
    tables = fixtures if fixtures is not None else OnlineFixtures()

    async def checked_fen(service: str, request: web.Request) -> str | web.Response:
        """The request's FEN, or the reply to send instead (an injected fault, a bad FEN)."""
        tables.requests[service] = tables.requests.get(service, 0) + 1
        if "Authorization" in request.headers:
            tables.authorized[service] = tables.authorized.get(service, 0) + 1
        delay = tables.delay_s.get(service, 0.0)
        if delay > 0:
            await asyncio.sleep(delay)
        status = tables.fail_status.get(service)
        if status is not None:
            return web.json_response({"error": f"injected HTTP {status}"}, status=status)
        fen = request.query.get("fen", "")
        try:
            chess.Board(fen.replace("_", " "))
        except ValueError:
            return web.json_response({"error": "Invalid fen"}, status=400)
        return fen

    async def explorer(request: web.Request) -> web.Response:
        fen = await checked_fen("explorer", request)
        if isinstance(fen, web.Response):
            return fen
        moves = tables.explorer.get(position_key(fen), [])
        totals = {k: sum(int(m[k]) for m in moves) for k in ("white", "draws", "black")}
        return web.json_response({**totals, "moves": moves, "topGames": [], "recentGames": [],
                                  "opening": None})

    async def cloud_eval(request: web.Request) -> web.Response:
        fen = await checked_fen("cloud_eval", request)
        if isinstance(fen, web.Response):
            return fen
        found = tables.cloud_eval.get(position_key(fen))
        if found is None:
            return web.json_response(
                {"error": "No cloud evaluation available for that position"}, status=404)
        return web.json_response(found)

    async def tablebase(request: web.Request) -> web.Response:
        fen = await checked_fen("tablebase", request)
        if isinstance(fen, web.Response):
            return fen
        found: dict[str, Any] = dict(tables.tablebase.get(
            position_key(fen), {"path": request.path, "category": "unknown", "moves": []}))
        if found.pop("path") != request.path:  # another variant's table
            found = {"category": "unknown", "moves": []}
        return web.json_response(found)

    app.router.add_get("/lichess", explorer)
    app.router.add_get("/api/cloud-eval", cloud_eval)
    # The variants' tables share the fixtures: their FENs do not overlap in the tests.
    for path in ("/standard", "/atomic", "/antichess"):
        app.router.add_get(path, tablebase)
    return tables
