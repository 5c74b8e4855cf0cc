"""The position: numpy arrays, make/unmake, Polyglot Zobrist keys, FEN and UCI move text.

Encodings (full tables in ``engine.constants``): squares are 10x12 mailbox indices
(a1 = 21, h8 = 98); pieces are int8 ``type | color << 3`` (white 1-6, black 9-14, pawn..king);
a move is one int: ``from | to << 7 | promotion_type << 14 | flags`` with ``FLAG_CAPTURE``,
``FLAG_EP``, ``FLAG_CASTLE`` (to = the castling rook's square) and ``FLAG_DOUBLE``.

A position is four arrays, passed together to every compiled function
(``board, stack, keys, meta``):

``board``  int8[120]
    The 10x12 mailbox: a piece code on every square, ``OFFBOARD`` on the border.
``stack``  int32[STACK_SIZE, STACK_FIELDS]
    One row per ply: side to move, castling rights, en passant square, halfmove clock,
    full-move number, the move that led there and the piece it captured, both king squares,
    the incrementally updated evaluation terms (``S_MG``/``S_EG``: PeSTO material +
    piece-square sums, white minus black; ``S_PHASE``; non-pawn and pawn material per side),
    each side's occupied squares (``S_OCC``, see ``engine.pieceset``), the variant and the
    checks each side has given (``S_VARIANT``, ``S_CHECKS``: see ``engine.variant``) and cached
    in-check and pinned-lines flags.  Field indices are the ``S_*`` constants.
    Making a move copies the current row to the next and updates it; unmaking only restores
    the board and steps back, so the rows below the current one are the game and search
    history.
``keys``   uint64[STACK_SIZE]
    ``keys[ply]`` is the Polyglot Zobrist key of the position at that ply (equal to
    ``chess.polyglot.zobrist_hash`` in chess; a variant and its check counts add keys of their
    own).  Rows ``ply - stack[ply, S_HALFMOVE] .. ply`` are the
    positions a repetition can come from.
``meta``   int32[META_SIZE]
    ``meta[M_PLY]`` is the current ply (row of ``stack`` and ``keys``); ``meta[M_CHESS960]``
    the chess960 flag (UCI castling text and FEN letters); ``meta[M_ROOK + i]`` the start
    square of the rook of castling right ``i``; ``meta[M_CMASK + sq]`` the castling rights that
    survive a move from or to ``sq``.

Compiled API (numba, for the search; moves come from ``engine.movegen``; all of these run
without numba's reference counting, see ``engine.jit``):

``make_move(board, stack, keys, meta, move) -> None``
    Play a pseudo-legal move (check ``movegen.is_legal`` first: this does not).  There is no
    bounds check: a search may go ``SEARCH_HEADROOM - 1`` plies deep from a ``Position``.
``unmake_move(board, stack, meta) -> None``
    Take back the last move made with ``make_move``.
``make_null(board, stack, keys, meta) -> None`` / ``unmake_null(stack, meta) -> None``
    Pass the turn (null-move pruning); never while in check.
``compute_key(board, stack, meta) -> uint64``
    The Polyglot key from scratch (a check on the incremental one).
``is_repetition(stack, keys, meta, root_row) -> bool``
    A draw by repetition (once inside the search path from ``root_row``, twice before it)?
``is_dead_position(board, stack, ply) -> bool``
    Can no sequence of legal moves end in checkmate?
``state_is_consistent(board, stack, keys, meta) -> bool``
    Do the incremental key and evaluation terms equal a computation from scratch (tests)?

``Position`` wraps the arrays for Python callers (FEN, UCI move text, tests, the UCI loop);
its methods are not for the search's inner loop.  ``FenError`` (a ``ValueError``) says what is
wrong with a malformed FEN.
"""

from __future__ import annotations

import numpy as np

from engine.constants import (
    BISHOP,
    BLACK,
    BOARD_SIZE,
    CARRIED_FIELDS,
    CASTLE_ALL,
    CASTLE_BK,
    CASTLE_BQ,
    CASTLE_WK,
    CASTLE_WQ,
    EMPTY,
    FLAG_CAPTURE,
    FLAG_CASTLE,
    FLAG_DOUBLE,
    FLAG_EP,
    KING,
    KNIGHT,
    M_CHESS960,
    M_CMASK,
    M_PLY,
    M_ROOK,
    MAX_MOVES,
    META_SIZE,
    MOVE_PROMO_MASK,
    MOVE_PROMO_SHIFT,
    MOVE_SQ_MASK,
    MOVE_TO_SHIFT,
    NULL_MOVE,
    OFFBOARD,
    PAWN,
    PIECE_CHARS,
    PIECE_CODES,
    ROOK,
    S_ACC,
    S_CAPTURED,
    S_CASTLE,
    S_CHECK,
    S_CHECKS,
    S_EG,
    S_EP,
    S_FULLMOVE,
    S_HALFMOVE,
    S_KING,
    S_MG,
    S_MOVE,
    S_NPM,
    S_OCC,
    S_PAWN_MAT,
    S_PHASE,
    S_PINS,
    S_SIDE,
    S_VARIANT,
    SEARCH_HEADROOM,
    SQ64,
    STACK_FIELDS,
    STACK_SIZE,
    VARIANT_CHESS,
    VARIANT_COUNT,
    VARIANT_THREE_CHECK,
    WHITE,
    BoardArray,
    KeyArray,
    MetaArray,
    StackArray,
    parse_square,
    square,
    square_name,
)
from engine.jit import njit_noalloc, njit_noalloc_inline, uncompiled
from engine.movegen import (
    castling_squares,
    gen_legal,
    in_check,
    is_square_attacked,
    place_castled,
)
from engine.pieceset import (
    add_square,
    lowest_square,
    remove_square,
    set_word,
    set_words,
    sets_match_board,
)
from engine.psqt import MATERIAL_BY_CODE, PHASE_BY_CODE, PST_EG, PST_MG
from engine.variant import THREE_CHECK_WIN
from engine.zobrist import CASTLE_OFFSET, EP_OFFSET, POLYGLOT_RANDOM, TURN_OFFSET

