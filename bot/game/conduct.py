"""Game conduct: when to offer or accept a draw, when to resign, how many takebacks to grant.

The draw and resign rules look at our own evaluations, one per move we
play, from our side. A tablebase verdict is certain, so it counts at once: a
tablebase draw (cursed wins and blessed losses included) qualifies for a
draw, a tablebase loss for resignation, whatever the recent scores were.

The takeback ledger is kept in ``state_dir`` so that a restart in the middle
of a game does not hand out a fresh allowance.
"""

from __future__ import annotations

import json
import logging
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import chess.engine

from bot.engines.searchline import score_cp
from bot.ops.config import DrawConfig, ResignConfig

log = logging.getLogger(__name__)

TAKEBACK_LEDGER_FILE = "takebacks.json"
# Games remembered at most: a game that ended while the bot was down is never
# forgotten by its end, so the oldest entries make room.
MAX_LEDGER_GAMES = 1000


@dataclass(frozen=True, slots=True)
class Verdict:
    """One of our moves as the rules see it: a score, a tablebase result, or neither."""

    score_cp: int | None  # None: no evaluation (a book move, say)
    tablebase_wdl: int | None = None  # for us: 2 win .. -2 loss


class Conduct:
    """The draw and resign rules of one game, fed one :class:`Verdict` per move we play.

    Each verdict is kept with the ply of its move, so a takeback can drop the verdicts of
    the moves it undid.
    """

    def __init__(self, draw: DrawConfig, resign: ResignConfig, *,
                 first_draw_move: int = 1) -> None:
        self.draw = draw
        # An arena game allows no draw before the variant's long-game move (fullmove 31 in
        # standard: bot.tournaments.rules.first_draw_move).
        self.first_draw_move = first_draw_move
        self.resign = resign
        # The opponent's rating (from the gameFull; None: unknown): below draw.min_rating no
        # draw is offered, below resign.min_rating the bot never resigns.
        self.opponent_rating: int | None = None
        # (ply of our move, its verdict), oldest first
        self._recent: deque[tuple[int, Verdict]] = deque(maxlen=max(draw.moves, resign.moves))

    def record(self, score: chess.engine.Score | int | None, *,
               tablebase_wdl: int | None = None, ply: int | None = None) -> None:
        """Record the evaluation behind the move we play at ``ply`` (0-based; None: our move
        after the last one recorded), from our side. A verdict already kept for that ply or a
        later one (a move the server refused, then chosen again) is replaced."""
        if isinstance(score, chess.engine.Score):
            score = score_cp(score)
        if ply is None:
            ply = self._recent[-1][0] + 2 if self._recent else 0
        self.take_back(ply)
        self._recent.append((ply, Verdict(score, tablebase_wdl)))

    def take_back(self, plies: int) -> None:
        """The game is back to its first ``plies`` moves: forget the verdicts of our moves
        that were undone."""
        while self._recent and self._recent[-1][0] >= plies:
            self._recent.pop()

    @property
    def last(self) -> Verdict | None:
        return self._recent[-1][1] if self._recent else None

    def _last_n(self, n: int) -> list[Verdict] | None:
        if len(self._recent) < n:
            return None
        return [verdict for _, verdict in list(self._recent)[-n:]]

    def _drawish(self, fullmove: int) -> bool:
        if fullmove < self.first_draw_move:
            return False
        last = self.last
        if last is not None and last.tablebase_wdl is not None:
            return -1 <= last.tablebase_wdl <= 1
        if fullmove < self.draw.min_move:
            return False
        window = self._last_n(self.draw.moves)
        return window is not None and all(
            v.score_cp is not None and abs(v.score_cp) <= self.draw.margin_cp for v in window)

    def _below(self, min_rating: int | None) -> bool:
        """The opponent is rated below `min_rating` (a beginner plays the game out)."""
        rating = self.opponent_rating
        return min_rating is not None and rating is not None and rating < min_rating

    def should_offer_draw(self, fullmove: int) -> bool:
        """Offer a draw with our next move (``fullmove``: the game's current move number)."""
        return self.draw.offer and not self._below(self.draw.min_rating) \
            and self._drawish(fullmove)

    def should_accept_draw(self, fullmove: int) -> bool:
        """Accept the opponent's standing offer (declined otherwise)."""
        return self.draw.accept and self._drawish(fullmove)

    def should_resign(self, *, abortable: bool, our_clock_s: float, their_clock_s: float,
                      their_increment_s: float) -> bool:
        """Resign now? Never while the game can be aborted, never against an opponent
        who is lower on time and gets no increment (they may still lose on time). Their
        increment is the one the game state gives (`winc`/`binc`: the clock's configured
        increment), which does not show an arena berserker's lost increment."""
        if not self.resign.enabled or abortable or self._below(self.resign.min_rating):
            return False
        if their_increment_s <= 0 and their_clock_s < our_clock_s:
            return False
        last = self.last
        if last is not None and last.tablebase_wdl is not None:
            return last.tablebase_wdl == -2
        window = self._last_n(self.resign.moves)
        return window is not None and all(
            v.score_cp is not None and v.score_cp <= self.resign.threshold_cp for v in window)


class TakebackLedger:
    """Takebacks granted per game id, kept in ``state_dir`` across restarts.

    One ledger serves every game of the process. The file is a few bytes of
    JSON, replaced atomically on every change.
    """

    def __init__(self, state_dir: Path, max_per_game: int) -> None:
        self.max_per_game = max_per_game
        self.path = state_dir / TAKEBACK_LEDGER_FILE
        self._granted = self._load()

    def _load(self) -> dict[str, int]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("takeback ledger %s unreadable (%s); starting a new one", self.path, exc)
            return {}
        if not isinstance(raw, dict):
            log.warning("takeback ledger %s is not a JSON object; starting a new one", self.path)
            return {}
        return {str(k): v for k, v in raw.items() if isinstance(v, int) and v >= 0}

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self._granted), encoding="utf-8")
        os.replace(temporary, self.path)

    def granted(self, game_id: str) -> int:
        return self._granted.get(game_id, 0)

    def request(self, game_id: str) -> bool:
        """The opponent asks for a takeback: grant it (and count it) if allowance is left."""
        granted = self.granted(game_id)
        if granted >= self.max_per_game:
            return False
        self._granted.pop(game_id, None)  # re-inserted last: the most recent game
        self._granted[game_id] = granted + 1
        while len(self._granted) > MAX_LEDGER_GAMES:
            del self._granted[next(iter(self._granted))]
        self._save()
        return True

    def forget(self, game_id: str) -> None:
        """The game is over: drop its count."""
        if self._granted.pop(game_id, None) is not None:
            self._save()
