"""Time controls, speeds, perfs and variants, with lila's names and thresholds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import chess
import chess.variant

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

# lila's variant keys -> (name, short name) (scalachess chess.variant.*). The name is also
# what python-chess's `chess.variant.find_variant` knows each variant's board by.
VARIANTS: dict[str, tuple[str, str]] = {
    "standard": ("Standard", "Std"),
    "chess960": ("Chess960", "960"),
    "fromPosition": ("From Position", "FEN"),
    "antichess": ("Antichess", "Anti"),
    "atomic": ("Atomic", "Atom"),
    "crazyhouse": ("Crazyhouse", "Crazy"),
    "horde": ("Horde", "Horde"),
    "kingOfTheHill": ("King of the Hill", "KotH"),
    "racingKings": ("Racing Kings", "Racing"),
    "threeCheck": ("Three-check", "3check"),
}
# Variants with a rating pool of their own (lila PerfType: the perf key is the variant key).
VARIANT_PERFS = frozenset(VARIANTS) - {"standard", "fromPosition"}

PERF_NAMES = {
    "ultraBullet": "UltraBullet",
    "bullet": "Bullet",
    "blitz": "Blitz",
    "rapid": "Rapid",
    "classical": "Classical",
    "correspondence": "Correspondence",
    "chess960": "Chess960",
    **{key: VARIANTS[key][0] for key in VARIANT_PERFS if key != "chess960"},
    "threeCheck": "Three-Check",  # the perf's capital C (lila PerfType), unlike the variant
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
}  # the variant perfs' icons are not recorded here: their challenges carry an empty one
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
    return variant if variant in VARIANT_PERFS else time_control.speed


def variant_board(variant: str, fen: str | None = None) -> chess.Board:
    """python-chess's board with the variant's rules, at `fen` or the variant's own start.
    From-position games use chess960 castling too: their rooks may stand anywhere."""
    chess960 = variant in ("chess960", "fromPosition")
    cls = chess.variant.find_variant("Standard" if chess960 else VARIANTS[variant][0])
    return cls(fen or cls.starting_fen, chess960=chess960)
