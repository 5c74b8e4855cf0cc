"""How a search line reads: one function renders a PV in SAN and one a score, for the kibitz
line in chat, the move log, the status line and the status page alike."""

from __future__ import annotations

from collections.abc import Iterable

import chess
import chess.engine


def pv_san(board: chess.Board, pv: Iterable[object], *, numbered: bool = True,
           max_moves: int | None = None) -> list[str]:
    """The PV from `board` in SAN, one token per move: numbered ("12. Nf3", "12...Nc6", then
    "Nc6" after a White move) or bare ("Nf3"). Stops at the first entry that is not a legal
    move (a stale or corrupt PV) and after `max_moves` moves."""
    position = board.copy(stack=False)
    tokens: list[str] = []
    for move in pv:
        if max_moves is not None and len(tokens) >= max_moves:
            break
        if not isinstance(move, chess.Move) or not position.is_legal(move):
            break
        san = position.san(move)
        if not numbered:
            tokens.append(san)
        elif position.turn == chess.WHITE:
            tokens.append(f"{position.fullmove_number}. {san}")
        elif not tokens:
            tokens.append(f"{position.fullmove_number}...{san}")
        else:
            tokens.append(san)
        position.push(move)
    return tokens


def score_text(score: chess.engine.PovScore, side: chess.Color | None = None) -> str:
    """A score in pawns. Without `side`, from White's side for a chat reader: "+0.35",
    "-1.20", "mate in 3 for White", "mate on the board". From `side`, compact for a status
    line: "+0.35", "#3" (`side` mates), "#-2", and "" when there is no number."""
    if side is not None:
        ours = score.pov(side)
        mate = ours.mate()
        if mate is not None:
            return f"#{mate}"
        cp = ours.score()
        return f"{cp / 100:+.2f}" if cp is not None else ""
    white = score.white()
    mate = white.mate()
    if mate is not None:
        if mate == 0:
            return "mate on the board"
        return f"mate in {abs(mate)} for {'White' if mate > 0 else 'Black'}"
    return f"{(white.score() or 0) / 100:+.2f}"
