"""Texel tuning: fit the evaluation weights of ``engine/params.py`` to game results.

The data (``tools.texel.data``) are quiet positions, each labelled with the result of the game
it came from (1 white won, 0.5 draw, 0 black won).  The evaluation is linear in the tunables
(``tools.texel.trace``), so a data set becomes a matrix once: ``score = const + X @ theta``.
The tuner first fits the scale ``K`` of the win-probability curve
``sigmoid(score) = 1 / (1 + 10 ** (-K * score / 400))`` to the current weights, then minimizes
the mean squared error between the results and ``sigmoid(score)`` by gradient descent (Adam),
rounds the weights and writes them back into ``engine/params.py`` in place.  With ``--tables``
the piece-square tables of ``engine/psqt.py`` are tuned too (and written back there); without
it they keep their values (a few hundred weights want a few hundred thousand positions).

    python -m tools.texel.tune --data /tmp/kibitz-texel.txt [--epochs 2000] [--tables] [--dry-run]
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import chess
import numpy as np
import numpy.typing as npt

from engine import params
from engine.psqt import PHASE_MAX
from tools.texel.trace import (
    PARAMS,
    PSQT,
    TUNABLES,
    Tunable,
    current_theta,
    drawish,
    exact_score,
    phase_masks,
    trace,
)

PARAMS_PATH = Path(__file__).resolve().parents[2] / "engine" / "params.py"
PSQT_PATH = Path(__file__).resolve().parents[2] / "engine" / "psqt.py"
PARAMS_TUNABLES = tuple(t for t in TUNABLES if t.module == PARAMS)
PSQT_TUNABLES = tuple(t for t in TUNABLES if t.module == PSQT)
TABLE_ROW = 8  # entries per line when a piece-square table is written back
LN10_OVER_400 = math.log(10.0) / 400.0
Floats = npt.NDArray[np.float64]


@dataclass
class Dataset:
    const: Floats  # the score's part the tuner does not move (white's view)
    features: Floats  # positions x tunables: d score / d weight
    results: Floats  # 1, 0.5 or 0 for white


def parse_line(line: str, number: int) -> tuple[str, float]:
    """``FEN [1.0]``: a position and white's result (or win probability, 0 to 1)."""
    match = re.fullmatch(r"\s*(.+?)\s*\[([01](?:\.\d+)?)\]\s*", line)
    if match is None or float(match.group(2)) > 1.0:
        raise ValueError(f"line {number}: expected 'FEN [result from 0 to 1]', "
                         f"got {line.strip()!r}")
    return match.group(1), float(match.group(2))


def load(path: Path, limit: int | None = None) -> list[tuple[str, float]]:
    rows = []
    with path.open() as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            rows.append(parse_line(line, number))
            if limit is not None and len(rows) >= limit:
                break
    if not rows:
        raise SystemExit(f"{path}: no positions")
    return rows


def build(rows: Iterable[tuple[str, float]]) -> Dataset:
    """Trace every position once; the taper and the draw scaling become per-row factors."""
    is_mg, is_eg, is_tempo = phase_masks()
    theta = current_theta()
    consts, features, results = [], [], []
    for fen, result in rows:
        item = trace(chess.Board(fen))
        phase = min(item.phase, PHASE_MAX) / PHASE_MAX
        # the draw scaling depends on the sign of the score: taken at the current weights
        scale = 1.0 / params.DRAWISH_DIVISOR if drawish(item, exact_score(item, theta)) else 1.0
        row = np.zeros(len(TUNABLES))
        row[is_mg] = item.coef[is_mg] * phase * scale
        row[is_eg] = item.coef[is_eg] * (1.0 - phase) * scale
        row[is_tempo] = 1.0 if item.white_to_move else -1.0
        consts.append(scale * (item.const_mg * phase + item.const_eg * (1.0 - phase)))
        features.append(row)
        results.append(result)
    return Dataset(np.array(consts), np.array(features), np.array(results))


def predict(data: Dataset, theta: Floats, k: float) -> Floats:
    scores = data.const + data.features @ theta
    out: Floats = 1.0 / (1.0 + np.exp(-k * LN10_OVER_400 * scores))
    return out


