"""The search: iterative deepening over a compiled negamax alpha-beta with quiescence.

Iterative deepening and aspiration windows run here in Python, one compiled call per window
(``_search_root``), so the UCI side gets an ``info`` line after every iteration and the time
manager decides between iterations.  The compiled tree search (``_negamax``/``_quiesce``)
releases the GIL; the UCI thread and the clock end it by setting ``stop[0]``, which the search
reads every ``STOP_CHECK_NODES + 1`` nodes.  A stop even during depth 1 leaves a move: the best
root move found so far, or the first legal one.

Scores are centipawns from the side to move's view; a mate in ``n`` plies from the root is
``MATE - n`` (shorter mates score higher, and the mated side prefers the longest defence).

Each thread's own arrays and the Lazy SMP pool are ``engine.threads``; what a cutoff teaches
the move ordering is recorded by ``engine.history``; the records handed to the UCI side
(``Iteration``, ``SearchResult``) are ``engine.info``.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from engine import nnue, params, tt
from engine.board import (
    Position,
    is_dead_position,
    is_repetition,
    make_move,
    make_null,
    move_to_uci,
    unmake_move,
    unmake_null,
)
from engine.constants import (
    M_PLY,
    NULL_MOVE,
    S_ACC,
    S_HALFMOVE,
    S_MOVE,
    S_NPM,
    S_PAWN_MAT,
    S_SIDE,
    S_VARIANT,
    VARIANT_CHESS,
    BoardArray,
    Int32Array,
    Int64Array,
    KeyArray,
    MetaArray,
    StackArray,
)
from engine.evalcache import cached_evaluate, prefetch_entry
from engine.evaluate import material_eval
from engine.history import update_at_cutoff
from engine.info import Iteration as Iteration  # the self-play tools import it from here
from engine.info import RootLine, SearchResult
from engine.jit import njit_noalloc
from engine.movegen import gen_captures, gen_moves, in_check, is_legal
from engine.movepick import (
    NO_CONT,
    cont_index,
    is_tactical,
    move_from,
    move_promotion,
    move_to,
    pick_next,
    pick_next_settled,
    quiet_history,
    score_captures,
    score_moves,
    see_at_least_zero,
    tactical_gain,
)
from engine.nnue import NM_ENABLED, Int16Array
from engine.params import (
    ASPIRATION_GROWTH,
    ASPIRATION_MAX_DELTA_CP,
    ASPIRATION_MIN_DEPTH,
    ASPIRATION_WINDOW_CP,
    CONT_PRUNING_MAX_DEPTH,
    COUNTER_HISTORY_LIMIT,
    DEFAULT_THREADS,
    DELTA_MARGIN_CP,
    DRAW_SCORE,
    FOLLOW_UP_HISTORY_LIMIT,
    FUTILITY_MARGIN_CP,
    FUTILITY_MAX_DEPTH,
    IIR_MIN_DEPTH,
    INFINITE,
    LATE_MOVE_PRUNING_BASE,
    LATE_MOVE_PRUNING_MAX_DEPTH,
    LAZY_MARGIN_CP,
    LMR_BASE,
    LMR_DIVISOR,
    LMR_FULL_DEPTH_MOVES,
    LMR_HISTORY_DIVISOR,
    LMR_HISTORY_MAX_PLIES,
    LMR_MIN_DEPTH,
    MATE,
    MATE_BOUND,
    MATE_SEARCH_EXTRA_PLIES,
    MAX_DEPTH,
    MAX_PLY,
    NULL_MOVE_BASE_REDUCTION,
    NULL_MOVE_DEPTH_DIVISOR,
    NULL_MOVE_EVAL_DIVISOR_CP,
    NULL_MOVE_EVAL_MAX_EXTRA,
    NULL_MOVE_MIN_DEPTH,
    RAZOR_MARGIN_CP,
    RAZOR_MAX_DEPTH,
    REVERSE_FUTILITY_MARGIN_CP,
    REVERSE_FUTILITY_MAX_DEPTH,
    SEE_PRUNING_MAX_DEPTH,
    SINGLE_MOVE_DEPTH,
    STOP_CHECK_NODES,
)
from engine.pvline import legal_prefix
from engine.threads import (
    I_GENERATION,
    I_ITERATION,
    I_NODE_LIMIT,
    I_NODES,
    I_ROOT_MOVES,
    I_ROOT_ROW,
    I_ROOT_UPDATED,
    I_SELDEPTH,
    I_STOPPED,
    SearchTables,
    ThreadLine,
    ThreadPool,
    WorkRecord,
    chosen_line,
    skips_depth,
)
from engine.timeman import GoLimits, IterationClock, TimeBudget
from engine.variant import RESULT_DRAW, RESULT_NONE, RESULT_WIN, variant_result

UCI_TEXT_CACHE_SIZE = 1 << 16  # more than the distinct moves of any game


@dataclass(frozen=True)
class SearchShape:
    """How a search spreads its effort: ``multipv`` lines at the root; ``helpers``: the Lazy
    SMP helper threads search too; ``whole_first_depth``: a node limit waits for depth 1 to
    end, so every line has a score (a limited level picks among them)."""

    multipv: int = 1
    helpers: bool = True
    whole_first_depth: bool = False


SINGLE_PV = SearchShape()


def _lmr_table() -> npt.NDArray[np.int32]:
    """Late move reduction by depth and move number: base + ln(depth) * ln(moves) / divisor."""
    table = np.zeros((64, 64), dtype=np.int32)
    for depth in range(1, 64):
        for count in range(1, 64):
            table[depth, count] = int(LMR_BASE + math.log(depth) * math.log(count) / LMR_DIVISOR)
    return table


LMR = _lmr_table()


@njit_noalloc
def _is_draw(
    board: BoardArray,
    stack: StackArray,
    keys: KeyArray,
    meta: MetaArray,
    root_row: int,
    buf: Int32Array,
) -> bool:
    """Fifty-move rule, a dead position, or a repetition (``board.is_repetition``).

    After fifty moves a checkmate still wins (``buf`` is scratch space for the move list that
    decides it).
    """
    row = meta[M_PLY]
    if stack[row, S_HALFMOVE] >= 100:
        if not in_check(board, stack, meta):
            return True
        n = gen_moves(board, stack, meta, buf)
        for i in range(n):  # noqa: SIM110 (a plain loop compiles; any() over a generator not)
            if is_legal(board, stack, meta, buf[i]):
                return True
        return False
    # the pawn test first, here: most positions have pawns and skip the call; in the variants
    # any piece can still win (a check, a walk to the hill)
    if (
        stack[row, S_PAWN_MAT] == 0
        and stack[row, S_PAWN_MAT + 1] == 0
        and stack[row, S_VARIANT] == VARIANT_CHESS
        and is_dead_position(board, stack, row)
    ):
        return True
    return is_repetition(stack, keys, meta, root_row)


NO_SCORE = -INFINITE - 1  # _variant_end_score: the game goes on


@njit_noalloc
def _variant_end_score(stack: StackArray, row: int, ply: int) -> int:
    """The score of a game the variant's rule has ended (mate-like: sooner is better)."""
    result = variant_result(stack, row)
    if result == RESULT_NONE:
        return NO_SCORE
    if result == RESULT_DRAW:
        return DRAW_SCORE
    return MATE - ply if result == RESULT_WIN else -MATE + ply


