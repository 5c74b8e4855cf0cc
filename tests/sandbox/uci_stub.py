"""A small UCI engine for tests: it logs every command it receives and plays the first legal
move in UCI order.

    python uci_stub.py LOG [--elo MIN MAX]

With --elo it declares `UCI_LimitStrength` and `UCI_Elo` (range MIN-MAX), as Stockfish
does; without, no option at all.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: the shared loop is in tests/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.uci_stub import serve


def main(argv: list[str]) -> int:
    options = []
    if "--elo" in argv:
        low, high = argv[argv.index("--elo") + 1:argv.index("--elo") + 3]
        options = ["option name UCI_LimitStrength type check default false",
                   f"option name UCI_Elo type spin default {high} min {low} max {high}"]
    with open(argv[1], "a", encoding="utf-8") as log:
        serve("uci-stub", options, log=log, info=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
