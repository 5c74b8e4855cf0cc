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
ASPIRATION_MAX_DELTA_CP = 1000  # beyond this the window opens fully
SINGLE_MOVE_DEPTH = 6  # with one legal move and a clock, stop after this depth
MATE_SEARCH_EXTRA_PLIES = 4  # go mate N searches at most 2N + this many plies deep

# --- pruning and reductions ------------------------------------------------------------------
NULL_MOVE_MIN_DEPTH = 3
NULL_MOVE_BASE_REDUCTION = 3  # R = base + depth // divisor
NULL_MOVE_DEPTH_DIVISOR = 4
NULL_MOVE_EVAL_DIVISOR_CP = 200  # one more ply of reduction per this much eval above beta ...
NULL_MOVE_EVAL_MAX_EXTRA = 3  # ... up to this many plies
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
# Quiescence: material alone this far above beta is a cutoff.  Measured over 59,860 positions
# (the EPD suites in tests/data and random capture-rich playouts from them): the full
# evaluation differs from material by 229 cp at the 99th percentile, 319 at the 99.99th, and
# by more than 400 in one position (412); the rare 600 cp case costs less than a wider margin.
LAZY_MARGIN_CP = 400
IIR_MIN_DEPTH = 4  # internal iterative reduction without a hash move
SEE_PRUNING_MAX_DEPTH = 3  # losing captures are not searched at this depth or below
RAZOR_MAX_DEPTH = 2  # razoring: static eval + margin * depth below alpha -> quiescence
RAZOR_MARGIN_CP = 250
LMR_HISTORY_DIVISOR = 6000  # history score (butterfly + both continuations) worth one ply ...
LMR_HISTORY_MAX_PLIES = 2  # ... less (or more) reduction, at most this many plies
# Continuation history pruning, indexed by `improving` (0 / 1): at this depth or below a quiet
# move is skipped when its entry after the opponent's last move (counter) or after our own move
# before it (follow-up) is below the limit.
CONT_PRUNING_MAX_DEPTH = (3, 2)
COUNTER_HISTORY_LIMIT = (0, -1000)
FOLLOW_UP_HISTORY_LIMIT = (-2000, -4000)

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
# Two knights against a bare king cannot force mate (Stockfish scores KNNK a draw); what is
# left of the score keeps the knights on the board for a defender's blunder.
TWO_KNIGHTS_DIVISOR = 16
# By piece type (none, pawn, knight, bishop, rook, queen, king):
KING_ATTACK_WEIGHT = (0, 0, 2, 2, 3, 5, 0)  # per attacked square next to the enemy king
MOBILITY_MG = (0, 0, 4, 5, 2, 1, 0)  # per target square beyond MOBILITY_BASE
MOBILITY_EG = (0, 0, 4, 5, 4, 2, 0)
MOBILITY_BASE = (0, 0, 4, 6, 6, 12, 0)  # a typical number of target squares
# Threats (the attacker's side gains): a knight, bishop, rook or queen attacked by an enemy
# pawn; a rook or a queen attacked by a knight or bishop; a queen attacked by a rook.
THREAT_BY_PAWN_MG = 60
THREAT_BY_PAWN_EG = 40
THREAT_BY_MINOR_ON_ROOK_MG = 45
THREAT_BY_MINOR_ON_ROOK_EG = 35
THREAT_BY_MINOR_ON_QUEEN_MG = 50
THREAT_BY_MINOR_ON_QUEEN_EG = 80
THREAT_BY_ROOK_ON_QUEEN_MG = 45
THREAT_BY_ROOK_ON_QUEEN_EG = 35
# By relative rank of a passed pawn (0 = own first rank):
PASSED_MG = (0, 5, 10, 15, 30, 55, 90, 0)
PASSED_EG = (0, 10, 15, 25, 45, 75, 120, 0)
# End game: per king step from the square in front of a passed pawn (enemy king far is good,
# own king near is good), times (relative rank - PASSED_KING_MIN_RANK + 1).
PASSED_KING_MIN_RANK = 3
PASSED_ENEMY_KING_EG = 5
PASSED_OWN_KING_EG = 2

# --- learned evaluation ----------------------------------------------------------------------
# The net the engine plays chess with unless ``EvalFile`` says otherwise: a bare file name is
# looked up in ``engine/nets/`` (shipped with the package); "" is the hand-written evaluation.
DEFAULT_EVAL_FILE = "kibitz-16.nnue"
# The rules a loaded net plays, by VARIANT_* code (chess, three-check, king of the hill); the
# others keep the hand-written evaluation.  In a variant the net (trained on chess) would score
# the pieces and get the variant's own term below.  Measured with kibitz-2 against the
# hand-written evaluation at 2 s + 0.02 s from the generated book: three-check 208 games
# +78 -125 =5 (-80 Elo, 95% -130 .. -33), king of the hill 147 games +46 -88 =13 (-102 Elo,
# -161 .. -48).  A net trained on chess misjudges checks and king walks, so variants stay
# hand-written.
NET_PLAYS_VARIANT = (True, False, False)

