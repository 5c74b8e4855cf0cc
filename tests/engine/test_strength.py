"""UCI_LimitStrength / UCI_Elo: the range, the levels' legal and seeded moves, their node
budgets, and the time a limited level takes over a move."""

from __future__ import annotations

import io
import itertools
import random
import threading
from collections.abc import Iterator

import chess
import pytest

from engine import strength
from engine.info import RootLine
from engine.timeman import GoLimits, TimeBudget, plan
from engine.uci import UciEngine
from tests.engine.conftest import load_perft_epd, random_boards
from tests.engine.uci_process import UciProcess

MIDDLEGAME = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N2N2/PP2BPPP/R2QKB1R w KQ - 0 9"


@pytest.fixture(scope="module")
def limited() -> Iterator[UciProcess]:
    process = UciProcess()
    process.handshake()
    process.send("setoption name UCI_LimitStrength value true")
    yield process
    assert process.close() == 0


def _nodes(lines: list[str]) -> int:
    """The nodes a limited search says it searched."""
    said = next(line for line in lines if line.startswith("info string UCI_Elo")).split()
    return int(said[said.index("searched") + 1])


def test_uci_elo_out_of_range_is_clamped_and_said(limited: UciProcess) -> None:
    for value, clamped in ((100, strength.ELO_MIN), (99_999, strength.ELO_MAX)):
        limited.send(f"setoption name UCI_Elo value {value}")
        line = limited.expect("info string")[-1]
        assert f"{strength.ELO_MIN}-{strength.ELO_MAX}" in line and f"set to {clamped}" in line
        limited.send("position startpos")
        limited.send("go nodes 5000")  # the top level's own budget takes seconds
        said = [line for line in limited.expect("bestmove") if "info string UCI_Elo" in line]
        assert said and f"UCI_Elo {clamped}:" in said[0]
    limited.send("setoption name UCI_Elo value 1500")  # in range: nothing said
    limited.send("isready")
    assert limited.expect("readyok") == ["readyok"]


def test_the_uci_option_list_declares_the_strength_options() -> None:
    process = UciProcess()
    try:
        options = [line for line in process.handshake() if line.startswith("option")]
    finally:
        assert process.close() == 0
    assert "option name UCI_LimitStrength type check default false" in options
    assert (f"option name UCI_Elo type spin default {strength.ELO_DEFAULT} "
            f"min {strength.ELO_MIN} max {strength.ELO_MAX}") in options
    assert any(line.startswith("option name MultiPV type spin default 1 min 1") for line in options)


