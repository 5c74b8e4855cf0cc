"""Static evaluation, tapered between middle game and end game by the game phase.

Terms (each a middle-game / end-game pair, white minus black):

* material + piece-square tables (PeSTO), read from the board's incremental accumulators;
* mobility: pseudo-legal target squares of knights, bishops, rooks and queens (empty or enemy);
* pawn structure: doubled, isolated and passed pawns (passed by relative rank), kept in a pawn
  hash table by a key of the pawns alone (see ``_pawn_entry``);
* king safety: pawn shield in front of a castled king, and attacks on the squares around it;
* threats: pieces attacked by pawns, rooks and queens by minor pieces, queens by rooks;
* bishop pair; rooks on open and semi-open files; a small bonus for the side to move;
* in three-check and king of the hill, the variant's term (``engine.variant``): checks given,
  the kings' distance to the hill.

The result is from the side to move's point of view.  Every term is colour-symmetric, so a
position and its colour-flipped mirror get the same score (``evaluate_white`` negates).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engine import params
from engine.constants import (
    BISHOP,
    BISHOP_STEPS,
    BLACK,
    KING_STEPS,
    KNIGHT,
    KNIGHT_STEPS,
    MAILBOX,
    PAWN,
    QUEEN,
    ROOK,
    ROOK_STEPS,
    S_EG,
    S_KING,
    S_MG,
    S_NPM,
    S_PAWN_MAT,
    S_PHASE,
    S_SIDE,
    S_VARIANT,
    SQ64,
    VARIANT_CHESS,
    WHITE,
    BoardArray,
    Int64Array,
    StackArray,
)
from engine.jit import njit_noalloc, njit_noalloc_inline
from engine.movegen import is_attacked_by_pawn
from engine.psqt import MG_VALUE, PHASE_MAX
from engine.variant import variant_eval_white

# scratch layout: pawns per file, lowest and highest pawn rank per file, for each colour
_COUNT = 0  # + 8 * colour + file
_MIN_RANK = 16  # + 8 * colour + file (8 when the file has none)
_MAX_RANK = 32  # + 8 * colour + file (-1 when the file has none)
_ROOKS = 48  # up to 8 rooks (square index 0-63, colour in bit 6), counted in _ROOK_COUNT
_ROOK_COUNT = 63
_BISHOPS = 64  # + colour: bishops
_QUEENS = 66  # + colour: queens
_ATTACKERS = 68  # + colour: pieces attacking the enemy king zone
_ZONE = 70  # + colour: weighted attacks on the enemy king zone
_PAWN_TABLE = 72  # the pawn hash table, PAWN_ENTRIES entries of _PAWN_WORDS words
PAWN_ENTRIES = 1 << params.PAWN_CACHE_ENTRIES_LOG2
SCRATCH_SIZE = _PAWN_TABLE + PAWN_ENTRIES * 8

# a pawn table entry (one 64-byte cache line)
_PAWN_WORDS = 8
_P_KEY = 0  # the pawn key; 0 (never a key: keys start from _PAWN_KEY_SEED) while empty
_P_MG = 1  # doubled, isolated and passed pawn scores, white minus black (king race excluded)
_P_EG = 2
_P_FILES = 3  # bit 8 * colour + file: that colour has a pawn on the file
_P_RACE = 4  # + colour: 4 bits per file, rank + 1 of a passed pawn far enough for the king race

# Pawn hash: Zobrist numbers of the pawns alone, as int64 (no unsigned arithmetic in the key)
_PAWN_KEY_SEED = 0x5851F42D4C957F2D


def _pawn_key_table() -> npt.NDArray[np.int64]:
    """``PAWN_KEYS[colour, square]``: a random int64 for a pawn of that colour there."""
    rng = np.random.default_rng(0x9E3779B9)
    table = np.zeros((2, 120), dtype=np.int64)
    for colour in range(2):
        for sq in range(120):
            if SQ64[sq] >= 0:
                table[colour, sq] = rng.integers(1, 2**63, dtype=np.int64)
    return table


PAWN_KEYS = _pawn_key_table()


def new_scratch() -> Int64Array:
    """Work space for one evaluation thread (keeps the hot path free of allocations)."""
    return np.zeros(SCRATCH_SIZE, dtype=np.int64)


def _near_king_table() -> npt.NDArray[np.bool_]:
    """``NEAR_KING[target - king + 120]``: the target is the king's square or next to it."""
    table = np.zeros(241, dtype=np.bool_)
    table[120] = True
    for step in KING_STEPS:
        table[int(step) + 120] = True
    return table


