"""Syzygy endgame tablebases: the root move that keeps the best WDL, then the best DTZ.

WDL is win/draw/loss under the fifty-move rule (2 win, 1 cursed win, 0 draw,
-1 blessed loss, -2 loss, for the side to move); DTZ is the distance in plies
to the next zeroing move (capture or pawn move). Minimising DTZ while winning,
and maximising it while losing, makes progress towards mate (or postpones
it) without ever giving the result away.

Probing runs python-chess's pure-Python prober: a few milliseconds per move
of a root position. Callers on the event loop run :meth:`Syzygy.probe_root`
in a thread (``asyncio.to_thread``); the prober is thread-safe when each
thread uses its own board.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.syzygy

# A table file name: material of both sides, e.g. "KRPvKR" (antichess: "RvN", no kings).
_TABLE_NAME = re.compile(r"^[KQRBNP]+v[KQRBNP]+$")

Probe = Callable[[chess.Board], tuple[int, int | None]]
"""(WDL, DTZ or None without DTZ tables) for the side to move; KeyError when not covered."""


class TablebaseError(ValueError):
    """A configured tablebase directory cannot be used; the message names it."""


class TablebaseQuality(enum.StrEnum):
    """How tablebase knowledge is used at the root."""

    BEST = "best"  # play the tablebase move outright
    SUGGEST = "suggest"  # let the engine choose among the moves that keep the best WDL


@dataclass(frozen=True, slots=True)
class RootProbe:
    """The tablebase verdict on a root position, from the side to move's point of view."""

    wdl: int  # best WDL reachable: 2 win, 1 cursed win, 0 draw, -1 blessed loss, -2 loss
    best_move: chess.Move  # keeps ``wdl`` and makes the best progress by DTZ
    dtz: int  # DTZ of the root position after ``best_move``, from our side (0 for a draw)
    keeping_moves: tuple[chess.Move, ...]  # every move that keeps ``wdl``
    dtz_known: bool = True  # False with WDL tables only: ``best_move`` need not make progress

    @property
    def is_draw(self) -> bool:
        """True when the best we can do is a draw (cursed wins and blessed losses included)."""
        return -1 <= self.wdl <= 1

    @property
    def is_loss(self) -> bool:
        return self.wdl == -2


def rank_root_moves(board: chess.Board, probe: Probe) -> RootProbe | None:
    """Rank every legal move of ``board`` with ``probe``; None if any is not covered.

    A move that mates at once is the best of all; otherwise the ranking is by
    WDL, then (winning) the zeroing move or the lowest DTZ, (losing) the highest DTZ.
    """
    ranked: list[tuple[tuple[int, int, int], int, chess.Move]] = []
    dtz_known = True
    for move in board.legal_moves:
        zeroing = board.is_zeroing(move)
        mover = board.turn
        board.push(move)
        try:
            # The game ends by the variant's rules: mate, an exploded king, no pieces left, ...
            outcome = board.outcome()
            if outcome is not None and outcome.winner is not None:
                won = outcome.winner == mover
                wdl, dtz, mate = (2, 1, 1) if won else (-2, -1, 0)
            elif outcome is not None:
                wdl, dtz, mate = 0, 0, 0
            else:
                their_wdl, their_dtz = probe(board)
                if their_dtz is None:
                    dtz_known = False
                wdl, dtz, mate = -their_wdl, -(their_dtz or 0), 0
        except KeyError:
            return None
        finally:
            board.pop()
        if wdl > 0:
            progress = 1 if zeroing else 0
            key = (wdl, mate, progress * 1000 - abs(dtz))
        elif wdl < 0:
            key = (wdl, 0, abs(dtz) - (1000 if zeroing else 0))
        else:
            key = (0, 0, 0)
        ranked.append((key, dtz, move))
    if not ranked:
        return None
    ranked.sort(key=lambda item: item[0], reverse=True)
    best_key, best_dtz, best_move = ranked[0]
    keeping = tuple(move for key, _, move in ranked if key[0] == best_key[0])
    return RootProbe(wdl=best_key[0], best_move=best_move, dtz=best_dtz, keeping_moves=keeping,
                     dtz_known=dtz_known)


class Syzygy:
    """Syzygy tables from one or more directories, shared by every game; ``variant``: the
    board class whose tables they are (python-chess reads standard, atomic and antichess
    tables: .rtbw, .atbw, .gtbw/.stbw)."""

    def __init__(self, paths: Sequence[Path | str],
                 variant: type[chess.Board] = chess.Board) -> None:
        self._variant = variant
        self._tablebase = chess.syzygy.Tablebase(VariantBoard=variant)
        self.max_pieces = 2  # KvK needs no file
        suffixes = {variant.tbw_suffix, variant.tbz_suffix, variant.pawnless_tbw_suffix,
                    variant.pawnless_tbz_suffix} - {None}
        for raw in paths:
            path = Path(raw)
            if not path.is_dir():
                self._tablebase.close()
                raise TablebaseError(f"syzygy path {str(path)!r} is not a directory")
            self._tablebase.add_directory(str(path))
            for name in path.iterdir():
                if name.suffix in suffixes and _TABLE_NAME.match(name.stem):
                    self.max_pieces = max(self.max_pieces, len(name.stem) - 1)

    def covers(self, board: chess.Board) -> bool:
        """Whether ``board`` may be in the tables: the tables' variant, few enough pieces,
        no castling rights."""
        return (
            board.uci_variant == self._variant.uci_variant
            and chess.popcount(board.occupied) <= self.max_pieces
            and not board.castling_rights
        )

    def probe_root(self, board: chess.Board) -> RootProbe | None:
        """The tablebase verdict on ``board`` (a copy is probed), or None if not covered."""
        if not self.covers(board) or board.is_game_over():
            return None
        board = board.copy(stack=False)
        try:
            return rank_root_moves(board, self._probe)
        except (KeyError, OSError, ValueError):  # missing or damaged table
            return None

    def _probe(self, board: chess.Board) -> tuple[int, int | None]:
        wdl = self._tablebase.probe_wdl(board)
        try:
            return wdl, self._tablebase.probe_dtz(board)
        except chess.syzygy.MissingTableError:  # WDL tables without their DTZ tables
            return wdl, None

    def close(self) -> None:
        self._tablebase.close()
