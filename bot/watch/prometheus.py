"""/metrics: the bot's counters in Prometheus's text format.

One collector reads the bot's own counters when scraped, so nothing is counted twice and
the games' hot paths pay nothing. The registry is the bot's own (not prometheus-client's
global one): two bots in one process, or two tests, never share counters. Names follow
Prometheus's conventions: a `kibitz_` prefix, `_total` for counters, base units (seconds,
bytes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from bot.lichess.client import EVENT_STREAM_KIND
from bot.watch.feed import WatchedBot


class BotCollector(Collector):
    def __init__(self, bot: WatchedBot, *, uptime_s: Callable[[], float],
                 memory: Callable[[], dict[int, int]]) -> None:
        self.bot = bot
        self.uptime_s = uptime_s
        self.memory = memory

    def collect(self) -> Iterator[Metric]:
        bot, metrics, client = self.bot, self.bot.metrics, self.bot.client
        yield GaugeMetricFamily("kibitz_up_seconds", "Seconds since the bot started",
                                value=self.uptime_s())
        yield GaugeMetricFamily("kibitz_games_in_progress", "Real-time games being played",
                                value=len(bot.games))
        finished = CounterMetricFamily("kibitz_games_finished", "Games finished, by result "
                                       "from the bot's side", labels=["result"])
        for result, count in sorted(metrics.results.items()):
            finished.add_metric([result], count)
        yield finished
        challenges = CounterMetricFamily(
            "kibitz_challenges", "Incoming challenges by decision and Lichess decline reason: "
            "one that passes the rules counts as queued, then as accepted or declined",
            labels=["decision", "reason"])
        for (decision, reason), count in sorted(metrics.challenges.items()):
            challenges.add_metric([decision, reason], count)
        yield challenges
        yield GaugeMetricFamily("kibitz_challenges_queued", "Challenges waiting for a slot",
                                value=len(bot.queue))
        yield CounterMetricFamily("kibitz_moves", "Moves sent", value=metrics.moves_sent)
        histogram = metrics.overhead
        cumulative, buckets = 0, []
        for bound, count in zip((*histogram.bounds_s, float("inf")), histogram.counts,
                                strict=True):
            cumulative += count
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
        yield HistogramMetricFamily(
            "kibitz_move_overhead_seconds", "The bot's own latency per move: from the "
            "game state's arrival to the move sent, less the engine's thinking",
            buckets=buckets, sum_value=histogram.sum_s)
        nps = [speed for game in list(bot.games.values())
               if game.mover.last_search is not None
               and (speed := game.mover.last_search[1].nodes_per_s) is not None]
        yield GaugeMetricFamily("kibitz_engine_nodes_per_second", "Nodes per second of the "
                                "engines' last searches, summed over the games in progress",
                                value=sum(nps))
        yield CounterMetricFamily("kibitz_engine_restarts", "Engines replaced after a failure",
                                  value=metrics.engine_restarts)
        requests = CounterMetricFamily("kibitz_requests", "Requests sent to Lichess, by "
                                       "endpoint kind", labels=["kind"])
        for kind, count in sorted(client.tally.sent.items()):
            requests.add_metric([kind], count)
        yield requests
        limited = CounterMetricFamily("kibitz_rate_limited", "429 replies from Lichess, by "
                                      "endpoint kind", labels=["kind"])
        for kind, count in sorted(client.tally.rate_limited.items()):
            limited.add_metric([kind], count)
        yield limited
        yield CounterMetricFamily("kibitz_pv_lines_dropped", "PV chat lines never sent: "
                                  "the moves took the request budget until a newer line "
                                  "replaced them", value=client.budget.dropped_chat)
        yield GaugeMetricFamily("kibitz_rate_limit_paused_kinds", "Endpoint kinds paused by "
                                "a 429 now", value=len(client.pauses_s()))
        yield GaugeMetricFamily("kibitz_event_stream_connected", "1 while the event stream "
                                "is open", value=int(EVENT_STREAM_KIND in client.open_streams))
        yield CounterMetricFamily("kibitz_event_stream_reconnects", "Times the event stream "
                                  "was reopened", value=metrics.stream_reconnects)
        sizes = self.memory()
        if sizes:
            yield GaugeMetricFamily("kibitz_process_tree_memory_bytes", "Pss of the bot's "
                                    "process and its descendants (engines)",
                                    value=sum(sizes.values()))
            yield GaugeMetricFamily("kibitz_process_tree_processes", "Processes in the "
                                    "bot's tree", value=len(sizes))


def registry_for(bot: WatchedBot, *, uptime_s: Callable[[], float],
                 memory: Callable[[], dict[int, int]]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BotCollector(bot, uptime_s=uptime_s, memory=memory))
    return registry
