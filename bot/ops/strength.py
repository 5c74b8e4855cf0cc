"""The `strength` keys: the level a game is played at, as written in config.yml.

A level is `full` (the engine unlimited), a number (a fixed `UCI_Elo`), or relative to the
opponent: `opponent`, `opponent + 100`, `opponent - 50` (the opponent's Lichess rating mapped
to the engine's scale by `strength.lichess_offset`, then moved by the number). The rules that
choose among them are checked in bot/ops/config.py and applied in bot/engines/levels.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

LevelKind = Literal["full", "fixed", "opponent"]
FULL: Final = "full"
OPPONENT: Final = "opponent"
# The engine scale's range a written level must fall in: the lowest and highest UCI_Elo an
# engine is likely to declare (an engine's own range clamps the level again when it is set).
ELO_FLOOR: Final = 0
ELO_CEILING: Final = 4000
_RELATIVE = re.compile(r"opponent\s*(?:([+-])\s*(\d+))?")


@dataclass(frozen=True, slots=True)
class Level:
    """A written level: `kind` full, fixed (`elo` the UCI_Elo) or opponent (`elo` the
    difference added to the opponent's mapped rating)."""

    kind: LevelKind
    elo: int = 0

    @property
    def follows_opponent(self) -> bool:
        return self.kind == "opponent"

    def __str__(self) -> str:
        if self.kind == "full":
            return FULL
        if self.kind == "fixed":
            return str(self.elo)
        if self.elo == 0:
            return OPPONENT
        return f"{OPPONENT} {'+' if self.elo > 0 else '-'} {abs(self.elo)}"


def parse_level(value: object) -> Level:
    """`full`, a whole number, or `opponent [+|- N]`; ValueError says what is allowed."""
    allowed = (f"must be full, a UCI_Elo from {ELO_FLOOR} to {ELO_CEILING}, or opponent, "
               f"opponent + N or opponent - N, got {value!r}")
    if isinstance(value, bool):
        raise ValueError(allowed)
    if isinstance(value, int):
        if not ELO_FLOOR <= value <= ELO_CEILING:
            raise ValueError(allowed)
        return Level("fixed", value)
    if not isinstance(value, str):
        raise ValueError(allowed)
    text = value.strip()
    if text.isdigit():  # a number written as text (a quoted YAML value)
        return parse_level(int(text))
    if text == FULL:
        return Level("full")
    match = _RELATIVE.fullmatch(text)
    if match is None:
        raise ValueError(allowed)
    sign, number = match.groups()
    difference = 0 if number is None else int(number) * (-1 if sign == "-" else 1)
    return Level("opponent", difference)
