"""`GET /api/tournament/{id}` as the bot needs it (lila app/controllers/Tournament.scala
`show`, JsonView.scala): status, time to start or finish, and our rank, score and games;
and what a join would meet (lila modules/tournament/src/main/TournamentApi.scala `join`
charges its credits first, then checks the entry code, the conditions, the pause and the
team): `verdicts`, `private`, `teamBattle.joinWith`, `createdBy`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

STANDING_PAGE_SIZE = 10  # lila's standing pages
PAIRINGS_CLOSE_MIN_S = 30  # lila Tournament.pairingsClosedSeconds: max(30, min(limit/2, 120))
PAIRINGS_CLOSE_MAX_S = 120


class ArenaFormatError(ValueError):
    """The reply is not an arena as lila describes one."""


@dataclass(frozen=True)
class ArenaView:
    id: str
    name: str
    status: str  # created | started | finished
    seconds_to_start: float
    seconds_to_finish: float
    nb_players: int
    joined: bool  # we are on its list (`me` present)
    withdrawn: bool
    rank: int | None
    bots_refused: bool  # the "Bot players are not allowed" verdict failed for us
    # No more pairings before the end (lila Tournament.pairingsClosed: the last
    # max(30, min(limit / 2, 120)) seconds).
    pairings_closed: bool = False
    clock_limit_s: float = 0.0
    # Seconds before we may join again after a pause (`me.pauseDelay`, lila Pause.scala).
    pause_delay_s: float = 0.0
    # JsonView `verdicts`: False when a condition refuses us; the refused conditions' texts.
    verdicts_accepted: bool = True
    refused_conditions: tuple[str, ...] = ()
    private: bool = False  # an entry code is asked (JsonView `private`)
    team_battle: bool = False
    join_with: tuple[str, ...] = ()  # `teamBattle.joinWith`: the battle's teams we are in
    created_by: str = "lichess"  # initialJoin costs 1 for lichess's arenas, 2 for a user's

    @property
    def join_cost(self) -> int:
        """The credits of lila's initialJoin a first join costs (TournamentApi.scala: 1 for
        an arena made by lichess, 2 for one made by a user)."""
        return 1 if self.created_by == "lichess" else 2

    @property
    def seconds_to_pairings_close(self) -> float:
        """Seconds until the pairings close (lila Tournament.pairingsClosedSeconds)."""
        close_s = max(PAIRINGS_CLOSE_MIN_S, min(self.clock_limit_s / 2, PAIRINGS_CLOSE_MAX_S))
        return max(0.0, self.seconds_to_finish - close_s)

    @property
    def running(self) -> bool:
        return self.status == "started"

    @property
    def finished(self) -> bool:
        return self.status == "finished"


@dataclass(frozen=True)
class Sheet:
    """Our line of the standing: score and the points of each game played."""

    score: int
    games: int


def _number(raw: Mapping[str, Any], key: str) -> float:
    value = raw.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArenaFormatError(f"tournament field {key!r} must be a number, got {value!r}")
    return float(value)


def parse_view(raw: Any) -> ArenaView:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str):
        raise ArenaFormatError(f"not a tournament: {str(raw)[:200]}")
    if raw.get("system", "arena") != "arena":
        raise ArenaFormatError(f"tournament {raw['id']} is not an arena")
    status = ("finished" if raw.get("isFinished") else
              "started" if raw.get("isStarted") else "created")
    me = raw.get("me")
    me = me if isinstance(me, Mapping) else None
    verdicts = raw.get("verdicts")
    verdicts = verdicts if isinstance(verdicts, Mapping) else {}
    listed = verdicts.get("list")
    failed = tuple(f"{v.get('condition')}: {v.get('verdict')}" if v.get("verdict") != v.get(
        "condition") else str(v.get("condition"))
        for v in (listed if isinstance(listed, list) else [])
        if isinstance(v, Mapping) and v.get("verdict") != "ok")
    accepted = verdicts.get("accepted") is not False
    # lila writes `botsAllowed` only when true (JsonView.scala `.add("botsAllowed", ...)`):
    # a refusal of bots shows only in the verdicts.
    refused = not accepted and any(
        isinstance(v, Mapping) and "Bot" in str(v.get("condition", ""))
        and v.get("verdict") != "ok" for v in (listed if isinstance(listed, list) else []))
    battle = raw.get("teamBattle")
    battle = battle if isinstance(battle, Mapping) else None
    join_with = battle.get("joinWith") if battle is not None else None
    rank = me.get("rank") if me is not None else None
    pause = me.get("pauseDelay") if me is not None else None
    clock = raw.get("clock")
    return ArenaView(
        id=raw["id"], name=str(raw.get("fullName") or raw["id"]), status=status,
        seconds_to_start=_number(raw, "secondsToStart"),
        seconds_to_finish=_number(raw, "secondsToFinish"),
        nb_players=int(_number(raw, "nbPlayers")), joined=me is not None,
        withdrawn=bool(me.get("withdraw")) if me is not None else False,
        rank=rank if isinstance(rank, int) else None,
        bots_refused=refused,
        pairings_closed=raw.get("pairingsClosed") is True,
        clock_limit_s=_number(clock, "limit") if isinstance(clock, Mapping) else 0.0,
        pause_delay_s=float(pause) if isinstance(pause, int | float)
        and not isinstance(pause, bool) else 0.0,
        verdicts_accepted=accepted, refused_conditions=failed,
        private=raw.get("private") is True, team_battle=battle is not None,
        join_with=tuple(str(t) for t in join_with) if isinstance(join_with, list) else (),
        created_by=str(raw.get("createdBy") or "lichess"))


def page_of(rank: int) -> int:
    return (rank - 1) // STANDING_PAGE_SIZE + 1


def sheet_of(raw: Any, name: str) -> Sheet | None:
    """Our line on a standing page (`standing.players`), found by name."""
    standing = raw.get("standing") if isinstance(raw, Mapping) else None
    players = standing.get("players") if isinstance(standing, Mapping) else None
    for player in players if isinstance(players, list) else []:
        if isinstance(player, Mapping) and str(player.get("name", "")).lower() == name.lower():
            sheet = player.get("sheet")
            # A digit a game (the API's string), or a list of them (lila's own pages).
            scores = sheet.get("scores", "") if isinstance(sheet, Mapping) else ""
            score = player.get("score", 0)
            return Sheet(score=score if isinstance(score, int) else 0,
                         games=len(scores) if isinstance(scores, (str, list)) else 0)
    return None
