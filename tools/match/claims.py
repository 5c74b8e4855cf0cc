"""Who saw a game's advantage first: the engines' own scores in a match's PGN.

A match's PGN carries every move's score as its mover saw it (``+0.31/15 0.523s``,
``tools.common.referee.move_comment``).  In each game this tool finds the first move at which
either engine claimed an advantage of ``--cp`` or more for itself, and sets the claims beside
the results: which engine claimed first how often, how often the claim came true, and, when
the opponent claimed first, at which move, with how many pieces on the board, whether the
claiming side was ahead in material (a count in pawns: a claim with the material level is one
of judgement; one behind is often an exchange half made), and what the engine thought of the
same position one ply before.  Against a stronger engine this shows
where the games are decided and whose judgement of them was the better one: an evaluation
that sees its advantages late, or sees ones that are not there, shows in these rows before it
shows in a score::

    python -m tools.match.claims match.pgn [--engine kibitz-12] [--cp 100]

The engine is the first game's white player unless ``--engine`` names it.  A mate score is a
claim whatever ``--cp`` is.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import chess
import chess.pgn

from tools.common.material import material_balance
from tools.common.referee import read_move_comment
from tools.match.sprt_pool import RESULT_POINTS, first_engine_points

PIECE_BANDS = ((25, 32), (17, 24), (9, 16), (2, 8))  # pieces on the board, kings included


@dataclass(frozen=True)
class Claim:
    """The first move at which one side scored itself ``cp`` or more."""

    cp: float  # the claiming engine's score of its own move (inf for a mate)
    ply: int  # of the game's record, from its start position (0 = the first move recorded)
    fullmove: int  # the board's move number at the claim
    pieces: int  # on the board before the claiming move, kings included
    other_cp: float | None  # the other engine's score of its own last move before, if any
    fen: str  # the position the claiming engine scored, before its move
    material: int  # the claiming side's material less the other's, in pawns (material_balance)


@dataclass(frozen=True)
class GameClaims:
    opponent: str  # the engine's opponent's name
    points: float  # the engine's
    engine_first: Claim | None
    opponent_first: Claim | None

    @property
    def first(self) -> str:
        """'engine', 'opponent' or 'neither': who claimed first."""
        if self.engine_first is None and self.opponent_first is None:
            return "neither"
        if self.opponent_first is None:
            return "engine"
        if self.engine_first is None:
            return "opponent"
        return "engine" if self.engine_first.ply < self.opponent_first.ply else "opponent"


def parse_score_cp(comment: str) -> float | None:
    """The mover's score in centipawns of its own view (+-inf for a mate), or None."""
    found = read_move_comment(comment)
    return None if found is None else found.score_cp


def game_claims(game: chess.pgn.Game, engine: str, cp: float) -> GameClaims | None:
    """The claims of one game in which ``engine`` played, or None (another pairing, or a game
    without a result)."""
    white, black = game.headers.get("White", ""), game.headers.get("Black", "")
    result = game.headers.get("Result", "*")
    if engine not in (white, black) or result not in RESULT_POINTS:
        return None
    engine_colour = chess.WHITE if white == engine else chess.BLACK
    points = first_engine_points("white" if engine_colour == chess.WHITE else "black", result)
    board = game.board()
    last: dict[bool, float | None] = {True: None, False: None}  # by "the engine moved"
    first: dict[bool, Claim | None] = {True: None, False: None}
    for ply, node in enumerate(game.mainline()):
        engine_moved = board.turn == engine_colour
        score = parse_score_cp(node.comment)
        if score is not None:
            if score >= cp and first[engine_moved] is None:
                first[engine_moved] = Claim(score, ply, board.fullmove_number,
                                            len(board.piece_map()),
                                            last[not engine_moved], board.fen(),
                                            material_balance(board))
            last[engine_moved] = score
        board.push(node.move)
    return GameClaims(black if engine_colour == chess.WHITE else white, points, first[True],
                      first[False])


def read_claims(pgn: TextIO, engine: str | None, cp: float) -> tuple[str, list[GameClaims]]:
    """The engine's name (the first game's white player unless given) and its games' claims."""
    games: list[GameClaims] = []
    while (game := chess.pgn.read_game(pgn)) is not None:
        if engine is None:
            engine = game.headers.get("White", "")
        claims = game_claims(game, engine, cp)
        if claims is not None:
            games.append(claims)
    if engine is None:
        raise ValueError("no game in the PGN")
    return engine, games


