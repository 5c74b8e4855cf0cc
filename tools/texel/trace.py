"""The evaluation as a linear function of the tunable parameters (Texel tuning's trace).

``trace(board)`` computes, with python-chess, every term of ``engine.evaluate`` for one position
as a coefficient per tunable (``TUNABLES``: the linear evaluation weights of
``engine/params.py`` and the piece-square tables of ``engine/psqt.py``) plus a constant part
(the piece values and the king attack, which the tuner leaves alone).  ``exact_score`` puts a
trace back together with the engine's integer arithmetic: for the current parameters it equals
``engine.evaluate.evaluate_white`` (the tests check this position by position), so what the
tuner fits is the engine's evaluation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import chess
import numpy as np
import numpy.typing as npt

from engine import params, psqt
from engine.psqt import EG_VALUE, MG_VALUE, PHASE_INC, PHASE_MAX

MG, EG, TEMPO = "mg", "eg", "tempo"  # the part of the score a tunable adds to


PARAMS, PSQT = "params", "psqt"  # the engine module a tunable is written in
_MODULES = {PARAMS: params, PSQT: psqt}
# the piece-square tables' names in engine/psqt.py, by piece type
TABLE_NAMES = {chess.PAWN: "PAWN", chess.KNIGHT: "KNIGHT", chess.BISHOP: "BISHOP",
               chess.ROOK: "ROOK", chess.QUEEN: "QUEEN", chess.KING: "KING"}


@dataclass(frozen=True)
class Tunable:
    name: str  # a module-level name of engine/params.py (or engine/psqt.py)
    index: int | None  # the entry of a tuple, None for a plain int
    phase: str  # MG, EG or TEMPO
    module: str = PARAMS

    @property
    def label(self) -> str:
        return self.name if self.index is None else f"{self.name}[{self.index}]"

    def value(self) -> int:
        value = getattr(_MODULES[self.module], self.name)
        return int(value if self.index is None else value[self.index])


def _tunables() -> tuple[Tunable, ...]:
    out = [Tunable("TEMPO", None, TEMPO)]
    for name in ("BISHOP_PAIR", "ROOK_OPEN_FILE", "ROOK_SEMI_OPEN_FILE", "DOUBLED_PAWN",
                 "ISOLATED_PAWN", "THREAT_BY_PAWN", "THREAT_BY_MINOR_ON_ROOK",
                 "THREAT_BY_MINOR_ON_QUEEN", "THREAT_BY_ROOK_ON_QUEEN"):
        out += [Tunable(f"{name}_MG", None, MG), Tunable(f"{name}_EG", None, EG)]
    out += [Tunable(name, None, MG) for name in ("SHIELD_CLOSE", "SHIELD_FAR", "SHIELD_MISSING")]
    out += [Tunable(name, None, EG) for name in ("PASSED_ENEMY_KING_EG", "PASSED_OWN_KING_EG")]
    for piece in (chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN):
        out += [Tunable("MOBILITY_MG", piece, MG), Tunable("MOBILITY_EG", piece, EG)]
    for rank in range(1, 7):
        out += [Tunable("PASSED_MG", rank, MG), Tunable("PASSED_EG", rank, EG)]
    # The piece-square tables, entry by entry in their diagram order (a8 first); a pawn never
    # stands on the first or last rank.
    for piece, name in TABLE_NAMES.items():
        for index in range(64):
            if piece == chess.PAWN and not 8 <= index < 56:
                continue
            out += [Tunable(f"MG_{name}", index, MG, PSQT), Tunable(f"EG_{name}", index, EG, PSQT)]
    return tuple(out)


TUNABLES = _tunables()
COLUMN = {t.label: i for i, t in enumerate(TUNABLES)}
MINOR_NPM = max(MG_VALUE[chess.KNIGHT], MG_VALUE[chess.BISHOP])


@dataclass
class Trace:
    """One position: score = taper(const_mg + coef_mg . theta, const_eg + coef_eg . theta)."""

    coef: npt.NDArray[np.int64]  # per tunable: its coefficient (white minus black)
    const_mg: int
    const_eg: int
    phase: int  # 0 (bare end game) .. PHASE_MAX
    white_to_move: bool
    npm: tuple[int, int]  # non-pawn material (MG values) of white and black
    pawn_material: tuple[int, int]


def _div(a: int, b: int) -> int:
    """Division rounding towards zero, as the engine's."""
    return a // b if a >= 0 else -((-a) // b)


def table_index(piece: chess.Piece, square: int) -> int:
    """The entry of a piece-square table: the tables are diagrams from white's view, a8 first;
    black uses the mirrored square."""
    return square ^ 56 if piece.color == chess.WHITE else square


