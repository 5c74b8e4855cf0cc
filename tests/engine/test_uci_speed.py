"""The play-like speed comparison: real engine processes searching the bench positions."""

from __future__ import annotations

import sys

import pytest

from engine.bench import BENCH_FENS
from tools.bench import uci_speed
from tools.match.engines import EngineSpec, resolve_engine


def test_an_engine_searches_every_position_and_its_own_count_is_summed() -> None:
    run = uci_speed.measure(resolve_engine("kibitz"), movetime_ms=20, hash_mb=1)
    # at least one node and one reported millisecond for each of the positions
    assert run.nodes >= len(BENCH_FENS)
    assert run.time_ms > 0
    assert run.nps == pytest.approx(run.nodes * 1000 / run.time_ms)
    # every search completes at least its first iteration, and reports its depth
    assert run.depth_sum >= len(BENCH_FENS)
    assert run.mean_depth == pytest.approx(run.depth_sum / len(BENCH_FENS))


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
    with pytest.raises(SystemExit, match="'mute': no nodes, time and depth"):
        uci_speed.measure(spec, movetime_ms=5, hash_mb=1)


@pytest.mark.parametrize("flag", ["--rounds", "--movetime-ms", "--hash-mb"])
def test_a_count_below_one_is_refused_by_name(
    flag: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["uci_speed", flag, "0"])
    with pytest.raises(SystemExit):
        uci_speed.main()
    assert f"{flag} must be at least 1" in capsys.readouterr().err
