"""The engine host and its launcher: a forked engine speaks UCI on the launcher's stdio, ends
the way the launcher reports, and a crashed one leaves the host serving; no host, no fork."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engine.uci_process import ROOT, UciProcess


class HostProcess:
    """A real ``python -m engine host SOCKET``, ready once it says so."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "engine", "host", str(path)], cwd=ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # blocks until warm (or the host failed)
        assert line.strip() == "ready", line

    def children(self) -> set[int]:
        text = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        return {int(pid) for pid in text.split()}

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()  # end of input: the host exits
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[HostProcess]:
    running = HostProcess(tmp_path / "engine.sock")
    try:
        yield running
    finally:
        running.close()
    assert not running.path.exists()


def forked(host: HostProcess) -> tuple[UciProcess, int]:
    """A launcher through `host`, past the handshake, and the pid of its forked engine."""
    before = host.children()
    engine = UciProcess("connect", str(host.path))
    engine.handshake()
    (child,) = host.children() - before
    return engine, child


def test_a_forked_engine_plays_on_the_launchers_stdio_and_quits(host: HostProcess) -> None:
    engine, child = forked(host)
    engine.send("position startpos moves e2e4")
    engine.send("go depth 5")
    assert engine.expect("bestmove")[-1].split()[1] != "0000"
    assert engine.close() == 0
    assert child not in host.children()


def test_a_crashed_child_ends_its_launcher_the_same_way_and_the_host_serves_on(
        host: HostProcess) -> None:
    engine, child = forked(host)
    os.kill(child, signal.SIGKILL)  # as the out-of-memory killer would
    assert engine.proc.wait(timeout=30) == -signal.SIGKILL  # the launcher died the same way
    engine.close()
    assert host.proc.poll() is None
    again, _ = forked(host)  # the host forks the next engine as before
    again.send("go depth 3")
    again.expect("bestmove")
    assert again.close() == 0


def test_the_launcher_forwards_a_signal_to_its_child(host: HostProcess) -> None:
    engine, child = forked(host)
    engine.proc.send_signal(signal.SIGTERM)
    assert engine.proc.wait(timeout=30) == -signal.SIGTERM
    engine.close()
    assert child not in host.children()


def test_a_killed_launcher_takes_its_child_with_it(host: HostProcess) -> None:
    engine, child = forked(host)
    engine.proc.kill()  # what closing python-chess's transport does to a hung engine
    engine.proc.wait(timeout=30)
    engine.close()
    deadline_s = time.monotonic() + 30  # a safety net: the child goes as soon as the host reaps
    while child in host.children() and time.monotonic() < deadline_s:
        time.sleep(0.01)
    assert child not in host.children()
    assert host.proc.poll() is None


def test_without_a_host_the_launcher_runs_the_engine_itself(tmp_path: Path) -> None:
    engine = UciProcess("connect", str(tmp_path / "nobody.sock"))
    engine.handshake()
    engine.send("go depth 3")
    engine.expect("bestmove")
    engine.send("quit")
    assert engine.proc.wait(timeout=30) == 0
    assert engine.proc.stderr is not None
    assert "no engine host" in engine.proc.stderr.read()
    engine.close()


def test_the_host_loads_the_nets_compiled_entry_points_before_it_forks() -> None:
    """A search with a net calls ``nnue.refresh`` from Python: unless the host has loaded its
    machine code, each forked game loads a copy of its own (bench-memory: about 12 MB a game)."""
    script = ("from engine import nnue, params\n"
              "from engine.host import warm\n"
              "assert not nnue.refresh.signatures\n"
              "warm(params.DEFAULT_EVAL_FILE)\n"
              "print(len(nnue.refresh.signatures))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) >= 1


def test_a_child_that_ends_after_the_host_closed_is_no_error(tmp_path: Path) -> None:
    """A closed host has let go of its signal wakeup pipe: a child that ends during the
    interpreter's exit used to have the SIGCHLD handler write to the closed pipe ("Exception
    ignored when trying to write to the signal wakeup fd ... Bad file descriptor")."""
    script = ("import os, sys\n"
              "from pathlib import Path\n"
              "from engine.host import Host, bind\n"
              "path = Path(sys.argv[1])\n"
              "Host(bind(path), path).serve()  # its input is empty: it closes at once\n"
              "pid = os.fork()\n"
              "if pid == 0:\n"
              "    os._exit(0)\n"
              "os.waitpid(pid, 0)\n"
              "print('reaped')\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "engine.sock")],
                          cwd=ROOT, input="", capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ready", "reaped"]
    assert done.stderr == ""