def trace(board: chess.Board) -> Trace:
    """The coefficients and constant parts of ``board``'s evaluation (white's view)."""
    coef = np.zeros(len(TUNABLES), dtype=np.int64)

    def add(label: str, amount: int) -> None:
        coef[COLUMN[label]] += amount

    const_mg = const_eg = phase = 0
    npm = [0, 0]
    pawn_material = [0, 0]
    for square, piece in board.piece_map().items():
        sign = 1 if piece.color == chess.WHITE else -1
        const_mg += sign * MG_VALUE[piece.piece_type]
        const_eg += sign * EG_VALUE[piece.piece_type]
        name = TABLE_NAMES[piece.piece_type]
        index = table_index(piece, square)
        add(f"MG_{name}[{index}]", sign)
        add(f"EG_{name}[{index}]", sign)
        phase += PHASE_INC[piece.piece_type]
        colour = 0 if piece.color == chess.WHITE else 1
        if piece.piece_type == chess.PAWN:
            pawn_material[colour] += MG_VALUE[chess.PAWN]
        elif piece.piece_type != chess.KING:
            npm[colour] += MG_VALUE[piece.piece_type]

    kings = {c: board.king(c) for c in chess.COLORS}
    for colour in chess.COLORS:
        sign = 1 if colour == chess.WHITE else -1
        enemy_king = kings[not colour]
        assert enemy_king is not None
        zone_squares = chess.BB_KING_ATTACKS[enemy_king] | chess.BB_SQUARES[enemy_king]
        attackers = zone_weight = 0
        for piece_type in (chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN):
            for square in board.pieces(piece_type, colour):
                attacks = board.attacks_mask(square)
                count = chess.popcount(attacks & ~board.occupied_co[colour])
                extra = count - params.MOBILITY_BASE[piece_type]
                add(f"MOBILITY_MG[{piece_type}]", sign * extra)
                add(f"MOBILITY_EG[{piece_type}]", sign * extra)
                _threats(board, colour, piece_type, square, attacks, add)
                zone = chess.popcount(attacks & zone_squares)
                if zone:
                    attackers += 1
                    zone_weight += zone * params.KING_ATTACK_WEIGHT[piece_type]
        if len(board.pieces(chess.BISHOP, colour)) >= 2:
            add("BISHOP_PAIR_MG", sign)
            add("BISHOP_PAIR_EG", sign)
        if board.pieces(chess.QUEEN, colour) and attackers >= 2:
            const_mg += sign * min(zone_weight * zone_weight * params.KING_ATTACK_SCALE // 16,
                                   params.KING_ATTACK_MAX)
        _shield(board, colour, kings[colour], add)
        _pawns_and_rooks(board, colour, kings, add)
    return Trace(coef, const_mg, const_eg, phase, board.turn == chess.WHITE,
                 (npm[0], npm[1]), (pawn_material[0], pawn_material[1]))


def _threats(board: chess.Board, colour: chess.Color, piece_type: chess.PieceType, square: int,
             attacks: chess.Bitboard, add: Callable[[str, int], None]) -> None:
    """A piece of ``colour`` attacked by an enemy pawn; its own attacks on bigger pieces."""
    sign = 1 if colour == chess.WHITE else -1
    if board.attackers_mask(not colour, square) & board.pieces_mask(chess.PAWN, not colour):
        add("THREAT_BY_PAWN_MG", -sign)
        add("THREAT_BY_PAWN_EG", -sign)
    hit_queen = attacks & board.pieces_mask(chess.QUEEN, not colour)
    if piece_type in (chess.KNIGHT, chess.BISHOP):
        if attacks & board.pieces_mask(chess.ROOK, not colour):
            add("THREAT_BY_MINOR_ON_ROOK_MG", sign)
            add("THREAT_BY_MINOR_ON_ROOK_EG", sign)
        if hit_queen:
            add("THREAT_BY_MINOR_ON_QUEEN_MG", sign)
            add("THREAT_BY_MINOR_ON_QUEEN_EG", sign)
    elif piece_type == chess.ROOK and hit_queen:
        add("THREAT_BY_ROOK_ON_QUEEN_MG", sign)
        add("THREAT_BY_ROOK_ON_QUEEN_EG", sign)


