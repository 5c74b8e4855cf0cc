"""The play-like speed comparison: real engine processes searching the bench positions."""

from __future__ import annotations

import sys

import chess
import pytest

from engine.bench import BENCH_ENDGAMES_FROM, BENCH_FENS
from tools.bench import uci_speed
from tools.common.engines import EngineSpec, resolve_engine


def test_an_engine_searches_every_position_and_its_own_count_is_summed() -> None:
    run = uci_speed.measure(resolve_engine("kibitz"), movetime_ms=20, hash_mb=1)
    every = range(len(BENCH_FENS))
    assert len(run.searches) == len(BENCH_FENS)
    nodes = sum(search.nodes for search in run.searches)
    time_ms = sum(search.time_ms for search in run.searches)
    # at least one node and one reported millisecond for each of the positions
    assert nodes >= len(BENCH_FENS)
    assert time_ms > 0
    assert run.nps(every) == pytest.approx(nodes * 1000 / time_ms)
    # every search completes at least its first iteration, and reports its depth
    assert all(search.depth >= 1 for search in run.searches)
    assert run.mean_depth(every) == pytest.approx(
        sum(search.depth for search in run.searches) / len(BENCH_FENS))
    # a mate in one of the bench (Qxf7#) is scored as a mate, a quiet opening is not
    mate_in_one = BENCH_FENS.index(
        "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4")
    assert run.searches[mate_in_one].mate
    assert not run.searches[BENCH_FENS.index(chess.STARTING_FEN)].mate


def _run(name: str, searches: dict[int, uci_speed.Search]) -> uci_speed.Run:
    """A run in which every position not in ``searches`` took 100 nodes in 1 ms at depth 5."""
    plain = uci_speed.Search(nodes=100, time_ms=1, depth=5, mate=False)
    return uci_speed.Run(name, tuple(searches.get(i, plain) for i in range(len(BENCH_FENS))))


def test_a_position_any_run_scored_as_a_mate_is_left_out_of_both_figures() -> None:
    # one engine stops on a mate at once, another searches it on at a great depth and speed
    quick = _run("quick", {3: uci_speed.Search(5, 1, 2, mate=True)})
    deep = _run("deep", {3: uci_speed.Search(900_000, 1, 127, mate=True),
                         7: uci_speed.Search(100, 1, 5, mate=True)})
    positions = uci_speed.without_mates([quick, deep])
    assert positions == tuple(i for i in range(len(BENCH_FENS)) if i not in (3, 7))
    # over the others both engines made 100 nodes a millisecond at depth 5 ...
    assert deep.nps(positions) == quick.nps(positions) == pytest.approx(100_000)
    assert deep.mean_depth(positions) == quick.mean_depth(positions) == pytest.approx(5)
    # ... where the mate's search would have made one look far faster and deeper
    every = range(len(BENCH_FENS))
    assert deep.nps(every) > 10 * quick.nps(every)
    assert deep.mean_depth(every) > quick.mean_depth(every) + 3
    lines = uci_speed.summary([quick, deep], positions)
    assert lines == ["quick: 100,000 nodes/s (1.00x quick), mean depth 5.00",
                     "deep: 100,000 nodes/s (1.00x quick), mean depth 5.00"]


def test_the_summary_averages_each_engines_rounds() -> None:
    slow = _run("a", {})
    fast = _run("a", {i: uci_speed.Search(300, 1, 7, mate=False) for i in range(len(BENCH_FENS))})
    other = _run("b", {})
    positions = uci_speed.without_mates([slow, fast, other])
    assert uci_speed.summary([slow, other, fast], positions) == [
        "a: 200,000 nodes/s (1.00x a), mean depth 6.00",
        "b: 100,000 nodes/s (0.50x a), mean depth 5.00",
    ]


def test_the_end_games_are_summed_apart_from_the_rest() -> None:
    # an engine twice as fast as another in the end games only
    ending = range(BENCH_ENDGAMES_FROM, len(BENCH_FENS))
    fast = _run("fast", {i: uci_speed.Search(200, 1, 5, mate=False) for i in ending})
    plain = _run("plain", {BENCH_ENDGAMES_FROM: uci_speed.Search(100, 1, 5, mate=True)})
    positions = uci_speed.without_mates([fast, plain])
    parts = dict(uci_speed.by_phase(positions))
    assert parts == {
        "openings and middle games": tuple(range(BENCH_ENDGAMES_FROM)),
        "end games": tuple(range(BENCH_ENDGAMES_FROM + 1, len(BENCH_FENS))),  # no mate
    }
    assert uci_speed.summary([plain, fast], parts["openings and middle games"])[1] == \
        "fast: 100,000 nodes/s (1.00x plain), mean depth 5.00"
    assert uci_speed.summary([plain, fast], parts["end games"])[1] == \
        "fast: 200,000 nodes/s (2.00x plain), mean depth 5.00"
    assert uci_speed.by_phase(tuple(range(BENCH_ENDGAMES_FROM))) == [
        ("openings and middle games", tuple(range(BENCH_ENDGAMES_FROM)))]


def test_no_position_left_without_a_mate_is_refused_by_name() -> None:
    # an engine that scores every position as a mate: nothing is left to compare
    mates = _run("mates", {i: uci_speed.Search(10, 1, 3, mate=True)
                           for i in range(len(BENCH_FENS))})
    positions = uci_speed.without_mates([mates, _run("plain", {})])
    assert positions == ()
    with pytest.raises(SystemExit, match="every bench position was scored as a mate"):
        uci_speed.summary([mates], positions)


def test_an_engine_without_nodes_in_its_info_is_named() -> None:
    # a UCI engine that answers every go with a move and no info line
    script = (
        "import sys\n"
        "for line in sys.stdin:\n"
        "    word = line.split()[0] if line.split() else ''\n"
        "    if word == 'uci': print('id name mute'); print('option name Hash type spin "
        "default 1 min 1 max 64'); print('uciok', flush=True)\n"
        "    elif word == 'isready': print('readyok', flush=True)\n"
        "    elif word == 'go': print('bestmove e2e4', flush=True)\n"
        "    elif word == 'quit': break\n"
    )
    spec = EngineSpec("mute", [sys.executable, "-c", script], {})
    with pytest.raises(SystemExit, match="'mute': no nodes, time, depth and score"):
        uci_speed.measure(spec, movetime_ms=5, hash_mb=1)


@pytest.mark.parametrize("flag", ["--rounds", "--movetime-ms", "--hash-mb"])
def test_a_count_below_one_is_refused_by_name(
    flag: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["uci_speed", flag, "0"])
    with pytest.raises(SystemExit):
        uci_speed.main()
    assert f"{flag} must be at least 1" in capsys.readouterr().err
