"""The claim-victory timer against lila's opponentGone events, on an injected clock."""

from __future__ import annotations

from bot.game.claims import CLAIM_MARGIN_S, CLAIM_RETRY_MAX_S, CLAIM_RETRY_S, ClaimTimer


class Clock:
    def __init__(self) -> None:
        self.now_s = 100.0

    def __call__(self) -> float:
        return self.now_s


def timer(clock: Clock, stale_s: float = 15.0) -> ClaimTimer:
    return ClaimTimer(stale_s=stale_s, now=clock)


def test_due_once_the_count_has_run_out_and_only_on_the_opponents_turn() -> None:
    clock = Clock()
    claims = timer(clock)
    claims.on_gone(True, 10)
    assert not claims.due(opponents_turn=True)
    clock.now_s += 5
    claims.on_gone(True, 5)  # lila repeats the count every 5 s
    clock.now_s += 5 + CLAIM_MARGIN_S
    assert not claims.due(opponents_turn=False)  # our turn: lila would do nothing
    assert claims.due(opponents_turn=True)


def test_a_repeated_zero_keeps_the_first_ones_due_time() -> None:
    clock = Clock()
    claims = timer(clock)
    claims.on_gone(True, 0)
    clock.now_s += CLAIM_MARGIN_S * 0.75
    claims.on_gone(True, 0)
    clock.now_s += CLAIM_MARGIN_S * 0.5
    assert claims.due(opponents_turn=True)


def test_a_refused_claim_is_tried_again_with_backoff_while_gone() -> None:
    clock = Clock()
    claims = timer(clock)
    claims.on_gone(True, 0)
    clock.now_s += CLAIM_MARGIN_S
    assert claims.due(opponents_turn=True)
    waits = []
    for _ in range(6):
        claims.sent(refused=True)
        assert not claims.due(opponents_turn=True)
        waited = 0.0
        while not claims.due(opponents_turn=True):
            clock.now_s += 1.0
            waited += 1.0
            claims.on_gone(True, 0)  # lila repeats the 0 while the opponent stays away
        waits.append(waited)
    assert waits == [CLAIM_RETRY_S, 2 * CLAIM_RETRY_S, 4 * CLAIM_RETRY_S, 8 * CLAIM_RETRY_S,
                     CLAIM_RETRY_MAX_S, CLAIM_RETRY_MAX_S]
    claims.sent(refused=True)
    clock.now_s += CLAIM_RETRY_MAX_S  # the opponent came back: lila stopped repeating
    assert not claims.due(opponents_turn=True)


def test_an_unanswered_or_accepted_claim_waits_for_the_next_count() -> None:
    clock = Clock()
    claims = timer(clock)
    claims.on_gone(True, 0)
    clock.now_s += CLAIM_MARGIN_S
    assert claims.due(opponents_turn=True)
    claims.sent(refused=False)
    assert not claims.due(opponents_turn=True)  # not twice for one count
    clock.now_s += 5
    claims.on_gone(True, 0)
    clock.now_s += CLAIM_MARGIN_S
    assert claims.due(opponents_turn=True)


def test_a_stale_count_is_forgotten() -> None:
    clock = Clock()
    claims = timer(clock, stale_s=15)
    claims.on_gone(True, 20)  # then the opponent came back: lila says nothing more
    clock.now_s += 21
    assert not claims.due(opponents_turn=True)
    assert not claims.pending


def test_gone_false_cancels_the_claim() -> None:
    clock = Clock()
    claims = timer(clock)
    claims.on_gone(True, 0)
    claims.on_gone(False, None)
    clock.now_s += CLAIM_MARGIN_S
    assert not claims.due(opponents_turn=True)