def loss(data: Dataset, theta: Floats, k: float) -> float:
    return float(np.mean((data.results - predict(data, theta, k)) ** 2))


def fit_k(data: Dataset, theta: Floats) -> float:
    """The scale of the sigmoid that best fits the current weights (golden-section search)."""
    low, high = 0.05, 5.0
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(60):
        a = high - ratio * (high - low)
        b = low + ratio * (high - low)
        if loss(data, theta, a) < loss(data, theta, b):
            high = b
        else:
            low = a
    return 0.5 * (low + high)


def tune(data: Dataset, theta: Floats, k: float, epochs: int, rate: float, l2: float = 0.0,
         held_out: Dataset | None = None, check_every: int = 50,
         frozen: npt.NDArray[np.bool_] | None = None) -> Floats:
    """Adam on the mean squared error; full batch (the data set is a matrix in memory).

    ``l2`` pulls the weights towards their start (ridge): positions of one game share its
    result, so a small data set is easily overfitted.  With ``held_out`` the weights with the
    lowest loss on it are returned (early stopping), checked every ``check_every`` epochs.
    The weights marked in ``frozen`` keep their start values.
    """
    origin = theta.astype(np.float64).copy()
    theta = origin.copy()
    best, best_loss = theta.copy(), loss(held_out, theta, k) if held_out else math.inf
    first = np.zeros_like(theta)
    second = np.zeros_like(theta)
    beta1, beta2, epsilon = 0.9, 0.999, 1e-8
    for step in range(1, epochs + 1):
        p = predict(data, theta, k)
        # d/dtheta mean (r - p)^2 = mean(-2 (r - p) p (1 - p) k ln10/400 x)
        weight = -2.0 * (data.results - p) * p * (1.0 - p) * k * LN10_OVER_400
        gradient = data.features.T @ weight / len(p) + 2.0 * l2 * (theta - origin)
        if frozen is not None:
            gradient[frozen] = 0.0
        first = beta1 * first + (1 - beta1) * gradient
        second = beta2 * second + (1 - beta2) * gradient**2
        theta -= rate * (first / (1 - beta1**step)) / (np.sqrt(second / (1 - beta2**step))
                                                        + epsilon)
        if held_out is not None and (step % check_every == 0 or step == epochs):
            current = loss(held_out, theta, k)
            if current < best_loss:
                best, best_loss = theta.copy(), current
    return best if held_out is not None else theta


# --- params.py and psqt.py: read and write the tunables in place ------------------------------

# an int, or a tuple of ints on one line or several (the piece-square tables' diagrams)
_ASSIGNMENT = r"^(?P<head>{name} = )(?P<value>-?\d+|\([-\d,\s]*\))(?P<tail>.*)$"


def read_values(text: str, tunables: Sequence[Tunable] = PARAMS_TUNABLES) -> dict[str, int]:
    """The tunables' values as written in a params.py (or psqt.py) text, by label."""
    values = {}
    for t in tunables:
        match = re.search(_ASSIGNMENT.format(name=re.escape(t.name)), text, re.MULTILINE)
        if match is None:
            raise ValueError(f"no assignment of {t.name} in the {t.module}.py text")
        literal = match.group("value")
        if t.index is None:
            values[t.label] = int(literal)
        else:
            values[t.label] = int(_entries(literal)[t.index])
    return values


def _entries(literal: str) -> list[str]:
    return [v for v in literal.strip("()").replace("\n", " ").split(",") if v.strip()]


