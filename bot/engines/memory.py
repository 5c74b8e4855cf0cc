"""How much memory the configured games take, against what the machine has available.

The figures are proportional set sizes (Pss) measured by `make bench-memory`
(tools/bench/memory.py): shared pages counted once, split among the processes sharing them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bot.engines.rules import EngineTable, reachable
from bot.ops.config import Config, EngineConfig

MEMINFO: Final = Path("/proc/meminfo")
# Measured by `make bench-memory` (Hash 64, less the table, which a new game writes whole).
BOT_MB: Final = 33  # the bot itself: Python, aiohttp, python-chess, the event loop
ENGINE_HOST_MB: Final = 170  # the built-in engine's host: numba, LLVM and the loaded code
FORKED_ENGINE_MB: Final = 14  # one game's engine forked by the host (7) and its launcher (7)
PROCESS_ENGINE_MB: Final = 69  # one built-in engine in its own process (engine.fork_host off)
EXTERNAL_ENGINE_MB: Final = 20  # a configured UCI engine besides its hash: a guess (C engines)
# each search thread beyond the first: its tables and its copy of the root (Threads 2 against
# 1, a standalone engine at Hash 64 after two searches: +2.7 MB resident)
HELPER_THREAD_MB: Final = 3
BUILTIN_DEFAULT_HASH_MB: Final = 64  # engine.tt.DEFAULT_HASH_MB, when the config sets no Hash


@dataclass(frozen=True, slots=True)
class MemoryEstimate:
    """The bot's expected total at full concurrency, and how it is made up."""

    engines: int
    hash_mb: int
    per_engine_mb: int
    fixed_mb: int

    @property
    def total_mb(self) -> int:
        return self.fixed_mb + self.engines * (self.per_engine_mb + self.hash_mb)

    def describe(self) -> str:
        return (f"about {self.total_mb} MB for {self.engines} engines at Hash {self.hash_mb} MB "
                f"({self.fixed_mb} MB fixed + {self.engines} x "
                f"({self.per_engine_mb} + {self.hash_mb}) MB)")


def hash_mb(config: Config | EngineConfig) -> int:
    """The configured `Hash` option (any case), or the built-in engine's default."""
    engine = config.engine if isinstance(config, Config) else config
    for name, value in engine.options.items():
        if name.lower() == "hash" and isinstance(value, int | str) and str(value).isdigit():
            return int(value)
    return BUILTIN_DEFAULT_HASH_MB if engine.command is None else 16


def _per_engine_mb(engine: EngineConfig) -> int:
    if engine.command is not None:
        return EXTERNAL_ENGINE_MB
    threads_mb = (engine.search_threads - 1) * HELPER_THREAD_MB
    return threads_mb + (FORKED_ENGINE_MB if engine.fork_host else PROCESS_ENGINE_MB)


def estimate(config: Config) -> MemoryEstimate:
    """What `config` takes with every game slot playing (and the spare engines started).
    With several engines, every game is counted on the heaviest one (each may get it)."""
    table = EngineTable.from_config(config)
    entries = [table.entries[name] for name in reachable(table)]
    heaviest = max(entries, key=lambda e: _per_engine_mb(e) + hash_mb(e))
    engines = config.challenge.concurrency + sum(1 for entry in entries if entry.spare)
    host = any(entry.command is None and entry.fork_host for entry in entries)
    fixed = BOT_MB + (ENGINE_HOST_MB if host else 0)
    return MemoryEstimate(engines, hash_mb(heaviest), _per_engine_mb(heaviest), fixed)


def available_mb(meminfo: Path = MEMINFO) -> int | None:
    """`MemAvailable` of /proc/meminfo in MB (None when it cannot be read)."""
    try:
        text = meminfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name == "MemAvailable":
            fields = rest.split()
            if fields and fields[0].isdigit():
                return int(fields[0]) // 1024  # kB
    return None


def memory_report(config: Config, meminfo: Path = MEMINFO) -> tuple[str, str | None]:
    """A line saying what the configuration takes, and a warning when the machine has less
    memory available than that (None otherwise)."""
    needed = estimate(config)
    available = available_mb(meminfo)
    line = f"memory: {needed.describe()}"
    if available is None:
        return f"{line}; available memory unknown", None
    line = f"{line}; {available} MB available"
    if needed.total_mb <= available:
        return line, None
    return line, (f"the configured games need about {needed.total_mb} MB but only {available} MB "
                  "is available: lower challenge.concurrency or the engine's Hash, or the "
                  "out-of-memory killer may end the bot")