@njit_noalloc
def _update_pv(pv: Int32Array, pv_len: Int32Array, ply: int, move: int) -> None:
    """Triangular PV table: this node's line is ``move`` followed by the child's line."""
    pv[ply, ply] = move
    child_end = pv_len[ply + 1]
    for i in range(ply + 1, child_end):
        pv[ply, i] = pv[ply + 1, i]
    pv_len[ply] = max(child_end, ply + 1)


@njit_noalloc
def _poll_stop(info: Int64Array, stop: Int64Array) -> bool:
    """Count a node; every few nodes check the stop flag and the node limit."""
    nodes = info[I_NODES] + 1
    info[I_NODES] = nodes
    # the node limit is met exactly (a weak level's budget is a few hundred nodes); beyond
    # it (a limit set after the count passed it) the periodic check ends the search
    if (nodes & STOP_CHECK_NODES) == 0 or nodes == info[I_NODE_LIMIT]:
        limit = info[I_NODE_LIMIT]
        if stop[0] != 0 or (limit > 0 and nodes >= limit):
            info[I_STOPPED] = 1
    return bool(info[I_STOPPED] != 0)


@njit_noalloc
def _quiesce(
    board: BoardArray,
    stack: StackArray,
    keys: KeyArray,
    meta: MetaArray,
    tt_table: KeyArray,
    work: WorkRecord,
    stop: Int64Array,
    net16: Int16Array,
    net_meta: Int32Array,
    acc: Int16Array,
    ply: int,
    alpha: int,
    beta: int,
) -> int:
    """Quiescence search: stand pat, then captures and promotions (all evasions in check)."""
    moves = work.moves
    move_scores = work.move_scores
    pv = work.pv
    pv_len = work.pv_len
    info = work.info
    scratch = work.scratch
    eval_cache = work.eval_cache
    see_buf = work.see_buf
    pv_len[ply] = ply
    if _poll_stop(info, stop):
        return 0
    if ply > info[I_SELDEPTH]:
        info[I_SELDEPTH] = ply
    row = meta[M_PLY]
    if ply > 0 and stack[row, S_VARIANT] != VARIANT_CHESS:
        ended = _variant_end_score(stack, row, ply)
        if ended != NO_SCORE:
            return ended
    if ply > 0 and _is_draw(board, stack, keys, meta, info[I_ROOT_ROW], moves[ply]):
        return DRAW_SCORE
    if ply >= MAX_PLY - 1:
        return cached_evaluate(board, stack, keys, row, scratch, eval_cache, net16, net_meta, acc)
    key = keys[row]
    pv_node = beta - alpha > 1
    hash_move = 0
    entry = tt.probe(tt_table, key)
    if entry >= 0:
        hash_move = tt.entry_move(entry)
        if not pv_node:
            score = tt.score_from_tt(tt.entry_score(entry), ply)
            bound = tt.entry_bound(entry)
            if (
                bound == tt.BOUND_EXACT
                or (bound == tt.BOUND_LOWER and score >= beta)
                or (bound == tt.BOUND_UPPER and score <= alpha)
            ):
                return score
    checked = in_check(board, stack, meta)
    original_alpha = alpha
    if checked:
        best = -MATE + ply
        stand_pat = -INFINITE
    else:
        # Lazy evaluation: far outside the window, material alone decides the stand pat.
        stand_pat = material_eval(stack, row)
        if stand_pat - LAZY_MARGIN_CP >= beta:
            return stand_pat
        # Stand pat: the side to move may decline every capture.
        if stand_pat + LAZY_MARGIN_CP > alpha:
            stand_pat = cached_evaluate(board, stack, keys, row, scratch, eval_cache,
                                        net16, net_meta, acc)
        if stand_pat >= beta:
            return stand_pat
        if stand_pat > alpha:
            alpha = stand_pat
        best = stand_pat
    node_moves = moves[ply]
    node_scores = move_scores[ply]
    if checked:
        n = gen_moves(board, stack, meta, node_moves)
    else:
        n = gen_captures(board, stack, meta, node_moves)
    score_captures(board, node_moves, node_scores, n, hash_move)
    best_move = 0
    legal = 0
    for i in range(n):
        move = pick_next(node_moves, node_scores, i, n)
        if not checked:
            promo = move_promotion(move)
            if promo != 0 and promo != 5:
                continue  # under-promotions are left to the full-width search
            # Delta pruning: even winning the victim cannot bring the score up to alpha.
            if stand_pat + tactical_gain(board, move) + DELTA_MARGIN_CP < alpha:
                continue
            # SEE pruning: captures that lose material are not worth resolving.
            if not see_at_least_zero(board, move, see_buf):
                continue
        if not is_legal(board, stack, meta, move):
            continue
        legal += 1
        # The child's accumulators are made only when it reads them (nnue.ensure): here a
        # table cutoff or a cached score often leaves them unread, so they wait; this row's
        # must be up to date first, the child's are made from them.
        if net_meta[NM_ENABLED] != 0:
            nnue.ensure(board, stack, row, net16, net_meta, acc)
        make_move(board, stack, keys, meta, move)
        tt.prefetch_bucket(tt_table, keys[row + 1])
        prefetch_entry(eval_cache, keys[row + 1])
        score = -_quiesce(
            board, stack, keys, meta, tt_table, work, stop, net16, net_meta, acc,
            ply + 1, -beta, -alpha,
        )
        unmake_move(board, stack, meta)
        if info[I_STOPPED] != 0:
            return 0
        if score > best:
            best = score
            if score > alpha:
                alpha = score
                best_move = move
                _update_pv(pv, pv_len, ply, move)
                if score >= beta:
                    break
    if checked and legal == 0:
        return -MATE + ply  # checkmate
    if best >= beta:
        bound = tt.BOUND_LOWER
    elif best > original_alpha:
        bound = tt.BOUND_EXACT
    else:
        bound = tt.BOUND_UPPER
    tt.store(
        tt_table, key, best_move, tt.score_to_tt(best, ply), 0, bound,
        info[I_GENERATION],
    )
    return best


