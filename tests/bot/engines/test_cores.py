"""engine.threads: the Threads option sent to each game's engine, weighed against the cores."""

from __future__ import annotations

import dataclasses

import pytest

from bot.engines.cores import cores_report, machine_cores
from bot.engines.memory import FORKED_ENGINE_MB, HELPER_THREAD_MB, estimate
from bot.engines.pool import EngineSpec
from bot.ops.config import THREADS_OPTION, Config, ConfigError, EngineConfig, parse_config


def configured(concurrency: int, threads: int) -> Config:
    base = Config()
    return dataclasses.replace(
        base, engine=dataclasses.replace(base.engine, threads=threads),
        challenge=dataclasses.replace(base.challenge, concurrency=concurrency))


def test_threads_default_to_one_and_are_read_from_the_engine_section() -> None:
    assert Config().engine.threads == 1
    assert parse_config("engine: {threads: 2}").engine.threads == 2


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "two", "true"])
def test_a_bad_thread_count_names_the_key(value: str) -> None:
    with pytest.raises(ConfigError, match=r"engine\.threads"):
        parse_config(f"engine: {{threads: {value}}}")
    with pytest.raises(ConfigError, match=r"engine\.options.*'Threads'"):
        parse_config(f"engine: {{options: {{Threads: {value}}}}}")


def test_a_threads_option_still_counts_but_not_beside_the_threads_key() -> None:
    old = parse_config("engine: {command: stockfish, options: {Hash: 64, Threads: 4}}")
    assert old.engine.search_threads == 4
    assert cores_report(dataclasses.replace(old, challenge=dataclasses.replace(
        old.challenge, concurrency=2)), cores=4) is not None
    with pytest.raises(ConfigError, match=r"engines\.entries\.sf\.threads.*not both"):
        parse_config("engines: {default: sf, entries: "
                     "{sf: {threads: 2, options: {threads: 2}}}}")


def test_the_engine_gets_threads_only_when_more_than_one_is_asked_for() -> None:
    assert THREADS_OPTION not in EngineSpec.from_config(EngineConfig()).options
    spec = EngineSpec.from_config(EngineConfig(threads=3))
    assert spec.options == {"Hash": 64, THREADS_OPTION: 3}


def test_more_search_threads_than_cores_is_a_warning_naming_the_key() -> None:
    assert cores_report(configured(2, 1), cores=2) is None
    assert cores_report(configured(1, 2), cores=2) is None
    warning = cores_report(configured(2, 2), cores=2)
    assert warning is not None
    assert "4 search threads on 2 cores" in warning and "engine.threads" in warning


def test_with_several_engines_each_game_counts_on_the_one_with_most_threads() -> None:
    config = parse_config("challenge: {concurrency: 2}\n"
                          "engines: {default: one, entries: {one: {}, four: {threads: 4}},\n"
                          "          rules: [{engine: four, speeds: [classical]}]}\n")
    warning = cores_report(config, cores=4)
    assert warning is not None and "8 search threads on 4 cores" in warning
    assert cores_report(config, cores=8) is None


def test_the_machine_has_at_least_one_core() -> None:
    assert machine_cores() >= 1


def test_each_helper_thread_adds_to_a_game_s_memory() -> None:
    one, two = estimate(configured(2, 1)), estimate(configured(2, 2))
    assert one.per_engine_mb == FORKED_ENGINE_MB
    assert two.per_engine_mb - one.per_engine_mb == HELPER_THREAD_MB