NEAR_KING = _near_king_table()
MINOR_NPM = max(MG_VALUE[KNIGHT], MG_VALUE[BISHOP])
TWO_KNIGHTS_NPM = 2 * MG_VALUE[KNIGHT]  # no other set of pieces sums to it

KING_ATTACK_WEIGHT = np.array(params.KING_ATTACK_WEIGHT, dtype=np.int64)
MOBILITY_MG = np.array(params.MOBILITY_MG, dtype=np.int64)
MOBILITY_EG = np.array(params.MOBILITY_EG, dtype=np.int64)
MOBILITY_BASE = np.array(params.MOBILITY_BASE, dtype=np.int64)
PASSED_MG = np.array(params.PASSED_MG, dtype=np.int64)
PASSED_EG = np.array(params.PASSED_EG, dtype=np.int64)


@njit_noalloc_inline
def _slider_mobility(
    board: BoardArray, sq: int, colour: int, steps: npt.NDArray[np.int64], enemy_king: int
) -> tuple[int, int, int]:
    """(target squares, attacks on the enemy king zone, bit per piece type of the enemy
    pieces attacked) of a bishop, rook or queen."""
    count = 0
    zone = 0
    victims = 0
    for step in steps:
        to = sq + step
        while True:
            target = board[to]
            if target < 0:
                break
            if target == 0:
                count += 1
            elif (target >> 3) != colour:
                count += 1
                victims |= 1 << (target & 7)
            if NEAR_KING[to - enemy_king + 120]:
                zone += 1
            if target != 0:
                break
            to += step
    return count, zone, victims


