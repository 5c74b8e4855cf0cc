"""Time controls, speeds, perfs and variants, with lila's names and thresholds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Allowed `clock.limit` values in seconds (lila ApiConfig.clockLimitSeconds).
CLOCK_LIMITS_S = frozenset({0, 15, 30, 45, 60, 90, *range(120, 10_800 + 1, 60)})
MAX_INCREMENT_S = 60
CORRESPONDENCE_DAYS = frozenset({1, 2, 3, 5, 7, 10, 14})
# Estimated game duration = limit + 40 * increment; speed thresholds in seconds.
INCREMENT_WEIGHT = 40
SPEED_THRESHOLDS_S = (
    (30, "ultraBullet"),
    (180, "bullet"),
    (480, "blitz"),
    (1500, "rapid"),
)

VARIANTS: dict[str, tuple[str, str]] = {
    "standard": ("Standard", "Std"),
    "chess960": ("Chess960", "960"),
    "fromPosition": ("From Position", "FEN"),
}
# Variants lichess has but the sandbox does not play.
UNSUPPORTED_VARIANTS = frozenset({
    "crazyhouse", "antichess", "atomic", "horde", "kingOfTheHill", "racingKings", "threeCheck",
})

PERF_NAMES = {
    "ultraBullet": "UltraBullet",
    "bullet": "Bullet",
    "blitz": "Blitz",
    "rapid": "Rapid",
    "classical": "Classical",
    "correspondence": "Correspondence",
    "chess960": "Chess960",
}
# lichess font icons (private-use code points) shown beside each perf.
PERF_ICONS = {
    "ultraBullet": "\ue059",
    "bullet": "\ue047",
    "blitz": "\ue03b",
    "rapid": "\ue048",
    "classical": "\ue039",
    "correspondence": "\ue03a",
    "chess960": "\ue046",
}
FRACTION_SHOW = {15: "¼", 30: "½", 45: "¾", 90: "1.5"}


def variant_json(key: str) -> dict[str, Any]:
    name, short = VARIANTS[key]
    return {"key": key, "name": name, "short": short}


@dataclass(frozen=True)
class TimeControl:
    """A clock (limit + increment, seconds), days per move, or unlimited."""

    limit_s: int | None = None
    increment_s: int | None = None
    days: int | None = None

    @property
    def kind(self) -> str:
        if self.limit_s is not None:
            return "clock"
        if self.days is not None:
            return "correspondence"
        return "unlimited"

    @property
    def speed(self) -> str:
        if self.limit_s is None:
            return "correspondence"
        estimate_s = self.limit_s + INCREMENT_WEIGHT * (self.increment_s or 0)
        for threshold_s, name in SPEED_THRESHOLDS_S:
            if estimate_s < threshold_s:
                return name
        return "classical"

    def show(self) -> str:
        limit_s = self.limit_s or 0
        minutes = FRACTION_SHOW.get(limit_s, str(limit_s // 60))
        return f"{minutes}+{self.increment_s or 0}"

    def json(self) -> dict[str, Any]:
        if self.kind == "clock":
            return {"type": "clock", "limit": self.limit_s, "increment": self.increment_s or 0,
                    "show": self.show()}
        if self.kind == "correspondence":
            return {"type": "correspondence", "daysPerTurn": self.days}
        return {"type": "unlimited"}

    def describe(self) -> str:
        if self.kind == "clock":
            return self.show()
        if self.kind == "correspondence":
            return f"{self.days} days per move"
        return "unlimited"

    def pgn_tag(self) -> str:
        if self.kind == "clock":
            return f"{self.limit_s}+{self.increment_s or 0}"
        return "-"


def perf_key(variant: str, time_control: TimeControl) -> str:
    return "chess960" if variant == "chess960" else time_control.speed
