"""Texel tuning: the traced evaluation is the engine's, the tuner lowers the loss, and the
weights it writes back round-trip through params.py and psqt.py."""

from __future__ import annotations

import random
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

from engine import params, psqt
from engine.board import Position
from engine.evaluate import evaluate_white, new_scratch
from tests.engine.test_evaluate import sample_positions
from tools.texel import data as texel_data
from tools.texel import tune as texel_tune
from tools.texel.label import win_probability
from tools.texel.trace import TUNABLES, current_theta, exact_score, trace
from tools.texel.tune import (
    PARAMS_TUNABLES,
    PSQT_TUNABLES,
    Dataset,
    build,
    fit_k,
    loss,
    read_values,
    tune,
    write_values,
)

PARAMS = Path(__file__).resolve().parents[2] / "engine" / "params.py"
PSQT = Path(__file__).resolve().parents[2] / "engine" / "psqt.py"


def test_trace_reproduces_the_engine_evaluation() -> None:
    theta = current_theta()
    checked = 0
    for fen in sample_positions():
        position = Position.from_fen(fen)
        board, stack, _, meta = position.arrays
        engine_score = int(evaluate_white(board, stack, int(meta[0]), new_scratch()))
        assert exact_score(trace(chess.Board(fen)), theta) == engine_score, fen
        checked += 1
    assert checked > 100


def test_trace_moves_with_a_weight() -> None:
    # a white rook on an open file, nothing else of note: its weight moves the score
    item = trace(chess.Board("4k3/pppp4/8/8/8/8/PPP5/4K2R w K - 0 1"))
    theta = current_theta()
    column = [t.label for t in TUNABLES].index("ROOK_OPEN_FILE_EG")
    assert item.coef[column] == 1
    more = theta.copy()
    more[column] += 48
    # pure end game weight; this position's phase is 2 of 24, so 48 * 22 / 24 = 44
    assert exact_score(item, more) - exact_score(item, theta) == 44


def _synthetic(rows: int, seed: int) -> Dataset:
    """Positions labelled by a hidden evaluation with other weights than params.py's."""
    fens = sample_positions()[:rows]
    data = build((fen, 0.5) for fen in fens)
    rng = np.random.default_rng(seed)
    hidden = current_theta() + rng.integers(-30, 30, size=len(TUNABLES))
    truth = texel_tune.predict(data, hidden.astype(np.float64), 1.0)
    data.results = (rng.random(len(truth)) < truth).astype(np.float64) * 0.5 + truth * 0.5
    return data


def test_tuner_reduces_the_loss() -> None:
    data = _synthetic(120, seed=3)
    start = current_theta().astype(np.float64)
    k = fit_k(data, start)
    assert 0.05 < k < 5.0
    before = loss(data, start, k)
    tuned = tune(data, start, k, epochs=300, rate=1.0)
    assert loss(data, tuned, k) < before
    assert loss(data, np.round(tuned), k) < before


def test_the_default_tuning_moves_a_weight_as_far_as_the_data_ask() -> None:
    # labels from an evaluation whose tempo bonus is 60 cp above params.py's, nothing else
    data = _synthetic(120, seed=4)
    start = current_theta().astype(np.float64)
    tempo = [t.label for t in TUNABLES].index("TEMPO")
    hidden = start.copy()
    hidden[tempo] += 60
    data.results = texel_tune.predict(data, hidden, 1.0)
    defaults = texel_tune.build_parser().parse_args(["--data", "positions.txt"])
    others = np.ones(len(start), dtype=np.bool_)
    others[tempo] = False
    tuned = tune(data, start, 1.0, epochs=300, rate=1.0, l2=defaults.l2, frozen=others)
    # with a ridge of 1e-6 (the old default) it stays within a few centipawns of its start
    assert abs(tuned[tempo] - hidden[tempo]) < 10


def test_write_back_round_trips_params_py() -> None:
    text = PARAMS.read_text()
    values = read_values(text)
    assert values == {t.label: t.value() for t in PARAMS_TUNABLES}
    assert write_values(text, values) == text  # the same weights: the same file
    changed = {label: value + 3 for label, value in values.items()}
    new_text = write_values(text, changed)
    assert read_values(new_text) == changed
    # everything else is untouched, comments included
    untouched = [line for line in text.splitlines() if line not in new_text.splitlines()]
    assert all(any(line.startswith(t.name + " = ") for t in PARAMS_TUNABLES)
               for line in untouched)
    namespace: dict[str, object] = {}
    exec(compile(new_text, "params.py", "exec"), namespace)  # still a valid module
    assert namespace["PASSED_EG"] == tuple(
        changed.get(f"PASSED_EG[{i}]", v) for i, v in enumerate(params.PASSED_EG)
    )