MAX_PIECES_PER_SIDE = 16
MAX_PAWNS_PER_SIDE = 8
_BISHOP_NPM = int(MATERIAL_BY_CODE[BISHOP])
_LONE_MINOR_NPM = max(int(MATERIAL_BY_CODE[KNIGHT]), _BISHOP_NPM)  # at most one minor piece

STARTPOS_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


class FenError(ValueError):
    """A FEN string that does not describe a playable position; the message says why."""


# --- Zobrist tables on mailbox squares --------------------------------------------------------


def _zobrist_tables() -> tuple[KeyArray, KeyArray, KeyArray, KeyArray]:
    piece_sq = np.zeros((PIECE_CODES, BOARD_SIZE), dtype=np.uint64)
    for code in range(PIECE_CODES):
        ptype = code & 7
        if not PAWN <= ptype <= KING:
            continue
        kind = 2 * (ptype - 1) + (1 if code >> 3 == WHITE else 0)
        for sq in range(BOARD_SIZE):
            if SQ64[sq] >= 0:
                piece_sq[code, sq] = POLYGLOT_RANDOM[64 * kind + SQ64[sq]]
    castle = np.zeros(CASTLE_ALL + 1, dtype=np.uint64)
    for rights in range(CASTLE_ALL + 1):
        for i in range(4):
            if rights & (1 << i):
                castle[rights] ^= POLYGLOT_RANDOM[CASTLE_OFFSET + i]
    ep = np.zeros(BOARD_SIZE, dtype=np.uint64)
    for sq in range(BOARD_SIZE):
        if SQ64[sq] >= 0:
            ep[sq] = POLYGLOT_RANDOM[EP_OFFSET + (SQ64[sq] & 7)]
    turn = np.array([POLYGLOT_RANDOM[TURN_OFFSET]], dtype=np.uint64)
    return piece_sq, castle, ep, turn


Z_PIECE, Z_CASTLE, Z_EP, Z_TURN = _zobrist_tables()

CHECK_COUNTS = THREE_CHECK_WIN + 1  # checks given: the last ends a three-check game


def _variant_zobrist_tables() -> tuple[KeyArray, KeyArray]:
    """Keys of a variant and of the checks given: 0 for chess and for no checks, so a chess
    position's key stays its Polyglot key; fixed random numbers otherwise."""
    numbers = np.random.default_rng(0x3C4EC7).integers(
        1, 2**64 - 1, size=VARIANT_COUNT + 2 * CHECK_COUNTS, dtype=np.uint64, endpoint=True
    )
    variant = numbers[:VARIANT_COUNT].copy()
    variant[VARIANT_CHESS] = 0
    checks = numbers[VARIANT_COUNT:].reshape(2, CHECK_COUNTS).copy()
    checks[:, 0] = 0
    return variant, checks


Z_VARIANT, Z_CHECKS = _variant_zobrist_tables()


# --- compiled make / unmake ---------------------------------------------------------------------


@njit_noalloc
def _ep_capturable(board: BoardArray, to: int, them: int) -> bool:
    """After a double push to ``to``: does a pawn of ``them`` stand beside it?"""
    enemy_pawn = PAWN | (them << 3)
    return bool(board[to - 1] == enemy_pawn or board[to + 1] == enemy_pawn)


