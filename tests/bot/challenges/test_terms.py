"""A challenge's terms (bot.challenges.terms.decide) over many challenge shapes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.challenges.terms import DeclineReason, decide, is_own_challenge
from bot.lichess.events import Challenge, ChallengeUser, TimeControl, parse_challenge
from bot.ops.config import SPEEDS, ChallengeConfig
from tests.bot.challenges.builders import challenge, policy

VARIANTS = ("standard", "chess960", "fromPosition", "atomic", "crazyhouse", "horde")


def test_the_defaults_accept_an_ordinary_challenge() -> None:
    assert decide(challenge(), ChallengeConfig()).accept


def test_each_rule_declines_with_its_reason_key() -> None:
    bot = ChallengeUser("robot", "Robot", "BOT", 2000)
    cases = [
        # lila: `standard` is "I'm not accepting variant challenges right now", `variant`
        # "I'm not willing to play this variant right now" (standard chess included).
        (challenge(variant="atomic"), policy(variants=("standard",)), DeclineReason.STANDARD),
        (challenge(variant="atomic"), policy(variants=("standard", "chess960")),
         DeclineReason.VARIANT),
        (challenge(), policy(variants=("chess960",)), DeclineReason.VARIANT),
        (challenge(speed="classical"), policy(speeds=("bullet", "blitz")), DeclineReason.TOO_SLOW),
        (challenge(speed="bullet"), policy(speeds=("blitz", "rapid")), DeclineReason.TOO_FAST),
        (challenge(speed="correspondence",
                   time_control=TimeControl("correspondence", days_per_turn=3)),
         policy(), DeclineReason.TIME_CONTROL),
        (challenge(time_control=TimeControl("unlimited")), policy(), DeclineReason.TIME_CONTROL),
        (challenge(), policy(min_base_s=300), DeclineReason.TOO_FAST),
        (challenge(), policy(max_base_s=60), DeclineReason.TOO_SLOW),
        (challenge(), policy(min_increment_s=5), DeclineReason.TOO_FAST),
        (challenge(), policy(max_increment_s=1), DeclineReason.TOO_SLOW),
        (challenge(rated=True), policy(accept_rated=False), DeclineReason.CASUAL),
        (challenge(rated=False), policy(accept_casual=False), DeclineReason.RATED),
        (challenge(challenger=bot), policy(accept_bots=False), DeclineReason.NO_BOT),
        (challenge(), policy(accept_humans=False), DeclineReason.ONLY_BOT),
        (challenge(), policy(block_list=("alice",)), DeclineReason.GENERIC),
        (challenge(), policy(allow_list=("bob",)), DeclineReason.GENERIC),
        (challenge(rules=("noAbort",)), policy(), DeclineReason.GENERIC),
        (challenge(bot_compatible=False), policy(), DeclineReason.TIME_CONTROL),
    ]
    for shape, rules, reason in cases:
        verdict = decide(shape, rules)
        assert verdict.reason is reason, (shape, verdict)
        assert verdict.why


def test_allow_list_admits_only_its_users() -> None:
    assert decide(challenge(), policy(allow_list=("alice",))).accept
    # The block list wins over the allow list.
    assert not decide(challenge(), policy(allow_list=("alice",), block_list=("alice",))).accept


def test_own_challenges_are_recognised_case_insensitively() -> None:
    mine = challenge(challenger=ChallengeUser("kibitz", "Kibitz", "BOT", 1500))
    assert is_own_challenge(mine, "Kibitz")
    assert not is_own_challenge(challenge(), "kibitz")


def test_a_challenge_from_the_wire_is_decided() -> None:
    raw = {
        "id": "H9fIRZUk", "url": "https://lichess.org/H9fIRZUk", "status": "created",
        "challenger": {"id": "bot1", "name": "Bot1", "rating": 1500, "title": "BOT"},
        "destUser": {"id": "kibitz", "name": "Kibitz", "title": "BOT"},
        "variant": {"key": "standard", "name": "Standard"}, "rated": True, "speed": "rapid",
        "timeControl": {"type": "clock", "limit": 600, "increment": 0, "show": "10+0"},
        "color": "random", "perf": {"name": "Rapid"},
    }
    parsed = parse_challenge(raw, {"bot": True, "board": False})
    assert parsed.challenger.is_bot and parsed.time_control.base_s == 600
    assert decide(parsed, ChallengeConfig()).accept
    assert decide(parsed, policy(accept_bots=False)).reason is DeclineReason.NO_BOT


users = st.builds(ChallengeUser, id=st.sampled_from(["alice", "bob", "carol", "robot"]),
                  name=st.just("X"), title=st.sampled_from([None, "BOT", "GM"]),
                  rating=st.none() | st.integers(600, 3000))
clocks = st.one_of(
    st.builds(TimeControl, kind=st.just("clock"),
              base_s=st.sampled_from([0.0, 15.0, 30.0, 60.0, 180.0, 600.0, 10800.0]),
              increment_s=st.integers(0, 180).map(float)),
    st.builds(TimeControl, kind=st.just("correspondence"), days_per_turn=st.integers(1, 14)),
    st.just(TimeControl("unlimited")),
)
challenges = st.builds(
    Challenge, id=st.text("abcdefgh12345678", min_size=8, max_size=8), challenger=users,
    dest=st.none(), variant=st.sampled_from(VARIANTS), speed=st.sampled_from(SPEEDS),
    rated=st.booleans(), time_control=clocks, color=st.sampled_from(["white", "black", "random"]),
    initial_fen=st.none(), rules=st.sampled_from([(), ("noAbort",), ("noRematch",)]),
    rematch_of=st.none(), bot_compatible=st.booleans(),
)
policies = st.builds(
    ChallengeConfig, concurrency=st.integers(1, 8),
    variants=st.lists(st.sampled_from(["standard", "chess960", "fromPosition"]), min_size=1,
                      unique=True).map(tuple),
    speeds=st.lists(st.sampled_from(SPEEDS), min_size=1, unique=True).map(tuple),
    min_base_s=st.sampled_from([0.0, 60.0, 300.0]), max_base_s=st.sampled_from([600.0, 10800.0]),
    min_increment_s=st.sampled_from([0.0, 1.0]), max_increment_s=st.sampled_from([5.0, 180.0]),
    accept_rated=st.booleans(), accept_casual=st.booleans(), accept_bots=st.booleans(),
    accept_humans=st.booleans(),
    block_list=st.sampled_from([(), ("bob",)]), allow_list=st.sampled_from([(), ("alice",)]),
)


@given(challenges, policies)
def test_an_accepted_challenge_satisfies_every_rule(shape: Challenge,
                                                    rules: ChallengeConfig) -> None:
    verdict = decide(shape, rules)
    if not verdict.accept:
        assert isinstance(verdict.reason, DeclineReason) and verdict.why
        return
    who = shape.challenger.id
    assert who not in rules.block_list
    assert not rules.allow_list or who in rules.allow_list
    assert rules.accept_bots if shape.challenger.is_bot else rules.accept_humans
    assert shape.variant in rules.variants and shape.bot_compatible
    assert shape.speed in rules.speeds
    assert rules.accept_rated if shape.rated else rules.accept_casual
    assert "noAbort" not in shape.rules
    tc = shape.time_control
    if tc.kind == "clock":
        assert rules.min_base_s <= tc.base_s <= rules.max_base_s
        assert rules.min_increment_s <= tc.increment_s <= rules.max_increment_s
    else:
        assert tc.kind == "correspondence" and "correspondence" in rules.speeds


@given(challenges, policies)
def test_speed_refusals_point_the_right_way(shape: Challenge, rules: ChallengeConfig) -> None:
    verdict = decide(shape, rules)
    allowed = [SPEEDS.index(s) for s in rules.speeds]
    if verdict.reason is DeclineReason.TOO_FAST and shape.speed not in rules.speeds:
        assert SPEEDS.index(shape.speed) < min(allowed)
    if verdict.reason is DeclineReason.TOO_SLOW and shape.speed not in rules.speeds:
        assert SPEEDS.index(shape.speed) > max(allowed)
