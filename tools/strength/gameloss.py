"""Where each player of a match lost its games: centipawn loss by phase over game records.

``tools.strength.cploss`` measures a level over fixed middlegames; a match against a stronger
engine asks another question: in which part of the game does the engine give away what it
loses?  Every move of the games (after the opening's own moves) is scored as cploss scores a
move (the reference's best move and the move played, each searched to the same depth from the
same root, both capped at ``CAP_CP``), and the losses are summed up by player and by phase.
The phase is the material on the board, counted as the engine counts its game phase
(knights and bishops 1, rooks 2, queens 4: 24 with every piece on the board):
``PHASES`` names the ranges.  A game adjudicated or decided early is scored as far as it
went.  The reference's cache is cploss's, so a rerun costs nothing.  Where the records carry
the match tool's move comments (``+0.31/15 0.523s``: score, depth, time), each row also gives
the player's mean time and depth a move: where an engine spends its clock.

    python -m tools.strength.gameloss /tmp/match.pgn --depth 10
    python -m tools.strength.gameloss /tmp/match.pgn --games 40 --player kibitz
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.pgn

from tools.common.engines import resolve_engine
from tools.common.referee import read_move_comment
from tools.strength.cploss import (
    BLUNDER_CP,
    DEFAULT_CACHE,
    REFERENCE_DEPTH,
    Reference,
    Summary,
    move_loss_cp,
    summarize,
)

PHASE_WEIGHTS = {chess.KNIGHT: 1, chess.BISHOP: 1, chess.ROOK: 2, chess.QUEEN: 4}
# (name, least phase): the first range whose least phase the board reaches
PHASES: tuple[tuple[str, int], ...] = (("opening", 20), ("middlegame", 9), ("ending", 0))
MISTAKE_CP = 100  # a move losing this much is counted apart from the blunders (>= 300)


def phase_of(board: chess.Board) -> str:
    """The name of the board's phase (``PHASES``) by its material."""
    material = sum(weight * len(board.pieces(piece, colour))
                   for piece, weight in PHASE_WEIGHTS.items()
                   for colour in (chess.WHITE, chess.BLACK))
    return next(name for name, least in PHASES if material >= least)


@dataclass(frozen=True)
class ScoredMove:
    """One move of a game record: who played it, in which phase, and what it lost."""

    game: int
    ply: int
    player: str
    phase: str
    loss_cp: int
    depth: int | None = None  # from the move's comment, where the record has one
    move_s: float | None = None


@dataclass(frozen=True)
class RecordedMove:
    """A move of a game record with what its comment says."""

    game: int
    player: str
    phase: str
    board: chess.Board  # before the move
    move: chess.Move
    depth: int | None
    move_s: float | None


def parse_comment(comment: str) -> tuple[int | None, float | None]:
    """The depth and the time of a match tool's move comment ((None, None) for another)."""
    found = read_move_comment(comment)
    return (None, None) if found is None else (found.depth, found.spent_s)


def game_moves(path: Path, max_games: int | None) -> Iterator[RecordedMove]:
    """Every move of the records: the game's start position is its FEN (an opening from a
    book) and every move after it was played."""
    with path.open() as handle:
        index = 0
        while max_games is None or index < max_games:
            game = chess.pgn.read_game(handle)
            if game is None:
                break
            index += 1
            if game.errors:
                raise SystemExit(f"{path}: game {index}: {game.errors[0]}")
            names = {chess.WHITE: game.headers.get("White", "?"),
                     chess.BLACK: game.headers.get("Black", "?")}
            board = game.board()
            for node in game.mainline():
                depth, move_s = parse_comment(node.comment)
                yield RecordedMove(index, names[board.turn], phase_of(board),
                                   board.copy(stack=False), node.move, depth, move_s)
                board.push(node.move)


