"""The engine host: one warm process that forks a UCI engine per game.

Each engine process on its own holds numba's compiler runtime, the loaded machine code and the
Python heap: about 70 MB besides its hash table (69 MB of Pss for each game more in the
``--no-fork-host`` run of ``make bench-memory``; forked by the host, 14 MB with its launcher).
The host loads all of that once, then forks one child per game, so the children share those
pages copy-on-write and each pays only for what it writes (its hash table, its search tables,
the pages of the heap it touches).

A game's engine is still a command spoken to with UCI: ``kibitz-engine connect SOCKET``
(``engine.launcher``) connects to the host's Unix socket and passes its stdin, stdout and
stderr (``SCM_RIGHTS``).  The host forks; the child adopts those descriptors and runs the UCI
loop (``engine.uci.main``), so it talks to the bot directly, through the pipes the bot made.

Protocol, one connection per engine, lines of ASCII:
    launcher -> host   ``engine\\n`` with three descriptors attached
    host -> launcher   ``pid N\\n`` once the child runs, or ``error TEXT\\n``
    host -> launcher   ``exit STATUS\\n`` when the child ends (the raw ``waitpid`` status)
The launcher hanging up means its engine is no longer wanted: the host kills the child.

The host never starts a thread, so every fork happens in a single-threaded process (a fork
of a threaded process may copy a lock some other thread held).  It ends when its stdin
reaches end of file (the bot that started it is gone) or on a SIGTERM or SIGINT sent to it;
its children go on until their own stdin closes.  The bot starts it in a session of its own,
which its children share, so a signal meant for the bot's process group (Ctrl-C in a
terminal) reaches neither: the bot decides when its engines end, and when the bot dies
(SIGKILL included) the end of their input ends them.
"""

from __future__ import annotations

import contextlib
import gc
import os
import selectors
import signal
import socket
import sys
import threading
import traceback
from pathlib import Path
from typing import Final

from engine import params  # plain constants: no numpy

READY_LINE: Final = "ready"  # on stdout once the socket accepts connections
HELLO: Final = b"engine\n"
STDIO_FDS: Final = 3  # stdin, stdout, stderr
MAX_MESSAGE_BYTES: Final = 256
LISTEN_BACKLOG: Final = 16


class HostError(RuntimeError):
    """The host cannot run: a thread already started, or the socket cannot be made."""


def warm(eval_file: str = "") -> None:
    """Load every compiled function a game uses, and the net of ``eval_file`` when given, so
    the children inherit them loaded: a child's default net, or its ``setoption name EvalFile``
    with the same unchanged file, is the host's copy (``engine.nnue.net_for``): shared pages."""
    import engine.uci  # noqa: F401  (the UCI loop and everything it imports)
    from engine.board import Position
    from engine.nnue import NetFileError, net_for
    from engine.perft import divide
    from engine.search import warm_up

    net = None
    if eval_file:
        try:
            net = net_for(eval_file)
        except NetFileError as exc:  # each game's setoption reports it and falls back
            print(f"kibitz-engine host: {exc}", file=sys.stderr, flush=True)
    warm_up(net)
    divide(Position.startpos(), 2)
    # Later collections in a child would write to every object's header and unshare the
    # heap: objects that exist now are left out of them for good.
    gc.collect()
    gc.freeze()


def thread_count() -> int:
    """Threads of this process as the kernel sees them (numba or LLVM could start some)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def bind(path: Path) -> socket.socket:
    """A listening Unix socket at `path` (a stale one left by a dead host is replaced),
    reachable only by this user."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        old_umask = os.umask(0o077)
        try:
            listener.bind(str(path))
        finally:
            os.umask(old_umask)
        listener.listen(LISTEN_BACKLOG)
    except OSError as exc:
        listener.close()
        raise HostError(f"cannot listen on {path}: {exc}") from exc
    return listener


