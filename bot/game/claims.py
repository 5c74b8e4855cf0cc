"""When to claim victory over an opponent who left, from lila's `opponentGone` events.

lila (modules/round/src/main/RoundAsyncActor.scala, `Tick` every `RoundSocket.tickSeconds`
= 5 s) repeats `{"gone": true, "claimWinInSeconds": n}` while the opponent stays away, with a
falling n, then n = 0 once the win is claimable; it sends `{"gone": false}` only when an
opponent who had become claimable comes back. So:
- a claim is due when the last count has run out, plus `CLAIM_MARGIN_S`: lila truncates
  the count to whole seconds (`millis / 1000`), so a 0 may come up to a second early;
- a count not repeated for `stale_s` has gone stale (the opponent came back before it
  ran out, and lila says nothing then): it is forgotten;
- the claim is sent only on the opponent's turn (lila's `Pov.mightClaimWin` is false on
  ours: nothing would happen);
- a refused claim (400) is tried again later, after `CLAIM_RETRY_S` doubling up to
  `CLAIM_RETRY_MAX_S`, while lila still says the opponent is gone: lila refuses only at
  that moment (BotPlayer.scala `claimVictory` checks the opponent's state when asked).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

GONE_REPEAT_S: Final = 5.0  # lila's RoundSocket.tickSeconds: how often opponentGone repeats
STALE_AFTER_S: Final = 3 * GONE_REPEAT_S  # a count not repeated this long is forgotten
CLAIM_MARGIN_S: Final = 1.0  # lila's count is truncated to whole seconds
CLAIM_RETRY_S: Final = GONE_REPEAT_S  # a refused claim is tried again after this, doubling
CLAIM_RETRY_MAX_S: Final = 60.0


class ClaimTimer:
    """The claim-victory decision of one game; `now` is injectable for tests."""

    def __init__(self, *, stale_s: float = STALE_AFTER_S,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.stale_s = stale_s
        self._now = now
        self._due_at: float | None = None
        self._heard_at = 0.0
        self._last_count_s: float | None = None
        self.refusals = 0
        self.claimed = False

    @property
    def pending(self) -> bool:
        return self._due_at is not None

    def on_gone(self, gone: bool, claim_in_s: float | None) -> None:
        """An `opponentGone` event."""
        if not gone:
            self._due_at = None
            self._last_count_s = None
            return
        now = self._now()
        count_s = max(0.0, claim_in_s or 0.0)
        if not (count_s == 0 and self._last_count_s == 0 and self._due_at is not None):
            self._due_at = now + count_s + CLAIM_MARGIN_S  # a repeated 0 keeps the first's
        self._last_count_s = count_s
        self._heard_at = now
        self.claimed = False  # a new count: the game goes on

    def due(self, *, opponents_turn: bool) -> bool:
        """Whether to send claim-victory now (at most once per count that ran out)."""
        if self._due_at is None or self.claimed:
            return False
        now = self._now()
        if now - self._heard_at > self.stale_s:
            self._due_at = None  # the opponent came back before the count ran out
            return False
        return opponents_turn and now >= self._due_at

    def sent(self, *, refused: bool) -> None:
        """The claim was answered: refused (400) is tried again after a backoff, while the
        opponent stays gone; accepted or failed for another reason waits for the next
        count."""
        if refused:
            self._due_at = self._now() + min(CLAIM_RETRY_MAX_S,
                                             CLAIM_RETRY_S * 2.0 ** self.refusals)
            self.refusals += 1
            return
        self.claimed = True
        self._due_at = None
