"""The last games against each opponent, kept so a rated game does not repeat one of them.

lila's FarmBoostDetection.botFarming (modules/round) leaves a finished rated game with a bot
in it unrated when one of the pair's last `PREV_GAMES` games had the same first `SAME_PLIES`
plies (SAN) and the same winner. The bot remembers, per opponent, its last two finished
games (those first plies, the colours, the winner, rated or not) in
`<state_dir>/pairings.json`, replaced atomically after each game and read at start; the
opponents met least recently are forgotten beyond `openings.memory_opponents`.

While a rated game follows one of them (whatever the colours were: lila compares the moves
and the winning user), :class:`DeviationSource` names the move played there as one to avoid
before ply 20: a book that knows another move plays it, or the engine
plays its best other move within `openings.deviation_margin_cp` (bot/game/deviation.py).
Every following game deviates, whoever won before: simpler than predicting the winner, and
a draw repeats the winner too.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

import chess

from bot.features.book import OpeningBook
from bot.game.hooks import Avoid, GameContext, SourcedMove
from bot.game.position import initial_board
from bot.lichess.events import GameFull, GameState, GameStatus
from bot.ops.statefile import load_state, save_state

log = logging.getLogger(__name__)

# lila modules/round/src/main/FarmBoostDetection.scala: SAME_PLIES = 20, PREV_GAMES = 2.
SAME_PLIES: Final = 20
PREV_GAMES: Final = 2
STATE_FILE: Final = "pairings.json"
STATE_VERSION: Final = 1

Snapshot = tuple[int, dict[str, Any]]  # (its number, the JSON state)


@dataclass(frozen=True, slots=True)
class PastGame:
    """One finished game against an opponent, as botFarming compares it."""

    game_id: str
    variant: str
    initial_fen: str  # "startpos" or a FEN
    our_color: str  # "white" | "black"
    sans: tuple[str, ...]  # the first SAME_PLIES plies
    winner: str | None  # "white" | "black" | None for a draw
    rated: bool

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> PastGame | None:
        try:
            game = cls(str(raw["game_id"]), str(raw["variant"]), str(raw["initial_fen"]),
                       str(raw["our_color"]), tuple(str(s) for s in raw["sans"]),
                       None if raw["winner"] is None else str(raw["winner"]), bool(raw["rated"]))
        except (KeyError, TypeError, ValueError):
            return None
        return game if game.our_color in ("white", "black") else None

    def to_json(self) -> dict[str, Any]:
        raw = asdict(self)
        raw["sans"] = list(self.sans)
        return raw


def opening_sans(board: chess.Board) -> tuple[str, ...]:
    """The SAN of the first SAME_PLIES plies played on `board` (its move stack)."""
    root = board.root()
    sans = []
    for move in board.move_stack[:SAME_PLIES]:
        sans.append(root.san(move))
        root.push(move)
    return tuple(sans)


class PairingMemory:
    """The last PREV_GAMES games per opponent (lowercased name), most recent first; at most
    `max_opponents` opponents, the least recently met forgotten first."""

    def __init__(self, path: Path | None, max_opponents: int) -> None:
        if max_opponents < 1:
            raise ValueError(f"max_opponents must be at least 1, not {max_opponents}")
        self.path = path
        self.max_opponents = max_opponents
        self._games: OrderedDict[str, tuple[PastGame, ...]] = OrderedDict()
        self._saving = threading.Lock()  # two games ending at once write one after the other
        self._changes = 0  # snapshots taken
        self._written = 0  # the newest snapshot written: an older one never overwrites it
        if path is not None:
            self._load(load_state(path))

    def _load(self, raw: Mapping[str, Any]) -> None:
        opponents = raw.get("opponents")
        if raw.get("version") != STATE_VERSION or not isinstance(opponents, list):
            return
        for entry in opponents:
            if not isinstance(entry, dict) or not isinstance(entry.get("games"), list):
                continue
            games = tuple(g for g in (PastGame.from_json(r) for r in entry["games"]
                                      if isinstance(r, dict)) if g is not None)
            if games:
                self._games[str(entry.get("name", "")).lower()] = games[:PREV_GAMES]
        while len(self._games) > self.max_opponents:
            self._games.popitem(last=False)

    def __len__(self) -> int:
        return len(self._games)

    def opponents(self) -> Iterator[str]:
        """The opponents remembered, the least recently met first."""
        return iter(self._games)

    def games(self, opponent: str) -> tuple[PastGame, ...]:
        return self._games.get(opponent.lower(), ())

    def add(self, opponent: str, game: PastGame) -> Snapshot:
        """Remember a finished game; the state to save (:meth:`save`, off the event loop)."""
        name = opponent.lower()
        self._games[name] = (game, *self._games.pop(name, ()))[:PREV_GAMES]
        while len(self._games) > self.max_opponents:
            self._games.popitem(last=False)
        return self.snapshot()

    def snapshot(self) -> Snapshot:
        self._changes += 1
        return self._changes, {"version": STATE_VERSION, "opponents": [
            {"name": name, "games": [g.to_json() for g in games]}
            for name, games in self._games.items()]}

    def save(self, snapshot: Snapshot) -> None:
        """Write a snapshot atomically, unless a newer one is written already (blocking:
        call it through asyncio.to_thread)."""
        number, state = snapshot
        if self.path is None:
            return
        with self._saving:
            if number > self._written:
                save_state(self.path, state)
                self._written = number

    def to_avoid(self, board: chess.Board, context: GameContext) -> list[tuple[chess.Move,
                                                                               PastGame]]:
        """The moves that would go on following a past game against this opponent, from
        `board` (our turn, its move stack the game so far), each with the game it follows."""
        ply = len(board.move_stack)
        if ply >= SAME_PLIES:
            return []
        played: tuple[str, ...] | None = None
        found = []
        for past in self.games(context.opponent.name):
            # Either colour: lila compares the moves and the winning user, not who had white.
            if (past.variant != context.variant or past.initial_fen != context.initial_fen
                    or len(past.sans) <= ply):
                continue
            if played is None:
                played = opening_sans(board)
            if past.sans[:ply] != played:
                continue
            try:
                move = board.parse_san(past.sans[ply])
            except ValueError:
                continue
            found.append((move, past))
        return found


class DeviationSource:
    """A rated game that follows a past game against this opponent: the move played there
    is to be avoided; a book move other than it is played at once."""

    name = "memory"

    def __init__(self, memory: PairingMemory, margin_cp: int,
                 books: tuple[OpeningBook, ...] = ()) -> None:
        self.memory = memory
        self.margin_cp = margin_cp
        self.books = books

    async def choose(self, board: chess.Board, context: GameContext) -> SourcedMove | Avoid | None:
        if not context.rated:
            return None
        followed = self.memory.to_avoid(board, context)
        if not followed:
            return None
        avoid = frozenset(move for move, _ in followed)
        why = ", ".join(sorted({f"game {past.game_id}" for _, past in followed}))
        why = f"{why} at ply {len(board.move_stack) + 1}"
        for book in self.books:
            other = book.best_other(board, context.variant, avoid)
            if other is not None:
                log.info("game %s: leaving %s with the book move %s", context.game_id, why,
                         other.move.uci())
                return SourcedMove(other.move, "book")
        return Avoid(avoid, self.margin_cp, self.name, why)


class PairingObserver:
    """Follows one game and remembers it in the memory when it ends (an aborted game is no
    game for lila's crosstable)."""

    def __init__(self, memory: PairingMemory, full: GameFull, context: GameContext) -> None:
        self.memory = memory
        self.context = context
        self.moves: tuple[str, ...] = full.state.moves

    def game_state(self, state: GameState) -> None:
        self.moves = state.moves

    def our_move(self, ply: int, board: chess.Board, chosen: SourcedMove) -> None:
        pass

    async def game_finished(self, status: str, winner: str | None) -> None:
        if status == GameStatus.ABORTED:
            return
        context = self.context
        board = initial_board(context.variant, context.initial_fen)
        try:
            for uci in self.moves[:SAME_PLIES]:
                board.push(board.parse_uci(uci))
        except ValueError:
            log.warning("game %s: its moves do not replay; not remembered", context.game_id)
            return
        past = PastGame(context.game_id, context.variant, context.initial_fen,
                        "white" if context.color == chess.WHITE else "black",
                        opening_sans(board), winner if winner in ("white", "black") else None,
                        context.rated)
        state = self.memory.add(context.opponent.name, past)
        await asyncio.to_thread(self.memory.save, state)
