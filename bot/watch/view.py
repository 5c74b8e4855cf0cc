"""The bot as the status page shows it: plain data (JSON-ready) built from its live state.

Nothing here changes the bot; every function reads. Text from Lichess (names, chat) goes out
as plain strings: the page puts it in the DOM as text, never as HTML.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import chess
import chess.engine
import chess.svg

from bot.engines.searchline import pv_san, score_cp
from bot.game.game import GameSnapshot
from bot.game.metrics import ChallengeDecision, GameOutcome, result_of
from bot.lichess.events import ChatLine, Player
from bot.watch.status import short_score
from bot.watch.warnings import Warned

PV_MOVES: Final = 12  # moves of the principal variation shown in SAN
EVAL_CLAMP_CP: Final = 1000  # the eval graph spans -10..+10 pawns
BOARD_PX: Final = 320  # the SVG's own size; CSS scales it to the card
# Lichess writes the clocks under a minute as fractions: ¼+0 is 15 seconds.
MINUTE_FRACTIONS: Final = {15: "¼", 30: "½", 45: "¾"}


def player(who: Player) -> dict[str, Any]:
    return {"name": who.name, "title": who.title, "rating": who.rating}


def time_control(initial_s: float | None, increment_s: float | None) -> str:
    """As Lichess writes it: "3+2" (minutes + seconds), "½+0"; "-" when unlimited."""
    if initial_s is None:
        return "-"
    minutes = MINUTE_FRACTIONS.get(round(initial_s), f"{initial_s / 60:g}")
    return f"{minutes}+{increment_s or 0:g}"


def white_cp(score: chess.engine.PovScore | None) -> int | None:
    """A search score as centipawns from White's side, mates at the graph's edge."""
    if score is None:
        return None
    return max(-EVAL_CLAMP_CP, min(EVAL_CLAMP_CP, score_cp(score.white())))


def pv_text(board: chess.Board, pv: Sequence[chess.Move]) -> str:
    """The PV in SAN, numbered from `board` ("23. Nf3 Nc6 24. Bb5"), up to PV_MOVES moves."""
    return " ".join(pv_san(board, pv, max_moves=PV_MOVES))


def search(snapshot: GameSnapshot) -> dict[str, Any] | None:
    """The engine's last search for us: depth, score (our side), nodes/s, PV in SAN."""
    if snapshot.last_search is None:
        return None
    searched, line = snapshot.last_search
    return {"depth": line.depth, "seldepth": line.seldepth,
            "score": short_score(line.score, snapshot.context.color),
            "nodes": line.nodes, "nps": line.nodes_per_s,
            "pv": pv_text(searched, line.pv), "ply": searched.ply()}


def board_svg(board: chess.Board, orientation: chess.Color) -> str:
    lastmove = board.peek() if board.move_stack else None
    check = board.king(board.turn) if board.is_check() else None
    return chess.svg.board(board, orientation=orientation, lastmove=lastmove, check=check,
                           size=BOARD_PX)


def board_key(board: chess.Board) -> str:
    """What the drawn board depends on: the position and the last move."""
    last = board.peek().uci() if board.move_stack else ""
    return f"{board.fen()} {last}"


def clocks(snapshot: GameSnapshot) -> dict[str, Any]:
    """Both clocks in seconds as of now; `running` is the side whose clock ticks (lila
    starts the clocks once both sides have moved)."""
    ours = snapshot.context.color
    white_s, black_s = ((snapshot.our_clock_s, snapshot.their_clock_s) if ours == chess.WHITE
                        else (snapshot.their_clock_s, snapshot.our_clock_s))
    board = snapshot.board
    running = None
    if len(board.move_stack) >= 2 and not board.is_game_over():
        running = "white" if board.turn == chess.WHITE else "black"
    return {"white_s": round(white_s, 2), "black_s": round(black_s, 2), "running": running}


def chat_lines(lines: Iterable[ChatLine]) -> list[dict[str, str]]:
    return [{"room": line.room, "user": line.username, "text": line.text} for line in lines]


def card(snapshot: GameSnapshot, *, base_url: str, chat: Iterable[ChatLine] = ()) -> dict[str, Any]:
    """One game in progress (the board itself goes separately: it changes less often)."""
    context = snapshot.context
    board = snapshot.board
    last = ""
    if board.move_stack:
        before = board.copy()
        move = before.pop()
        last = before.san(move)
    return {
        "id": snapshot.game_id,
        "url": f"{base_url}/{snapshot.game_id}",
        "color": "white" if context.color == chess.WHITE else "black",
        "opponent": player(context.opponent),
        "variant": context.variant, "speed": context.speed, "rated": context.rated,
        "time_control": time_control(context.clock_initial_s, context.clock_increment_s),
        "ply": board.ply(), "last_move": last, "our_turn": snapshot.our_turn,
        "strength": snapshot.strength,  # the game's level: "full strength", "Elo 1250"
        "clocks": clocks(snapshot),
        "search": search(snapshot),
        "chat": chat_lines(chat),
        "finished": None,
    }


def finished(outcome: GameOutcome | None, *, base_url: str, export_path: str) -> dict[str, Any]:
    """The end of a game: result from our side, the score, and where its PGN is."""
    if outcome is None:
        return {"result": "ended", "status": "unknown", "score": "*",
                "pgn": base_url + export_path}
    score = "*"
    if outcome.winner == "white":
        score = "1-0"
    elif outcome.winner == "black":
        score = "0-1"
    elif outcome.status not in ("aborted", "noStart", "started", "created"):
        score = "½-½"
    return {"result": result_of(outcome), "status": outcome.status, "score": score,
            "reason": outcome.reason, "pgn": base_url + export_path}


def decisions(recent: Sequence[ChallengeDecision]) -> list[dict[str, Any]]:
    return [{"at": d.at, "id": d.challenge_id, "challenger": d.challenger,
             "description": d.description, "decision": d.decision, "reason": d.reason,
             "why": d.why} for d in reversed(recent)]


def warnings(entries: Iterable[Warned]) -> list[dict[str, Any]]:
    return [{"at": w.at, "level": w.level, "logger": w.logger, "message": w.message}
            for w in reversed(list(entries))]


def memory(sizes: Mapping[int, int], engine_pids: Mapping[str, int]) -> dict[str, Any]:
    """Total Pss of the process tree, and each game's engine process where it has its own."""
    per_game = {game_id: sizes[pid] for game_id, pid in engine_pids.items() if pid in sizes}
    return {"total_bytes": sum(sizes.values()) if sizes else None,
            "processes": len(sizes), "per_game_bytes": per_game}
