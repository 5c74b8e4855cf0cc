"""A UCI engine that records its own conversation: it runs another engine and passes every
line through, writing each to a log of its own, so a test can read what the bot asked of
its engines (every `go`, `stop`, `bestmove`, `quit`) after the fact.

    python tests/bot/recording_engine.py LOG_DIR ENGINE_COMMAND...

Each process writes LOG_DIR/<pid>.log, one line per message: `> ` what the bot sent,
`< ` what the engine answered, and `exit` once the engine is gone. `searches` reads one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

if __name__ == "__main__":  # run as a script: the shared stub is in tests/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.uci_stub import board_of as board_of  # the tests read positions with it


def main(argv: list[str]) -> None:
    log_dir, command = Path(argv[0]), argv[1:]
    log_dir.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()
    with (log_dir / f"{os.getpid()}.log").open("w") as log:
        def write(line: str) -> None:
            with lock:
                log.write(line.rstrip("\n") + "\n")
                log.flush()

        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True, bufsize=1)
        assert child.stdin is not None and child.stdout is not None
        answers = child.stdout

        def relay_answers() -> None:
            for line in answers:
                write("< " + line)
                sys.stdout.write(line)
                sys.stdout.flush()

        reader = threading.Thread(target=relay_answers, daemon=True)
        reader.start()
        for line in sys.stdin:
            write("> " + line)
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except BrokenPipeError:
                break
            if line.strip() == "quit":  # gone as the engine goes, as an engine would
                break
        child.stdin.close()
        child.wait()
        reader.join()
        write("exit")


@dataclass
class Search:
    """One `go` as the engine saw it."""

    position: str  # the `position` command it searched
    answered: bool = False  # a `bestmove` came back
    stopped: bool = False  # a `stop` followed it


@dataclass
class Conversation:
    searches: list[Search] = field(default_factory=list)
    quit: bool = False
    exited: bool = False


def conversation(log: Path) -> Conversation:
    """What one engine process was asked, in order."""
    talk = Conversation()
    position = ""
    for line in log.read_text().splitlines():
        if line == "exit":
            talk.exited = True
            continue
        way, _, text = line.partition(" ")
        command = text.split()[0] if text.split() else ""
        if way == ">" and command == "position":
            position = text
        elif way == ">" and command == "go":
            talk.searches.append(Search(position))
        elif way == ">" and command == "stop" and talk.searches:
            talk.searches[-1].stopped = True
        elif way == ">" and command == "quit":
            talk.quit = True
        elif way == "<" and command == "bestmove" and talk.searches:
            talk.searches[-1].answered = True
    return talk


if __name__ == "__main__":
    main(sys.argv[1:])
