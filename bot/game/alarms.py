"""The alarms: the timers of one game, and what is due when one runs out.

It aborts a game the opponent never started, claims victory while the opponent is gone,
asks for a resync when it is our turn and no move is on its way (again and again, with
backoff: a failing server is never a reason to give the game up), and ends a game whose
gameFinish came but whose stream stayed open. It only decides; the game carries it out.
Times are monotonic seconds passed in, so the decisions follow an injected clock.
"""

from __future__ import annotations

import enum
from typing import Final

from bot.game.claims import ClaimTimer

STUCK_AFTER_FAILURE_S: Final = 2.0  # our turn, last move request failed: resync after this
# Resyncs in a row wait twice as long each time, up to this: a server that keeps failing is
# asked again and again while the clock has time, never given up on. lila survives its own
# restarts and outages (RoundAsyncActor.scala `LilaStop`, `WsBoot`: time given back, games
# flagged across a boot aborted), so a bot must never resign because the server failed.
RESYNC_BACKOFF_MAX_S: Final = 8.0
# A failed abort is tried again after this, doubling up to the cap, while the game can still
# be aborted: lila never expires a challenge game whose opponent has not moved, so an abort
# given up on holds a slot until the bot restarts.
ABORT_RETRY_S: Final = 2.0
ABORT_RETRY_MAX_S: Final = 30.0
STUCK_AFTER_SENT_S: Final = 10.0  # our turn, move sent but never echoed: resync after this
FINISH_GRACE_S: Final = 3.0  # gameFinish seen, stream still open: end the game after this


class Due(enum.Enum):
    """What the alarms ask the game to do."""

    END = "end"  # gameFinish came long ago: end the game
    ABORT = "abort"  # the opponent never started the game
    CLAIM_VICTORY = "claim victory"  # the opponent is gone
    RESYNC = "resync"  # our turn, but no move is on its way


class Alarms:
    def __init__(self, *, abort_after_s: float, claim_victory: bool, now: float,
                 claims: ClaimTimer | None = None) -> None:
        self.abort_after_s = abort_after_s
        self.claim_victory = claim_victory
        self.claims = claims if claims is not None else ClaimTimer()
        self._turn_began = now
        self._move_failed = False
        self._resyncs = 0
        self._finished_at: float | None = None
        self._abort_sent = False
        self._abort_failures = 0
        self._abort_retry_at = float("-inf")
        self._abort_extra_s = 0.0  # granted by the opponent's !wait

    # --- what happened -------------------------------------------------------------------

    def new_ply(self, now: float) -> None:
        """A move was played or taken back: a new turn, and the game is in step again."""
        self._turn_began = now
        self._move_failed = False
        self._resyncs = 0  # MAX_RESYNCS counts resyncs in a row, not per game

    def move_failed(self) -> None:
        self._move_failed = True

    def server_finished(self, now: float) -> None:
        if self._finished_at is None:
            self._finished_at = now

    def opponent_gone(self, gone: bool, claim_in_s: float | None) -> None:
        """An `opponentGone` event: lila's count to a claimable win, or the return."""
        self.claims.on_gone(gone, claim_in_s)

    def abort_failed(self, now: float) -> None:
        """The abort request failed: try again after a backoff, while still abortable."""
        self._abort_sent = False
        self._abort_retry_at = now + min(ABORT_RETRY_MAX_S,
                                         ABORT_RETRY_S * 2.0 ** self._abort_failures)
        self._abort_failures += 1

    def grant_wait(self) -> None:
        """The opponent asked us to wait (!wait): one more abort period before aborting."""
        self._abort_extra_s += self.abort_after_s

    def resync(self) -> int:
        """Count a resync; how many in a row (never a reason to give the game up)."""
        self._resyncs += 1
        return self._resyncs

    def stuck_after_s(self) -> float:
        """How long our turn may pass with no move on its way before the next resync."""
        if not self._move_failed:
            return STUCK_AFTER_SENT_S
        return min(RESYNC_BACKOFF_MAX_S, STUCK_AFTER_FAILURE_S * 2.0 ** self._resyncs)

    # --- what is due ------------------------------------------------------------------------

    def due(self, now: float, *, playing: bool, abortable: bool, our_turn: bool,
            mover_idle: bool) -> list[Due]:
        """What to do now, in order; `playing`: the game has its first state."""
        if self._finished_at is not None and now - self._finished_at > FINISH_GRACE_S:
            return [Due.END]
        if not playing:
            return []
        due: list[Due] = []
        waited_s = now - self._turn_began
        if abortable and not our_turn and not self._abort_sent \
                and waited_s > self.abort_after_s + self._abort_extra_s \
                and now >= self._abort_retry_at:
            self._abort_sent = True
            due.append(Due.ABORT)
        if self.claim_victory and self.claims.due(opponents_turn=not our_turn):
            due.append(Due.CLAIM_VICTORY)
        if our_turn and mover_idle and waited_s > self.stuck_after_s():
            self._turn_began = now
            due.append(Due.RESYNC)
        return due