def _positions() -> list[chess.Board]:
    boards = [chess.Board(case.fen) for name in ("perftsuite126.epd", "perft_cpw6.epd")
              for case in load_perft_epd(name)]
    played = random_boards(seed=64, games=12, chess960=False, max_plies=120)
    boards += played[:: max(1, len(played) // 300)]
    return [board for board in boards if any(board.legal_moves)]


def test_limited_levels_play_legal_moves_everywhere(limited: UciProcess) -> None:
    boards = _positions()
    assert len(boards) >= 400
    for i, board in enumerate(boards):
        elo = (strength.ELO_MIN, 1000, 1400, 1800)[i % 4]
        limited.send(f"setoption name UCI_Elo value {elo}")
        limited.send(f"position fen {board.fen()}")
        limited.send("go depth 30")
        lines = limited.expect("bestmove")
        assert lines[-2].startswith(f"info string UCI_Elo {elo}:")  # the level chose
        best = lines[-1].split()[1]
        assert chess.Move.from_uci(best) in board.legal_moves, (elo, board.fen(), best)


def _moves_with_seed(process: UciProcess, seed: int, boards: list[chess.Board]) -> list[str]:
    process.send(f"setoption name Seed value {seed}")
    process.send("ucinewgame")
    moves = []
    for board in boards:
        process.send(f"position fen {board.fen()}")
        process.send("go depth 30")
        moves.append(process.expect("bestmove")[-1].split()[1])
    return moves


def test_a_fixed_seed_plays_the_same_moves_twice(limited: UciProcess) -> None:
    limited.send(f"setoption name UCI_Elo value {strength.ELO_MIN}")
    boards = random_boards(seed=7, games=2, chess960=False, max_plies=40)[5::3][:20]
    first = _moves_with_seed(limited, 1234, boards)
    assert _moves_with_seed(limited, 1234, boards) == first
    # and the seed decides: another one plays another game at this level
    assert _moves_with_seed(limited, 4321, boards) != first


def test_lower_levels_search_fewer_nodes(limited: UciProcess) -> None:
    nodes = []
    for elo in (800, 1400, 2000, 2600):
        limited.send(f"setoption name UCI_Elo value {elo}")
        limited.send("ucinewgame")
        limited.send(f"position fen {MIDDLEGAME}")
        limited.send("go depth 60")
        nodes.append(_nodes(limited.expect("bestmove", timeout_s=60.0)))
    assert nodes == sorted(nodes) and len(set(nodes)) == len(nodes), nodes
    # smooth: never fewer nodes a level up, and more every 100 Elo
    budgets = [strength.level(elo).nodes for elo in range(strength.ELO_MIN, strength.ELO_MAX, 10)]
    assert all(a <= b for a, b in itertools.pairwise(budgets)), budgets
    assert all(a < b for a, b in itertools.pairwise(budgets[::10])), budgets


def test_the_pick_stays_within_the_window_and_weakness_zero_plays_line_1() -> None:
    lines = [RootLine(50, ("e2e4",)), RootLine(40, ("d2d4",)), RootLine(-400, ("g2g4",))]
    rng = random.Random(1)
    level = strength.level(1000)
    picks = {strength.pick(lines, level, rng) for _ in range(200)}
    assert picks == {0, 1}  # the losing line is outside the window, both others are played
    top = strength.level(strength.ELO_MAX)
    assert {strength.pick(lines, top, rng) for _ in range(50)} == {0}


def test_think_time_grows_with_the_level_and_never_exceeds_full_strength() -> None:
    limits = GoLimits(wtime_ms=60_000, btime_ms=60_000, winc_ms=1000, binc_ms=1000)
    budget = plan(limits, True, 50)
    assert budget.soft_ms is not None
    means = []
    for elo in range(strength.ELO_MIN, strength.ELO_MAX + 1, 100):
        rng = random.Random(3)  # the same draws at every level: only the level differs
        level = strength.level(elo)
        times = [strength.think_time_ms(level, budget, rng, False) for _ in range(200)]
        assert all(0 < t <= budget.soft_ms for t in times), elo
        obvious = [strength.think_time_ms(level, budget, rng, True) for _ in range(200)]
        assert sum(obvious) < sum(times)
        means.append(sum(times) / len(times))
    assert all(a < b for a, b in itertools.pairwise(means)), means
    assert strength.think_time_ms(strength.level(1400), TimeBudget(None, 500.0),
                                  random.Random(3), False) == 0.0


class _Recorder(io.StringIO):
    """The engine's output with the test's own acts, in the order they happened."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []
        self.lock = threading.Lock()
        self.target_said = threading.Event()
        self.answered = threading.Event()

    def write(self, text: str) -> int:
        with self.lock:
            for line in text.splitlines():
                self.events.append(line)
                if line.startswith("info string UCI_Elo"):
                    self.target_said.set()
                if line.startswith("bestmove"):
                    self.answered.set()
        return len(text)

    def mark(self, event: str) -> None:
        with self.lock:
            self.events.append(event)


def test_a_limited_level_holds_its_move_until_its_time_and_stop_ends_the_wait() -> None:
    out = _Recorder()
    engine = UciEngine(out)
    for line in ("setoption name UCI_LimitStrength value true",
                 "setoption name UCI_Elo value 1400", "setoption name Seed value 5", "isready",
                 "position startpos", "go wtime 3600000 btime 3600000"):
        engine.handle(line)
    assert out.target_said.wait(120)
    said = next(line for line in out.events if line.startswith("info string UCI_Elo"))
    tokens = said.split()
    think_ms, full_ms = int(tokens[tokens.index("think") + 1]), int(tokens[-2])
    assert 0 < think_ms <= full_ms
    # an hour on the clock: the level's minutes are not over when the test says stop
    out.mark("> stop")
    engine.handle("stop")
    assert out.answered.is_set()
    events = [e for e in out.events if e == "> stop" or e.startswith(("bestmove", "info string"))]
    assert events.index("> stop") < next(
        i for i, e in enumerate(events) if e.startswith("bestmove"))
    engine.handle("quit")


def test_explicit_limits_add_no_wait() -> None:
    out = _Recorder()
    engine = UciEngine(out)
    for line in ("setoption name UCI_LimitStrength value true", "isready",
                 "position startpos", "go depth 30"):
        engine.handle(line)
    assert out.answered.wait(120)
    said = next(line for line in out.events if line.startswith("info string UCI_Elo"))
    assert " think 0 ms" in said
    engine.handle("quit")
