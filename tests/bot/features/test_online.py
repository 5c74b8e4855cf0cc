"""Online sources against the sandbox's stand-in services over real loopback HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

import aiohttp
import chess
import pytest
from aiohttp import web

from bot.features.online import (
    PUBLIC_EXPLORER_URL,
    PUBLIC_TABLEBASE_URL,
    OnlineEndpoints,
    OnlineSourceKind,
    OnlineSources,
    SourceSettings,
    endpoints_for,
    sources_from_config,
)
from bot.ops.config import OnlineConfig
from sandbox.online import OnlineFixtures, position_key, register_online_routes
from tests.bot.loopback import serving

START_FEN = chess.STARTING_FEN
KRK = "8/8/8/4k3/8/8/8/R3K3 w - - 0 60"
# A service that does not answer within any test: a request to it ends only by our timeout.
HUNG_S = 30.0


@dataclass
class Services:
    url: str
    fixtures: OnlineFixtures
    session: aiohttp.ClientSession

    def sources(self, *, explorer: bool = False, cloud: bool = False, tablebase: bool = False,
                timeout_s: float = 2.0, max_misses: int = 3) -> OnlineSources:
        def on(enabled: bool, **extra: int) -> SourceSettings:
            return SourceSettings(enabled=enabled, timeout_s=timeout_s, max_misses=max_misses,
                                  **extra)

        return OnlineSources(self.session, OnlineEndpoints(self.url, self.url, self.url),
                             explorer=on(explorer), cloud_eval=on(cloud, min_depth=20),
                             online_tablebase=on(tablebase, max_pieces=5))


@pytest.fixture
async def services() -> AsyncIterator[Services]:
    app = web.Application()
    fixtures = register_online_routes(app)
    async with serving(app) as url, aiohttp.ClientSession() as session:
        yield Services(url, fixtures, session)


def test_endpoints_follow_the_configured_server() -> None:
    public = endpoints_for("https://lichess.org/")
    assert public == OnlineEndpoints(PUBLIC_EXPLORER_URL, "https://lichess.org",
                                     PUBLIC_TABLEBASE_URL)
    own = endpoints_for("http://127.0.0.1:9663/")
    assert own == OnlineEndpoints(*["http://127.0.0.1:9663"] * 3)


async def test_explorer_plays_the_most_played_move(services: Services) -> None:
    services.fixtures.add_explorer_move(START_FEN, "e2e4", white=400, draws=300, black=300)
    services.fixtures.add_explorer_move(START_FEN, "d2d4", white=500, draws=100, black=100)
    services.fixtures.add_explorer_move(START_FEN, "g2g4", white=1, draws=0, black=1)
    answer = await services.sources(explorer=True).probe(chess.Board())
    assert answer.move is not None
    assert answer.move.move == chess.Move.from_uci("e2e4")
    assert answer.move.source is OnlineSourceKind.EXPLORER and answer.move.games == 1000
    assert answer.elapsed_s > 0


async def test_explorer_gives_up_after_max_misses(services: Services) -> None:
    sources = services.sources(explorer=True, max_misses=2)
    board = chess.Board()
    board.push_uci("a2a3")  # nothing recorded for this position
    for _ in range(4):
        assert (await sources.probe(board)).move is None
    assert services.fixtures.requests["explorer"] == 2
    assert not sources.any_active


async def test_a_hit_resets_the_miss_count(services: Services) -> None:
    services.fixtures.add_explorer_move(START_FEN, "c2c4")
    sources = services.sources(explorer=True, max_misses=2)
    unknown = chess.Board("rnbqkbnr/pppppppp/8/8/8/P7/1PPPPPPP/RNBQKBNR b KQkq - 0 1")
    assert (await sources.probe(unknown)).move is None
    assert (await sources.probe(chess.Board())).move is not None
    assert (await sources.probe(unknown)).move is None
    assert sources.explorer.active  # one miss in a row, not two


async def test_cloud_eval_gives_move_score_and_pv(services: Services) -> None:
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3")
    services.fixtures.add_cloud_eval(board.fen(), "g8f6 e1h1 f6e4 zz99 a1a1", depth=31, cp=-17)
    answer = await services.sources(cloud=True).probe(board)
    found = answer.move
    assert found is not None and found.source is OnlineSourceKind.CLOUD_EVAL
    assert found.move.uci() == "g8f6" and found.depth == 31
    assert [m.uci() for m in found.pv] == ["g8f6", "e1g1", "f6e4"]  # cut at the bad move
    assert found.score is not None and found.score.pov(chess.BLACK).score() == 17


async def test_cloud_eval_below_min_depth_and_mates(services: Services) -> None:
    shallow = chess.Board()
    services.fixtures.add_cloud_eval(shallow.fen(), "e2e4", depth=12, cp=30)
    sources = services.sources(cloud=True)
    assert (await sources.probe(shallow)).move is None
    mate = chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    services.fixtures.add_cloud_eval(mate.fen(), "a1a8", depth=40, mate=1)
    found = (await sources.probe(mate)).move
    assert found is not None and found.score is not None and found.score.white().mate() == 1


async def test_online_tablebase_best_and_keeping_moves(services: Services) -> None:
    services.fixtures.add_tablebase(KRK, "win", [("a1a5", "loss"), ("a1a4", "loss"),
                                                 ("e1d1", "draw")])
    found = (await services.sources(tablebase=True).probe(chess.Board(KRK))).move
    assert found is not None and found.source is OnlineSourceKind.ONLINE_TABLEBASE
    assert found.move.uci() == "a1a5" and found.wdl == 2
    assert [m.uci() for m in found.keeping_moves] == ["a1a5", "a1a4"]


async def test_tablebase_is_asked_only_for_few_pieces(services: Services) -> None:
    sources = services.sources(tablebase=True)
    assert (await sources.probe(chess.Board())).move is None
    assert services.fixtures.requests["tablebase"] == 0
    # Unknown category: a miss, not a move.
    assert (await sources.probe(chess.Board("8/8/8/4k3/8/8/8/1R2K3 w - - 0 60"))).move is None
    assert services.fixtures.requests["tablebase"] == 1


async def test_timeouts_and_errors_are_misses_and_timed(services: Services) -> None:
    services.fixtures.add_explorer_move(START_FEN, "e2e4")
    services.fixtures.delay_s["explorer"] = HUNG_S  # only the timeout can end the wait
    sources = services.sources(explorer=True, timeout_s=0.15, max_misses=0)
    answer = await sources.probe(chess.Board())
    assert answer.move is None and answer.elapsed_s >= 0.1  # never early
    services.fixtures.delay_s.clear()
    services.fixtures.fail_status["explorer"] = 500
    assert (await sources.probe(chess.Board())).move is None
    assert sources.explorer.active and sources.explorer.misses == 2  # 0 = never give up
    services.fixtures.fail_status.clear()
    assert (await sources.probe(chess.Board())).move is not None


async def test_rate_limit_stops_the_source_at_once(services: Services) -> None:
    services.fixtures.fail_status["cloud_eval"] = 429
    sources = services.sources(cloud=True, max_misses=10)
    assert (await sources.probe(chess.Board())).move is None
    assert not sources.cloud_eval.active


async def test_malformed_replies_are_misses(services: Services) -> None:
    key = position_key(START_FEN)
    services.fixtures.cloud_eval[key] = {"depth": "deep", "pvs": "none"}
    services.fixtures.explorer[key] = [{"uci": "e2e5", "white": 100, "draws": 0, "black": 0},
                                       {"uci": 42, "white": "x"}]
    sources = services.sources(explorer=True, cloud=True)
    assert (await sources.probe(chess.Board())).move is None
    services.fixtures.cloud_eval[key] = {"depth": 30, "pvs": [{"moves": "e2e4"}]}  # no score
    assert (await sources.probe(chess.Board())).move is None
    assert sources.explorer.misses == 2 and sources.cloud_eval.misses == 2


async def test_sources_in_order_and_from_config(services: Services) -> None:
    board = chess.Board(KRK)
    services.fixtures.add_tablebase(KRK, "win", [("a1a5", "loss")])
    services.fixtures.add_cloud_eval(KRK, "a1a7", depth=50, cp=900)
    config = OnlineConfig()
    assert not sources_from_config(services.session, config, services.url).any_active
    config = replace(config, cloud_eval=replace(config.cloud_eval, enabled=True),
                     online_tablebase=replace(config.online_tablebase, enabled=True))
    sources = sources_from_config(services.session, config, services.url)
    found = (await sources.probe(board)).move
    assert found is not None and found.source is OnlineSourceKind.ONLINE_TABLEBASE
    services.fixtures.fail_status["tablebase"] = 503
    found = (await sources.probe(board)).move
    assert found is not None and found.source is OnlineSourceKind.CLOUD_EVAL


async def test_the_budget_bounds_all_requests(services: Services) -> None:
    services.fixtures.delay_s["tablebase"] = HUNG_S
    services.fixtures.delay_s["explorer"] = HUNG_S
    services.fixtures.add_explorer_move(KRK, "a1a8")
    sources = services.sources(explorer=True, tablebase=True, timeout_s=2 * HUNG_S)
    answer = await sources.probe(chess.Board(KRK), budget_s=0.2)  # only the budget ends it
    assert answer.move is None and answer.elapsed_s >= 0.15
    assert sources.tablebase.misses == 1 and services.fixtures.requests["explorer"] == 0


async def test_the_token_goes_to_the_explorer_never_to_the_tablebase(services: Services) -> None:
    services.fixtures.add_tablebase(KRK, "win", [("a1a5", "loss")])
    services.fixtures.add_explorer_move(START_FEN, "e2e4")
    on = SourceSettings(enabled=True)
    sources = OnlineSources(services.session, OnlineEndpoints(*[services.url] * 3),
                            explorer=on, cloud_eval=on, online_tablebase=on,
                            headers={"Authorization": "Bearer lip_secret"})
    assert (await sources.probe(chess.Board(KRK))).move is not None
    assert (await sources.probe(chess.Board())).move is not None
    assert services.fixtures.requests["tablebase"] == 1
    assert services.fixtures.authorized == {"explorer": 1, "cloud_eval": 0, "tablebase": 0}