@njit_noalloc_inline
def make_move(
    board: BoardArray, stack: StackArray, keys: KeyArray, meta: MetaArray, move: int
) -> None:
    """Play a pseudo-legal ``move``: update the board, push a state row and the new key."""
    ply = meta[M_PLY]
    nxt = ply + 1
    for f in range(CARRIED_FIELDS):
        stack[nxt, f] = stack[ply, f]
    us = stack[ply, S_SIDE]
    them = 1 - us
    key = keys[ply] ^ Z_TURN[0]
    old_ep = stack[ply, S_EP]
    if old_ep != 0:
        key ^= Z_EP[old_ep]
    stack[nxt, S_EP] = 0
    frm = move & MOVE_SQ_MASK
    to = (move >> MOVE_TO_SHIFT) & MOVE_SQ_MASK
    mg = stack[ply, S_MG]
    eg = stack[ply, S_EG]
    captured = EMPTY
    halfmove = stack[ply, S_HALFMOVE] + 1
    if move & FLAG_CASTLE:
        kto, rto = castling_squares(frm, to, us)
        place_castled(board, frm, to, kto, rto)
        king = board[kto]
        rook = board[rto]
        # out first, then in: in chess960 a landing square may be the other piece's start
        remove_square(stack, nxt, us, frm)
        remove_square(stack, nxt, us, to)
        add_square(stack, nxt, us, kto)
        add_square(stack, nxt, us, rto)
        key ^= Z_PIECE[king, frm] ^ Z_PIECE[king, kto] ^ Z_PIECE[rook, to] ^ Z_PIECE[rook, rto]
        mg += PST_MG[king, kto] - PST_MG[king, frm] + PST_MG[rook, rto] - PST_MG[rook, to]
        eg += PST_EG[king, kto] - PST_EG[king, frm] + PST_EG[rook, rto] - PST_EG[rook, to]
        stack[nxt, S_KING + us] = kto
    else:
        piece = board[frm]
        if move & FLAG_CAPTURE:
            cap_sq = to
            if move & FLAG_EP:
                cap_sq = to - 10 if us == WHITE else to + 10
            captured = board[cap_sq]
            board[cap_sq] = 0
            remove_square(stack, nxt, them, cap_sq)
            key ^= Z_PIECE[captured, cap_sq]
            mg -= PST_MG[captured, cap_sq]
            eg -= PST_EG[captured, cap_sq]
            if (captured & 7) == PAWN:
                stack[nxt, S_PAWN_MAT + them] -= MATERIAL_BY_CODE[captured]
            else:
                stack[nxt, S_NPM + them] -= MATERIAL_BY_CODE[captured]
                stack[nxt, S_PHASE] -= PHASE_BY_CODE[captured]
            halfmove = 0
        board[frm] = 0
        remove_square(stack, nxt, us, frm)
        add_square(stack, nxt, us, to)
        key ^= Z_PIECE[piece, frm]
        mg -= PST_MG[piece, frm]
        eg -= PST_EG[piece, frm]
        placed = piece
        promo = (move >> MOVE_PROMO_SHIFT) & MOVE_PROMO_MASK
        if promo != 0:
            placed = promo | (us << 3)
            stack[nxt, S_PAWN_MAT + us] -= MATERIAL_BY_CODE[piece]
            stack[nxt, S_NPM + us] += MATERIAL_BY_CODE[placed]
            stack[nxt, S_PHASE] += PHASE_BY_CODE[placed]
        board[to] = placed
        key ^= Z_PIECE[placed, to]
        mg += PST_MG[placed, to]
        eg += PST_EG[placed, to]
        ptype = piece & 7
        if ptype == PAWN:
            halfmove = 0
            if move & FLAG_DOUBLE and _ep_capturable(board, to, them):
                ep = (frm + to) >> 1
                stack[nxt, S_EP] = ep
                key ^= Z_EP[ep]
        elif ptype == KING:
            stack[nxt, S_KING + us] = to
    rights = stack[ply, S_CASTLE]
    if rights != 0:
        new_rights = rights & meta[M_CMASK + frm] & meta[M_CMASK + to]
        if new_rights != rights:
            key ^= Z_CASTLE[rights] ^ Z_CASTLE[new_rights]
            stack[nxt, S_CASTLE] = new_rights
    stack[nxt, S_SIDE] = them
    stack[nxt, S_HALFMOVE] = halfmove
    stack[nxt, S_FULLMOVE] = stack[ply, S_FULLMOVE] + us  # grows after black's move
    stack[nxt, S_MOVE] = move
    stack[nxt, S_CAPTURED] = captured
    stack[nxt, S_MG] = mg
    stack[nxt, S_EG] = eg
    stack[nxt, S_PINS] = -1
    stack[nxt, S_CHECK] = -1
    stack[nxt, S_ACC] = 0
    if stack[ply, S_VARIANT] == VARIANT_THREE_CHECK:
        # Three-check: a check is counted (and keyed) as it is given.
        gives_check = is_square_attacked(board, stack[nxt, S_KING + them], us)
        stack[nxt, S_CHECK] = int(gives_check)
        if gives_check:
            given = stack[ply, S_CHECKS + us]
            key ^= Z_CHECKS[us, given] ^ Z_CHECKS[us, given + 1]
            stack[nxt, S_CHECKS + us] = given + 1
    keys[nxt] = key
    meta[M_PLY] = nxt


@njit_noalloc_inline
def unmake_move(board: BoardArray, stack: StackArray, meta: MetaArray) -> None:
    """Take back the move that led to the current row (made with ``make_move``)."""
    ply = meta[M_PLY]
    move = stack[ply, S_MOVE]
    captured = stack[ply, S_CAPTURED]
    us = stack[ply - 1, S_SIDE]
    frm = move & MOVE_SQ_MASK
    to = (move >> MOVE_TO_SHIFT) & MOVE_SQ_MASK
    if move & FLAG_CASTLE:
        kto, rto = castling_squares(frm, to, us)
        place_castled(board, kto, rto, frm, to)
    else:
        piece = board[to]
        if (move >> MOVE_PROMO_SHIFT) & MOVE_PROMO_MASK:
            piece = PAWN | (us << 3)
        board[frm] = piece
        board[to] = 0
        if move & FLAG_EP:
            board[to - 10 if us == WHITE else to + 10] = captured
        elif captured != EMPTY:
            board[to] = captured
    meta[M_PLY] = ply - 1


@njit_noalloc
def make_null(board: BoardArray, stack: StackArray, keys: KeyArray, meta: MetaArray) -> None:
    """Pass the turn: the side to move changes, nothing moves, en passant expires."""
    ply = meta[M_PLY]
    nxt = ply + 1
    for f in range(STACK_FIELDS):
        stack[nxt, f] = stack[ply, f]
    key = keys[ply] ^ Z_TURN[0]
    old_ep = stack[ply, S_EP]
    if old_ep != 0:
        key ^= Z_EP[old_ep]
        stack[nxt, S_EP] = 0
    us = stack[ply, S_SIDE]
    stack[nxt, S_SIDE] = 1 - us
    stack[nxt, S_HALFMOVE] = stack[ply, S_HALFMOVE] + 1
    stack[nxt, S_FULLMOVE] += us
    stack[nxt, S_MOVE] = NULL_MOVE
    stack[nxt, S_CAPTURED] = EMPTY
    stack[nxt, S_PINS] = -1
    stack[nxt, S_CHECK] = -1
    stack[nxt, S_ACC] = 0
    keys[nxt] = key
    meta[M_PLY] = nxt