# --- move ordering ---------------------------------------------------------------------------
HISTORY_MAX = 16384  # history scores are kept within +-HISTORY_MAX
# A cutoff at depth d moves its histories by HISTORY_MULTIPLIER * min(d^2, HISTORY_BONUS_MAX)
# towards +-HISTORY_MAX (gravity): an update at depth 8 goes an eighth of the way, so the
# tables follow the game within a few searches.  Ethereal's rate, and the scale its pruning
# and reduction limits above were set for.
HISTORY_MULTIPLIER = 32
HISTORY_BONUS_MAX = 400
SCORE_HASH_MOVE = 1 << 30
SCORE_GOOD_CAPTURE = 1 << 28
SCORE_KILLER_1 = 1 << 27
SCORE_KILLER_2 = (1 << 27) - 1
SCORE_COUNTER = (1 << 27) - 2
SCORE_BAD_CAPTURE = -(1 << 28)
CAPTURE_VICTIM_WEIGHT = 64  # a capture's key: victim value * this + its capture history

# --- caches ---------------------------------------------------------------------------------
TT_AGE_WEIGHT = 8  # replacement: a search of age costs a table entry this many plies of depth
# replacement: a non-exact result does not overwrite a bound of the same position from this
# search that is more than this many plies deeper (Ethereal's rule); a nearer one is replaced
# so its new best move is kept
TT_KEEP_DEPTH_MARGIN = 2
EVAL_CACHE_ENTRIES_LOG2 = 16  # evaluation cache: 2**16 words of 8 bytes (512 KB) per searcher
PAWN_CACHE_ENTRIES_LOG2 = 10  # pawn structure cache: 2**10 entries of 64 bytes (64 KB) per searcher

# --- variants (evaluation terms, white minus black, added only in their variant) ---------------
# Three-check: by the number of checks a side has given (0-2; the third wins outright).
THREE_CHECK_GIVEN_CP = (0, 120, 350)
# King of the hill: by the king's distance in king steps to the nearest hill square (d4, e4,
# d5, e5; 0 has won outright).
HILL_KING_DISTANCE_CP = (0, 120, 50, 15)

# --- search plumbing -------------------------------------------------------------------------
# attack tests walk the attacker's pieces instead of the rays from the square when it has at
# most this many (kings and pawns counted): on an open board of an ending the rays are long
SPARSE_ATTACK_MAX_PIECES = 6
STOP_CHECK_NODES = 1023  # the stop flag and node limit are read every 1024 nodes

# --- threads (Lazy SMP) ----------------------------------------------------------------------
DEFAULT_THREADS = 1
# Helper thread i (1, 2, ...) skips the iterations whose depth d has an odd
# (d + SMP_SKIP_PHASE[k]) // SMP_SKIP_SIZE[k], k = (i - 1) % 20: the helpers spread over the
# depths around the main thread's instead of all searching the same tree (Stockfish 10's table).
SMP_SKIP_SIZE = (1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4)
SMP_SKIP_PHASE = (0, 1, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 6, 7)

# --- time management (milliseconds) ----------------------------------------------------------
DEFAULT_MOVE_OVERHEAD_MS = 30
MOVES_TO_GO_DEFAULT = 30  # the horizon assumed in sudden-death time controls
# No iteration starts after NEXT_ITERATION_SHARE of the soft limit, and a stable best move
# shrinks it further, so with a soft limit of one share a move used well under its share and
# the clock ended the game still full: 1.6 shares spend it (+17 Elo at 2 s + 0.02 s).
SOFT_SHARE = 1.6  # soft limit = SOFT_SHARE * the average per-move time
HARD_MULTIPLIER = 4.0  # hard limit = soft limit * HARD_MULTIPLIER ...
HARD_MAX_SHARE = 0.3  # ... but never more than this share of the remaining clock
HARD_MAX_SHARE_LAST_MOVE = 0.5  # with movestogo 1 the clock is refilled after this move, but
# lag and the GUI's own time come out of the same clock: half of it stays for them
MOVETIME_OVERHEAD_SHARE = 0.1  # go movetime: at most this share is kept back for overhead
MIN_THINK_MS = 1
CLOCK_SAFETY_MS = 15  # kept back on every move beyond the move overhead
STABILITY_SCALE_MIN = 0.9  # soft limit factor when the best move never changes
INSTABILITY_WEIGHT = 0.8  # added to the factor per (decayed) best-move change
INSTABILITY_DECAY = 0.5  # each iteration keeps this share of the earlier changes' weight
INSTABILITY_SCALE_MAX = 2.0  # soft limit factor when the best move keeps changing
NEXT_ITERATION_SHARE = 0.6  # the next iteration takes about as long as all before it
