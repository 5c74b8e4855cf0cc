"""A small UCI engine for the level tests: it declares the options it is told to, logs every
line it receives to a file of its own, and plays the first legal move in UCI order.

    python level_engine.py LOG_DIR [OPTION ...]

Each process writes LOG_DIR/<pid>.log. An OPTION is one of UCI_LimitStrength,
UCI_Elo:<min>:<max>, UCI_Opponent, UCI_RatingAdv, or any other name (a spin option 0-100);
with none, the engine declares no option at all.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: the shared loop is in tests/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.uci_stub import serve


def declarations(options: list[str]) -> list[str]:
    """The `option` lines of the options asked for."""
    lines = []
    for option in options:
        name, _, bounds = option.partition(":")
        if name == "UCI_LimitStrength":
            lines.append("option name UCI_LimitStrength type check default false")
        elif name == "UCI_Elo":
            low, high = bounds.split(":")
            lines.append(f"option name UCI_Elo type spin default {high} min {low} max {high}")
        elif name == "UCI_Opponent":
            lines.append("option name UCI_Opponent type string default <empty>")
        elif name == "UCI_RatingAdv":
            lines.append("option name UCI_RatingAdv type spin default 0 min -10000 max 10000")
        else:
            lines.append(f"option name {name} type spin default 0 min 0 max 100")
    return lines


def main(argv: list[str]) -> int:
    with (Path(argv[1]) / f"{os.getpid()}.log").open("a", encoding="utf-8") as log:
        serve("level-engine", declarations(argv[2:]), log=log)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
