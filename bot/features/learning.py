"""The bot keeps its learned book current (`book.learn`): rebuilt from its own records at a
quiet moment, and probed before any other book.

A rebuild runs `kibitz book build` on `pgn.dir` in a process of its own, niced, with its
address space bounded by `book.learn_memory_mb`, so neither the event loop nor the games'
memory pay for it. It starts only when no game runs (the bot's start, or the end of its last
running game), at most once every `REBUILD_INTERVAL_S` (the time of the last build is kept in
the state directory), and the new book replaces the old one between two probes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Callable
from typing import Final

import chess

from bot.features.book import BookError, BookSelection, OpeningBook
from bot.features.learnbook import learned_book_path
from bot.game.hooks import GameContext, SourcedMove
from bot.lichess.events import GameFull, GameState
from bot.ops.config import Config
from bot.ops.statefile import load_state, number, save_state

log = logging.getLogger(__name__)

REBUILD_INTERVAL_S: Final = 24 * 3600.0  # at most once a day
REBUILD_NICENESS: Final = 10
STAMP_FILE: Final = "learned-book.json"


class LearnedBookSource:
    """The learned book, probed before the configured books; its file may be replaced."""

    name = "learned book"

    def __init__(self, learner: BookLearner) -> None:
        self.learner = learner

    async def choose(self, board: chess.Board, context: GameContext) -> SourcedMove | None:
        book = self.learner.book
        found = book.probe(board, context.variant) if book is not None else None
        if found is None:
            return None
        log.debug("learned book move %s (weight %d)", found.move.uci(), found.weight)
        return SourcedMove(found.move, "book")


class BookLearner:
    """Opens the learned book and rebuilds it when no game runs, once a day at most."""

    def __init__(self, config: Config, *, clock: Callable[[], float] = time.time,
                 command: tuple[str, ...] = (sys.executable, "-m", "bot")) -> None:
        self.config = config
        self.path = learned_book_path(config.state_dir)
        self.stamp = config.state_dir / STAMP_FILE
        self.clock = clock
        self.command = command
        self.book: OpeningBook | None = None
        self.running: set[str] = set()  # the games under way
        # The bot's account, once a game has named it: records written from a server export
        # (a correspondence game that ended between visits) carry no Annotator header.
        self.account: str | None = None
        self.rebuilds = 0  # rebuilds that replaced the book
        self._task: asyncio.Task[None] | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._open()

    def _open(self) -> None:
        if not self.path.is_file():
            return
        try:
            book = OpeningBook({"standard": [self.path]},
                               selection=BookSelection(self.config.book.selection),
                               min_weight=self.config.book.min_weight,
                               max_depth_plies=self.config.book.learn_max_plies)
        except BookError as exc:
            log.warning("the learned book cannot be used: %s", exc)
            return
        old, self.book = self.book, book
        if old is not None:
            old.close()

    @property
    def due(self) -> bool:
        built_at = number(load_state(self.stamp).get("built_at"), default=float("-inf"))
        return self.clock() - built_at >= REBUILD_INTERVAL_S

    @property
    def rebuilding(self) -> bool:
        return self._task is not None and not self._task.done()

    def game_started(self, game_id: str) -> None:
        self.running.add(game_id)

    def game_ended(self, game_id: str) -> None:
        self.running.discard(game_id)
        self.maybe_rebuild()

    def maybe_rebuild(self) -> asyncio.Task[None] | None:
        """Start a rebuild if no game runs, none is under way, and the last is a day old."""
        if self.running or self.rebuilding or not self.due:
            return None
        self._task = asyncio.get_running_loop().create_task(self._rebuild(),
                                                            name="learned book")
        return self._task

    def _arguments(self) -> list[str]:
        book = self.config.book
        return [*self.command, "book", "build", "--no-records", str(self.config.pgn.dir),
                "--out", str(self.path), "--min-games", str(book.learn_min_games),
                "--max-plies", str(book.learn_max_plies),
                "--memory-mb", str(book.learn_memory_mb), "--nice", str(REBUILD_NICENESS),
                *(["--account", self.account] if self.account else [])]

    async def _rebuild(self) -> None:
        # Stamped first: a build that fails waits a day too, rather than retry after every game.
        await asyncio.to_thread(save_state, self.stamp, {"built_at": self.clock()})
        if not self.config.pgn.dir.is_dir():
            log.info("learned book: no records in %s yet", self.config.pgn.dir)
            return
        started = time.monotonic()
        self._process = await asyncio.create_subprocess_exec(
            *self._arguments(), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await self._process.communicate()
        code = self._process.returncode
        self._process = None
        if code != 0:
            detail = (err or out).decode(errors="replace").strip().splitlines()
            log.warning("learned book not rebuilt (exit %s): %s", code,
                        detail[-1] if detail else "no message")
            return
        self._open()
        self.rebuilds += 1
        log.info("learned book rebuilt in %.1f s: %s", time.monotonic() - started,
                 out.decode(errors="replace").strip())

    def observer(self, full: GameFull, context: GameContext) -> LearnerObserver:
        self.account = context.me
        return LearnerObserver(self, context.game_id)

    async def close(self) -> None:
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self.book is not None:
            self.book.close()
            self.book = None


class LearnerObserver:
    """Tells the learner when a game starts and ends (a rebuild waits for no game running)."""

    def __init__(self, learner: BookLearner, game_id: str) -> None:
        self.learner = learner
        self.game_id = game_id
        learner.game_started(game_id)

    def game_state(self, state: GameState) -> None:
        pass

    def our_move(self, ply: int, board: chess.Board, chosen: SourcedMove) -> None:
        pass

    async def game_finished(self, status: str, winner: str | None) -> None:
        self.learner.game_ended(self.game_id)
