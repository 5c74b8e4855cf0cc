"""The move sources asked before the engine: opening book, Syzygy tablebase, online services.

Each game gets its own chain from :class:`MoveSources` (the online sources
count their misses per game); the game asks the chain's sources in order,
and the first that answers plays, or the engine thinks, possibly among the
root moves a "suggest" tablebase kept. :meth:`MoveSourceChain.choose` is the
same chain as a single call, for callers that want one entry point.

Time spent here is wall time after the game state arrived, so the game's
clock planning takes it off what the engine is told it has.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import aiohttp
import chess

from bot.engines.searchline import SearchLine
from bot.features.book import BookSelection, OpeningBook
from bot.features.online import OnlineSourceKind, OnlineSources, sources_from_config
from bot.features.tablebase import RootProbe, Syzygy, TablebaseError, TablebaseQuality
from bot.game.hooks import Avoid, GameContext, MoveSource, RootRestriction, SourcedMove
from bot.lichess.variants import RULE_VARIANTS, board_class
from bot.ops.config import Config

log = logging.getLogger(__name__)

# The whole chain stays within this budget (the game gives each source a little more).
CHAIN_BUDGET_S: Final = 2.5
# The online services get at most this share of the game's expected length per move
# (base + 40 increments): 0.3 s in 30+0 bullet, the full budget from 3+2 on.
ONLINE_BUDGET_SHARE: Final = 0.01


SourceAnswer = SourcedMove | RootRestriction | Avoid | None


class BookSource:
    """Polyglot books: a book move, or None out of book."""

    name = "book"

    def __init__(self, book: OpeningBook) -> None:
        self.book = book

    async def choose(self, board: chess.Board, context: GameContext) -> SourceAnswer:
        found = self.book.probe(board, context.variant)
        if found is None:
            return None
        log.debug("book move %s (weight %d, %s)", found.move.uci(), found.weight, found.book.name)
        return SourcedMove(found.move, "book")


class TablebaseSource:
    """Syzygy tables: the best move, or (quality "suggest") the moves keeping the best WDL."""

    name = "tablebase"

    def __init__(self, syzygy: Syzygy, quality: TablebaseQuality | str) -> None:
        self.syzygy = syzygy
        self.quality = TablebaseQuality(quality)

    async def choose(self, board: chess.Board, context: GameContext) -> SourceAnswer:
        if not self.syzygy.covers(board):
            return None
        verdict = await asyncio.to_thread(self.syzygy.probe_root, board)
        if verdict is None:
            return None
        return tablebase_answer(verdict, self.quality, "tablebase")


def tablebase_answer(verdict: RootProbe, quality: TablebaseQuality, source: str) -> SourceAnswer:
    """The move (best) or the root restriction (suggest) a tablebase verdict gives.

    Without DTZ the best move is not known to make progress: the engine chooses
    among the moves that keep the result, whatever the quality."""
    suggest = quality is TablebaseQuality.SUGGEST or not verdict.dtz_known
    if suggest and len(verdict.keeping_moves) > 1:
        return RootRestriction(verdict.keeping_moves, source, verdict.wdl)
    return SourcedMove(verdict.best_move, source, tablebase_wdl=verdict.wdl)


class OnlineSource:
    """The online services of one game (they count their misses per game)."""

    name = "online"

    def __init__(self, sources: OnlineSources, quality: TablebaseQuality | str,
                 budget_s: float = CHAIN_BUDGET_S) -> None:
        self.sources = sources
        self.quality = TablebaseQuality(quality)
        self.budget_s = budget_s

    async def choose(self, board: chess.Board, context: GameContext) -> SourceAnswer:
        if not self.sources.any_active:
            return None
        budget_s = self.budget_s
        if context.clock_initial_s is not None:
            expected_s = context.clock_initial_s + 40 * (context.clock_increment_s or 0.0)
            budget_s = min(budget_s, ONLINE_BUDGET_SHARE * expected_s)
        answer = await self.sources.probe(board, context.variant, budget_s=budget_s)
        found = answer.move
        if found is None:
            return None
        log.debug("%s answered %s in %.2f s", found.source, found.move.uci(), answer.elapsed_s)
        if found.source is OnlineSourceKind.ONLINE_TABLEBASE:
            if self.quality is TablebaseQuality.SUGGEST and len(found.keeping_moves) > 1:
                return RootRestriction(found.keeping_moves, str(found.source), found.wdl)
            return SourcedMove(found.move, str(found.source), tablebase_wdl=found.wdl)
        line = None
        if found.score is not None:  # cloud eval: its search, like the engine's
            line = SearchLine(depth=found.depth, score=found.score, pv=found.pv)
        return SourcedMove(found.move, str(found.source), line)


class MoveSourceChain:
    """One game's sources in order: book, tablebase, online."""

    def __init__(self, sources: Sequence[MoveSource]) -> None:
        self.sources = tuple(sources)

    async def choose(self, board: chess.Board, context: GameContext,
                     budget_s: float = CHAIN_BUDGET_S) -> SourceAnswer:
        """The first legal move a source gives; else the first root restriction; else None.

        A failing source is logged and skipped; the chain stops asking after ``budget_s``.
        """
        started = time.monotonic()
        restriction: RootRestriction | None = None
        avoid: frozenset[chess.Move] = frozenset()
        for source in self.sources:
            left_s = budget_s - (time.monotonic() - started)
            if left_s <= 0:
                break
            try:
                answer = await asyncio.wait_for(source.choose(board, context), left_s)
            except Exception as exc:
                log.warning("move source %s failed: %s: %s", source.name, type(exc).__name__,
                            exc)
                continue
            if isinstance(answer, Avoid):  # the engine weighs it; the chain only passes over
                avoid |= answer.moves
            elif isinstance(answer, RootRestriction):
                legal = tuple(m for m in answer.moves if board.is_legal(m))
                if legal and restriction is None:
                    restriction = RootRestriction(legal, answer.source, answer.tablebase_wdl)
            elif (answer is not None and board.is_legal(answer.move)
                  and answer.move not in avoid):
                return answer
        return restriction


