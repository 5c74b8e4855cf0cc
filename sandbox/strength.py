"""How the sparring engine plays a person of a given rating: the UCI options it declares, or
a node limit where it declares none low enough.

An engine that declares `UCI_LimitStrength` and `UCI_Elo` is set to the rating, clamped to
the option's range. Below the range's floor (Stockfish's is 1350) the floor is set and a node
limit weakens it further; an engine with no `UCI_Elo` gets the node limit alone. The node
budget doubles every NODES_DOUBLING_ELO points from NODES_AT_BASE at BASE_ELO: a rough
ladder for a sparring partner, not a calibration (a search of a few dozen nodes still sees
one-move tactics).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import chess.engine

LIMIT_STRENGTH = "UCI_LimitStrength"
ELO_OPTION = "UCI_Elo"
BASE_ELO = 1200
NODES_AT_BASE = 32
NODES_DOUBLING_ELO = 150
MIN_NODES = 1


def nodes_for(elo: int) -> int:
    """The per-move node budget that stands in for `elo`."""
    return max(MIN_NODES, round(NODES_AT_BASE * 2 ** ((elo - BASE_ELO) / NODES_DOUBLING_ELO)))


@dataclass(frozen=True)
class Strength:
    """What the sparring engine is set to for one rating."""

    elo: int  # the rating asked for
    options: dict[str, chess.engine.ConfigValue] = field(default_factory=dict)
    nodes: int | None = None  # a per-move node limit, None for none

    def describe(self) -> str:
        parts = [f"{name} {value}" for name, value in self.options.items()]
        if self.nodes is not None:
            parts.append(f"{self.nodes} nodes a move")
        return ", ".join(parts) or "full strength"


def strength_for(elo: int, declared: Mapping[str, chess.engine.Option]) -> Strength:
    """The settings that make an engine with the `declared` UCI options play at `elo`."""
    option = declared.get(ELO_OPTION)
    if option is None or LIMIT_STRENGTH not in declared \
            or option.min is None or option.max is None:
        return Strength(elo, {}, nodes_for(elo))
    chosen = min(max(elo, option.min), option.max)
    options: dict[str, chess.engine.ConfigValue] = {LIMIT_STRENGTH: True, ELO_OPTION: chosen}
    return Strength(elo, options, nodes_for(elo) if elo < option.min else None)
