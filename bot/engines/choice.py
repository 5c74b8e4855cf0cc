"""Which engine a game plays on, and which net the engine host loads before it forks.

A game's engine is chosen from the game's own data by the `engines` rules. lila's gameStart
names the opponent without a title, its gameFull with one: an arena pairing against someone
we have never met, while a rule asks whether the opponent is a bot, has its engine chosen
at the gameFull (`Chooser.at_full`); every other game at its gameStart (`Chooser.at_start`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import NamedTuple

from bot.engines.engineset import EngineSet, game_facts, uses_host
from bot.engines.host import EngineHost, socket_path
from bot.engines.pool import EnginePool
from bot.engines.rules import EngineTable, reachable
from bot.lichess.events import GameInfo
from bot.ops.config import Config

log = logging.getLogger(__name__)


class EngineChoice(NamedTuple):
    """The engine a game plays on."""

    label: str  # the configured engine's name ("" when only one is configured)
    pool: EnginePool
    config: Config  # the bot's configuration with that engine's settings


def engine_host(config: Config) -> EngineHost | None:
    """The engine host, when some game can be given the built-in engine forked from it.
    It loads one net before it forks (the first built-in entry's EvalFile): the games whose
    EvalFile is that file share its pages; another file is loaded by its own game."""
    table = EngineTable.from_config(config)
    hosted = [table.entries[name] for name in reachable(table) if uses_host(table.entries[name])]
    if not hosted:
        return None
    nets = [str(entry.options.get("EvalFile", "")) for entry in hosted]
    return EngineHost(socket_path(config.state_dir), next((n for n in nets if n), ""))


class Chooser:
    """Gives each game its engine; `known_bots` (user ids, lower-case) is what the bot knows
    of its opponents' titles, and grows with each title a gameFull shows."""

    def __init__(self, config: Config, engines: EngineSet, known_bots: set[str]) -> None:
        self.config = config
        self.engines = engines
        self.known_bots = known_bots

    def choice(self, name: str) -> EngineChoice:
        several = len(self.engines.pools) > 1
        return EngineChoice(name if several else "", self.engines.pool(name),
                            dataclasses.replace(self.config, engine=self.engines.entry(name)))

    def at_start(self, info: GameInfo | None) -> str:
        """The engine of a game by its gameStart (a visit with no gameStart: the default)."""
        if info is None:
            return self.engines.table.default
        # lila's gameStart puts a title only before the opponent's name ("BOT name",
        # Namer.playerTextBlocking `titleName`), which GameInfo drops: a bot is one we
        # know of (a challenge, matchmaking); a game not from a challenge (an arena) may
        # be either until the gameFull names its players' titles.
        known = (info.opponent_id or "").lower() in self.known_bots
        bot = True if known else (False if info.tournament_id is None else None)
        return self.engines.choose_playable(game_facts(info, bot))

    def title_matters(self, info: GameInfo) -> bool:
        """An arena pairing against someone we have never met, while an engine rule asks
        whether the opponent is a bot: the engine is chosen at the gameFull."""
        return (info.tournament_id is not None and info.opponent_id is not None
                and info.opponent_id.lower() not in self.known_bots
                and any(rule.bot is not None for rule in self.engines.table.rules))

    def at_full(self, info: GameInfo) -> Callable[[bool], EngineChoice]:
        """The engine chooser a game calls at its first gameFull, with the opponent's
        title: no lookup and no wait before the game starts."""
        def choose(opponent_is_bot: bool) -> EngineChoice:
            if opponent_is_bot and info.opponent_id is not None:
                self.known_bots.add(info.opponent_id.lower())
            name = self.engines.choose_playable(game_facts(info, opponent_is_bot))
            log.info("game %s: %s is %s: engine %s", info.game_id, info.opponent_name,
                     "a bot" if opponent_is_bot else "no bot", name)
            return self.choice(name)
        return choose
