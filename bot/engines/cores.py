"""The cores the configured games ask for against the cores the machine has.

Each game's engine searches with ``engine.threads`` threads (Lazy SMP); with every game slot
thinking at once, more threads than cores only slices the same cores finer, and each game
then searches slower than with fewer threads.
"""

from __future__ import annotations

import os

from bot.engines.rules import EngineTable, reachable
from bot.ops.config import Config


def machine_cores() -> int:
    """The cores this process may run on (its affinity mask: a container's or a cgroup's
    cpuset counts), or all the machine's when the mask cannot be read."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cores_report(config: Config, cores: int | None = None) -> str | None:
    """A warning when the games at full concurrency run more search threads than there are
    cores (None otherwise). With several engines, every game is counted on the one with the
    most threads (each game may get it)."""
    available = machine_cores() if cores is None else cores
    table = EngineTable.from_config(config)
    threads = max(table.entries[name].search_threads for name in reachable(table))
    games = config.challenge.concurrency
    if games * threads <= available:
        return None
    return (f"{games} games (challenge.concurrency) x {threads} engine threads = "
            f"{games * threads} search threads on {available} cores: a game thinking with "
            "others searches slower than with fewer threads; lower engine.threads")