def _tally(games: Sequence[GameClaims]) -> str:
    wins = sum(1 for g in games if g.points == 1.0)
    losses = sum(1 for g in games if g.points == 0.0)
    draws = len(games) - wins - losses
    share = f"{100 * sum(g.points for g in games) / len(games):5.1f}%" if games else "    -"
    return f"{len(games):4d} games  +{wins} ={draws} -{losses}  {share}"


def _signed_pawns(cp: float) -> str:
    if math.isinf(cp):
        return "+M" if cp > 0 else "-M"
    return f"{cp / 100:+.2f}"


def report(engine: str, games: Sequence[GameClaims], cp: float, opponent: str = "opponent"
           ) -> list[str]:
    """The table ``main`` prints."""
    if not games:
        return [f"no finished game of {engine}"]
    points = sum(g.points for g in games)
    lines = [f"{engine}: {points:g}/{len(games)}, {100 * points / len(games):.1f}%",
             f"first to claim {_signed_pawns(cp)} or more for itself, and {engine}'s results "
             "in those games:"]
    by_first = {who: [g for g in games if g.first == who]
                for who in ("engine", "opponent", "neither")}
    width = max(len(engine), len(opponent), len("neither"))
    lines += [f"  {engine:{width}s} {_tally(by_first['engine'])}",
              f"  {opponent:{width}s} {_tally(by_first['opponent'])}",
              f"  {'neither':{width}s} {_tally(by_first['neither'])}"]
    claims = [g.opponent_first for g in by_first["opponent"] if g.opponent_first is not None]
    if claims:
        own = [c.other_cp for c in claims if c.other_cp is not None]
        own_text = (f"; {engine}'s own score one ply before: median "
                    f"{_signed_pawns(statistics.median(own))}" if own else "")
        move = statistics.median(c.fullmove for c in claims)
        pieces = statistics.median(c.pieces for c in claims)
        lines.append(f"when {opponent} claimed first: move {move:g}, {pieces:g} pieces "
                     f"(medians){own_text}")
        bands = "  ".join(
            f"{low}-{high}: {sum(1 for c in claims if low <= c.pieces <= high)}"
            for low, high in PIECE_BANDS)
        lines.append(f"  pieces at the claim  {bands}")
        level = sum(1 for c in claims if c.material == 0)
        ahead = sum(1 for c in claims if c.material > 0)
        lines.append(f"  material at the claim, the claimer's  level: {level}  ahead: {ahead}  "
                     f"behind: {len(claims) - level - ahead}")
    return lines


def claim_epd(claim: Claim, claimer: str, other: str) -> str:
    """The claimed position as an EPD line, both engines' scores in its comments."""
    board = chess.Board(claim.fen)
    if claim.other_cp is None:
        return board.epd(c0=f"{claimer} {_signed_pawns(claim.cp)}")
    return board.epd(c0=f"{claimer} {_signed_pawns(claim.cp)}",
                     c1=f"{other} {_signed_pawns(claim.other_cp)} one ply before")


def opponent_name(games: Sequence[GameClaims]) -> str:
    """The name the engine's opponents go by, if only one; else 'opponent'."""
    names = {g.opponent for g in games}
    return names.pop() if len(names) == 1 else "opponent"


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.match.claims",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("pgn", type=Path, help="a match's PGN (tools.match --pgn)")
    parser.add_argument("--engine", help="the engine's name in the PGN (default: the first "
                        "game's white player)")
    parser.add_argument("--cp", type=float, default=100.0,
                        help="the advantage a claim needs, in centipawns (100)")
    parser.add_argument("--epd", type=Path, help="write the positions the opponent claimed "
                        "first to this EPD file, both engines' scores in its comments")
    args = parser.parse_args(None if argv is None else list(argv))
    if args.cp <= 0:
        parser.error(f"--cp must be above 0, got {args.cp:g}")
    try:
        with args.pgn.open() as pgn:
            engine, games = read_claims(pgn, args.engine, args.cp)
    except OSError as error:
        print(f"{args.pgn}: {error.strerror}", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"{args.pgn}: {error}", file=sys.stderr)
        return 2
    opponent = opponent_name(games)
    print("\n".join(report(engine, games, args.cp, opponent)))
    if args.epd is not None:
        lines = [claim_epd(g.opponent_first, g.opponent, engine) for g in games
                 if g.first == "opponent" and g.opponent_first is not None]
        args.epd.write_text("".join(line + "\n" for line in lines))
        print(f"{len(lines)} positions written to {args.epd}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
