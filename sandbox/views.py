"""The JSON objects the sandbox sends, shaped by the official spec's schemas."""

from __future__ import annotations

from typing import Any

import chess

from sandbox.accounts import PERF_KEYS, Account
from sandbox.games import STATUS_IDS, Game, color_name
from sandbox.timecontrol import PERF_NAMES, variant_json


def user_json(account: Account) -> dict[str, Any]:
    """schemas/User.yaml."""
    body: dict[str, Any] = {
        "id": account.id,
        "username": account.username,
        "perfs": {key: perf_json(account, key) for key in PERF_KEYS},
        "createdAt": account.created_at_ms,
        "seenAt": account.seen_at_ms,
        "playTime": {"total": 0, "tv": 0},
    }
    if account.title:
        body["title"] = account.title
    return body


def perf_json(account: Account, key: str) -> dict[str, Any]:
    perf = account.perf(key)
    body: dict[str, Any] = {"games": perf.games, "rating": perf.rating, "rd": perf.rd,
                            "prog": perf.prog}
    if account.provisional(key):
        body["prov"] = True
    return body


def user_extended_json(account: Account, base_url: str, playing: int) -> dict[str, Any]:
    """schemas/UserExtended.yaml, as `GET /api/account` returns it."""
    return {
        **user_json(account),
        "url": f"{base_url}/@/{account.username}",
        "count": {
            "all": account.games_played, "rated": 0, "ai": 0,
            "draw": account.draws, "drawH": account.draws,
            "loss": account.losses, "lossH": account.losses,
            "win": account.wins, "winH": account.wins,
            "bookmark": 0, "playing": playing, "import": 0, "me": 0,
        },
        "followable": True,
        "following": False,
        "blocking": False,
    }


def game_player_json(game: Game, color: chess.Color) -> dict[str, Any]:
    """schemas/GameEventPlayer.yaml: one side of a gameFull."""
    account = game.players[color]
    if account.anonymous:
        return {}  # lila GameStateStream `playerJson`: no user, no id, name or rating
    body: dict[str, Any] = {
        "id": account.id,
        "name": account.username,
        "title": account.title,
        "rating": game.ratings_before[color],
    }
    if account.provisional(game.perf):
        body["provisional"] = True
    return body


def game_state_json(game: Game) -> dict[str, Any]:
    """schemas/GameStateEvent.yaml."""
    increment_ms = game.clock.increment_ms if game.clock is not None else 0
    body: dict[str, Any] = {
        "type": "gameState",
        "moves": game.moves,
        "wtime": game.remaining_ms(chess.WHITE),
        "btime": game.remaining_ms(chess.BLACK),
        "winc": increment_ms,
        "binc": increment_ms,
        "status": game.status,
    }
    if game.winner is not None:
        body["winner"] = color_name(game.winner)
    for color in game.draw_offers:
        body[f"{color_name(color)[0]}draw"] = True
    for color in game.takeback_offers:
        body[f"{color_name(color)[0]}takeback"] = True
    if game.expirable:
        body["expiration"] = {"idleMillis": game.idle_ms(),
                              "millisToMove": game.millis_to_first_move()}
    return body


def game_full_json(game: Game) -> dict[str, Any]:
    """schemas/GameFullEvent.yaml: the first line of a game stream."""
    body: dict[str, Any] = {
        "type": "gameFull",
        "id": game.id,
        "variant": variant_json(game.variant),
        "speed": game.speed,
        "perf": {"name": PERF_NAMES[game.perf]},
        "rated": game.rated,
        "createdAt": game.created_at_ms,
        "white": game_player_json(game, chess.WHITE),
        "black": game_player_json(game, chess.BLACK),
        "initialFen": game.initial_fen or "startpos",
        "state": game_state_json(game),
    }
    if game.clock is not None:
        body["clock"] = {"initial": game.clock.initial_ms, "increment": game.clock.increment_ms}
    if game.time_control.days is not None:
        body["daysPerTurn"] = game.time_control.days
    return body


def game_status_json(game: Game) -> dict[str, Any]:
    return {"id": STATUS_IDS[game.status], "name": game.status}


def seconds_left(game: Game, color: chess.Color) -> int:
    return game.remaining_ms(color) // 1000


def game_event_info_json(game: Game, color: chess.Color) -> dict[str, Any]:
    """schemas/GameEventInfo.yaml: the `game` of gameStart and gameFinish, for one side."""
    opponent = game.players[not color]
    body: dict[str, Any] = {
        "fullId": game.full_id(color),
        "gameId": game.id,
        "fen": game.board.fen(),
        "color": color_name(color),
        "lastMove": game.uci_moves[-1] if game.uci_moves else "",
        "source": game.source,
        "status": game_status_json(game),
        "variant": {"key": game.variant, "name": variant_json(game.variant)["name"]},
        "speed": game.speed,
        "perf": game.perf,
        "rated": game.rated,
        "hasMoved": game.has_moved(color),
        # lila Namer.playerTextBlocking: a titled player's `titleName` ("BOT name"),
        # "Anon." for one not logged in.
        "opponent": ({"id": None, "username": "Anon."} if opponent.anonymous else
                     {"id": opponent.id,
                      "username": " ".join(filter(None, (opponent.title, opponent.username))),
                      "rating": game.ratings_before[not color]}),
        "isMyTurn": game.playing and game.turn == color,
        "secondsLeft": seconds_left(game, color),
        "rating": game.ratings_before[color],
        "compat": {"bot": game.speed != "ultraBullet", "board": game.speed != "ultraBullet"},
        "id": game.id,
    }
    if game.tournament_id is not None:
        body["tournamentId"] = game.tournament_id
    if not game.playing:
        if game.winner is not None:
            body["winner"] = color_name(game.winner)
        # lila modules/game/src/main/JsonView.scala `ownerPreview`: `.add("ratingDiff" ...)`
        # only when the game was rated (not for a game PerfsUpdater left unrated).
        if game.rating_diffs:
            body["ratingDiff"] = game.rating_diffs[color]
            body["opponent"]["ratingDiff"] = game.rating_diffs[not color]
    return body


def playing_entry_json(game: Game, color: chess.Color) -> dict[str, Any]:
    """One item of `GET /api/account/playing`."""
    body = game_event_info_json(game, color)
    for key in ("rating", "compat", "id"):
        body.pop(key, None)
    body["status"] = game.status
    return body