@njit_noalloc
def unmake_null(stack: StackArray, meta: MetaArray) -> None:
    """Take back ``make_null``."""
    meta[M_PLY] -= 1


@njit_noalloc
def compute_key(board: BoardArray, stack: StackArray, meta: MetaArray) -> np.uint64:
    """The Polyglot key of the current position, computed from scratch."""
    ply = meta[M_PLY]
    key = np.uint64(0)
    for sq in range(21, 99):
        p = board[sq]
        if p > 0:
            key ^= Z_PIECE[p, sq]
    key ^= Z_CASTLE[stack[ply, S_CASTLE]]
    if stack[ply, S_EP] != 0:
        key ^= Z_EP[stack[ply, S_EP]]
    if stack[ply, S_SIDE] == WHITE:
        key ^= Z_TURN[0]
    key ^= Z_VARIANT[stack[ply, S_VARIANT]]
    key ^= Z_CHECKS[WHITE, stack[ply, S_CHECKS + WHITE]]
    key ^= Z_CHECKS[BLACK, stack[ply, S_CHECKS + BLACK]]
    return np.uint64(key)


@njit_noalloc
def state_is_consistent(
    board: BoardArray, stack: StackArray, keys: KeyArray, meta: MetaArray
) -> bool:
    """Do the incremental key, eval terms, king squares and piece sets equal a fresh computation?"""
    ply = meta[M_PLY]
    if keys[ply] != compute_key(board, stack, meta):
        return False
    mg = 0
    eg = 0
    phase = 0
    npm_w = 0
    npm_b = 0
    pawns_w = 0
    pawns_b = 0
    for sq in range(21, 99):
        p = board[sq]
        if p <= 0:
            continue
        mg += PST_MG[p, sq]
        eg += PST_EG[p, sq]
        phase += PHASE_BY_CODE[p]
        if p == PAWN:
            pawns_w += MATERIAL_BY_CODE[p]
        elif p == (PAWN | 8):
            pawns_b += MATERIAL_BY_CODE[p]
        elif p < 8:
            npm_w += MATERIAL_BY_CODE[p]
        else:
            npm_b += MATERIAL_BY_CODE[p]
        if (p & 7) == KING and stack[ply, S_KING + (p >> 3)] != sq:
            return False
    return bool(
        sets_match_board(board, stack, ply)
        and stack[ply, S_MG] == mg
        and stack[ply, S_EG] == eg
        and stack[ply, S_PHASE] == phase
        and stack[ply, S_NPM + WHITE] == npm_w
        and stack[ply, S_NPM + BLACK] == npm_b
        and stack[ply, S_PAWN_MAT + WHITE] == pawns_w
        and stack[ply, S_PAWN_MAT + BLACK] == pawns_b
    )


@njit_noalloc_inline
def is_repetition(stack: StackArray, keys: KeyArray, meta: MetaArray, root_row: int) -> bool:
    """Is the current position a draw by repetition?  The one repetition rule of the engine.

    Earlier positions with the same side to move are compared back to the last capture or pawn
    move.  One occurrence at or after row ``root_row`` (inside a search path: the side that
    could avoid the repetition would have) is enough; before it the position must have occurred
    twice (with this one, a threefold repetition).  ``root_row = 0``: any earlier occurrence.
    The scan stops at a null move: a position "repeated" across a pass is not a repetition.
    """
    ply = meta[M_PLY]
    key = keys[ply]
    oldest = max(ply - stack[ply, S_HALFMOVE], 0)
    seen = 0
    p = ply
    while p - 2 >= oldest:
        if stack[p, S_MOVE] == NULL_MOVE or stack[p - 1, S_MOVE] == NULL_MOVE:
            return False
        p -= 2
        if p <= ply - 4 and keys[p] == key:
            if p >= root_row:
                return True
            seen += 1
            if seen >= 2:
                return True
    return False


@njit_noalloc
def is_dead_position(board: BoardArray, stack: StackArray, ply: int) -> bool:
    """Can no sequence of legal moves end in checkmate (a dead position, a draw at once)?

    Only with no pawns and nothing but bishops all on squares of one colour beside the kings:
    K v K, KB v K, KN v K, and bishops of one colour.  KN v KN, KB v KN and KB v KB on
    opposite colours can still be mated, so they are played out (the evaluation calls them
    drawish).
    """
    if stack[ply, S_PAWN_MAT + WHITE] != 0 or stack[ply, S_PAWN_MAT + BLACK] != 0:
        return False
    npm_white = stack[ply, S_NPM + WHITE]
    npm_black = stack[ply, S_NPM + BLACK]
    if npm_white + npm_black <= _LONE_MINOR_NPM:
        return True
    if npm_white % _BISHOP_NPM != 0 or npm_black % _BISHOP_NPM != 0:
        return False  # something other than bishops is on the board
    colours = 0
    for color in range(2):
        for word in range(2):
            bits = set_word(stack, ply, color, word)
            while bits != 0:
                sq = lowest_square(bits, word)
                bits &= bits - 1
                ptype = board[sq] & 7
                if ptype == KING:
                    continue
                if ptype != BISHOP:
                    return False
                s64 = SQ64[sq]
                colours |= 1 << (((s64 >> 3) + (s64 & 7)) & 1)
    return colours != 3


# --- FEN parsing (plain Python: runs once per position) ------------------------------------


