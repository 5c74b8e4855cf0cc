"""Lichess's variants: their keys, their PGN names, and python-chess's board for each.

The keys are lila's (`chess.variant.Variant.key` in scalachess); the board classes carry the
rules (legal moves, SAN, game end), the names an engine knows the variant by (`uci_variant`,
`xboard_variant`), and the Syzygy suffixes. Lichess's antichess is python-chess's
`AntichessBoard` (giveaway without castling), which Fairy-Stockfish calls `antichess` too;
its `giveaway` allows castling and is not Lichess's rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

import chess
import chess.variant

# Standard rules, with any rook file castling in chess960 and set-up positions.
STANDARD_RULES: Final = ("standard", "chess960", "fromPosition")
# Variants with rules of their own (lila's keys).
RULE_VARIANTS: Final = ("antichess", "atomic", "crazyhouse", "horde", "kingOfTheHill",
                        "racingKings", "threeCheck")
LICHESS_VARIANTS: Final = STANDARD_RULES + RULE_VARIANTS

BOARDS: Final[Mapping[str, type[chess.Board]]] = MappingProxyType({
    "standard": chess.Board,
    "chess960": chess.Board,
    "fromPosition": chess.Board,
    "antichess": chess.variant.AntichessBoard,
    "atomic": chess.variant.AtomicBoard,
    "crazyhouse": chess.variant.CrazyhouseBoard,
    "horde": chess.variant.HordeBoard,
    "kingOfTheHill": chess.variant.KingOfTheHillBoard,
    "racingKings": chess.variant.RacingKingsBoard,
    "threeCheck": chess.variant.ThreeCheckBoard,
})

# The `Variant` PGN tag Lichess writes (lila chess.variant.Variant.name).
PGN_NAMES: Final[Mapping[str, str]] = MappingProxyType({
    "standard": "Standard",
    "chess960": "Chess960",
    "fromPosition": "From Position",
    "antichess": "Antichess",
    "atomic": "Atomic",
    "crazyhouse": "Crazyhouse",
    "horde": "Horde",
    "kingOfTheHill": "King of the Hill",
    "racingKings": "Racing Kings",
    "threeCheck": "Three-check",
})

# Lichess sends "startpos" for a game from its variant's own start position.
STARTPOS: Final = "startpos"


def board_class(variant: str) -> type[chess.Board]:
    """python-chess's board for a Lichess variant key; ValueError names an unknown key."""
    try:
        return BOARDS[variant]
    except KeyError:
        raise ValueError(f"unknown variant {variant!r}: Lichess's variants are "
                         f"{', '.join(LICHESS_VARIANTS)}") from None


def new_board(variant: str, initial_fen: str = STARTPOS) -> chess.Board:
    """The start position of a game: the variant's own (horde's, racing kings', ...) for
    "startpos", else the FEN; chess960 mode for chess960 and set-up positions (castling
    rights of any rook file), so both castling notations are understood."""
    cls = board_class(variant)
    chess960 = variant in ("chess960", "fromPosition")
    if not initial_fen or initial_fen == STARTPOS:
        return cls(chess960=chess960)
    return cls(initial_fen, chess960=chess960)


def engine_variants(declared: frozenset[str] | None, *, xboard: bool = False) -> frozenset[str]:
    """The Lichess variants an engine plays, from the names it declares (UCI: `UCI_Variant`'s
    values; XBoard: `feature variants`). A UCI engine that declares none plays standard rules,
    chess960 castling included (it is told by `UCI_Chess960`); an XBoard engine plays chess960
    and set-up positions (sent as `variant fischerandom`) only when it declares
    `fischerandom`."""
    names = declared or frozenset()
    if xboard:
        played = {"standard"} | ({"chess960", "fromPosition"} if "fischerandom" in names
                                 else set())
        played |= {key for key in RULE_VARIANTS if BOARDS[key].xboard_variant in names}
    else:
        played = set(STANDARD_RULES)
        played |= {key for key in RULE_VARIANTS if BOARDS[key].uci_variant in names}
    return frozenset(played)
