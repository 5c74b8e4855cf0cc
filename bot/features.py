"""The game features the config turns on, plugged into the game hooks.

Book, Syzygy tablebase and online sources become move sources (asked in that order before
the engine); `bot.commands` answers chat commands; `bot.pgn` records every game. Files and
sessions opened here belong to `Features` and are closed with it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import cast

import aiohttp
import chess
import chess.engine

from bot.book import BookError, OpeningBook
from bot.commands import CommandResponder
from bot.config import Config
from bot.events import Color, GameFull, GameState
from bot.hooks import (
    ChatCommandHandler,
    GameContext,
    GameHooks,
    GameObserver,
    MoveSource,
    RootRestriction,
    SourcedMove,
)
from bot.lichess import USER_AGENT
from bot.online import OnlineSources, sources_from_config
from bot.pgn import GameRecord, SearchNote, save_game
from bot.tablebase import Syzygy, TablebaseError, TablebaseQuality

log = logging.getLogger(__name__)


class FeatureError(Exception):
    """A configured feature cannot be used (a missing book file, say); the message says which."""


class BookSource:
    name = "book"

    def __init__(self, book: OpeningBook) -> None:
        self.book = book

    async def choose(self, board: chess.Board, context: GameContext) -> SourcedMove | None:
        found = self.book.probe(board, context.variant)
        return SourcedMove(found.move, "book") if found is not None else None


class TablebaseSource:
    name = "tablebase"

    def __init__(self, tables: Syzygy, quality: TablebaseQuality) -> None:
        self.tables = tables
        self.quality = quality

    async def choose(self, board: chess.Board,
                     context: GameContext) -> SourcedMove | RootRestriction | None:
        if context.variant == "chess960" or not self.tables.covers(board):
            return None
        probe = self.tables.probe_root(board)
        if probe is None:
            return None
        if self.quality is TablebaseQuality.SUGGEST:
            return RootRestriction(probe.keeping_moves, "tablebase", probe.wdl)
        return SourcedMove(probe.best_move, "tablebase", tablebase_wdl=probe.wdl)


class OnlineSource:
    name = "online"

    def __init__(self, sources: OnlineSources) -> None:
        self.sources = sources

    async def choose(self, board: chess.Board, context: GameContext) -> SourcedMove | None:
        if not self.sources.any_active:
            return None
        answer = await self.sources.probe(board, context.variant)
        found = answer.move
        if found is None:
            return None
        info: dict[str, object] = {}
        if found.score is not None:
            info["score"] = found.score
        if found.depth is not None:
            info["depth"] = found.depth
        if found.pv:
            info["pv"] = list(found.pv)
        return SourcedMove(found.move, str(found.source), info, found.wdl)


class PgnObserver:
    """Keeps the PGN record of one game and writes it when the game ends."""

    def __init__(self, config: Config, full: GameFull, context: GameContext, url: str) -> None:
        self.config = config
        self.record = GameRecord.from_game_full(full, server_url=url, me=context.me)
        self.opponent = context.opponent.name

    def game_state(self, state: GameState) -> None:
        self.record.update(state)

    def our_move(self, ply: int, board: chess.Board, chosen: SourcedMove) -> None:
        score = chosen.info.get("score")
        depth = chosen.info.get("depth")
        pv = chosen.info.get("pv")
        self.record.note_search(ply, SearchNote(
            score=score if isinstance(score, chess.engine.PovScore) else None,
            depth=depth if isinstance(depth, int) else None,
            pv=tuple(pv) if isinstance(pv, list) else (chosen.move,),
            source=None if chosen.source == "engine" else chosen.source,
        ))

    async def game_finished(self, status: str, winner: str | None) -> None:
        path = await asyncio.to_thread(
            save_game, self.config.pgn, self.record, status=status,
            winner=cast(Color | None, winner), opponent=self.opponent,
        )
        if path is not None:
            log.info("PGN written to %s", path)


class Features:
    """The features of one bot run; `close()` releases their files and session."""

    def __init__(self, config: Config, *, url: str, token: str) -> None:
        self.config = config
        self.url = url
        self.book: OpeningBook | None = None
        self.tables: Syzygy | None = None
        self._session: aiohttp.ClientSession | None = None
        self._token = token
        try:
            if config.book.enabled:
                self.book = OpeningBook(
                    {variant: list(paths) for variant, paths in config.book.books.items()},
                    selection=config.book.selection, min_weight=config.book.min_weight,
                    max_depth_plies=config.book.max_depth,
                )
            if config.tablebase.syzygy_paths:
                self.tables = Syzygy(list(config.tablebase.syzygy_paths))
        except (BookError, TablebaseError) as exc:
            self.close_files()
            raise FeatureError(str(exc)) from exc
        online = config.online
        self._online = any(s.enabled for s in (online.explorer, online.cloud_eval,
                                               online.online_tablebase))

    def _sources(self, context: GameContext) -> Sequence[MoveSource]:
        sources: list[MoveSource] = []
        if self.book is not None:
            sources.append(BookSource(self.book))
        if self.tables is not None:
            sources.append(TablebaseSource(self.tables,
                                           TablebaseQuality(self.config.tablebase.quality)))
        if self._online:
            if self._session is None:
                self._session = aiohttp.ClientSession(headers={"User-Agent": USER_AGENT})
            sources.append(OnlineSource(sources_from_config(
                self._session, self.config.online, self.url,
                headers={"Authorization": f"Bearer {self._token}"},
            )))
        return sources

    def _observer(self, full: GameFull, context: GameContext) -> GameObserver:
        return PgnObserver(self.config, full, context, self.url)

    def hooks(self) -> GameHooks:
        def commands() -> ChatCommandHandler:
            return CommandResponder()

        return GameHooks(
            move_sources=self._sources,
            chat_commands=commands,
            observers=(self._observer,) if self.config.pgn.enabled else (),
        )

    def close_files(self) -> None:
        if self.book is not None:
            self.book.close()
        if self.tables is not None:
            self.tables.close()

    async def close(self) -> None:
        self.close_files()
        if self._session is not None:
            await self._session.close()
