"""Shared helpers of the engine tests: perft suites, python-chess oracles, random games,
small random nets."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import chess
import numpy as np
import numpy.typing as npt
import pytest

from engine import nnue
from engine.board import Position
from engine.constants import KING, PAWN, S_EG, S_KING, S_MG, S_NPM, S_PAWN_MAT, S_PHASE
from engine.psqt import MATERIAL_BY_CODE, PHASE_BY_CODE, PST_EG, PST_MG
from tests.engine.uci_process import UciProcess

DATA_DIR = Path(__file__).resolve().parents[1] / "data"

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PerftCase:
    """One EPD line: a position and its known leaf counts by depth."""

    fen: str
    counts: dict[int, int]
    line: int

    def deepest(self, max_nodes: int) -> int:
        """The deepest listed depth whose count is at most ``max_nodes`` (at least 1)."""
        return max((d for d, n in self.counts.items() if n <= max_nodes), default=1)


def python_chess_perft(board: chess.Board, depth: int) -> int:
    """python-chess's leaf count (its variant boards have no moves once the variant ended)."""
    if depth == 1:
        return board.legal_moves.count()
    total = 0
    for move in board.legal_moves:
        board.push(move)
        total += python_chess_perft(board, depth - 1)
        board.pop()
    return total


def load_perft_epd(name: str) -> list[PerftCase]:
    """Parse ``FEN ;D1 20 ;D2 400 ...`` lines of a file in tests/data."""
    cases = []
    text = (DATA_DIR / name).read_text()
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        fen, *fields = (part.strip() for part in raw.split(";"))
        counts = {}
        for field in fields:
            label, value = field.split()
            counts[int(label[1:])] = int(value)
        cases.append(PerftCase(fen, counts, number))
    return cases


def eval_terms_from_scratch(pos: Position) -> dict[int, int]:
    """The state fields the board updates incrementally, computed from the board alone."""
    terms = dict.fromkeys((S_MG, S_EG, S_PHASE, S_NPM, S_NPM + 1, S_PAWN_MAT, S_PAWN_MAT + 1), 0)
    for sq in range(120):
        p = int(pos.board[sq])
        if p <= 0:
            continue
        terms[S_MG] += int(PST_MG[p, sq])
        terms[S_EG] += int(PST_EG[p, sq])
        terms[S_PHASE] += int(PHASE_BY_CODE[p])
        color = p >> 3
        field = S_PAWN_MAT if p & 7 == PAWN else S_NPM
        if p & 7 != KING:
            terms[field + color] += int(MATERIAL_BY_CODE[p])
        else:
            terms[S_KING + color] = sq
    return terms


def state_snapshot(pos: Position) -> tuple[bytes, bytes, int, int]:
    """Board, current state row, key and ply: what an unmake must restore exactly."""
    return (pos.board.tobytes(), pos.stack[pos.ply].tobytes(), pos.key, pos.ply)


def uci_set(board: chess.Board) -> set[str]:
    """python-chess's legal moves as UCI text (king-takes-rook castling on chess960 boards)."""
    return {board.uci(move) for move in board.legal_moves}


def engine_uci_set(pos: Position) -> set[str]:
    return {pos.move_to_uci(move) for move in pos.legal_moves()}


def random_boards(seed: int, games: int, chess960: bool, max_plies: int) -> list[chess.Board]:
    """Positions of seeded random games, one board per ply (start positions included).

    Captures are preferred half of the time so the games reach endings, promotions and
    en passant more often than uniformly random play does.
    """
    rng = random.Random(seed)
    boards: list[chess.Board] = []
    for _ in range(games):
        if chess960:
            board = chess.Board.from_chess960_pos(rng.randrange(960))
        else:
            board = chess.Board()
        boards.append(board.copy(stack=False))
        for _ in range(max_plies):
            moves = list(board.legal_moves)
            if not moves:
                break
            captures = [m for m in moves if board.is_capture(m) or m.promotion]
            pool = captures if captures and rng.random() < 0.5 else moves
            board.push(rng.choice(pool))
            boards.append(board.copy(stack=False))
            if board.is_insufficient_material() or board.halfmove_clock >= 100:
                break
    return boards


def random_net_bytes(
    seed: int, hidden: int, activation: int = nnue.ACT_SCRELU, buckets: int = 1,
    king_table: npt.NDArray[np.int64] | None = None, king_mirror: bool = False,
) -> tuple[bytes, dict[str, FloatArray]]:
    """A small net file with seeded random float weights, quantised as the trainer does, and
    its quantised layers (``w1``, ``b1``, ``w2``, ``b2``; output weights are (buckets, 2N),
    each bucket's own; ``w1`` is K x 768 rows with a ``king_table``) for scoring by hand."""
    rng = np.random.default_rng(seed)
    king_buckets = 1 if king_table is None else int(king_table.max()) + 1
    w1 = rng.uniform(-0.25, 0.25, size=(nnue.FEATURES * king_buckets, hidden))
    b1 = rng.uniform(0.0, 0.5, size=hidden)
    w2 = rng.uniform(-1.5, 1.5, size=(buckets, 2 * hidden))
    b2 = rng.uniform(-0.1, 0.1, size=buckets)
    qa, qb = 255, 64
    q = {
        "w1": np.round(w1 * qa), "b1": np.round(b1 * qa), "w2": np.round(w2 * qb),
        "b2": np.round(b2 * qa * qb),
    }
    out_weights, out_bias = (q["w2"], q["b2"]) if buckets > 1 else (q["w2"][0], int(q["b2"][0]))
    data = nnue.encode_net(q["w1"], q["b1"], out_weights, out_bias, activation=activation,
                           qa=qa, qb=qb, scale=400, king_table=king_table,
                           king_mirror=king_mirror)
    return data, q


@dataclass(frozen=True)
class RandomNet:
    """A random net as written to its file and read back: the file's bytes, the quantised
    layers and the loaded net."""

    data: bytes
    q: dict[str, FloatArray]
    net: nnue.Net


def random_net(
    path: Path, seed: int, hidden: int, activation: int = nnue.ACT_SCRELU, buckets: int = 1,
    king_table: npt.NDArray[np.int64] | None = None, king_mirror: bool = False,
) -> RandomNet:
    """``random_net_bytes`` written to ``path`` and loaded from it."""
    data, q = random_net_bytes(seed, hidden, activation, buckets, king_table, king_mirror)
    path.write_bytes(data)
    return RandomNet(data, q, nnue.load_net(path))


@pytest.fixture(scope="module")
def engine() -> Iterator[UciProcess]:
    """One real engine process, after its handshake, for all the tests of a module."""
    process = UciProcess()
    process.handshake()
    yield process
    assert process.close() == 0
