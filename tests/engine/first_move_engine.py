"""A UCI engine that always plays its first legal move in UCI text order: the weakest, and
deterministic, player for the strength tools' tests (Stockfish's Skill Level draws its
weakening from a time-seeded generator, so no test could be sure what it plays).

    python tests/engine/first_move_engine.py
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: the shared loop is in tests/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.uci_stub import serve


def main() -> None:
    serve("FirstMove")


if __name__ == "__main__":
    main()