def _parse_placement(field: str, board: BoardArray) -> None:
    ranks = field.split("/")
    if len(ranks) != 8:
        raise FenError(f"piece placement {field!r} has {len(ranks)} ranks, expected 8")
    for i, text in enumerate(ranks):
        rank = 7 - i
        file = 0
        previous_digit = False
        for ch in text:
            if ch.isdigit():
                if previous_digit or ch in "09":
                    raise FenError(f"rank {rank + 1} ({text!r}) has a bad empty-square count")
                file += int(ch)
                previous_digit = True
                continue
            previous_digit = False
            code = PIECE_CHARS.find(ch)
            if code <= 0 or ch == ".":
                raise FenError(f"rank {rank + 1} ({text!r}) has an unknown piece letter {ch!r}")
            if file >= 8:
                raise FenError(f"rank {rank + 1} ({text!r}) has more than 8 squares")
            board[square(file, rank)] = code
            file += 1
        if file != 8:
            raise FenError(f"rank {rank + 1} ({text!r}) has {file} squares, expected 8")


def _parse_castling(
    field: str, board: BoardArray, kings: tuple[int, int]
) -> tuple[int, list[int], bool]:
    """Castling rights, the rook square of each right, and whether the set-up is chess960.

    ``K``/``Q`` name the outermost rook on that side of the king (X-FEN), ``A``-``H`` a rook
    by its file (Shredder-FEN); lower case for black.
    """
    rights = 0
    rooks = [0, 0, 0, 0]
    chess960 = False
    if field == "-":
        return rights, rooks, chess960
    for ch in field:
        color = WHITE if ch.isupper() else BLACK
        upper = ch.upper()
        if upper not in "KQABCDEFGH":
            raise FenError(f"castling field {field!r} has an unknown letter {ch!r}")
        back_rank = 0 if color == WHITE else 7
        ksq = kings[color]
        side_name = "white" if color == WHITE else "black"
        if (ksq - 21) // 10 != back_rank:
            raise FenError(f"castling right {ch!r}: the {side_name} king is not on its back rank")
        kfile = (ksq - 21) % 10
        rook = ROOK | (color << 3)
        if upper in "KQ":
            files = range(7, kfile, -1) if upper == "K" else range(0, kfile)
            rook_file = next((f for f in files if board[square(f, back_rank)] == rook), -1)
            if rook_file < 0:
                wing = "king" if upper == "K" else "queen"
                raise FenError(f"castling right {ch!r}: no {side_name} rook on the {wing} side")
        else:
            rook_file = "ABCDEFGH".index(upper)
            if board[square(rook_file, back_rank)] != rook:
                raise FenError(f"castling right {ch!r}: no {side_name} rook on that file")
            if rook_file == kfile:
                raise FenError(f"castling right {ch!r}: the rook file is the king's file")
        side = 0 if rook_file > kfile else 1
        right = 2 * color + side
        if rights & (1 << right):
            raise FenError(f"castling field {field!r} gives the same right twice")
        rights |= 1 << right
        rooks[right] = square(rook_file, back_rank)
        if kfile != 4 or rook_file not in (0, 7):
            chess960 = True
    return rights, rooks, chess960


def _check_piece_counts(board: BoardArray) -> None:
    """At most 16 pieces and 8 pawns a side, as in any game (python-chess ``Board.status()``).

    This also bounds the number of pseudo-legal moves (``MAX_MOVES``).
    """
    for color, name in ((WHITE, "white"), (BLACK, "black")):
        codes = [int(p) for p in board if p > 0 and p >> 3 == color]
        if len(codes) > MAX_PIECES_PER_SIDE:
            raise FenError(
                f"{name} has {len(codes)} pieces, at most {MAX_PIECES_PER_SIDE} are possible"
            )
        pawns = sum(1 for p in codes if p & 7 == PAWN)
        if pawns > MAX_PAWNS_PER_SIDE:
            raise FenError(f"{name} has {pawns} pawns, at most {MAX_PAWNS_PER_SIDE} are possible")


def _split_check_field(
    fields: list[str], fen: str, variant: int
) -> tuple[list[str], tuple[int, int]]:
    """The FEN's fields without its three-check field, and the checks given (white, black).

    Two spellings, the two python-chess reads: the checks still to give (``3+3``) after the en
    passant field, as python-chess and Fairy-Stockfish write them, or Lichess's checks given
    (``+0+0``) after the full-move number.  No field: no checks given yet.
    """
    if len(fields) >= 7 and fields[6].startswith("+"):
        text, rest, remaining = fields[6], fields[:6] + fields[7:], False
        counts = text[1:].split("+")
    elif len(fields) >= 5 and "+" in fields[4]:
        text, rest, remaining = fields[4], fields[:4] + fields[5:], True
        counts = text.split("+")
    else:
        return fields, (0, 0)
    if variant != VARIANT_THREE_CHECK:
        raise FenError(f"FEN {fen!r} has a check count {text!r}, which only three-check has")
    if len(counts) != 2 or not all(c.isdigit() and int(c) <= THREE_CHECK_WIN for c in counts):
        raise FenError(
            f"three-check field {text!r} must be two counts of 0-{THREE_CHECK_WIN} checks, "
            "like 3+3 (checks to give) or +0+0 (checks given)"
        )
    white, black = int(counts[0]), int(counts[1])
    if remaining:
        white, black = THREE_CHECK_WIN - white, THREE_CHECK_WIN - black
    return rest, (white, black)


def _parse_counter(text: str, name: str, minimum: int) -> int:
    if not text.isdigit():
        raise FenError(f"{name} {text!r} is not a number")
    value = int(text)
    if value < minimum:
        raise FenError(f"{name} {value} is below {minimum}")
    return value