class MoveSources:
    """Builds each game's move sources; holds what all games share (books, tables)."""

    def __init__(
        self,
        *,
        book: OpeningBook | None = None,
        syzygy: Syzygy | None = None,
        quality: TablebaseQuality | str = TablebaseQuality.BEST,
        online: Callable[[], OnlineSources] | None = None,
        variant_syzygy: Mapping[str, Syzygy] | None = None,
    ) -> None:
        self.book = book
        self.syzygy = syzygy  # standard chess (chess960 and set-up positions too)
        self.variant_syzygy = dict(variant_syzygy or {})  # atomic, antichess
        self.quality = TablebaseQuality(quality)
        self.online = online

    @classmethod
    def from_config(cls, config: Config, *, server_url: str,
                    session: Callable[[], aiohttp.ClientSession] | None,
                    headers: Mapping[str, str] | None = None) -> MoveSources:
        """The sources ``config`` enables. Book and table files are opened here (a missing
        file raises :class:`~bot.features.book.BookError` /
        :class:`~bot.features.tablebase.TablebaseError`).
        ``session`` gives the HTTP session for the online services (None: no online);
        ``headers`` go with their requests (the explorer wants the account's token)."""
        book = None
        if config.book.enabled and any(config.book.books.values()):
            book = OpeningBook(config.book.books, selection=BookSelection(config.book.selection),
                               min_weight=config.book.min_weight,
                               max_depth_plies=config.book.max_depth)
        variant_syzygy: dict[str, Syzygy] = {}
        syzygy: Syzygy | None = None
        try:
            syzygy = (Syzygy(config.tablebase.syzygy_paths) if config.tablebase.syzygy_paths
                      else None)
            for variant, paths in config.tablebase.variant_syzygy_paths.items():
                if paths:
                    variant_syzygy[variant] = Syzygy(paths, board_class(variant))
        except TablebaseError:
            if book is not None:
                book.close()
            for tables in variant_syzygy.values():
                tables.close()
            if syzygy is not None:
                syzygy.close()
            raise
        online_config = config.online
        wanted = (online_config.explorer.enabled or online_config.cloud_eval.enabled
                  or online_config.online_tablebase.enabled)
        online = None
        if wanted and session is not None:
            get_session = session

            def online() -> OnlineSources:
                return sources_from_config(get_session(), online_config, server_url, headers)

        return cls(book=book, syzygy=syzygy, quality=config.tablebase.quality, online=online,
                   variant_syzygy=variant_syzygy)

    def __call__(self, context: GameContext) -> list[MoveSource]:
        """A new game's sources, in the order they are asked."""
        sources: list[MoveSource] = []
        if self.book is not None:
            sources.append(BookSource(self.book))
        tables = (self.variant_syzygy.get(context.variant) if context.variant in RULE_VARIANTS
                  else self.syzygy)
        if tables is not None:
            sources.append(TablebaseSource(tables, self.quality))
        if self.online is not None:
            sources.append(OnlineSource(self.online(), self.quality))
        return sources

    def chain(self, context: GameContext) -> MoveSourceChain:
        return MoveSourceChain(self(context))

    def close(self) -> None:
        if self.book is not None:
            self.book.close()
        if self.syzygy is not None:
            self.syzygy.close()
        for tables in self.variant_syzygy.values():
            tables.close()
