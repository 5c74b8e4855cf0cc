"""A UCI engine that reads `go` and never answers: an engine that has hung (Ethereal 12 once it
can start no thread), for the watchdogs of the match referee and the factory's opponent.
Arguments are ignored: a test passes its own directory to find its process by.

    python tests/engine/silent_engine.py [MARKER]
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: the shared loop is in tests/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.uci_stub import serve


def main() -> None:
    serve("Silent", answer_go=False)


if __name__ == "__main__":
    main()