class Position:
    """A position and its history as the four arrays the compiled functions take."""

    __slots__ = ("board", "keys", "meta", "stack")

    def __init__(self) -> None:
        self.board: BoardArray = np.full(BOARD_SIZE, OFFBOARD, dtype=np.int8)
        self.stack: StackArray = np.zeros((STACK_SIZE, STACK_FIELDS), dtype=np.int32)
        self.keys: KeyArray = np.zeros(STACK_SIZE, dtype=np.uint64)
        self.meta: MetaArray = np.zeros(META_SIZE, dtype=np.int32)

    # -- construction --------------------------------------------------------------------------

    @classmethod
    def startpos(cls, variant: int = VARIANT_CHESS) -> Position:
        """The standard starting position (that of three-check and king of the hill too)."""
        return cls.from_fen(STARTPOS_FEN, variant=variant)

    @classmethod
    def from_fen(
        cls, fen: str, chess960: bool | None = None, variant: int = VARIANT_CHESS
    ) -> Position:
        """Parse standard FEN, X-FEN or Shredder-FEN; 4-field EPD-style input is accepted.

        ``chess960=None`` turns chess960 mode on only when the castling set-up needs it (a
        castling king off the e-file or rook off the a/h-file); such a set-up turns it on even
        with ``chess960=False``.  ``variant`` is the rules (``VARIANT_*``); a three-check FEN
        may carry its check counts (see ``_split_check_field``).  Raises ``FenError`` naming
        the problem.
        """
        if not isinstance(fen, str):
            raise FenError(f"FEN must be a string, not {type(fen).__name__}")
        if not 0 <= variant < VARIANT_COUNT:
            raise FenError(f"unknown variant number {variant}")
        fields, checks_given = _split_check_field(fen.split(), fen, variant)
        if not 4 <= len(fields) <= 6:
            raise FenError(f"FEN {fen!r} has {len(fields)} fields, expected 4 to 6")
        pos = cls()
        board = pos.board
        for sq in range(BOARD_SIZE):
            if SQ64[sq] >= 0:
                board[sq] = EMPTY
        _parse_placement(fields[0], board)
        kings = [0, 0]
        for color in (WHITE, BLACK):
            squares = [sq for sq in range(BOARD_SIZE) if board[sq] == (KING | (color << 3))]
            name = "white" if color == WHITE else "black"
            if len(squares) != 1:
                raise FenError(f"FEN must have exactly one {name} king, found {len(squares)}")
            kings[color] = squares[0]
        _check_piece_counts(board)
        for sq in range(BOARD_SIZE):
            rank = int(SQ64[sq]) >> 3
            if SQ64[sq] >= 0 and board[sq] & 7 == PAWN and rank in (0, 7):
                raise FenError(f"a pawn stands on {square_name(sq)}, a first or last rank square")
        if fields[1] not in ("w", "b"):
            raise FenError(f"side to move {fields[1]!r} must be 'w' or 'b'")
        side = WHITE if fields[1] == "w" else BLACK
        rights, rooks, needs_960 = _parse_castling(fields[2], board, (kings[0], kings[1]))
        ep = pos._parse_ep(fields[3], side)
        halfmove = _parse_counter(fields[4], "halfmove clock", 0) if len(fields) > 4 else 0
        fullmove = _parse_counter(fields[5], "full-move number", 1) if len(fields) > 5 else 1

        stack = pos.stack
        stack[0, S_SIDE] = side
        stack[0, S_CASTLE] = rights
        stack[0, S_EP] = ep
        stack[0, S_HALFMOVE] = halfmove
        stack[0, S_FULLMOVE] = fullmove
        stack[0, S_KING + WHITE] = kings[WHITE]
        stack[0, S_KING + BLACK] = kings[BLACK]
        stack[0, S_PINS] = -1
        stack[0, S_CHECK] = -1
        stack[0, S_VARIANT] = variant
        stack[0, S_CHECKS + WHITE] = checks_given[WHITE]
        stack[0, S_CHECKS + BLACK] = checks_given[BLACK]
        pos._init_eval_terms()
        meta = pos.meta
        meta[M_PLY] = 0
        meta[M_CHESS960] = int(needs_960 if chess960 is None else (chess960 or needs_960))
        for i in range(4):
            meta[M_ROOK + i] = rooks[i]
        meta[M_CMASK : M_CMASK + BOARD_SIZE] = CASTLE_ALL
        for i in range(4):
            if rooks[i]:
                meta[M_CMASK + rooks[i]] &= ~(1 << i)
        meta[M_CMASK + kings[WHITE]] &= ~(CASTLE_WK | CASTLE_WQ)
        meta[M_CMASK + kings[BLACK]] &= ~(CASTLE_BK | CASTLE_BQ)
        # plain Python here: setting up a position must not wait for compiled code
        if uncompiled(is_square_attacked)(board, kings[1 - side], side):
            raise FenError("the side not to move is in check")
        pos.keys[0] = uncompiled(compute_key)(board, stack, meta)
        return pos

    def _parse_ep(self, field: str, side: int) -> int:
        """The en passant square if a pawn of the side to move could capture there, else 0."""
        if field == "-":
            return 0
        try:
            ep = parse_square(field)
        except ValueError:
            raise FenError(f"en passant field {field!r} is not a square or '-'") from None
        rank = int(SQ64[ep]) >> 3
        if rank != (5 if side == WHITE else 2):
            raise FenError(f"en passant square {field} is on the wrong rank for the side to move")
        fwd = 10 if side == WHITE else -10
        pushed = PAWN | ((1 - side) << 3)
        board = self.board
        if board[ep - fwd] != pushed or board[ep] != EMPTY or board[ep + fwd] != EMPTY:
            raise FenError(
                f"en passant square {field}: no pawn that has just advanced two squares past it"
            )
        if _ep_capturable(self.board, ep - fwd, side):
            return ep
        return 0

    def _init_eval_terms(self) -> None:
        row = self.stack[0]
        row[S_OCC : S_OCC + 4] = set_words(self.board)
        for sq in range(BOARD_SIZE):
            p = int(self.board[sq])
            if p <= 0:
                continue
            row[S_MG] += PST_MG[p, sq]
            row[S_EG] += PST_EG[p, sq]
            row[S_PHASE] += PHASE_BY_CODE[p]
            color = p >> 3
            if p & 7 == PAWN:
                row[S_PAWN_MAT + color] += MATERIAL_BY_CODE[p]
            else:
                row[S_NPM + color] += MATERIAL_BY_CODE[p]

    def copy(self) -> Position:
        """An independent copy (arrays included)."""
        other = Position.__new__(Position)
        other.board = self.board.copy()
        other.stack = self.stack.copy()
        other.keys = self.keys.copy()
        other.meta = self.meta.copy()
        return other

    def copy_from(self, other: Position) -> None:
        """Become a copy of ``other`` in this position's own arrays, allocating nothing."""
        np.copyto(self.board, other.board)
        np.copyto(self.stack, other.stack)
        np.copyto(self.keys, other.keys)
        np.copyto(self.meta, other.meta)

    # -- state -----------------------------------------------------------------------------------

    @property
    def arrays(self) -> tuple[BoardArray, StackArray, KeyArray, MetaArray]:
        """``(board, stack, keys, meta)`` for the compiled functions."""
        return self.board, self.stack, self.keys, self.meta

    @property
    def ply(self) -> int:
        return int(self.meta[M_PLY])

    @property
    def side_to_move(self) -> int:
        return int(self.stack[self.ply, S_SIDE])

    @property
    def key(self) -> int:
        """The Polyglot Zobrist key of the current position."""
        return int(self.keys[self.ply])

    @property
    def chess960(self) -> bool:
        return bool(self.meta[M_CHESS960])

    @chess960.setter
    def chess960(self, value: bool) -> None:
        self.meta[M_CHESS960] = int(value)

    @property
    def variant(self) -> int:
        """The rules played (``VARIANT_*`` of ``engine.constants``)."""
        return self.field(S_VARIANT)

    def checks_given(self, color: int) -> int:
        """Checks ``color`` has given (three-check)."""
        return self.field(S_CHECKS + color)

    def needs_chess960(self) -> bool:
        """Does a castling right of this position belong to a set-up only chess960 has?

        True when a king with a right stands off the e-file or its rook off the a/h-file:
        such castling moves have no standard spelling.
        """
        rights = self.field(S_CASTLE)
        for right in range(4):
            if not rights & (1 << right):
                continue
            king_file = (int(self.stack[self.ply, S_KING + (right >> 1)]) - 21) % 10
            rook_file = (int(self.meta[M_ROOK + right]) - 21) % 10
            if king_file != 4 or rook_file not in (0, 7):
                return True
        return False

    def field(self, index: int) -> int:
        """A field of the current state row (``S_*`` from ``engine.constants``)."""
        return int(self.stack[self.ply, index])

    def in_check(self) -> bool:
        return bool(in_check(self.board, self.stack, self.meta))

    def legal_moves(self) -> list[int]:
        moves = np.zeros(MAX_MOVES, dtype=np.int32)
        n = gen_legal(self.board, self.stack, self.meta, moves)
        return moves[:n].tolist()  # type: ignore[no-any-return]

    def is_checkmate(self) -> bool:
        return self.in_check() and not self.legal_moves()

    def is_stalemate(self) -> bool:
        return not self.in_check() and not self.legal_moves()

    # -- moves ---------------------------------------------------------------------------------

    def push(self, move: int) -> None:
        """Play a legal move; ``ValueError`` if it is not legal here."""
        if move not in self.legal_moves():
            raise ValueError(f"move {self.move_to_uci(move)} is not legal in {self.fen()}")
        self.push_unchecked(move)

    def push_unchecked(self, move: int) -> None:
        """Play a move known to be legal, keeping room on the stack for a search."""
        if self.ply >= STACK_SIZE - SEARCH_HEADROOM:
            self._compact_history()
        make_move(self.board, self.stack, self.keys, self.meta, move)

    def pop(self) -> int:
        """Take back the last move and return it; ``IndexError`` at the first position."""
        ply = self.ply
        if ply == 0:
            raise IndexError("no move to take back")
        move = int(self.stack[ply, S_MOVE])
        if move == NULL_MOVE:
            unmake_null(self.stack, self.meta)
        else:
            unmake_move(self.board, self.stack, self.meta)
        return move

    def push_uci(self, text: str) -> int:
        """Play a move given as UCI text; returns the move.  ``ValueError`` if illegal."""
        move = self.parse_uci(text)
        self.push_unchecked(move)
        return move

    def _compact_history(self) -> None:
        """Drop history rows older than the last irreversible move (they cannot repeat)."""
        ply = self.ply
        keep = int(self.stack[ply, S_HALFMOVE]) + 1
        first = max(ply - keep + 1, 0)
        if first == 0:
            raise OverflowError("game history exceeds the state stack")
        count = ply - first + 1
        self.stack[:count] = self.stack[first : ply + 1].copy()
        self.keys[:count] = self.keys[first : ply + 1].copy()
        self.stack[0, S_MOVE] = 0  # the oldest row can no longer be unmade
        self.meta[M_PLY] = count - 1

    def parse_uci(self, text: str) -> int:
        """The legal move written ``text`` (castling as king-to-square or king-takes-rook)."""
        if not isinstance(text, str) or len(text) not in (4, 5):
            raise ValueError(f"not a UCI move: {text!r}")
        try:
            frm = parse_square(text[0:2])
            to = parse_square(text[2:4])
        except ValueError:
            raise ValueError(f"not a UCI move: {text!r}") from None
        promo = 0
        if len(text) == 5:
            promo = "nbrq".find(text[4].lower()) + KNIGHT  # some GUIs write e7e8Q
            if promo < KNIGHT:
                raise ValueError(f"not a UCI move: {text!r} (bad promotion letter)")
        legal = self.legal_moves()
        for move in legal:
            if move & FLAG_CASTLE:
                continue
            if (
                move & MOVE_SQ_MASK == frm
                and (move >> MOVE_TO_SHIFT) & MOVE_SQ_MASK == to
                and (move >> MOVE_PROMO_SHIFT) & MOVE_PROMO_MASK == promo
            ):
                return move
        if promo == 0:
            for move in legal:
                if move & FLAG_CASTLE and move & MOVE_SQ_MASK == frm:
                    rook_sq = (move >> MOVE_TO_SHIFT) & MOVE_SQ_MASK
                    if to in (rook_sq, castling_king_target(move, self.side_to_move)):
                        return move
        raise ValueError(f"illegal move {text} in {self.fen()}")

    def move_to_uci(self, move: int) -> str:
        """UCI text of ``move`` (castling king-takes-rook in chess960 mode)."""
        return move_to_uci(move, self.side_to_move, self.chess960)

    # -- FEN output ------------------------------------------------------------------------------

    def fen(self, shredder: bool = False) -> str:
        """FEN of the current position; chess960 castling as X-FEN, or Shredder-FEN if asked.

        The en passant square is written only when a pawn could capture there (as X-FEN does).
        """
        rows = []
        for rank in range(7, -1, -1):
            row = ""
            empty = 0
            for file in range(8):
                p = int(self.board[square(file, rank)])
                if p == EMPTY:
                    empty += 1
                    continue
                if empty:
                    row += str(empty)
                    empty = 0
                row += PIECE_CHARS[p]
            if empty:
                row += str(empty)
            rows.append(row)
        side = "w" if self.side_to_move == WHITE else "b"
        ep = self.field(S_EP)
        return " ".join(
            (
                "/".join(rows),
                side,
                self._castling_field(shredder),
                square_name(ep) if ep else "-",
                *self._check_field(),
                str(self.field(S_HALFMOVE)),
                str(self.field(S_FULLMOVE)),
            )
        )

    def _check_field(self) -> tuple[str, ...]:
        """Three-check: the checks still to give, ``3+3`` (as python-chess and Fairy-Stockfish
        write them); no field in other variants."""
        if self.variant != VARIANT_THREE_CHECK:
            return ()
        white, black = (THREE_CHECK_WIN - self.checks_given(c) for c in (WHITE, BLACK))
        return (f"{white}+{black}",)

    def _castling_field(self, shredder: bool) -> str:
        rights = self.field(S_CASTLE)
        text = ""
        for right, letter in ((0, "K"), (1, "Q"), (2, "k"), (3, "q")):
            if not rights & (1 << right):
                continue
            rook_sq = int(self.meta[M_ROOK + right])
            color = right >> 1
            file = (rook_sq - 21) % 10
            if shredder or (self.chess960 and not self._outermost_rook(right)):
                file_letter = "ABCDEFGH"[file]
                text += file_letter if color == WHITE else file_letter.lower()
            else:
                text += letter
        return text or "-"

    def _outermost_rook(self, right: int) -> bool:
        """Is the rook of castling right ``right`` the outermost rook on its side (X-FEN K/Q)?"""
        color = right >> 1
        rook_sq = int(self.meta[M_ROOK + right])
        step = 1 if right & 1 == 0 else -1
        rook = ROOK | (color << 3)
        s = rook_sq + step
        while self.board[s] != OFFBOARD:
            if self.board[s] == rook:
                return False
            s += step
        return True

    def __repr__(self) -> str:
        return f"Position({self.fen()!r})"


