"""Memory of the bot's process tree (the bot, the engine host, the engines), from /proc.

Pss (proportional set size, /proc/PID/smaps_rollup) splits shared pages among the processes
that map them, so the sum over the tree is what the tree really costs; Linux only (None
elsewhere, or where /proc cannot be read).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

PROC: Final = Path("/proc")
KIB: Final = 1024


def children(pid: int, proc: Path = PROC) -> list[int]:
    """The direct children of `pid` (every thread's list)."""
    found: list[int] = []
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found.extend(int(p) for p in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return found


def tree(root: int | None = None, proc: Path = PROC) -> list[int]:
    """`root` (this process) and all its descendants."""
    todo = [os.getpid() if root is None else root]
    seen: list[int] = []
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.append(pid)
        todo.extend(children(pid, proc))
    return seen


def pss_bytes(pid: int, proc: Path = PROC) -> int | None:
    """One process's Pss in bytes; None if it is gone or unreadable."""
    try:
        text = (proc / str(pid) / "smaps_rollup").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * KIB
    return None


def tree_pss_bytes(root: int | None = None, proc: Path = PROC) -> dict[int, int]:
    """Pss in bytes of each process of the tree that could be read."""
    sizes: dict[int, int] = {}
    for pid in tree(root, proc):
        size = pss_bytes(pid, proc)
        if size is not None:
            sizes[pid] = size
    return sizes