def write_values(text: str, values: dict[str, int],
                 tunables: Sequence[Tunable] = PARAMS_TUNABLES) -> str:
    """``text`` with the tunables' assignments replaced by ``values`` (comments kept); a tuple
    written over several lines is written back as rows of ``TABLE_ROW`` entries."""
    for name in dict.fromkeys(t.name for t in tunables):
        pattern = re.compile(_ASSIGNMENT.format(name=re.escape(name)), re.MULTILINE)
        match = pattern.search(text)
        if match is None:
            raise ValueError(f"no assignment of {name} in the text to write")
        literal = match.group("value")
        if literal.startswith("("):
            entries = [int(v) for v in _entries(literal)]
            for i in range(len(entries)):
                entries[i] = values.get(f"{name}[{i}]", entries[i])
            if "\n" in literal:
                rows = [entries[i:i + TABLE_ROW] for i in range(0, len(entries), TABLE_ROW)]
                new_literal = "(\n" + "".join(
                    "    " + ", ".join(f"{v:4d}" for v in row) + ",\n" for row in rows) + ")"
            else:
                new_literal = "(" + ", ".join(str(v) for v in entries) + ")"
        else:
            new_literal = str(values.get(name, int(literal)))
        text = text[: match.start("value")] + new_literal + text[match.end("value"):]
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tools.texel.tune", description=__doc__)
    parser.add_argument("--data", type=Path, required=True, help="FEN [result] lines")
    parser.add_argument("--limit", type=int, help="use at most this many positions")
    parser.add_argument("--epochs", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=0.5, help="Adam step size (centipawns)")
    # No ridge by default: the loss's gradient is about 1e-5 to 1e-6 per centipawn, so even
    # l2 1e-6 outweighs it a few centipawns from the start and freezes every weight there.
    # Early stopping on the held-out games is what guards against overfitting.
    parser.add_argument("--l2", type=float, default=0.0,
                        help="ridge weight pulling every weight towards its start (default 0: "
                        "the loss's gradient is ~1e-6 per centipawn, so 1e-6 already freezes "
                        "the weights)")
    parser.add_argument("--held-out", type=float, default=0.2,
                        help="share of the positions (the file's last ones, so whole games) "
                        "kept out of the fit to choose when to stop (default 0.2)")
    parser.add_argument("--params", type=Path, default=PARAMS_PATH,
                        help="the params.py written back (default: the engine's)")
    parser.add_argument("--tables", action="store_true",
                        help="tune the piece-square tables too")
    parser.add_argument("--psqt", type=Path, default=PSQT_PATH,
                        help="the psqt.py written back with --tables (default: the engine's)")
    parser.add_argument("--dry-run", action="store_true", help="report, write nothing")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.data.is_file():
        raise SystemExit(f"--data {args.data}: no such file")
    rows = load(args.data, args.limit)
    print(f"{len(rows)} positions from {args.data}", flush=True)
    text = args.params.read_text()
    table_text = args.psqt.read_text()
    written = read_values(text) | read_values(table_text, PSQT_TUNABLES)
    start = np.array([written[t.label] for t in TUNABLES], dtype=np.float64)
    if not np.array_equal(start, current_theta()):
        raise SystemExit(f"{args.params} or {args.psqt} differs from the engine's imported "
                         "parameters: tune the files the engine runs with")
    frozen = None if args.tables else np.array([t.module == PSQT for t in TUNABLES])
    if not 0.0 <= args.held_out < 1.0:
        raise SystemExit("--held-out must lie in [0, 1)")
    split = len(rows) - int(len(rows) * args.held_out)
    data = build(rows[:split])
    held_out = build(rows[split:]) if split < len(rows) else None
    k = fit_k(data, start)
    before = loss(data, start, k)
    held_before = loss(held_out, start, k) if held_out else math.nan
    print(f"K {k:.4f}, loss {before:.6f} (held out {held_before:.6f}) with the current weights",
          flush=True)
    tuned = tune(data, start, k, args.epochs, args.rate, args.l2, held_out, frozen=frozen)
    rounded = np.round(tuned)
    after = loss(data, rounded, k)
    held_after = loss(held_out, rounded, k) if held_out else math.nan
    print(f"loss {after:.6f} (held out {held_after:.6f}) after tuning, rounded weights",
          flush=True)
    for t, old, new in zip(TUNABLES, start, rounded, strict=True):
        if old != new:
            print(f"  {t.label:26s} {int(old):5d} -> {int(new):5d}")
    if args.dry_run:
        return 0
    values = {t.label: int(v) for t, v in zip(TUNABLES, rounded, strict=True)}
    args.params.write_text(write_values(text, values))
    print(f"wrote {args.params}")
    if args.tables:
        args.psqt.write_text(write_values(table_text, values, PSQT_TUNABLES))
        print(f"wrote {args.psqt}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
