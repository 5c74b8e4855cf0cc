"""The configured engines, each with its own pool, and the rules that give each game one.

Only engines some game can be given are started (and warmed up, each with its spare). A
game's engine is chosen once, at its gameStart, from the game's own data.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping

from bot.engines.pool import EnginePool, EngineSpec
from bot.engines.rules import EngineTable, GameFacts, pick_engine, reachable
from bot.lichess.events import Challenge, GameInfo
from bot.ops.config import Config, EngineConfig

log = logging.getLogger(__name__)


def uses_host(entry: EngineConfig) -> bool:
    """Is this the built-in engine forked from the shared engine host?"""
    return entry.command is None and entry.fork_host


def challenge_facts(challenge: Challenge) -> GameFacts:
    """A challenge's game: never an arena game (arena pairings come with no challenge)."""
    return GameFacts(challenge.variant, challenge.speed, challenge.rated,
                     challenge.challenger.is_bot, arena=False,
                     rating=challenge.challenger.rating)


def game_facts(info: GameInfo, bot: bool | None) -> GameFacts:
    """A started game, from its gameStart; `bot` from what the bot knows of the opponent
    (lila's gameStart has the title only as a prefix of the name, which GameInfo drops)."""
    return GameFacts(info.variant, info.speed, info.rated, bot,
                     arena=info.tournament_id is not None, rating=info.opponent_rating)


class EngineSet:
    """Named engine pools and the rules choosing among them."""

    def __init__(self, table: EngineTable, pools: Mapping[str, EnginePool]) -> None:
        self.table = table
        self.pools = dict(pools)

    @classmethod
    def from_config(cls, config: Config, host_command: tuple[str, ...] | None) -> EngineSet:
        """A pool per engine some game can be given; built-in engines are forked from the
        host when `host_command` is given."""
        table = EngineTable.from_config(config)
        pools = {}
        for name in reachable(table):
            entry = table.entries[name]
            spec = EngineSpec.from_config(entry)
            if host_command is not None and uses_host(entry):
                spec = dataclasses.replace(spec, command=host_command)
            pools[name] = EnginePool(spec, spare=entry.spare)
        return cls(table, pools)

    def choose(self, facts: GameFacts) -> str:
        return pick_engine(self.table, facts)

    def choose_playable(self, facts: GameFacts) -> str:
        """The engine for a game that has started: the rules' choice, or, when that engine
        does not play the game's variant (a game no challenge was judged for: an arena
        pairing, our own challenge), the first engine in rule order that does. Losing the
        game to an engine that cannot play it helps nobody."""
        chosen = self.choose(facts)
        if facts.variant in self.pools[chosen].variants:
            return chosen
        able = next((name for name, pool in self.pools.items()
                     if facts.variant in pool.variants), None)
        if able is None:
            return chosen
        log.warning("engine %s does not play %s: engine %s plays this game instead",
                    chosen, facts.variant, able)
        return able

    def pool(self, name: str) -> EnginePool:
        return self.pools[name]

    def entry(self, name: str) -> EngineConfig:
        return self.table.entries[name]

    def variants_for(self, facts: GameFacts) -> frozenset[str]:
        """The variants the engine chosen for such a game plays."""
        return self.pools[self.choose(facts)].variants

    @property
    def variants(self) -> frozenset[str]:
        """Every variant some engine plays (matchmaking picks among them)."""
        return frozenset().union(*(pool.variants for pool in self.pools.values()))

    @property
    def default(self) -> EnginePool:
        return self.pools[self.table.default]

    @property
    def name(self) -> str:
        return ", ".join(f"{name}: {pool.name}" for name, pool in self.pools.items()) \
            if len(self.pools) > 1 else self.default.name

    async def warm_up(self) -> str:
        """Warm every engine up, one after another (a first start may compile)."""
        names = []
        for name, pool in self.pools.items():
            engine_name = await pool.warm_up()
            log.info("engine %s ready: %s (%s)", name, engine_name,
                     ", ".join(sorted(pool.variants)))
            names.append(engine_name)
        return ", ".join(names)

    async def keep_spare(self) -> None:
        await asyncio.gather(*(pool.keep_spare() for pool in self.pools.values()))

    async def close(self) -> None:
        await asyncio.gather(*(pool.close() for pool in self.pools.values()))

    @property
    def running(self) -> int:
        return sum(pool.running for pool in self.pools.values())
