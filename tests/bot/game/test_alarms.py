"""The alarms' decisions on an injected clock: abort, claim victory, resync, end."""

from __future__ import annotations

from bot.game.alarms import (
    ABORT_RETRY_MAX_S,
    ABORT_RETRY_S,
    FINISH_GRACE_S,
    RESYNC_BACKOFF_MAX_S,
    STUCK_AFTER_FAILURE_S,
    STUCK_AFTER_SENT_S,
    Alarms,
    Due,
)
from bot.game.claims import CLAIM_MARGIN_S, ClaimTimer

ABORT_AFTER_S = 20.0


def dog(claim_victory: bool = True) -> Alarms:
    return Alarms(abort_after_s=ABORT_AFTER_S, claim_victory=claim_victory, now=0.0)


def their_turn(alarms: Alarms, now: float, *, abortable: bool = True) -> list[Due]:
    return alarms.due(now, playing=True, abortable=abortable, our_turn=False, mover_idle=True)


def our_turn(alarms: Alarms, now: float, *, mover_idle: bool = True) -> list[Due]:
    return alarms.due(now, playing=True, abortable=False, our_turn=True, mover_idle=mover_idle)


def test_an_opponent_who_never_starts_is_aborted_once_and_wait_buys_time() -> None:
    alarms = dog()
    assert their_turn(alarms, ABORT_AFTER_S) == []
    alarms.grant_wait()
    assert their_turn(alarms, ABORT_AFTER_S + 1) == []
    assert their_turn(alarms, 2 * ABORT_AFTER_S + 1) == [Due.ABORT]
    assert their_turn(alarms, 3 * ABORT_AFTER_S) == []  # sent once
    assert their_turn(dog(), 100.0, abortable=False) == []  # past the second move


def test_nothing_is_due_before_the_first_state_except_the_end() -> None:
    alarms = dog()
    assert alarms.due(100.0, playing=False, abortable=True, our_turn=False,
                        mover_idle=True) == []
    alarms.server_finished(100.0)
    alarms.server_finished(101.0)  # the first signal counts
    assert alarms.due(100.0 + FINISH_GRACE_S, playing=False, abortable=True,
                        our_turn=False, mover_idle=True) == []
    assert alarms.due(100.1 + FINISH_GRACE_S, playing=False, abortable=True,
                        our_turn=False, mover_idle=True) == [Due.END]


def test_victory_is_claimed_on_their_turn_once_lilas_count_runs_out() -> None:
    clock = [10.0]
    alarms = Alarms(abort_after_s=ABORT_AFTER_S, claim_victory=True, now=0.0,
                        claims=ClaimTimer(now=lambda: clock[0]))
    alarms.opponent_gone(True, 5.0)
    clock[0] = 14.0
    assert their_turn(alarms, clock[0], abortable=False) == []
    clock[0] = 15.0 + CLAIM_MARGIN_S
    assert our_turn(alarms, clock[0], mover_idle=False) == []  # never on our own turn
    assert their_turn(alarms, clock[0], abortable=False) == [Due.CLAIM_VICTORY]
    alarms.claims.sent(refused=True)  # lila answered 400: again once the backoff passed
    alarms.opponent_gone(True, 0.0)
    assert their_turn(alarms, clock[0], abortable=False) == []
    clock[0] += 10.0
    alarms.opponent_gone(True, 0.0)
    assert their_turn(alarms, clock[0], abortable=False) == [Due.CLAIM_VICTORY]
    switched_off = Alarms(abort_after_s=ABORT_AFTER_S, claim_victory=False, now=0.0,
                            claims=ClaimTimer(now=lambda: clock[0]))
    switched_off.opponent_gone(True, 0.0)
    clock[0] += 5.0
    assert their_turn(switched_off, clock[0], abortable=False) == []


def test_our_turn_with_no_move_on_its_way_resyncs_sooner_after_a_failed_move() -> None:
    alarms = dog()
    assert our_turn(alarms, STUCK_AFTER_SENT_S + 1, mover_idle=False) == []  # thinking
    assert our_turn(alarms, STUCK_AFTER_SENT_S + 1) == [Due.RESYNC]
    assert our_turn(alarms, STUCK_AFTER_SENT_S + 2) == []  # the timer starts anew
    alarms.new_ply(100.0)
    alarms.move_failed()
    assert our_turn(alarms, 100.0 + STUCK_AFTER_FAILURE_S + 0.1) == [Due.RESYNC]


def test_resyncs_back_off_and_never_give_up() -> None:
    """A server failing on our turn is asked again and again, each wait twice the last up
    to a cap, and a new ply starts the count over."""
    alarms = dog()
    alarms.move_failed()
    waits = []
    for in_a_row in range(1, 8):
        waits.append(alarms.stuck_after_s())
        assert alarms.resync() == in_a_row
    assert waits == [STUCK_AFTER_FAILURE_S * 2 ** i for i in range(3)] + \
        [RESYNC_BACKOFF_MAX_S] * 4
    alarms.new_ply(5.0)  # back in step
    assert alarms.resync() == 1


def test_a_failed_abort_is_tried_again_with_backoff_while_abortable() -> None:
    alarms = dog(claim_victory=False)
    now = ABORT_AFTER_S + 1
    assert their_turn(alarms, now) == [Due.ABORT]
    waits = []
    for _ in range(6):
        alarms.abort_failed(now)
        retry_s = next(w for w in (0.5 * k for k in range(1, 200))
                       if their_turn(alarms, now + w) == [Due.ABORT])
        waits.append(retry_s)
        now += retry_s
    assert waits == [ABORT_RETRY_S, 2 * ABORT_RETRY_S, 4 * ABORT_RETRY_S, 8 * ABORT_RETRY_S,
                     ABORT_RETRY_MAX_S, ABORT_RETRY_MAX_S]
    alarms.abort_failed(now)
    assert their_turn(alarms, now + ABORT_RETRY_MAX_S, abortable=False) == []