@njit_noalloc
def evaluate_white(board: BoardArray, stack: StackArray, ply: int, scratch: Int64Array) -> int:
    """The static score from white's point of view, in centipawns."""
    row = stack[ply]
    mg = int(row[S_MG])
    eg = int(row[S_EG])
    king_sq = (int(row[S_KING + WHITE]), int(row[S_KING + BLACK]))
    scratch[_ROOK_COUNT] = 0
    for i in range(_BISHOPS, _ZONE + 2):
        scratch[i] = 0
    mob_mg = 0
    mob_eg = 0
    pawn_key = _PAWN_KEY_SEED
    for i in range(64):
        sq = MAILBOX[i]
        piece = board[sq]
        if piece <= 0:
            continue
        ptype = piece & 7
        colour = piece >> 3
        if ptype == PAWN:
            pawn_key ^= PAWN_KEYS[colour, sq]
            continue
        if ptype == 6:  # king
            continue
        enemy_king = king_sq[1 - colour]
        count = 0
        zone = 0
        victims = 0
        if ptype == KNIGHT:
            for step in KNIGHT_STEPS:
                to = sq + step
                target = board[to]
                if target == 0:
                    count += 1
                elif target > 0 and (target >> 3) != colour:
                    count += 1
                    victims |= 1 << (target & 7)
                if target >= 0 and NEAR_KING[to - enemy_king + 120]:
                    zone += 1
        elif ptype == BISHOP:
            count, zone, victims = _slider_mobility(board, sq, colour, BISHOP_STEPS, enemy_king)
        elif ptype == ROOK:
            count, zone, victims = _slider_mobility(board, sq, colour, ROOK_STEPS, enemy_king)
            rooks = scratch[_ROOK_COUNT]
            if rooks < 8:
                scratch[_ROOKS + rooks] = i | (colour << 6)
                scratch[_ROOK_COUNT] = rooks + 1
        else:
            count, zone, victims = _slider_mobility(board, sq, colour, KING_STEPS, enemy_king)
        extra = count - MOBILITY_BASE[ptype]
        sign = 1 if colour == WHITE else -1
        mob_mg += sign * extra * MOBILITY_MG[ptype]
        mob_eg += sign * extra * MOBILITY_EG[ptype]
        # Threats: a piece attacked by a pawn, a rook or queen by a minor, a queen by a rook.
        if is_attacked_by_pawn(board, sq, 1 - colour):
            mg -= sign * params.THREAT_BY_PAWN_MG
            eg -= sign * params.THREAT_BY_PAWN_EG
        if ptype == KNIGHT or ptype == BISHOP:  # noqa: SIM109 (numba)
            if victims & (1 << ROOK):
                mg += sign * params.THREAT_BY_MINOR_ON_ROOK_MG
                eg += sign * params.THREAT_BY_MINOR_ON_ROOK_EG
            if victims & (1 << QUEEN):
                mg += sign * params.THREAT_BY_MINOR_ON_QUEEN_MG
                eg += sign * params.THREAT_BY_MINOR_ON_QUEEN_EG
        elif ptype == ROOK and victims & (1 << QUEEN):
            mg += sign * params.THREAT_BY_ROOK_ON_QUEEN_MG
            eg += sign * params.THREAT_BY_ROOK_ON_QUEEN_EG
        if ptype == BISHOP:
            scratch[_BISHOPS + colour] += 1
        elif ptype == QUEEN:
            scratch[_QUEENS + colour] += 1
        if zone > 0:
            scratch[_ATTACKERS + colour] += 1
            scratch[_ZONE + colour] += zone * KING_ATTACK_WEIGHT[ptype]
    mg += mob_mg
    eg += mob_eg

    entry = _pawn_entry(board, scratch, pawn_key)
    mg += scratch[entry + _P_MG]
    eg += scratch[entry + _P_EG] + _king_race(scratch, entry, king_sq[WHITE], king_sq[BLACK])

    # Rooks on open (no pawns) and semi-open (no own pawns) files.
    files = scratch[entry + _P_FILES]
    for r in range(scratch[_ROOK_COUNT]):
        code = scratch[_ROOKS + r]
        colour = code >> 6
        file = code & 7
        sign = 1 if colour == WHITE else -1
        if (files >> (8 * colour + file)) & 1 == 0:
            if (files >> (8 * (1 - colour) + file)) & 1 == 0:
                mg += sign * params.ROOK_OPEN_FILE_MG
                eg += sign * params.ROOK_OPEN_FILE_EG
            else:
                mg += sign * params.ROOK_SEMI_OPEN_FILE_MG
                eg += sign * params.ROOK_SEMI_OPEN_FILE_EG

    for colour in range(2):
        sign = 1 if colour == WHITE else -1
        # Bishop pair.
        if scratch[_BISHOPS + colour] >= 2:
            mg += sign * params.BISHOP_PAIR_MG
            eg += sign * params.BISHOP_PAIR_EG
        # King safety: pawn shield (middle game) and, with a queen and two attackers, the
        # weighted attacks on the squares around the enemy king.
        mg += sign * _shield(board, king_sq[colour], colour)
        if scratch[_QUEENS + colour] > 0 and scratch[_ATTACKERS + colour] >= 2:
            zone = scratch[_ZONE + colour]
            mg += sign * min(zone * zone * params.KING_ATTACK_SCALE // 16, params.KING_ATTACK_MAX)

    phase = min(int(row[S_PHASE]), PHASE_MAX)
    score = _div(mg * phase + eg * (PHASE_MAX - phase), PHASE_MAX)
    score = _scale_drawish(row, score)
    if row[S_SIDE] == WHITE:
        score += params.TEMPO
    else:
        score -= params.TEMPO
    return score


@njit_noalloc
def _pawn_entry(board: BoardArray, scratch: Int64Array, pawn_key: int) -> int:
    """Index in ``scratch`` of the pawn table entry of ``pawn_key``, filled on a miss.

    Pawn hash: the pawn structure changes far less often than the position, so its terms are
    computed once per structure.  Only terms of the pawns alone are kept; the king race of
    passed pawns is added per position by ``_king_race``.
    """
    entry = _PAWN_TABLE + (pawn_key & (PAWN_ENTRIES - 1)) * _PAWN_WORDS
    if scratch[entry + _P_KEY] != pawn_key:
        _pawn_files(board, scratch)
        _pawn_structure(scratch, entry)
        scratch[entry + _P_KEY] = pawn_key
    return entry


@njit_noalloc
def _pawn_files(board: BoardArray, scratch: Int64Array) -> None:
    """Pawns per file and the lowest and highest pawn rank per file, for each colour."""
    for i in range(16):
        scratch[_COUNT + i] = 0
        scratch[_MIN_RANK + i] = 8
        scratch[_MAX_RANK + i] = -1
    for i in range(64):
        piece = board[MAILBOX[i]]
        if piece <= 0 or (piece & 7) != PAWN:
            continue
        file = i & 7
        rank = i >> 3
        base = 8 * (piece >> 3) + file
        scratch[_COUNT + base] += 1
        if rank < scratch[_MIN_RANK + base]:
            scratch[_MIN_RANK + base] = rank
        if rank > scratch[_MAX_RANK + base]:
            scratch[_MAX_RANK + base] = rank


@njit_noalloc
def _pawn_structure(scratch: Int64Array, entry: int) -> None:
    """Doubled, isolated and passed pawns from ``_pawn_files``, into the pawn table entry."""
    mg = 0
    eg = 0
    files = 0
    for colour in range(2):
        sign = 1 if colour == WHITE else -1
        enemy = 1 - colour
        race = 0
        for file in range(8):
            count = scratch[_COUNT + 8 * colour + file]
            if count == 0:
                continue
            files |= 1 << (8 * colour + file)
            if count > 1:
                mg -= sign * params.DOUBLED_PAWN_MG * (count - 1)
                eg -= sign * params.DOUBLED_PAWN_EG * (count - 1)
            left = scratch[_COUNT + 8 * colour + file - 1] if file > 0 else 0
            right = scratch[_COUNT + 8 * colour + file + 1] if file < 7 else 0
            if left == 0 and right == 0:
                mg -= sign * params.ISOLATED_PAWN_MG * count
                eg -= sign * params.ISOLATED_PAWN_EG * count
            # Passed pawn: the most advanced pawn of the file, with no enemy pawn in front of it
            # on this or an adjacent file.
            if colour == WHITE:
                rank = scratch[_MAX_RANK + file]
                passed = True
                for f in range(max(0, file - 1), min(7, file + 1) + 1):
                    if scratch[_MAX_RANK + 8 * enemy + f] > rank:
                        passed = False
                relative = rank
            else:
                rank = scratch[_MIN_RANK + 8 + file]
                passed = True
                for f in range(max(0, file - 1), min(7, file + 1) + 1):
                    enemy_min = scratch[_MIN_RANK + f]
                    if enemy_min < 8 and enemy_min < rank:
                        passed = False
                relative = 7 - rank
            if passed:
                mg += sign * PASSED_MG[relative]
                eg += sign * PASSED_EG[relative]
                if relative >= params.PASSED_KING_MIN_RANK:
                    race |= (rank + 1) << (4 * file)
        scratch[entry + _P_RACE + colour] = race
    scratch[entry + _P_MG] = mg
    scratch[entry + _P_EG] = eg
    scratch[entry + _P_FILES] = files


@njit_noalloc
def _king_race(scratch: Int64Array, entry: int, white_king: int, black_king: int) -> int:
    """End game: the kings race for the square in front of each advanced passed pawn."""
    eg = 0
    for colour in range(2):
        sign = 1 if colour == WHITE else -1
        own = white_king if colour == WHITE else black_king
        enemy = black_king if colour == WHITE else white_king
        race = scratch[entry + _P_RACE + colour]
        for file in range(8):
            rank = ((race >> (4 * file)) & 15) - 1
            if rank < 0:
                continue
            relative = rank if colour == WHITE else 7 - rank
            stop = 21 + file + 10 * (rank + (1 if colour == WHITE else -1))
            near = (_distance(enemy, stop) * params.PASSED_ENEMY_KING_EG
                    - _distance(own, stop) * params.PASSED_OWN_KING_EG)
            eg += sign * near * (relative - params.PASSED_KING_MIN_RANK + 1)
    return eg


@njit_noalloc
def _distance(a: int, b: int) -> int:
    """King moves between two mailbox squares (Chebyshev distance)."""
    files = abs((a - 21) % 10 - (b - 21) % 10)
    ranks = abs((a - 21) // 10 - (b - 21) // 10)
    return max(files, ranks)


@njit_noalloc
def _div(a: int, b: int) -> int:
    """Division rounding towards zero, so a score and its mirror round alike."""
    return a // b if a >= 0 else -((-a) // b)


@njit_noalloc
def _shield(board: BoardArray, king: int, colour: int) -> int:
    """Bonus for own pawns one or two squares in front of a king on its first two ranks."""
    forward = 10 if colour == WHITE else -10
    rank = (king - 21) // 10
    relative_rank = rank if colour == WHITE else 7 - rank
    if relative_rank > 1:
        return 0
    own_pawn = PAWN | (colour << 3)
    total = 0
    for side in (-1, 0, 1):
        sq = king + forward + side
        if board[sq] < 0:
            continue
        if board[sq] == own_pawn:
            total += params.SHIELD_CLOSE
        elif board[sq + forward] == own_pawn:
            total += params.SHIELD_FAR
        else:
            total -= params.SHIELD_MISSING
    return total


@njit_noalloc_inline
def _scale_drawish(row: npt.NDArray[np.int32], score: int) -> int:
    """Shrink scores where the side ahead has no pawns and at most a minor piece more, and
    most of all where two knights face a bare king."""
    strong = WHITE if score > 0 else BLACK
    weak = 1 - strong
    if row[S_PAWN_MAT + strong] != 0:
        return score
    if row[S_NPM + strong] - row[S_NPM + weak] <= MINOR_NPM:
        return _div(score, params.DRAWISH_DIVISOR)
    if row[S_NPM + strong] == TWO_KNIGHTS_NPM and row[S_NPM + weak] == 0 \
            and row[S_PAWN_MAT + weak] == 0:
        return _div(score, params.TWO_KNIGHTS_DIVISOR)
    return score


@njit_noalloc_inline
def scale_drawish(stack: StackArray, ply: int, score: int) -> int:
    """``score`` (side to move's view, from another evaluation: the net's) shrunk by the rule
    ``evaluate`` applies to its own.  Pawnless endgames at most a minor piece up are too rare in
    self-play for a net to learn that they are drawn."""
    row = stack[ply]
    if row[S_SIDE] == WHITE:
        return _scale_drawish(row, score)
    return -_scale_drawish(row, -score)


@njit_noalloc
def material_eval(stack: StackArray, ply: int) -> int:
    """Tapered material + piece-square score from the accumulators alone, side to move's view.

    A cheap stand-in for ``evaluate`` when the position is so far outside the search window
    that the other terms cannot bring it back (lazy evaluation).
    """
    row = stack[ply]
    phase = min(int(row[S_PHASE]), PHASE_MAX)
    score = _div(int(row[S_MG]) * phase + int(row[S_EG]) * (PHASE_MAX - phase), PHASE_MAX)
    if row[S_VARIANT] != VARIANT_CHESS:
        score += variant_eval_white(stack, ply)
    return score + params.TEMPO if row[S_SIDE] == WHITE else -score + params.TEMPO


@njit_noalloc
def evaluate(board: BoardArray, stack: StackArray, ply: int, scratch: Int64Array) -> int:
    """The static score from the side to move's point of view."""
    score = evaluate_white(board, stack, ply, scratch)
    if stack[ply, S_VARIANT] != VARIANT_CHESS:
        score += variant_eval_white(stack, ply)
    return score if stack[ply, S_SIDE] == WHITE else -score