@njit_noalloc
def _negamax(
    board: BoardArray,
    stack: StackArray,
    keys: KeyArray,
    meta: MetaArray,
    tt_table: KeyArray,
    work: WorkRecord,
    stop: Int64Array,
    net16: Int16Array,
    net_meta: Int32Array,
    acc: Int16Array,
    depth: int,
    ply: int,
    alpha: int,
    beta: int,
) -> int:
    """Negamax alpha-beta with principal variation search; fail-soft.

    The searcher's own arrays come in one record (``work``, passed as a pointer) and are
    viewed from it here: passed one by one, each array is a dozen machine words copied on
    every call; bundled in a tuple they were copied and reference-counted, which cost a third
    of the search speed when measured.
    """
    moves = work.moves
    move_scores = work.move_scores
    killers = work.killers
    history = work.history
    counters = work.counters
    cont_history = work.cont_history
    ply_moves = work.ply_moves
    capture_history = work.capture_history
    pv = work.pv
    pv_len = work.pv_len
    evals = work.evals
    info = work.info
    scratch = work.scratch
    eval_cache = work.eval_cache
    see_buf = work.see_buf
    root_moves = work.root_moves
    # Step 1. Quiescence at the horizon: only captures (or evasions) settle the score.
    if depth <= 0:
        return _quiesce(
            board, stack, keys, meta, tt_table, work, stop, net16, net_meta, acc,
            ply, alpha, beta,
        )
    # Step 2. Abort check: the stop flag or the node limit (every few nodes).
    pv_len[ply] = ply
    if _poll_stop(info, stop):
        return 0
    if ply > info[I_SELDEPTH]:
        info[I_SELDEPTH] = ply
    root = ply == 0
    row = meta[M_PLY]
    pv_node = beta - alpha > 1
    # Step 3. Early exits, never at the root (it must leave a move): the game's end by the
    # variant's rule, draws, the ply limit, and mate distance pruning.
    if not root:
        # The variant's own end (third check, king on the hill) comes before every other rule.
        if stack[row, S_VARIANT] != VARIANT_CHESS:
            ended = _variant_end_score(stack, row, ply)
            if ended != NO_SCORE:
                return ended
        if _is_draw(board, stack, keys, meta, info[I_ROOT_ROW], moves[ply]):
            return DRAW_SCORE
        if ply >= MAX_PLY - 1:
            return cached_evaluate(board, stack, keys, row, scratch, eval_cache,
                                   net16, net_meta, acc)
        # Mate distance pruning: no line from here beats a mate already found nearer the root.
        if alpha < -MATE + ply:
            alpha = -MATE + ply
        if beta > MATE - ply - 1:
            beta = MATE - ply - 1
        if alpha >= beta:
            return alpha
    # Step 4. Check extension: a checked side gets one more ply to find its way out.
    checked = in_check(board, stack, meta)
    if checked:
        depth += 1
    key = keys[row]
    side = stack[row, S_SIDE]

    # Step 5. Transposition table probe: cutoffs in non-PV nodes; the best move for ordering always.
    hash_move = 0
    tt_score = 0
    tt_bound = tt.BOUND_NONE
    entry = tt.probe(tt_table, key)
    if entry >= 0:
        hash_move = tt.entry_move(entry)
        tt_score = tt.score_from_tt(tt.entry_score(entry), ply)
        tt_bound = tt.entry_bound(entry)
        if (
            not pv_node
            and tt.entry_depth(entry) >= depth
            and (
                tt_bound == tt.BOUND_EXACT
                or (tt_bound == tt.BOUND_LOWER and tt_score >= beta)
                or (tt_bound == tt.BOUND_UPPER and tt_score <= alpha)
            )
        ):
            return tt_score

    # Step 6. Static evaluation, sharpened by a TT bound that points the right way, and
    # whether it improves on the one two plies up.
    if checked:
        static_eval = -INFINITE
        evals[ply] = -INFINITE
        improving = False
    else:
        static_eval = cached_evaluate(board, stack, keys, row, scratch, eval_cache,
                                      net16, net_meta, acc)
        evals[ply] = static_eval
        improving = ply >= 2 and static_eval > evals[ply - 2]
        if tt_bound != tt.BOUND_NONE and (
            tt_bound == tt.BOUND_EXACT
            or (tt_bound == tt.BOUND_LOWER and tt_score > static_eval)
            or (tt_bound == tt.BOUND_UPPER and tt_score < static_eval)
        ):
            static_eval = tt_score

    if not pv_node and not checked and not root:
        # Step 7. Razoring: hopelessly below alpha near the leaves, only captures can save the node.
        if depth <= RAZOR_MAX_DEPTH and static_eval + RAZOR_MARGIN_CP * depth < alpha:
            score = _quiesce(
                board, stack, keys, meta, tt_table, work, stop, net16, net_meta, acc,
                ply, alpha, alpha + 1,
            )
            if info[I_STOPPED] != 0:
                return 0
            if score <= alpha:
                return score
        # Step 8. Reverse futility pruning: far above beta at low depth, a quiet move will not
        # drop it.  Not on a mate score (from the table): a mate is proven by search, not by a
        # margin.
        if (
            depth <= REVERSE_FUTILITY_MAX_DEPTH
            and abs(beta) < MATE_BOUND
            and abs(static_eval) < MATE_BOUND
            and static_eval - REVERSE_FUTILITY_MARGIN_CP * (depth - int(improving)) >= beta
        ):
            return static_eval
        # Step 9. Null-move pruning: if passing still fails high, a real move will too.  Not
        # with only pawns (zugzwang), not twice in a row.
        if (
            depth >= NULL_MOVE_MIN_DEPTH
            and static_eval >= beta
            and stack[row, S_NPM + side] > 0
            and stack[row, S_MOVE] != NULL_MOVE
            and abs(beta) < MATE_BOUND
        ):
            reduction = NULL_MOVE_BASE_REDUCTION + depth // NULL_MOVE_DEPTH_DIVISOR
            reduction += min(
                (static_eval - beta) // NULL_MOVE_EVAL_DIVISOR_CP, NULL_MOVE_EVAL_MAX_EXTRA
            )
            make_null(board, stack, keys, meta)
            ply_moves[ply] = NO_CONT
            score = -_negamax(
                board, stack, keys, meta, tt_table, work, stop, net16, net_meta, acc,
                depth - 1 - reduction, ply + 1, -beta, -beta + 1,
            )
            unmake_null(stack, meta)
            if info[I_STOPPED] != 0:
                return 0
            if score >= beta:
                return beta if score >= MATE_BOUND else score

    # Step 10. Internal iterative reduction: without a hash move this node was never searched well.
    if depth >= IIR_MIN_DEPTH and hash_move == 0:
        depth -= 1

    # Step 11. Generate and score the moves (hash move, captures, killers, counter move,
    # histories), then search them best first.
    node_moves = moves[ply]
    node_scores = move_scores[ply]
    n = gen_moves(board, stack, meta, node_moves)
    killer1 = killers[ply, 0]
    killer2 = killers[ply, 1]
    prev = stack[row, S_MOVE]
    counter = 0
    if prev != 0 and prev != NULL_MOVE:
        counter = counters[move_from(prev), move_to(prev)]
    # Continuation history: the opponent's last move and our own move before it.
    prev1 = ply_moves[ply - 1] if ply >= 1 else NO_CONT
    prev2 = ply_moves[ply - 2] if ply >= 2 else NO_CONT
    score_moves(
        board, node_moves, node_scores, n, hash_move, killer1, killer2, counter, history, side,
        cont_history, prev1, prev2, capture_history,
    )

    original_alpha = alpha
    best = -INFINITE
    best_move = 0
    legal = 0
    quiets_tried = 0
    root_limit = info[I_ROOT_MOVES]
    futile = (
        not pv_node
        and not checked
        and depth <= FUTILITY_MAX_DEPTH
        and static_eval + FUTILITY_MARGIN_CP * depth <= alpha
    )
    for i in range(n):
        move = pick_next_settled(board, node_moves, node_scores, i, n, see_buf)
        if root and root_limit > 0:
            allowed = False
            for j in range(root_limit):
                if root_moves[j] == move:
                    allowed = True
            if not allowed:
                continue
        if not is_legal(board, stack, meta, move):
            continue
        legal += 1
        quiet = not is_tactical(move)
        idx = cont_index(board, move)  # continuation index, read before the move is made
        # Step 12. Move pruning before the move is made (late move, continuation history and
        # SEE pruning), and futility pruning after it, once it is known not to give check.
        # Quiet moves may be pruned outside PV nodes and checks, once a move has a score.
        may_prune_quiet = (
            quiet
            and not root
            and best > -MATE_BOUND
            and not pv_node
            and not checked
        )
        # Late move pruning: at low depth, quiet moves ordered this late are skipped.
        if (
            may_prune_quiet
            and depth <= LATE_MOVE_PRUNING_MAX_DEPTH
            and quiets_tried >= LATE_MOVE_PRUNING_BASE + depth * depth
        ):
            continue
        # Continuation history pruning: near the leaves, a quiet move that has kept failing
        # after the opponent's last move (or after our own move before it) is skipped.
        if (
            may_prune_quiet
            and depth <= CONT_PRUNING_MAX_DEPTH[int(improving)]
            and (
                cont_history[prev1, idx] < COUNTER_HISTORY_LIMIT[int(improving)]
                or cont_history[prev2, idx] < FOLLOW_UP_HISTORY_LIMIT[int(improving)]
            )
        ):
            continue
        # SEE pruning: at low depth a capture that loses material is not searched.
        if (
            not quiet
            and not root
            and not pv_node
            and not checked
            and best > -MATE_BOUND
            and depth <= SEE_PRUNING_MAX_DEPTH
            and node_scores[i] < params.SCORE_GOOD_CAPTURE - (1 << 20)
        ):
            continue
        ply_moves[ply] = idx
        # This row's accumulators are up to date already: the root's are refreshed, and the
        # loop below makes every full-width child's at once (a null row reads its parent's).
        make_move(board, stack, keys, meta, move)
        gives_check = in_check(board, stack, meta)
        # Futility pruning: a quiet move cannot lift a hopeless static score to alpha.
        if quiet and futile and not gives_check and best > -MATE_BOUND:
            unmake_move(board, stack, meta)
            continue
        # Only a move that is searched pays for its table lines and accumulators; the lines
        # are asked for first, so they load while the accumulators are updated. Made at once
        # here, not when read as in the quiescence search: nearly every child of a full-width
        # node reads them, and the update hides the table's memory latency.
        tt.prefetch_bucket(tt_table, keys[row + 1])
        prefetch_entry(eval_cache, keys[row + 1])
        if net_meta[NM_ENABLED] != 0:
            nnue.ensure(board, stack, row + 1, net16, net_meta, acc)
        if quiet:
            quiets_tried += 1
        # Step 13. Search the move: the first with the full window, the others by late move
        # reductions and principal variation search.
        new_depth = depth - 1
        if legal == 1:
            score = -_negamax(
                board, stack, keys, meta, tt_table, work, stop, net16, net_meta, acc,
                new_depth, ply + 1, -beta, -alpha,
            )
        else:
            # Late move reductions: quiet moves ordered late are searched shallower first.
            reduction = 0
            if depth >= LMR_MIN_DEPTH and legal > LMR_FULL_DEPTH_MOVES and quiet and not checked:
                reduction = LMR[min(depth, 63), min(legal, 63)]
                if pv_node:
                    reduction -= 1
                if not improving:
                    reduction += 1
                if gives_check or move == killer1 or move == killer2:  # noqa: SIM109 (numba)
                    reduction -= 1
                # well-proven quiet moves are reduced less, ones that keep failing more
                hist = quiet_history(history, side, move, cont_history, prev1, prev2, idx)
                hist_plies = int(hist / LMR_HISTORY_DIVISOR)  # towards zero, as in C
                reduction -= max(-LMR_HISTORY_MAX_PLIES, min(hist_plies, LMR_HISTORY_MAX_PLIES))
                reduction = max(0, min(reduction, new_depth - 1))
            # Principal variation search: a null window proves the move is no better.
            score = -_negamax(
                board, stack, keys, meta, tt_table, work, stop, net16, net_meta, acc,
                new_depth - reduction, ply + 1, -alpha - 1, -alpha,
            )
            if score > alpha and reduction > 0:
                score = -_negamax(
                    board, stack, keys, meta, tt_table, work, stop, net16, net_meta, acc,
                    new_depth, ply + 1, -alpha - 1, -alpha,
                )
            if score > alpha and score < beta:
                score = -_negamax(
                    board, stack, keys, meta, tt_table, work, stop, net16, net_meta, acc,
                    new_depth, ply + 1, -beta, -alpha,
                )
        unmake_move(board, stack, meta)
        if info[I_STOPPED] != 0:
            return 0
        # Step 14. A better move: the PV, and at a beta cutoff the history heuristics.
        if score > best:
            best = score
            if score > alpha:
                alpha = score
                best_move = move
                _update_pv(pv, pv_len, ply, move)
                if root:
                    info[I_ROOT_UPDATED] = 1
                if score >= beta:
                    update_at_cutoff(work, board, node_moves, i, ply, side, depth, prev,
                                     prev1, prev2, idx)
                    break
    # Step 15. Checkmate and stalemate: no legal move was searched.
    if legal == 0:
        if root_limit > 0 and root:
            return -INFINITE
        return -MATE + ply if checked else DRAW_SCORE
    if best == -INFINITE:  # every move was pruned
        return alpha
    # Step 16. Store the result in the transposition table.
    if best >= beta:
        bound = tt.BOUND_LOWER
    elif best > original_alpha:
        bound = tt.BOUND_EXACT
    else:
        bound = tt.BOUND_UPPER
    tt.store(
        tt_table, key, best_move, tt.score_to_tt(best, ply), depth, bound,
        info[I_GENERATION],
    )
    return best