def _shield(board: chess.Board, colour: chess.Color, king: int | None,
            add: object) -> None:
    assert king is not None and callable(add)
    sign = 1 if colour == chess.WHITE else -1
    rank = chess.square_rank(king)
    relative = rank if colour == chess.WHITE else 7 - rank
    if relative > 1:
        return
    forward = 1 if colour == chess.WHITE else -1
    for file in range(chess.square_file(king) - 1, chess.square_file(king) + 2):
        if not 0 <= file <= 7:
            continue
        near = board.piece_at(chess.square(file, rank + forward))
        far = board.piece_at(chess.square(file, rank + 2 * forward))
        own_pawn = chess.Piece(chess.PAWN, colour)
        if near == own_pawn:
            add("SHIELD_CLOSE", sign)
        elif far == own_pawn:
            add("SHIELD_FAR", sign)
        else:
            add("SHIELD_MISSING", -sign)


def _pawns_and_rooks(board: chess.Board, colour: chess.Color, kings: dict[bool, int | None],
                     add: object) -> None:
    assert callable(add)
    sign = 1 if colour == chess.WHITE else -1
    own = [[chess.square_rank(s) for s in board.pieces(chess.PAWN, colour)
            if chess.square_file(s) == f] for f in range(8)]
    enemy = [[chess.square_rank(s) for s in board.pieces(chess.PAWN, not colour)
              if chess.square_file(s) == f] for f in range(8)]
    for file in range(8):
        count = len(own[file])
        if count == 0:
            continue
        if count > 1:
            add("DOUBLED_PAWN_MG", -sign * (count - 1))
            add("DOUBLED_PAWN_EG", -sign * (count - 1))
        left = len(own[file - 1]) if file > 0 else 0
        right = len(own[file + 1]) if file < 7 else 0
        if left == 0 and right == 0:
            add("ISOLATED_PAWN_MG", -sign * count)
            add("ISOLATED_PAWN_EG", -sign * count)
        # only the most advanced pawn of a file can be passed: no enemy pawn ahead of it on
        # this or an adjacent file
        neighbours = [r for f in range(max(0, file - 1), min(7, file + 1) + 1) for r in enemy[f]]
        if colour == chess.WHITE:
            rank = max(own[file])
            passed = all(r <= rank for r in neighbours)
            relative = rank
        else:
            rank = min(own[file])
            passed = all(r >= rank for r in neighbours)
            relative = 7 - rank
        if not passed:
            continue
        add(f"PASSED_MG[{relative}]", sign)
        add(f"PASSED_EG[{relative}]", sign)
        if relative >= params.PASSED_KING_MIN_RANK:
            stop = chess.square(file, rank + (1 if colour == chess.WHITE else -1))
            own_king, enemy_king = kings[colour], kings[not colour]
            assert own_king is not None and enemy_king is not None
            weight = relative - params.PASSED_KING_MIN_RANK + 1
            add("PASSED_ENEMY_KING_EG", sign * weight * chess.square_distance(enemy_king, stop))
            add("PASSED_OWN_KING_EG", -sign * weight * chess.square_distance(own_king, stop))
    own_files = {f for f in range(8) if own[f]}
    enemy_files = {f for f in range(8) if enemy[f]}
    rooks = list(board.pieces(chess.ROOK, colour))
    for square in rooks:
        file = chess.square_file(square)
        if file in own_files:
            continue
        if file in enemy_files:
            add("ROOK_SEMI_OPEN_FILE_MG", sign)
            add("ROOK_SEMI_OPEN_FILE_EG", sign)
        else:
            add("ROOK_OPEN_FILE_MG", sign)
            add("ROOK_OPEN_FILE_EG", sign)


def phase_masks() -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Which tunables add to the middle game, the end game, or (tempo) after the taper."""
    phases = np.array([t.phase for t in TUNABLES])
    return phases == MG, phases == EG, phases == TEMPO


def exact_score(item: Trace, theta: npt.NDArray[np.int64]) -> int:
    """The engine's integer evaluation (white's view) of a trace with parameters ``theta``."""
    is_mg, is_eg, is_tempo = phase_masks()
    mg = item.const_mg + int(item.coef[is_mg] @ theta[is_mg])
    eg = item.const_eg + int(item.coef[is_eg] @ theta[is_eg])
    phase = min(item.phase, PHASE_MAX)
    score = _div(mg * phase + eg * (PHASE_MAX - phase), PHASE_MAX)
    score = _div(score, params.DRAWISH_DIVISOR) if drawish(item, score) else score
    tempo = int(theta[is_tempo].sum())
    return score + tempo if item.white_to_move else score - tempo


def drawish(item: Trace, score: int) -> bool:
    """The side ahead has no pawns and at most a minor piece more: the engine shrinks it."""
    strong = 0 if score > 0 else 1
    if item.pawn_material[strong] != 0:
        return False
    return item.npm[strong] - item.npm[1 - strong] <= MINOR_NPM


def current_theta() -> npt.NDArray[np.int64]:
    return np.array([t.value() for t in TUNABLES], dtype=np.int64)
