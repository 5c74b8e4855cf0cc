"""The game features the config turns on, plugged into the game hooks.

Book, Syzygy tablebase and online sources become move sources (asked in that order before
the engine), after the deviation from a past game against the same opponent
(`bot.features.pairings`, which remembers each game), and the book learned from the bot's
games first among the books (`bot.features.learning`); `bot.features.commands` answers chat
commands; `bot.features.pgn` records every game. Files and sessions opened here belong to
`Features` and are closed with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import aiohttp

from bot.features.book import BookError
from bot.features.commands import CommandResponder
from bot.features.learning import BookLearner, LearnedBookSource
from bot.features.movesource import MoveSources
from bot.features.pairings import STATE_FILE as PAIRINGS_FILE
from bot.features.pairings import DeviationSource, PairingMemory, PairingObserver
from bot.features.pgn import PgnObserver, fetch_export, save_unwatched
from bot.features.tablebase import TablebaseError
from bot.game.hooks import (
    ChatCommandHandler,
    GameContext,
    GameHooks,
    GameObserver,
    MoveSource,
)
from bot.lichess.client import USER_AGENT
from bot.lichess.events import GameFull, GameInfo, GameStatus
from bot.ops.config import Config

log = logging.getLogger(__name__)


class FeatureError(Exception):
    """A configured feature cannot be used (a missing book file, say); the message says which."""


class Features:
    """The features of one bot run; `close()` releases their files and session."""

    def __init__(self, config: Config, *, url: str, token: str) -> None:
        self.config = config
        self.url = url
        self._session: aiohttp.ClientSession | None = None
        try:
            self.sources = MoveSources.from_config(
                config, server_url=url, session=self._http,
                headers={"Authorization": f"Bearer {token}"})
        except (BookError, TablebaseError) as exc:
            raise FeatureError(str(exc)) from exc
        self.memory = (PairingMemory(config.state_dir / PAIRINGS_FILE,
                                     config.openings.memory_opponents)
                       if config.openings.memory else None)
        self.learner = BookLearner(config) if config.book.learn else None

    def _http(self) -> aiohttp.ClientSession:
        """The session for the online services and game exports, opened on first use."""
        if self._session is None:
            self._session = aiohttp.ClientSession(headers={"User-Agent": USER_AGENT})
        return self._session

    async def _export(self, game_id: str) -> str | None:
        return await fetch_export(self._http(), self.url, game_id)

    def _observer(self, full: GameFull, context: GameContext) -> GameObserver:
        return PgnObserver(self.config.pgn, full, context, server_url=self.url,
                           fetch_export=self._export)

    def _pairing_observer(self, full: GameFull, context: GameContext) -> GameObserver:
        assert self.memory is not None
        return PairingObserver(self.memory, full, context)

    def _move_sources(self, context: GameContext) -> list[MoveSource]:
        """In a rated game the deviation from a past game first (it passes over the others'
        moves that would repeat it), then the book, tablebase and online sources."""
        sources = self.sources(context)
        learned = self.learner.book if self.learner is not None else None
        if self.learner is not None:
            sources.insert(0, LearnedBookSource(self.learner))
        if self.memory is None or not context.rated:
            return sources
        books = tuple(b for b in (learned, self.sources.book) if b is not None)
        return [DeviationSource(self.memory, self.config.openings.deviation_margin_cp, books),
                *sources]

    async def _save_unwatched(self, info: GameInfo) -> None:
        """A game that ended between visits: its PGN from the server's export."""
        if info.status == GameStatus.ABORTED:  # an aborted game is no game
            return
        exported = await self._export(info.game_id)
        if exported is None:
            return
        written = await asyncio.to_thread(save_unwatched, self.config.pgn, info.game_id,
                                          opponent=info.opponent_name, exported_pgn=exported)
        if written is not None:
            log.info("PGN of %s (ended between visits) written to %s", info.game_id, written)

    def hooks(self) -> GameHooks:
        def commands() -> ChatCommandHandler:
            return CommandResponder()

        observers: list[Callable[[GameFull, GameContext], GameObserver]] = []
        if self.config.pgn.enabled:
            observers.append(self._observer)
        if self.memory is not None:
            observers.append(self._pairing_observer)
        if self.learner is not None:
            observers.append(self.learner.observer)  # last: after this game's PGN is written
            with contextlib.suppress(RuntimeError):  # no event loop: nothing plays (check-config)
                asyncio.get_running_loop()
                self.learner.maybe_rebuild()  # the start is a quiet moment
        return GameHooks(
            move_sources=self._move_sources,
            chat_commands=commands,
            observers=tuple(observers),
            finished_unwatched=self._save_unwatched if self.config.pgn.enabled else None,
        )

    def close_files(self) -> None:
        self.sources.close()
        if self.learner is not None and self.learner.book is not None:
            self.learner.book.close()

    async def close(self) -> None:
        if self.learner is not None:
            await self.learner.close()
        self.close_files()
        if self._session is not None:
            await self._session.close()