@njit_noalloc
def _search_root(
    board: BoardArray,
    stack: StackArray,
    keys: KeyArray,
    meta: MetaArray,
    tt_table: KeyArray,
    work: WorkRecord,
    stop: Int64Array,
    net16: Int16Array,
    net_meta: Int32Array,
    acc: Int16Array,
    depth: int,
    alpha: int,
    beta: int,
) -> int:
    """One aspiration window of one iteration, from the root.

    Every recursive call must see the same argument types (a literal ``0`` for the ply would
    compile a second variant, and numba's cache cannot restore such recursive variants).
    """
    info = work.info
    info[I_ROOT_UPDATED] = 0
    info[I_ROOT_ROW] = meta[M_PLY]
    return _negamax(
        board, stack, keys, meta, tt_table, work, stop, net16, net_meta, acc, depth,
        np.int64(0), alpha, beta,  # type: ignore[arg-type]
    )


# UCI text of (move, side, chess960): a handful of PV moves are spelt after every iteration
_uci_text = functools.lru_cache(maxsize=UCI_TEXT_CACHE_SIZE)(move_to_uci)

_NO_NET = nnue.no_net()  # the arrays of the hand-written evaluation, shared read-only

class Searcher:
    """Owns the transposition table and the heuristics tables across the moves of a game.

    With ``threads`` above one, ``think`` runs Lazy SMP: helper threads (``threads.ThreadPool``)
    search the same root at once with the shared table, each with its own tables; the calling
    thread is the main thread, which alone reports and decides when to stop, and no helper
    outlives ``think``.
    """

    def __init__(self, hash_mb: int = tt.DEFAULT_HASH_MB, threads: int = DEFAULT_THREADS,
                 abandon: threading.Event | None = None) -> None:
        self.tt_table = tt.new_table(hash_mb, abandon)
        self._table_empty = True  # nothing searched since the table was last emptied
        self.pool = ThreadPool(threads)
        self.tables = self.pool.main  # the main thread's
        self.generation = 0
        self.stop = np.zeros(1, dtype=np.int64)
        self.net: nnue.Net | None = None
        self.net16, self.net_meta = nnue.no_net()

    @property
    def threads(self) -> int:
        return self.pool.count

    def set_threads(self, threads: int) -> None:
        """Search with ``threads`` threads from the next ``think`` on (not during one)."""
        self.pool.resize(threads, 0 if self.net is None else self.net.hidden)

    def set_net(self, net: nnue.Net | None) -> None:
        """Evaluate with ``net`` (shared, read-only), or with the hand-written terms (None)."""
        self.net = net
        if net is None:
            self.net16, self.net_meta = nnue.no_net()
        else:
            self.net16, self.net_meta = net.net16, net.net_meta
        self.pool.set_net(0 if net is None else net.hidden)

    # -- table management ----------------------------------------------------------------------
    def resize(self, hash_mb: int, abandon: threading.Event | None = None) -> None:
        """A new empty table of ``hash_mb`` MB; ``abandon``: as for ``tt.new_table``."""
        self.tt_table = tt.new_table(hash_mb, abandon)
        self._table_empty = True

    def clear(self, abandon: threading.Event | None = None) -> None:
        """Forget everything learnt: ``ucinewgame`` / ``Clear Hash``.

        A table no search has written since it was last emptied is left alone, so of clears
        in a row only the first costs time (at 4 GB about half a second each).  ``abandon``
        set (``quit`` arrived) stops the clearing, and the next clear does it all again.
        """
        if not self._table_empty:
            self._table_empty = tt.clear(self.tt_table, abandon)
        self.pool.clear()
        self.generation = 0

    def hashfull(self) -> int:
        return int(tt.hashfull(self.tt_table, self.generation))

    def nodes(self) -> int:
        """The nodes of the running (or last) search, summed over its threads."""
        return self.pool.nodes()

    # -- searching -------------------------------------------------------------------------------
    def request_stop(self) -> None:
        self.stop[0] = 1

    def _window(
        self,
        position: Position,
        t: SearchTables,
        stop: Int64Array,
        depth: int,
        alpha: int,
        beta: int,
    ) -> int:
        self._table_empty = False  # the search stores what it finds
        board, stack, keys, meta = position.arrays
        net16, net_meta = self.net16, self.net_meta
        if self.net is not None:
            row = int(meta[M_PLY])
            if params.NET_PLAYS_VARIANT[int(stack[row, S_VARIANT])]:
                nnue.refresh(board, row, net16, net_meta, t.acc)
                stack[row, S_ACC] = 1
            else:
                # rules the net does not play: no accumulator is updated, none would be read
                net16, net_meta = _NO_NET
        return int(
            _search_root(
                board, stack, keys, meta, self.tt_table, t.work, stop, net16, net_meta, t.acc,
                depth, alpha, beta,
            )
        )

    def _iterate(
        self,
        position: Position,
        t: SearchTables,
        stop: Int64Array,
        depth: int,
        score: int,
        on_fail: Callable[[int, str], None] | None,
    ) -> int | None:
        """One iteration in aspiration windows around ``score`` (the last iteration's): its
        exact score, or None when the search stopped.  ``on_fail(score, bound)`` hears of each
        window the score fell outside of."""
        # Aspiration windows: search a narrow window around the last score first.
        delta = ASPIRATION_WINDOW_CP
        if depth >= ASPIRATION_MIN_DEPTH and abs(score) < MATE_BOUND:
            alpha, beta = max(score - delta, -INFINITE), min(score + delta, INFINITE)
        else:
            alpha, beta = -INFINITE, INFINITE
        while True:
            value = self._window(position, t, stop, depth, alpha, beta)
            if t.info[I_STOPPED]:
                return None
            if value <= alpha:
                bound = "upperbound"
                beta = (alpha + beta) // 2
                alpha = max(value - delta, -INFINITE)
            elif value >= beta:
                bound = "lowerbound"
                beta = min(value + delta, INFINITE)
            else:
                return value
            delta *= ASPIRATION_GROWTH
            if delta > ASPIRATION_MAX_DELTA_CP:
                alpha, beta = -INFINITE, INFINITE
            if on_fail is not None:
                on_fail(value, bound)

    def _line_text(
        self, position: Position, t: SearchTables, raw: list[int]
    ) -> tuple[list[int], tuple[str, ...]]:
        """``_pv_text`` of a root line kept as the search left it (``raw``), once the search
        is over: the table's row is free again, and it is read as then."""
        t.pv[0, : len(raw)] = raw
        t.pv_len[0] = len(raw)
        return self._pv_text(position, t)

    def _pv_text(self, position: Position, t: SearchTables) -> tuple[list[int], tuple[str, ...]]:
        """The root PV of ``t`` as moves and UCI text, checked move by move for legality.

        The line is walked on ``position`` itself and taken back, in one compiled call (a copy
        of its 2,048-ply stack, or a walk from Python, cost more than a short search:
        self-play data at a few thousand nodes).  The line is no longer than a search path,
        which the stack always has room for; ``t.moves`` is free between searches.
        """
        board, stack, keys, meta = position.arrays
        count = legal_prefix(board, stack, keys, meta, t.pv[0], int(t.pv_len[0]), t.moves)
        moves: list[int] = t.pv[0, :count].tolist()
        side, chess960 = position.side_to_move, position.chess960
        # the sides alternate along the line (castling is spelt by the side that plays it)
        texts = tuple(_uci_text(move, side ^ (i & 1), chess960) for i, move in enumerate(moves))
        return moves, texts

    def think(
        self,
        position: Position,
        limits: GoLimits,
        budget: TimeBudget,
        started_s: float,
        report: Callable[[Iteration], None] | None,
        clock_started: Callable[[], float | None] | None = None,
        shape: SearchShape = SINGLE_PV,
    ) -> SearchResult:
        """Iterative deepening until a limit; ``report`` is called after every iteration.

        With ``report`` None nobody reads the iterations (self-play data at a few thousand
        nodes a move), and none is built: the line is kept as moves while the search runs
        and spelt out once, at the end; the result is the same.

        ``position`` is searched in place and returned to its state on exit.  ``started_s`` is
        the ``time.monotonic()`` at which thinking started (for nps and the soft limit);
        ``clock_started``, when given, returns the time the clock started instead, or None
        while it has not (pondering starts it at ``ponderhit``).  A node limit is shared
        evenly between the threads that search (``shape.helpers``: all of them, else the
        main thread alone).
        """
        t = self.tables
        legal = position.legal_moves()
        if limits.searchmoves:
            allowed = []
            for text in limits.searchmoves:
                try:
                    move = position.parse_uci(text)
                except ValueError:
                    continue
                if move not in allowed:
                    allowed.append(move)
            if allowed:
                legal = allowed
        t.root_moves[: len(legal)] = legal
        t.info[I_ROOT_MOVES] = len(legal) if limits.searchmoves and legal else 0
        if not legal:
            return SearchResult(None, None, 0, 0, 0, ())
        self.generation = (self.generation + 1) % tt.GENERATION_CYCLE
        t.info[:] = 0
        t.info[I_GENERATION] = self.generation
        threads = self.threads if shape.helpers else 1
        t.info[I_NODE_LIMIT] = -(-(limits.nodes or 0) // threads)  # rounded up
        t.info[I_ROOT_MOVES] = len(legal) if limits.searchmoves and legal else 0
        t.pv_len.fill(0)
        max_depth = min(limits.depth or MAX_DEPTH, MAX_DEPTH)
        if limits.mate is not None:  # deeper than this a mate in ``mate`` is not looked for
            max_depth = min(max_depth, 2 * limits.mate + MATE_SEARCH_EXTRA_PLIES)
        helper_lines: list[ThreadLine] = []
        if shape.helpers:
            helper_lines = self.pool.start(position, functools.partial(self._help, max_depth))
        else:
            for helper in self.pool.helpers:  # idle: their last counts are not this search's
                helper.info[I_NODES] = 0
        try:
            line = self._deepen(
                position, limits, budget, started_s, report, clock_started, legal, max_depth,
                shape,
            )
        finally:
            self.pool.stop()
        # with several lines, bestmove is line 1 by definition: the helpers search one line
        best = chosen_line(line, helper_lines) if len(line.lines) <= 1 else line
        if best is not line and report is not None:
            report(self._iteration(best.depth, best.score, "", started_s, best.texts))
        lines = line.lines if best is line and line.lines else (RootLine(best.score, best.texts),)
        ponder = best.texts[1] if len(best.texts) > 1 else None
        return SearchResult(
            best.texts[0], ponder, best.score, best.depth, self.nodes(), best.texts, best.thread,
            lines,
        )

    def _deepen(
        self,
        position: Position,
        limits: GoLimits,
        budget: TimeBudget,
        started_s: float,
        report: Callable[[Iteration], None] | None,
        clock_started: Callable[[], float | None] | None,
        legal: list[int],
        max_depth: int,
        shape: SearchShape,
    ) -> ThreadLine:
        """The main thread's iterative deepening: it reports, and it decides when to stop.

        With ``shape.multipv`` above one, each depth searches line k on the root less the
        first moves of lines 1 .. k-1 (through the root move list, as ``searchmoves``), each
        line in its own aspiration window around its own last score; the lines are reported
        best first once the depth is complete.
        """
        t = self.tables
        iteration_clock = IterationClock(budget)
        best = ThreadLine([legal[0]], (position.move_to_uci(legal[0]),))
        wanted = max(1, min(shape.multipv, len(legal)))
        line_scores = [0] * wanted  # each line's last score: the centre of its next window
        node_limit = int(t.info[I_NODE_LIMIT])
        if shape.whole_first_depth:
            t.info[I_NODE_LIMIT] = 0  # depth 1 always ends: every line gets a score
        searching = [0]  # the line being searched, 0 the first
        # Nobody listening to one line: each line is kept as the search left it (its first
        # move, a legal root move, is all the deepening reads) and spelt out at the end.
        # Walking it for legality and spelling it after every iteration and window cost
        # about a tenth of self-play's time at a few thousand nodes a move.
        quiet = report is None and wanted == 1
        completed: list[int] = best.moves  # quiet: the line of the last completed depth

        def read_line() -> tuple[list[int], tuple[str, ...]]:
            if quiet:
                return t.pv[0, : int(t.pv_len[0])].tolist(), ()
            return self._pv_text(position, t)

        def on_fail(value: int, bound: str) -> None:
            if searching[0] > 0:
                return  # only the first line's bounds are worth a line of their own
            if quiet and not (bound == "lowerbound" and t.info[I_ROOT_UPDATED]):
                return
            # the line is read once, for the best move and the info line alike
            moves, texts = read_line()
            if bound == "lowerbound" and t.info[I_ROOT_UPDATED]:
                best.moves, best.texts = moves, texts
            if report is not None:
                report(self._iteration(int(t.info[I_ITERATION]), value, bound, started_s,
                                       texts))

        score = 0
        for depth in range(1, max_depth + 1):
            t.info[I_ITERATION] = depth
            t.info[I_SELDEPTH] = 0
            searching[0] = 0
            if wanted > 1:
                self._restrict_root(t, legal, ())
            value = self._iterate(position, t, self.stop, depth, line_scores[0], on_fail)
            if value is None:  # stopped
                if t.info[I_ROOT_UPDATED]:
                    moves, texts = read_line()
                    if moves:
                        best.moves, best.texts = moves, texts
                break
            score = value
            moves, texts = read_line()
            if wanted == 1:
                line_scores[0] = score
                if moves:
                    best.moves, best.texts = moves, texts
                best.score, best.depth = score, depth
                if quiet:
                    completed = best.moves
                else:
                    best.lines = (RootLine(score, best.texts),)
                if report is not None:
                    report(self._iteration(depth, score, "", started_s, texts))
            else:
                found = self._other_lines(position, t, legal, depth, line_scores, searching,
                                          (score, moves, texts))
                if found is None:
                    break  # stopped inside the depth: the last complete depth's lines stand
                score, moves, texts = found[0].score, found[0].moves, found[0].texts
                if moves:
                    best.moves, best.texts = moves, texts
                best.score, best.depth = score, depth
                best.lines = tuple(RootLine(line.score, line.texts) for line in found)
                for rank, line in enumerate(found, start=1):
                    if report is not None:
                        report(replace(
                            self._iteration(depth, line.score, "", started_s, line.texts),
                            multipv=rank,
                        ))
            iteration_clock.record_iteration(best.moves[0])
            if depth == 1 and shape.whole_first_depth:
                t.info[I_NODE_LIMIT] = node_limit
                if 0 < node_limit <= t.info[I_NODES]:
                    break  # the budget went on depth 1
            if limits.mate is not None and score >= MATE - 2 * limits.mate + 1:
                break
            if abs(score) >= MATE_BOUND and depth >= MATE - abs(score) + 2:
                break  # a forced mate found with plies to spare; deeper search adds nothing
            if len(legal) == 1 and budget.limited and depth >= SINGLE_MOVE_DEPTH:
                break  # the only move: no reason to spend the clock
            origin = clock_started() if clock_started is not None else started_s
            if origin is not None and not iteration_clock.may_start_iteration(
                (time.monotonic() - origin) * 1000
            ):
                break
            if self.stop[0]:
                break
        if quiet:
            kept = best.moves
            best.moves, best.texts = self._line_text(position, t, kept)
            if best.depth > 0:
                texts = best.texts if completed is kept else self._line_text(
                    position, t, completed)[1]
                best.lines = (RootLine(best.score, texts),)
        return best

    @staticmethod
    def _restrict_root(t: SearchTables, legal: list[int], excluded: tuple[int, ...]) -> int:
        """Search the root on ``legal`` less ``excluded``; how many moves remain."""
        allowed = [move for move in legal if move not in excluded]
        t.root_moves[: len(allowed)] = allowed
        t.info[I_ROOT_MOVES] = len(allowed)
        return len(allowed)

    def _other_lines(
        self,
        position: Position,
        t: SearchTables,
        legal: list[int],
        depth: int,
        line_scores: list[int],
        searching: list[int],
        first: tuple[int, list[int], tuple[str, ...]],
    ) -> list[ThreadLine] | None:
        """Lines 2 .. n of ``depth`` after the first (``first``: its score, moves, text),
        sorted best first with it; None when the search stopped before the last one."""
        score, moves, texts = first
        found = [ThreadLine(moves, texts, score, depth)]
        line_scores[0] = score
        excluded: tuple[int, ...] = (moves[0],) if moves else ()
        for k in range(1, len(line_scores)):
            searching[0] = k
            if not moves or self._restrict_root(t, legal, excluded) == 0:
                break
            value = self._iterate(position, t, self.stop, depth, line_scores[k], None)
            if value is None:
                return None
            moves, texts = self._pv_text(position, t)
            line_scores[k] = value
            found.append(ThreadLine(moves, texts, value, depth))
            excluded = (*excluded, moves[0]) if moves else excluded
        found.sort(key=lambda line: -line.score)  # stable: ties keep the search's order
        for k, line in enumerate(found):
            line_scores[k] = line.score
        return found

    # -- helper threads ------------------------------------------------------------------------
    def _help(
        self, max_depth: int, index: int, t: SearchTables, position: Position, line: ThreadLine
    ) -> None:
        """A helper's iterative deepening, until the main thread stops it or ``max_depth``."""
        score = 0
        for depth in range(1, max_depth + 1):
            if skips_depth(index, depth):
                continue
            t.info[I_ITERATION] = depth
            t.info[I_SELDEPTH] = 0
            value = self._iterate(position, t, self.pool.stop_flag, depth, score, None)
            if value is None:
                return
            score = value
            moves, texts = self._pv_text(position, t)
            if moves:
                line.moves, line.texts, line.score, line.depth = moves, texts, score, depth
            if self.pool.stop_flag[0]:
                return

    def _iteration(
        self, depth: int, score: int, bound: str, started_s: float, texts: tuple[str, ...]
    ) -> Iteration:
        """The info of an iteration whose principal variation reads ``texts``."""
        t = self.tables
        return Iteration(
            depth=depth,
            seldepth=max(int(t.info[I_SELDEPTH]), depth),
            score=score,
            bound=bound,
            nodes=self.nodes(),
            time_ms=int((time.monotonic() - started_s) * 1000),
            hashfull=self.hashfull(),
            pv=texts,
        )


# castling, en passant, promotions, checks and captures all occur within a few plies of this
WARM_UP_FEN = "r3k2r/pPp1qppp/2n2n2/3pP3/1b4b1/2N2N2/PP1Q1PPP/R3K2R w KQkq d6 0 1"


def warm_up(net: nnue.Net | None = None) -> None:
    """Compile (or load from the cache) every function a search uses, on a tiny search; with
    ``net``, on a second one with it, for the net's own entry points (``nnue.refresh``): an
    engine host that forks the games loads them once for all of them, where each game would
    otherwise load its own copy of their machine code (about 12 MB a game)."""
    lines: list[str] = []  # the info lines are built too, so their code is loaded now
    # ``position ... moves ...`` makes its moves from Python, with other argument types than
    # the search's: unwarmed, a new build's first game compiled them on its second move's
    # clock (and lost on time at 2 s)
    position = Position.from_fen(WARM_UP_FEN)
    position.push_uci(position.move_to_uci(position.legal_moves()[0]))
    position.pop()
    for each in (None, net) if net is not None else (None,):
        position = Position.from_fen(WARM_UP_FEN)
        searcher = Searcher(1)
        searcher.set_net(each)
        searcher.think(position, GoLimits(depth=4), TimeBudget(None, None), time.monotonic(),
                       lambda iteration: lines.append(iteration.uci()))
        searcher.clear()

