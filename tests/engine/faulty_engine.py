"""UCI engines that fail as real ones do, for the watchdogs and the clean-up of the match
referee and the factory's opponent. The first argument names the fault; the others are
ignored (a test passes its own directory, to find its processes by):

- `silent`: reads `go` and never answers (Ethereal 12 once it can start no thread);
- `stubborn`: outlives the end of its input, so only `quit` (or a signal) ends it;
- `quitting`: exits with status 3 at its first `go`, as an engine that crashes does.

    python tests/engine/faulty_engine.py silent|stubborn|quitting [MARKER]
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: the shared loop is in tests/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.uci_stub import serve

QUITTING_STATUS = 3


def main(argv: list[str]) -> None:
    fault = argv[0] if argv else ""
    if fault == "silent":
        serve("Silent", answer_go=False)
    elif fault == "stubborn":
        serve("Stubborn", outlive_input=True)
    elif fault == "quitting":
        serve("Quitter", exit_on_go=QUITTING_STATUS)
    else:
        sys.exit(f"faulty_engine.py: the fault must be silent, stubborn or quitting, not {fault!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
