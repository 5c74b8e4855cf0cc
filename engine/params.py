"""Every tunable of the search, evaluation and time management, in one place.

Scores are centipawns from the side to move's point of view.  Module-level ints are frozen into
the compiled code by numba, so a change here means a recompile (the cache notices the edit).
"""

from __future__ import annotations

# --- score scale -----------------------------------------------------------------------------
INFINITE = 32001
MATE = 32000  # mated at the root would be -MATE; mate in n plies is MATE - n
MAX_PLY = 128
MATE_BOUND = MATE - MAX_PLY  # any |score| >= this is a mate score
DRAW_SCORE = 0

# --- iterative deepening / aspiration windows ------------------------------------------------
MAX_DEPTH = 100
ASPIRATION_MIN_DEPTH = 5  # shallower iterations use a full window
ASPIRATION_WINDOW_CP = 25  # initial half-width around the previous score
ASPIRATION_GROWTH = 2  # the window widens by this factor after each fail

# --- pruning and reductions ------------------------------------------------------------------
NULL_MOVE_MIN_DEPTH = 3
NULL_MOVE_BASE_REDUCTION = 3  # R = base + depth // divisor
NULL_MOVE_DEPTH_DIVISOR = 4
LMR_MIN_DEPTH = 3
LMR_FULL_DEPTH_MOVES = 3  # the first moves of a node are searched at full depth
LMR_BASE = 0.75  # reduction = base + ln(depth) * ln(move number) / divisor
LMR_DIVISOR = 2.25
REVERSE_FUTILITY_MAX_DEPTH = 6  # static eval - margin * depth >= beta: fail high
REVERSE_FUTILITY_MARGIN_CP = 90
FUTILITY_MAX_DEPTH = 3  # quiet moves skipped when eval + margin * depth <= alpha
FUTILITY_MARGIN_CP = 110
LATE_MOVE_PRUNING_BASE = 4  # quiet moves beyond base + depth^2 skipped at low depth
LATE_MOVE_PRUNING_MAX_DEPTH = 4
DELTA_MARGIN_CP = 200  # quiescence: skip captures that cannot lift the score to alpha
LAZY_MARGIN_CP = 400  # quiescence: material alone this far above beta is a cutoff
IIR_MIN_DEPTH = 4  # internal iterative reduction without a hash move
SEE_PRUNING_MAX_DEPTH = 3  # losing captures are not searched at this depth or below
RAZOR_MAX_DEPTH = 2  # razoring: static eval + margin * depth below alpha -> quiescence
RAZOR_MARGIN_CP = 250
LMR_HISTORY_DIVISOR = 6000  # history score worth one ply less (or more) reduction

# --- evaluation (centipawns; _MG middle game, _EG end game) ------------------------------
TEMPO = 10  # bonus for the side to move
BISHOP_PAIR_MG = 30
BISHOP_PAIR_EG = 50
ROOK_OPEN_FILE_MG = 25
ROOK_OPEN_FILE_EG = 10
ROOK_SEMI_OPEN_FILE_MG = 12
ROOK_SEMI_OPEN_FILE_EG = 6
DOUBLED_PAWN_MG = 10
DOUBLED_PAWN_EG = 20
ISOLATED_PAWN_MG = 10
ISOLATED_PAWN_EG = 12
SHIELD_CLOSE = 12  # own pawn right in front of the king
SHIELD_FAR = 6  # own pawn two squares in front
SHIELD_MISSING = 12  # no own pawn on a shield file
KING_ATTACK_SCALE = 1  # penalty = weight^2 * scale / 16, with a queen and two attackers
KING_ATTACK_MAX = 400
DRAWISH_DIVISOR = 4  # no pawns and at most a minor piece ahead: the score shrinks

# --- move ordering ---------------------------------------------------------------------------
HISTORY_MAX = 16384  # history scores are kept within +-HISTORY_MAX
SCORE_HASH_MOVE = 1 << 30
SCORE_GOOD_CAPTURE = 1 << 28
SCORE_KILLER_1 = 1 << 27
SCORE_KILLER_2 = (1 << 27) - 1
SCORE_COUNTER = (1 << 27) - 2
SCORE_BAD_CAPTURE = -(1 << 28)

# --- search plumbing -------------------------------------------------------------------------
STOP_CHECK_NODES = 1023  # the stop flag and node limit are read every 1024 nodes

# --- time management (milliseconds) ----------------------------------------------------------
DEFAULT_MOVE_OVERHEAD_MS = 30
MOVES_TO_GO_DEFAULT = 30  # the horizon assumed in sudden-death time controls
INCREMENT_SHARE = 0.75  # the part of each increment spent on the current move
SOFT_SHARE = 1.0  # soft limit = SOFT_SHARE * the average per-move time
HARD_MULTIPLIER = 4.0  # hard limit = soft limit * HARD_MULTIPLIER ...
HARD_MAX_SHARE = 0.3  # ... but never more than this share of the remaining clock
HARD_MAX_SHARE_LAST_MOVE = 0.8  # with movestogo 1 the clock is refilled after this move
MIN_THINK_MS = 1
CLOCK_SAFETY_MS = 15  # kept back on every move beyond the move overhead
STABILITY_SCALE_MIN = 0.9  # soft limit factor when the best move never changes
INSTABILITY_WEIGHT = 0.8  # added to the factor per (decayed) best-move change
INSTABILITY_SCALE_MAX = 2.0  # soft limit factor when the best move keeps changing
NEXT_ITERATION_SHARE = 0.6  # the next iteration takes about as long as all before it
