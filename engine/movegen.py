"""Move generation and attack queries over the mailbox board (see ``engine.constants``).

All functions are compiled with numba and take the position arrays of ``engine.board``:

``is_square_attacked(board, sq, by) -> bool``
    Is mailbox square ``sq`` attacked by a piece of color ``by``?
``is_attacked(board, stack, ply, sq, by) -> bool``
    The same, by a walk over the pieces of ``by`` when it has few (an ending: long rays, few
    pieces), else by the rays.  The check and legality tests ask this one.
``in_check(board, stack, meta) -> bool``
    Is the side to move in check?  Cached in the state row (``S_CHECK``).
``gen_moves(board, stack, meta, moves) -> int``
    All pseudo-legal moves into ``moves`` (int32, at least ``MAX_MOVES`` long); returns the
    count.  Castling is generated only when it is legal apart from the final check test
    (rights, empty squares, king not in check and not passing through an attacked square).
``gen_captures(board, stack, meta, moves) -> int``
    Pseudo-legal captures (en passant included) and promotions (quiet ones too, all four
    pieces).
``gen_quiescence(board, stack, meta, moves) -> int``
    The moves of a quiescence search: ``gen_captures`` normally, every pseudo-legal move
    (all evasions) when the side to move is in check.
``is_legal(board, stack, meta, move) -> bool``
    Does a pseudo-legal move from the generators leave the own king safe?  Only king moves,
    en passant, castling, moves in check and moves of pieces on a line with their king need
    an attack test; every other move is legal at once.
``gen_legal(board, stack, meta, moves) -> int``
    The legal moves only (generate, then filter with ``is_legal``); none once a variant's rule
    has ended the game (``engine.variant``).

``in_check``, ``is_legal`` (and ``board.make_move``/``unmake_move``) are inlined into their
compiled callers by LLVM (``njit_noalloc_inline``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engine.constants import (
    BISHOP,
    BISHOP_STEPS,
    BLACK_RANK_SHIFT,
    C1,
    CASTLE_WK,
    D1,
    F1,
    FLAG_CAPTURE,
    FLAG_CASTLE,
    FLAG_DOUBLE,
    FLAG_EP,
    G1,
    KING,
    KING_STEPS,
    KNIGHT,
    KNIGHT_STEPS,
    LINE_STEP,
    M_PLY,
    M_ROOK,
    MOVE_PROMO_SHIFT,
    MOVE_SQ_MASK,
    MOVE_TO_SHIFT,
    PAWN,
    QUEEN,
    ROOK,
    ROOK_STEPS,
    S_CASTLE,
    S_CHECK,
    S_EP,
    S_KING,
    S_PINS,
    S_SIDE,
    S_VARIANT,
    VARIANT_CHESS,
    WHITE,
    BoardArray,
    MetaArray,
    MoveArray,
    StackArray,
)
from engine.jit import njit_noalloc, njit_noalloc_inline
from engine.params import SPARSE_ATTACK_MAX_PIECES
from engine.pieceset import lowest_square, piece_count_of, set_word
from engine.variant import RESULT_NONE, variant_result

_PROMOTION_PIECES = np.array([QUEEN, KNIGHT, ROOK, BISHOP], dtype=np.int64)


def _step_attackers() -> npt.NDArray[np.int64]:
    """``STEP_ATTACKERS[sq - s + 119]``: bit ``1 << KNIGHT`` when a knight on ``s`` attacks
    ``sq``, bit ``1 << KING`` when a king does."""
    table = np.zeros(239, dtype=np.int64)
    for step in KNIGHT_STEPS:
        table[int(step) + 119] |= 1 << KNIGHT
    for step in KING_STEPS:
        table[int(step) + 119] |= 1 << KING
    return table


STEP_ATTACKERS = _step_attackers()


@njit_noalloc_inline
def is_attacked_by_pawn(board: BoardArray, sq: int, by: int) -> bool:
    """Is ``sq`` attacked by a pawn of color ``by``?"""
    # a white pawn attacks up-left/up-right, so it stands 9 or 11 below the square
    if by == WHITE:
        return bool(board[sq - 9] == PAWN or board[sq - 11] == PAWN)
    return bool(board[sq + 9] == (PAWN | 8) or board[sq + 11] == (PAWN | 8))


@njit_noalloc
def is_square_attacked(board: BoardArray, sq: int, by: int) -> bool:
    """Is ``sq`` attacked by a piece of color ``by`` (the occupant of ``sq`` is ignored)?"""
    hi = by << 3
    if is_attacked_by_pawn(board, sq, by):
        return True
    knight = KNIGHT | hi
    for i in range(8):
        if board[sq + KNIGHT_STEPS[i]] == knight:
            return True
    king = KING | hi
    for i in range(8):
        if board[sq + KING_STEPS[i]] == king:
            return True
    bishop = BISHOP | hi
    rook = ROOK | hi
    queen = QUEEN | hi
    for i in range(4):
        step = BISHOP_STEPS[i]
        s = sq + step
        p = board[s]
        while p == 0:
            s += step
            p = board[s]
        if p == bishop or p == queen:  # noqa: SIM109 (fastest in numba)
            return True
    for i in range(4):
        step = ROOK_STEPS[i]
        s = sq + step
        p = board[s]
        while p == 0:
            s += step
            p = board[s]
        if p == rook or p == queen:  # noqa: SIM109
            return True
    return False


@njit_noalloc_inline
def _slides_along(ptype: int, step: int) -> bool:
    """Does a slider of ``ptype`` (bishop, rook or queen) move along a line of ``step``?"""
    if ptype == QUEEN:
        return True
    diagonal = step == 9 or step == -9 or step == 11 or step == -11
    return (ptype == BISHOP) == diagonal


@njit_noalloc
def _is_attacked_by_set(
    board: BoardArray, stack: StackArray, ply: int, sq: int, by: int
) -> bool:
    """``is_square_attacked`` by a walk over the pieces of ``by`` (row ``ply``'s set) instead
    of the rays from ``sq``: on a board with few pieces the rays are long and the pieces few.

    The board may differ from the set's row by a legality test's trial move (``is_legal``):
    a square whose piece was captured or moved away holds no piece of ``by`` and is passed
    over, and every line is walked on the board as it stands.
    """
    if is_attacked_by_pawn(board, sq, by):
        return True
    for word in range(2):
        bits = set_word(stack, ply, by, word)
        while bits != 0:
            s = lowest_square(bits, word)
            bits &= bits - 1
            p = board[s]
            if p <= 0 or (p >> 3) != by:
                continue
            ptype = p & 7
            if ptype == PAWN:
                continue
            delta = sq - s + 119
            if ptype == KNIGHT or ptype == KING:  # noqa: SIM109 (fastest in numba)
                if STEP_ATTACKERS[delta] & (1 << ptype):
                    return True
                continue
            step = LINE_STEP[delta]
            if step == 0 or not _slides_along(ptype, step):
                continue
            t = s + step
            while t != sq and board[t] == 0:
                t += step
            if t == sq:
                return True
    return False


@njit_noalloc_inline
def is_attacked(board: BoardArray, stack: StackArray, ply: int, sq: int, by: int) -> bool:
    """``is_square_attacked`` with the position's piece sets at hand: with few pieces of
    ``by`` on the board, their walk (``_is_attacked_by_set``) answers sooner than the rays."""
    if piece_count_of(stack, ply, by) <= SPARSE_ATTACK_MAX_PIECES:
        return _is_attacked_by_set(board, stack, ply, sq, by)
    return is_square_attacked(board, sq, by)


@njit_noalloc_inline
def castling_squares(frm: int, to: int, us: int) -> tuple[int, int]:
    """Where king and rook land when castling king ``frm`` with the rook on ``to``."""
    shift = BLACK_RANK_SHIFT * us
    if to > frm:
        return G1 + shift, F1 + shift
    return C1 + shift, D1 + shift


@njit_noalloc_inline
def place_castled(board: BoardArray, frm: int, to: int, kto: int, rto: int) -> None:
    """Castle on the board: king ``frm`` to ``kto``, rook ``to`` to ``rto``.

    Both pieces leave before either lands: in chess960 a landing square may be the other
    piece's start square.  ``place_castled(board, kto, rto, frm, to)`` takes the castling back.
    """
    king = board[frm]
    rook = board[to]
    board[frm] = 0
    board[to] = 0
    board[kto] = king
    board[rto] = rook


@njit_noalloc_inline
def in_check(board: BoardArray, stack: StackArray, meta: MetaArray) -> bool:
    """Is the side to move in check?  Computed once per position and cached in ``S_CHECK``."""
    ply = meta[M_PLY]
    cached = stack[ply, S_CHECK]
    if cached >= 0:
        return bool(cached == 1)
    us = stack[ply, S_SIDE]
    checked = is_attacked(board, stack, ply, stack[ply, S_KING + us], 1 - us)
    stack[ply, S_CHECK] = 1 if checked else 0
    return checked


@njit_noalloc
def _pinned_lines_by_set(
    board: BoardArray, stack: StackArray, ply: int, ksq: int, us: int
) -> int:
    """``_pinned_lines`` by a walk over the enemy's sliders (few pieces: an ending) instead of
    the eight rays from the king: a slider on a line with the king, one piece of ``us`` between."""
    them = 1 - us
    lines = 0
    for word in range(2):
        bits = set_word(stack, ply, them, word)
        while bits != 0:
            s = lowest_square(bits, word)
            bits &= bits - 1
            ptype = board[s] & 7
            if ptype != BISHOP and ptype != ROOK and ptype != QUEEN:
                continue
            step = LINE_STEP[s - ksq + 119]
            if step == 0 or not _slides_along(ptype, step):
                continue
            t = ksq + step
            while board[t] == 0:
                t += step
            p = board[t]
            if p <= 0 or (p >> 3) != us:
                continue  # the border, or the slider itself (a check, no pin)
            t += step
            while board[t] == 0:
                t += step
            if t == s:
                lines |= 1 << (step + 11)
    return lines


@njit_noalloc_inline
def _pinned_lines(board: BoardArray, stack: StackArray, meta: MetaArray) -> int:
    """King steps along which a piece of the side to move is pinned, as bits ``1 << (step + 11)``.

    Computed once per position and cached in ``S_PINS``: a move of a piece on a line without a
    pin can never expose the king, which spares most moves an attack test.
    """
    ply = meta[M_PLY]
    cached = stack[ply, S_PINS]
    if cached >= 0:
        return int(cached)
    us = stack[ply, S_SIDE]
    them = 1 - us
    ksq = stack[ply, S_KING + us]
    if piece_count_of(stack, ply, them) <= SPARSE_ATTACK_MAX_PIECES:
        lines = _pinned_lines_by_set(board, stack, ply, ksq, us)
        stack[ply, S_PINS] = lines
        return lines
    lines = 0
    for i in range(8):
        step = KING_STEPS[i]
        s = ksq + step
        p = board[s]
        while p == 0:
            s += step
            p = board[s]
        if p <= 0 or (p >> 3) != us:
            continue  # the border or an enemy piece: nothing of ours pinned on this line
        s += step
        p = board[s]
        while p == 0:
            s += step
            p = board[s]
        if p <= 0 or (p >> 3) != them:
            continue
        ptype = p & 7
        diagonal = step == 9 or step == -9 or step == 11 or step == -11
        if ptype == QUEEN or ptype == (BISHOP if diagonal else ROOK):
            lines |= 1 << (step + 11)
    stack[ply, S_PINS] = lines
    return lines


@njit_noalloc
def _add_pawn_moves(
    moves: MoveArray, n: int, frm: int, to: int, flags: int, last_rank: bool
) -> int:
    base = frm | (to << MOVE_TO_SHIFT) | flags
    if last_rank:
        for i in range(4):
            moves[n] = base | (_PROMOTION_PIECES[i] << MOVE_PROMO_SHIFT)
            n += 1
    else:
        moves[n] = base
        n += 1
    return n


@njit_noalloc
def _gen_castling(
    board: BoardArray, stack: StackArray, meta: MetaArray, moves: MoveArray, n: int
) -> int:
    """Castling moves of the side to move, chess960 rules (the standard game is a special case)."""
    ply = meta[M_PLY]
    us = stack[ply, S_SIDE]
    rights = stack[ply, S_CASTLE]
    them = 1 - us
    ksq = stack[ply, S_KING + us]
    for side in range(2):  # 0: king side (towards h), 1: queen side (towards a)
        right = 2 * us + side
        if not rights & (CASTLE_WK << right):
            continue
        rsq = meta[M_ROOK + right]
        kto, rto = castling_squares(ksq, rsq, us)
        # every square the king or the rook crosses or lands on must be empty, except that the
        # king and the castling rook themselves may stand there (chess960 overlaps)
        lo = min(ksq, kto, rsq, rto)
        hi = max(ksq, kto, rsq, rto)
        blocked = False
        for s in range(lo, hi + 1):
            if s != ksq and s != rsq and board[s] != 0:
                blocked = True
                break
        if blocked:
            continue
        # the king may not start in, or pass through, check; the landing square is tested
        # by is_legal once the rook has moved too
        king = board[ksq]
        board[ksq] = 0
        safe = True
        step = 1 if kto > ksq else -1
        s = ksq
        while s != kto:
            if is_square_attacked(board, s, them):
                safe = False
                break
            s += step
        board[ksq] = king
        if safe:
            moves[n] = ksq | (rsq << MOVE_TO_SHIFT) | FLAG_CASTLE
            n += 1
    return n


@njit_noalloc
def _gen(
    board: BoardArray, stack: StackArray, meta: MetaArray, moves: MoveArray, quiets: bool
) -> int:
    ply = meta[M_PLY]
    us = stack[ply, S_SIDE]
    ep = stack[ply, S_EP]
    n = 0
    for word in range(2):
        # Piece set walk: only the mover's squares, in ascending order like a board scan.
        bits = set_word(stack, ply, us, word)
        while bits != 0:
            frm = lowest_square(bits, word)
            bits &= bits - 1
            n = _gen_piece(board, moves, n, frm, us, ep, quiets)
    if quiets and stack[ply, S_CASTLE] != 0 and not in_check(board, stack, meta):
        n = _gen_castling(board, stack, meta, moves, n)
    return n


@njit_noalloc_inline
def _gen_piece(
    board: BoardArray, moves: MoveArray, n: int, frm: int, us: int, ep: int, quiets: bool
) -> int:
    """The pseudo-legal moves of the piece of ``us`` on ``frm``, appended from ``n``."""
    fwd = 10 if us == WHITE else -10
    # pawns on these mailbox ranges stand on their start rank / are about to promote
    start_lo = 31 if us == WHITE else 81
    promo_lo = 81 if us == WHITE else 31
    piece = board[frm]
    ptype = piece & 7
    if ptype == PAWN:
        to = frm + fwd
        last = promo_lo <= frm <= promo_lo + 7
        if board[to] == 0:
            if last:
                n = _add_pawn_moves(moves, n, frm, to, 0, True)
            elif quiets:
                moves[n] = frm | (to << MOVE_TO_SHIFT)
                n += 1
                if start_lo <= frm <= start_lo + 7 and board[to + fwd] == 0:
                    moves[n] = frm | ((to + fwd) << MOVE_TO_SHIFT) | FLAG_DOUBLE
                    n += 1
        for side in (-1, 1):
            cap = to + side
            target = board[cap]
            if target > 0 and (target >> 3) != us:
                n = _add_pawn_moves(moves, n, frm, cap, FLAG_CAPTURE, last)
            elif cap == ep and ep != 0:
                moves[n] = frm | (cap << MOVE_TO_SHIFT) | FLAG_CAPTURE | FLAG_EP
                n += 1
    elif ptype == KNIGHT or ptype == KING:  # noqa: SIM109
        steps = KNIGHT_STEPS if ptype == KNIGHT else KING_STEPS
        for i in range(8):
            to = frm + steps[i]
            target = board[to]
            if target == 0:
                if quiets:
                    moves[n] = frm | (to << MOVE_TO_SHIFT)
                    n += 1
            elif target > 0 and (target >> 3) != us:
                moves[n] = frm | (to << MOVE_TO_SHIFT) | FLAG_CAPTURE
                n += 1
    else:
        first = 4 if ptype == ROOK else 0
        last_dir = 4 if ptype == BISHOP else 8
        for d in range(first, last_dir):
            step = BISHOP_STEPS[d] if d < 4 else ROOK_STEPS[d - 4]
            to = frm + step
            target = board[to]
            while target == 0:
                if quiets:
                    moves[n] = frm | (to << MOVE_TO_SHIFT)
                    n += 1
                to += step
                target = board[to]
            if target > 0 and (target >> 3) != us:
                moves[n] = frm | (to << MOVE_TO_SHIFT) | FLAG_CAPTURE
                n += 1
    return n


@njit_noalloc
def gen_moves(board: BoardArray, stack: StackArray, meta: MetaArray, moves: MoveArray) -> int:
    """All pseudo-legal moves of the side to move into ``moves``; returns how many."""
    return _gen(board, stack, meta, moves, True)


@njit_noalloc
def gen_captures(board: BoardArray, stack: StackArray, meta: MetaArray, moves: MoveArray) -> int:
    """Pseudo-legal captures (with en passant) and promotions; returns how many."""
    return _gen(board, stack, meta, moves, False)


@njit_noalloc
def gen_quiescence(board: BoardArray, stack: StackArray, meta: MetaArray, moves: MoveArray) -> int:
    """Captures and promotions, or every move when in check (the evasions); returns how many."""
    return _gen(board, stack, meta, moves, in_check(board, stack, meta))


@njit_noalloc_inline
def _exposes_king(board: BoardArray, ksq: int, step: int, them: int) -> bool:
    """Does the first piece from ``ksq`` along ``step`` give check along that line?"""
    s = ksq + step
    p = board[s]
    while p == 0:
        s += step
        p = board[s]
    if p <= 0 or (p >> 3) != them:
        return False
    ptype = p & 7
    if ptype == QUEEN:
        return True
    diagonal = step == 9 or step == -9 or step == 11 or step == -11
    return bool(ptype == (BISHOP if diagonal else ROOK))


@njit_noalloc_inline
def is_legal(board: BoardArray, stack: StackArray, meta: MetaArray, move: int) -> bool:
    """Does the pseudo-legal ``move`` leave the mover's king out of check?"""
    ply = meta[M_PLY]
    us = stack[ply, S_SIDE]
    them = 1 - us
    ksq = stack[ply, S_KING + us]
    frm = move & MOVE_SQ_MASK
    to = (move >> MOVE_TO_SHIFT) & MOVE_SQ_MASK
    if move & FLAG_CASTLE:
        # put king and rook on their castled squares, test the king, put them back
        kto, rto = castling_squares(frm, to, us)
        place_castled(board, frm, to, kto, rto)
        attacked = is_attacked(board, stack, ply, kto, them)
        place_castled(board, kto, rto, frm, to)
        return not attacked
    if frm == ksq:
        king = board[frm]
        board[frm] = 0  # the king does not shield the squares behind it
        attacked = is_attacked(board, stack, ply, to, them)
        board[frm] = king
        return not attacked
    if move & FLAG_EP:
        fwd = 10 if us == WHITE else -10
        cap = to - fwd
        pawn = board[frm]
        victim = board[cap]
        board[frm] = 0
        board[cap] = 0
        board[to] = pawn
        attacked = is_attacked(board, stack, ply, ksq, them)
        board[to] = 0
        board[cap] = victim
        board[frm] = pawn
        return not attacked
    if in_check(board, stack, meta):
        piece = board[frm]
        target = board[to]
        board[to] = piece
        board[frm] = 0
        attacked = is_attacked(board, stack, ply, ksq, them)
        board[frm] = piece
        board[to] = target
        return not attacked
    # not in check: only a piece pinned to its king can expose it, along the line king -> piece
    step = LINE_STEP[frm - ksq + 119]
    if step == 0 or not _pinned_lines(board, stack, meta) & (1 << (step + 11)):
        return True
    s = ksq + step
    while board[s] == 0:
        s += step
    if s != frm:
        return True  # another piece (or the border) comes first: no pin through frm
    piece = board[frm]
    target = board[to]
    board[to] = piece
    board[frm] = 0
    exposed = _exposes_king(board, ksq, step, them)
    board[frm] = piece
    board[to] = target
    return not exposed


@njit_noalloc
def gen_legal(board: BoardArray, stack: StackArray, meta: MetaArray, moves: MoveArray) -> int:
    """The legal moves of the side to move into ``moves``; returns how many.

    None once a variant's own rule has ended the game (as python-chess's variant boards).
    """
    row = meta[M_PLY]
    if stack[row, S_VARIANT] != VARIANT_CHESS and variant_result(stack, row) != RESULT_NONE:
        return 0
    n = gen_moves(board, stack, meta, moves)
    k = 0
    for i in range(n):
        m = moves[i]
        if is_legal(board, stack, meta, m):
            moves[k] = m
            k += 1
    return k
