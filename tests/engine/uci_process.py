"""A real ``python -m engine`` subprocess driven line by line, for UCI transcript tests."""

from __future__ import annotations

import contextlib
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class UciProcess:
    def __init__(self, *args: str) -> None:
        """``python -m engine`` with `args` (none: the UCI loop)."""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine", *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.transcript: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.transcript.append(f"> {line}")
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read_until(self, done: Callable[[str], bool], timeout_s: float = 30.0) -> list[str]:
        """Lines up to and including the first that satisfies ``done``."""
        deadline = time.monotonic() + timeout_s
        seen: list[str] = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no matching line within {timeout_s}s; got {seen}")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise EOFError(f"engine exited; got {seen}")
            self.transcript.append(f"< {line}")
            seen.append(line)
            if done(line):
                return seen

    def expect(self, prefix: str, timeout_s: float = 30.0) -> list[str]:
        return self.read_until(lambda line: line.startswith(prefix), timeout_s)

    def handshake(self) -> list[str]:
        self.send("uci")
        lines = self.expect("uciok")
        self.send("isready")
        self.expect("readyok", timeout_s=120.0)
        return lines

    def close(self) -> int:
        if self.proc.poll() is None:
            with contextlib.suppress(BrokenPipeError, ValueError):
                self.send("quit")
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return self.proc.returncode