def run_child(fds: list[int], closing: list[int]) -> None:
    """In the forked child: adopt the launcher's stdio and run the UCI loop; never returns."""
    code = 0
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        for fd in closing:
            with contextlib.suppress(OSError):
                os.close(fd)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 (the process's own stdio)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        from engine.uci import main

        main(sys.stdin, sys.stdout)
    except BaseException:  # the child must never return into the host's loop
        code = 1
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _refuse(conn: socket.socket, fds: list[int], reason: str) -> None:
    """Answer a launcher that gets no engine (it then runs one itself) and hang up."""
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(OSError):
        conn.sendall(f"error {reason}\n".encode())
    conn.close()


class Host:
    """The accept loop: a fork per connection, exit statuses back, hang-ups kill."""

    def __init__(self, listener: socket.socket, path: Path) -> None:
        self._listener = listener
        self._path = path
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        self._children: dict[int, socket.socket] = {}  # child pid -> its launcher's connection
        self._running = True

    def _fds_to_close_in_child(self) -> list[int]:
        fds = [self._listener.fileno(), self._wake_r, self._wake_w]
        fds += [conn.fileno() for conn in self._children.values()]
        with contextlib.suppress(Exception):
            fds.append(self._selector.fileno())  # type: ignore[attr-defined]
        return fds

    def serve(self) -> None:
        for fd in (self._wake_r, self._wake_w):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(self._wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # the wakeup fd does the work
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        self._selector.register(self._listener, selectors.EVENT_READ, "accept")
        self._selector.register(self._wake_r, selectors.EVENT_READ, "signal")
        self._selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "parent")
        print(READY_LINE, flush=True)
        try:
            while self._running:
                for key, _ in self._selector.select():
                    if key.data == "accept":
                        self._accept()
                    elif key.data == "signal":
                        self._drain_wakeups()
                    elif key.data == "parent":
                        if not os.read(sys.stdin.fileno(), 4096):
                            self._running = False  # the bot that started us is gone
                    else:
                        self._hang_up(key.data)
                self._reap()
        finally:
            self._close()

    def _stop(self, *_: object) -> None:
        self._running = False

    def _drain_wakeups(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 4096):
                pass

    def _accept(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError:
            return
        try:
            message, fds, _, _ = socket.recv_fds(conn, MAX_MESSAGE_BYTES, STDIO_FDS)
        except OSError as exc:
            print(f"engine host: a launcher's request failed: {exc}", file=sys.stderr)
            conn.close()
            return
        if message != HELLO or len(fds) != STDIO_FDS:
            _refuse(conn, fds, f"expected {HELLO!r} with {STDIO_FDS} descriptors")
            return
        try:
            pid = os.fork()
        except OSError as exc:
            _refuse(conn, fds, f"fork failed: {exc}")
            return
        if pid == 0:
            run_child(fds, [*self._fds_to_close_in_child(), conn.fileno()])
        for fd in fds:
            os.close(fd)
        self._children[pid] = conn
        self._selector.register(conn, selectors.EVENT_READ, pid)
        with contextlib.suppress(OSError):
            conn.sendall(f"pid {pid}\n".encode())

    def _hang_up(self, pid: int) -> None:
        """The launcher closed its connection: its engine is no longer wanted."""
        conn = self._children.get(pid)
        if conn is None:
            return
        with contextlib.suppress(OSError):
            if conn.recv(MAX_MESSAGE_BYTES):
                return  # nothing is expected from a launcher; ignore it
        self._selector.unregister(conn)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)

    def _reap(self) -> None:
        """Collect every ended child and tell its launcher how it ended."""
        while self._children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self._children.pop(pid, None)
            if conn is None:
                continue
            with contextlib.suppress(OSError):
                conn.sendall(f"exit {status}\n".encode())
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(conn)
            conn.close()

    def _close(self) -> None:
        # Let go of the wakeup pipe before closing it: a child that ends later (and ending
        # the interpreter takes a while) would have the signal handler write to a closed
        # descriptor ("Exception ignored when trying to write to the signal wakeup fd"), or
        # to whatever file got its number since.
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        self._selector.close()
        self._listener.close()
        with contextlib.suppress(OSError):
            self._path.unlink()
        for conn in self._children.values():
            conn.close()  # the children go on until the bot closes their pipes
        os.close(self._wake_r)
        os.close(self._wake_w)


# numpy's BLAS starts a pool of worker threads on import unless told not to; the engine does
# no linear algebra, and the host must stay single-threaded to fork safely.
SINGLE_THREADED_ENV: Final = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                              "MKL_NUM_THREADS": "1"}


def main(path: str, eval_file: str | None = None) -> None:
    """``kibitz-engine host SOCKET [--evalfile NET]``: warm up (with the net: by default the
    engine's own, ``params.DEFAULT_EVAL_FILE``), listen, fork an engine per connection."""
    if "numpy" in sys.modules:
        raise HostError("numpy was imported before the host could keep it single-threaded")
    os.environ.update(SINGLE_THREADED_ENV)
    socket_path = Path(path)
    warm(params.DEFAULT_EVAL_FILE if eval_file is None else eval_file)
    threads = thread_count()
    if threads != 1:
        raise HostError(f"{threads} threads run after warm-up; forking would be unsafe")
    host = Host(bind(socket_path), socket_path)
    host.serve()