def score_games(path: Path, reference: Reference, max_games: int | None = None,
                players: Sequence[str] = ()) -> list[ScoredMove]:
    """Every move of ``players`` (all when empty) scored by the reference."""
    scored: list[ScoredMove] = []
    for played in game_moves(path, max_games):
        if players and played.player not in players:
            continue
        _, best_cp = reference.best(played.board)
        loss = move_loss_cp(best_cp, reference.score(played.board, played.move))
        scored.append(ScoredMove(played.game, played.board.ply(), played.player, played.phase,
                                 loss, played.depth, played.move_s))
        if len(scored) % 500 == 0:
            reference.save()
    reference.save()
    return scored


@dataclass(frozen=True)
class Row:
    player: str
    phase: str
    summary: Summary
    mistakes: int  # moves losing MISTAKE_CP or more
    mean_move_s: float | None  # over the moves whose comment gives it
    mean_depth: float | None


def summarize_moves(moves: Sequence[ScoredMove]) -> list[Row]:
    """One row per player and phase (in ``PHASES``' order), then the player's whole games."""
    rows = []
    for player in sorted({m.player for m in moves}):
        mine = [m for m in moves if m.player == player]
        for phase in [name for name, _ in PHASES] + ["all"]:
            part = [m for m in mine if phase in ("all", m.phase)]
            if part:
                losses = [m.loss_cp for m in part]
                times = [m.move_s for m in part if m.move_s is not None]
                depths = [m.depth for m in part if m.depth is not None]
                rows.append(Row(player, phase, summarize(losses),
                                sum(loss >= MISTAKE_CP for loss in losses),
                                sum(times) / len(times) if times else None,
                                sum(depths) / len(depths) if depths else None))
    return rows


def table(rows: Sequence[Row]) -> str:
    clocked = any(row.mean_move_s is not None for row in rows)
    lines = [f"| player | phase | moves | mean cp loss (95%) | >= {MISTAKE_CP} cp | "
             f">= {BLUNDER_CP} cp | share of the player's loss |"
             + (" mean s a move | mean depth |" if clocked else ""),
             "|---|---|---|---|---|---|---|" + ("---|---|" if clocked else "")]
    totals = {row.player: row.summary.mean_loss_cp * row.summary.positions
              for row in rows if row.phase == "all"}
    for row in rows:
        s = row.summary
        share = s.mean_loss_cp * s.positions / totals[row.player] if totals[row.player] else 0
        line = (f"| {row.player} | {row.phase} | {s.positions} | {s.mean_loss_cp:.1f} "
                f"± {s.loss_margin_cp:.1f} | {row.mistakes} | {s.blunders} | {share:.0%} |")
        if clocked:
            line += (f" {'-' if row.mean_move_s is None else f'{row.mean_move_s:.3f}'} | "
                     f"{'-' if row.mean_depth is None else f'{row.mean_depth:.1f}'} |")
        lines.append(line)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.strength.gameloss",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pgn", type=Path, help="game records (the match tool's --pgn)")
    parser.add_argument("--depth", type=int, default=REFERENCE_DEPTH,
                        help=f"the reference's search depth (default {REFERENCE_DEPTH})")
    parser.add_argument("--reference", default="stockfish",
                        help="the reference engine (an alias or a command)")
    parser.add_argument("--games", type=int, help="score only the first GAMES records")
    parser.add_argument("--player", action="append", default=[],
                        help="score only this player's moves (repeatable)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help="the reference's cache of scores (cploss's)")
    args = parser.parse_args(argv)
    if not args.pgn.is_file():
        raise SystemExit(f"{args.pgn}: no such file")
    if args.depth < 1 or (args.games is not None and args.games < 1):
        raise SystemExit("--depth and --games must be at least 1")
    reference = Reference(resolve_engine(args.reference), args.depth, args.cache)
    try:
        moves = score_games(args.pgn, reference, args.games, args.player)
    finally:
        reference.close()
    if not moves:
        raise SystemExit(f"{args.pgn}: no moves to score"
                         + (f" by {', '.join(args.player)}" if args.player else ""))
    print(f"{args.pgn}: {len(moves)} moves of {len({m.game for m in moves})} games, "
          f"{reference.spec.name} at depth {args.depth} ({reference.searches} searches)")
    print(table(summarize_moves(moves)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