def test_write_back_of_the_piece_square_tables() -> None:
    text = PSQT.read_text()
    values = read_values(text, PSQT_TUNABLES)
    assert values == {t.label: t.value() for t in PSQT_TUNABLES}
    assert read_values(write_values(text, values, PSQT_TUNABLES), PSQT_TUNABLES) == values
    changed = {label: value - 7 for label, value in values.items()}
    new_text = write_values(text, changed, PSQT_TUNABLES)
    assert read_values(new_text, PSQT_TUNABLES) == changed
    namespace: dict[str, object] = {}
    exec(compile(new_text, "psqt.py", "exec"), namespace)  # still a valid module
    assert namespace["EG_QUEEN"] == tuple(v - 7 for v in psqt.EG_QUEEN)
    pawns = namespace["MG_PAWN"]
    assert isinstance(pawns, tuple) and len(pawns) == 64
    assert pawns[:8] == psqt.MG_PAWN[:8]  # the first and last ranks are no tunables
    assert pawns[8] == psqt.MG_PAWN[8] - 7


def test_a_missing_assignment_is_named() -> None:
    with pytest.raises(ValueError, match=r"MG_PAWN in the psqt\.py text"):
        read_values("MG_VALUE = (0, 82)\n", PSQT_TUNABLES)
    with pytest.raises(ValueError, match="BISHOP_PAIR_MG in the text to write"):
        write_values("TEMPO = 10\n", {}, PARAMS_TUNABLES)


def test_the_tables_are_tuned_only_when_asked(tmp_path: Path) -> None:
    data_file = tmp_path / "positions.txt"
    rng = random.Random(6)
    lines = [f"{fen} [{rng.choice(['1.0', '0.5', '0.0'])}]" for fen in sample_positions()[:60]]
    data_file.write_text("\n".join(lines) + "\n")
    for tables in (False, True):
        params_copy = tmp_path / "params.py"
        params_copy.write_text(PARAMS.read_text())
        psqt_copy = tmp_path / "psqt.py"
        psqt_copy.write_text(PSQT.read_text())
        argv = ["--data", str(data_file), "--epochs", "50", "--held-out", "0",
                "--params", str(params_copy), "--psqt", str(psqt_copy)]
        assert texel_tune.main(argv + (["--tables"] if tables else [])) == 0
        tuned = read_values(psqt_copy.read_text(), PSQT_TUNABLES)
        assert (tuned != read_values(PSQT.read_text(), PSQT_TUNABLES)) == tables


def test_tuner_command_writes_the_tuned_weights(tmp_path: Path) -> None:
    data_file = tmp_path / "positions.txt"
    rng = random.Random(5)
    lines = [f"{fen} [{rng.choice(['1.0', '0.5', '0.0'])}]" for fen in sample_positions()[:60]]
    data_file.write_text("\n".join(lines) + "\n")
    params_copy = tmp_path / "params.py"
    params_copy.write_text(PARAMS.read_text())
    assert texel_tune.main(["--data", str(data_file), "--epochs", "50", "--held-out", "0",
                            "--params", str(params_copy)]) == 0
    written = read_values(params_copy.read_text())
    assert written != read_values(PARAMS.read_text())  # random labels move the weights


def test_bad_data_line_is_named() -> None:
    with pytest.raises(ValueError, match="line 3"):
        texel_tune.parse_line("not a position", 3)


def test_probability_labels_are_read() -> None:
    assert texel_tune.parse_line("8/8/8/8/8/8/8/K1k5 w - - 0 1 [0.4641]", 1)[1] == 0.4641
    with pytest.raises(ValueError, match="line 2"):
        texel_tune.parse_line("8/8/8/8/8/8/8/K1k5 w - - 0 1 [1.5]", 2)


def test_stockfish_scores_become_win_probabilities() -> None:
    even = chess.engine.PovScore(chess.engine.Cp(0), chess.WHITE)
    assert win_probability(even) == 0.5
    black_ahead = chess.engine.PovScore(chess.engine.Cp(400), chess.BLACK)
    assert win_probability(black_ahead) == pytest.approx(1 / 11)
    mated = chess.engine.PovScore(chess.engine.Mate(-3), chess.WHITE)
    assert win_probability(mated) < 1e-9


def test_self_play_data(tmp_path: Path) -> None:
    out = tmp_path / "positions.txt"
    assert texel_data.main(["--out", str(out), "--games", "1", "--nodes", "300",
                            "--seed", "4"]) == 0
    rows = texel_tune.load(out)
    results = {result for _, result in rows}
    assert len(results) == 1 and results <= {0.0, 0.5, 1.0}  # one game: one label
    for fen, _ in rows:
        assert not chess.Board(fen).is_check()
    with pytest.raises(SystemExit, match="inside the repository"):
        texel_data.main(["--out", str(PARAMS.parent / "positions.txt"), "--games", "1"])


def test_early_stopping_keeps_the_best_weights_on_held_out_positions() -> None:
    data = _synthetic(120, seed=3)
    start = current_theta().astype(np.float64)
    k = fit_k(data, start)
    # held-out positions labelled against the tuning data: no step can help them
    contrary = Dataset(data.const, data.features, 1.0 - data.results)
    kept = tune(data, start, k, epochs=200, rate=1.0, held_out=contrary, check_every=10)
    assert loss(contrary, kept, k) <= loss(contrary, start, k)
    assert loss(contrary, tune(data, start, k, epochs=200, rate=1.0), k) > loss(contrary, kept, k)
