"""The memory the configured games take, against the machine's available memory."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TypedDict, Unpack

from bot.engines.memory import (
    BOT_MB,
    ENGINE_HOST_MB,
    EXTERNAL_ENGINE_MB,
    FORKED_ENGINE_MB,
    PROCESS_ENGINE_MB,
    available_mb,
    estimate,
    memory_report,
)
from bot.ops.config import Config, parse_config

MEMINFO = Path(__file__).resolve().parents[2] / "data" / "meminfo"
ONE_GB_VM = MEMINFO / "1gb-vm"  # MemAvailable: 612480 kB


class EngineOverrides(TypedDict, total=False):
    """The engine keys these tests set besides the hash."""

    command: tuple[str, ...] | None
    spare: bool
    fork_host: bool


def configured(
        concurrency: int, hash_mb: int | None, **engine: Unpack[EngineOverrides]) -> Config:
    base = Config()
    options = {} if hash_mb is None else {"hash": hash_mb}  # any case, as UCI allows
    return dataclasses.replace(
        base, engine=dataclasses.replace(base.engine, options=options, **engine),
        challenge=dataclasses.replace(base.challenge, concurrency=concurrency))


def test_the_estimate_counts_every_game_and_the_spare() -> None:
    forked = estimate(configured(8, 64))
    assert forked.engines == 9
    assert forked.total_mb == BOT_MB + ENGINE_HOST_MB + 9 * (FORKED_ENGINE_MB + 64)
    own = estimate(configured(8, 64, fork_host=False, spare=False))
    assert own.total_mb == BOT_MB + 8 * (PROCESS_ENGINE_MB + 64)
    external = estimate(configured(2, None, command=("stockfish",), spare=False))
    assert external.total_mb == BOT_MB + 2 * (EXTERNAL_ENGINE_MB + 16)
    assert estimate(configured(2, None)).hash_mb == 64  # the built-in engine's default


def test_meminfo_is_read_in_mb() -> None:
    assert available_mb(ONE_GB_VM) == 612480 // 1024
    assert available_mb(MEMINFO / "no-memavailable") is None
    assert available_mb(MEMINFO / "missing") is None


def test_more_than_the_machine_has_is_a_warning_naming_the_remedy() -> None:
    line, warning = memory_report(configured(8, 64), ONE_GB_VM)
    total = estimate(configured(8, 64)).total_mb
    assert line.startswith(f"memory: about {total} MB for 9 engines at Hash 64 MB")
    assert line.endswith("598 MB available")
    assert warning is not None and f"about {total} MB" in warning
    assert "challenge.concurrency" in warning and "Hash" in warning


def test_what_fits_is_no_warning() -> None:
    line, warning = memory_report(configured(1, 16), ONE_GB_VM)
    assert warning is None and "598 MB available" in line
    line, warning = memory_report(configured(1, 16), MEMINFO / "no-memavailable")
    assert warning is None and "available memory unknown" in line


def test_with_several_engines_each_game_counts_on_the_heaviest_and_each_spare() -> None:
    config = parse_config("""
challenge: {concurrency: 3}
engines:
  default: builtin
  entries:
    builtin: {options: {Hash: 32}}
    fairy: {command: fairy-stockfish, options: {Hash: 256}, spare: false}
    unused: {command: huge, options: {Hash: 4096}}
  rules: [{engine: fairy, variants: [atomic]}]
""")
    needed = estimate(config)
    assert (needed.engines, needed.hash_mb, needed.per_engine_mb) == (4, 256, EXTERNAL_ENGINE_MB)
    assert needed.fixed_mb == BOT_MB + ENGINE_HOST_MB  # the built-in engine's host, once