def castling_king_target(move: int, side: int) -> int:
    """Where the king lands when ``move`` (a castling move of ``side``) is played."""
    frm = move & MOVE_SQ_MASK
    to = (move >> MOVE_TO_SHIFT) & MOVE_SQ_MASK
    return int(uncompiled(castling_squares)(frm, to, side)[0])


def move_to_uci(move: int, side: int, chess960: bool) -> str:
    """UCI text of ``move`` played by ``side``; castling king-takes-rook when ``chess960``."""
    if move == NULL_MOVE:
        return "0000"
    frm = move & MOVE_SQ_MASK
    to = (move >> MOVE_TO_SHIFT) & MOVE_SQ_MASK
    if move & FLAG_CASTLE and not chess960:
        to = castling_king_target(move, side)
    text = square_name(frm) + square_name(to)
    promo = (move >> MOVE_PROMO_SHIFT) & MOVE_PROMO_MASK
    if promo:
        text += " nbrq"[promo - 1]
    return text


__all__ = [
    "STARTPOS_FEN",
    "FenError",
    "Position",
    "castling_king_target",
    "compute_key",
    "is_dead_position",
    "is_repetition",
    "make_move",
    "make_null",
    "move_to_uci",
    "state_is_consistent",
    "unmake_move",
    "unmake_null",
]
