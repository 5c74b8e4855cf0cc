"""A search nobody listens to (``report`` None, as in self-play) builds no ``info`` line and
spells its line once, yet returns what the same search with a listener returns."""

from __future__ import annotations

import random
import time

import pytest

from engine.board import Position
from engine.info import Iteration
from engine.search import Searcher, SearchShape
from engine.threads import SearchTables
from engine.timeman import GoLimits, TimeBudget
from tools.common.openings import random_opening

HASH_MB = 1
UNLIMITED = TimeBudget(None, None)
# a depth-1 stop that changed the line, aspiration windows failing both ways, and endings
NODE_LIMITS = (7, 60, 400, 1500, 3000)
ENDGAME_FENS = (
    "8/8/1p1k4/1P6/P2K4/8/8/8 w - - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
    "7k/8/8/6Q1/8/8/8/K7 w - - 0 1",  # a mate: the deepening stops before the limit
)


def _fens() -> list[str]:
    rng = random.Random(3)
    return [random_opening(rng, 6).fen() for _ in range(10)] + list(ENDGAME_FENS)


def test_a_search_without_listener_returns_what_a_reported_one_does() -> None:
    bounds: set[str] = set()
    line_moved_on = 0  # searches whose move came after their last complete depth
    for fen in _fens():
        for nodes in NODE_LIMITS:
            iterations: list[Iteration] = []
            reported = Searcher(HASH_MB).think(
                Position.from_fen(fen), GoLimits(nodes=nodes), UNLIMITED, time.monotonic(),
                iterations.append)
            position = Position.from_fen(fen)
            quiet = Searcher(HASH_MB).think(position, GoLimits(nodes=nodes), UNLIMITED,
                                            time.monotonic(), None)
            assert quiet == reported, (fen, nodes)
            assert position.fen() == fen  # the line was walked and taken back
            bounds |= {iteration.bound for iteration in iterations}
            line_moved_on += reported.lines[0].pv != reported.pv
    # each way the line changes was met: windows failing high and low, and stopped depths
    assert {"lowerbound", "upperbound"} <= bounds
    assert line_moved_on > 0


def test_without_listener_no_info_line_is_built_and_the_line_is_spelt_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_iteration(*_: object) -> Iteration:
        raise AssertionError("an info line was built that nobody reads")

    monkeypatch.setattr(Searcher, "_iteration", no_iteration)
    spelt = 0
    pv_text = Searcher._pv_text

    def counted(self: Searcher, position: Position,
                t: SearchTables) -> tuple[list[int], tuple[str, ...]]:
        nonlocal spelt
        spelt += 1
        return pv_text(self, position, t)

    monkeypatch.setattr(Searcher, "_pv_text", counted)
    searcher = Searcher(HASH_MB)
    for fen in _fens()[:10]:  # the openings: no mate ends the deepening early
        spelt = 0
        result = searcher.think(Position.from_fen(fen), GoLimits(nodes=3000), UNLIMITED,
                                time.monotonic(), None)
        assert result.best_move is not None
        assert result.depth >= 4  # many iterations, each once spelt out with a listener
        assert spelt <= 2  # the line played, and the last complete depth's when it differs


def test_multipv_without_listener_returns_every_line() -> None:
    result = Searcher(HASH_MB).think(
        Position.from_fen(_fens()[0]), GoLimits(depth=4), UNLIMITED, time.monotonic(), None,
        shape=SearchShape(multipv=3))
    assert len(result.lines) == 3
    assert result.pv == result.lines[0].pv
