"""ArenaDesk: the arenas the bot plays, from joining to withdrawing.

Each arena is looked at every `tournaments.poll_interval_s` (and when its start or end is
due): joined `join_before_s` before its start (at once if it already runs), withdrawn from
when it ends, when asked to, and when the bot stops while it runs.

- The daily bot-game cap does not touch arenas: lila reads it only when a challenge is made
  or accepted (modules/bot/src/main/BotLimit.scala `challengeLimitError`), and pairs a
  capped bot in its arenas as any other.
- A stop keeps our place in arenas that have not started: SIGTERM, Ctrl-C, `systemctl stop`
  and `systemctl restart` all look the same to the service, a stop is most often a restart
  or an upgrade, and a new join after a withdrawal costs lila's join credits
  (TournamentApi.initialJoin: 4 arenas made by users an hour, 15 a day). To leave an arena
  for good, `kibitz tournament withdraw ID` (at once while the bot runs). A running arena
  is left at a stop, since a pairing while the bot is down is lost by noStart.
- A refusal from lila is logged once with lila's own message and never stops the bot
  (bot.tournaments.refusals): a final one (bots not allowed, wrong entry code, missing
  team, no such arena) drops the arena; a pause, a playban, "too many" and a rate limit
  are waited out, then the join is tried again.
- Two arena games lost in a row by noStart (the first move not played in time) stop all
  joins until a `kibitz tournament join`: lila counts each towards a playban
  (modules/playban PlaybanApi.scala `noStart`, tournament games are blameable), and withdraw
  us from the other running arenas, where lila would go on pairing us (StartedOrganizer
  pairs a bot on the list with no online check, PlayerRepo.activeBotIds).
- A join lila would refuse is not sent, since lila charges its credits before it checks
  (modules/tournament/src/main/TournamentApi.scala `join`): a condition we fail
  (`verdicts.accepted` false, each failed condition logged once and shown), a private arena
  with no password configured, a team battle whose `joinWith` lacks our team (one team
  there and none configured: that one). Each poll looks again, for free.
- A pause is lila's per user (modules/tournament/src/main/Pause.scala) but shown only in
  the arenas we are on the list of (`me.pauseDelay`): a first join to a running arena waits
  for the largest pause any arena showed, else, after our own withdrawal from a running
  arena in its top 7, Pause.scala's bound (120 s).
- Polls follow the time to start (a few an hour far ahead), and back off after the end
  while lila has not finished the arena yet. No join once the pairings have closed
  (Tournament.scala `pairingsClosed`), and no withdrawal from such an arena at a stop.
- The join credits spent are kept in the state directory (bot.tournaments.credits): "too
  many tournaments" is tried again when the window our first charge opened closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

from bot.lichess.client import AuthError, Commands, RateLimited, RequestError, Unavailable
from bot.lichess.events import GameInfo
from bot.ops.config import ArenaEntry, TournamentsConfig
from bot.tournaments.control import ControlDir, TournamentCommand
from bot.tournaments.credits import CHARGES_FILE, JoinLedger
from bot.tournaments.refusals import PAUSED_TEXT, TOO_MANY_WAIT_S, classify_join_error
from bot.tournaments.view import ArenaFormatError, ArenaView, Sheet, page_of, parse_view, sheet_of

log = logging.getLogger(__name__)

REQUEST_DEADLINE_S: Final = 10.0  # one tournament request, retries included
WITHDRAW_AT_STOP_S: Final = 5.0  # the withdrawals of a stopping bot, together
CONTROL_TICK_S: Final = 1.0  # the control directory is read this often
END_MARGIN_S: Final = 1.0  # look again this long after an arena's end is due
PAUSE_MARGIN_S: Final = 1.0  # join this long after the pause lila shows has run out
NO_START_LOSSES_STOP: Final = 2  # this many noStart losses in a row stop the joins
NO_START: Final = "noStart"
# Pause.scala: a pause lasts at most 120 s; the bound waited after our own withdrawal from a
# running arena in its top 7 (TournamentApi.withdraw: ranking index < 7) when no arena
# shows the pause itself.
PAUSE_MAX_S: Final = 120.0
TOP_PAUSED: Final = 7
FAR_POLL_MAX_S: Final = 1200.0  # an arena far from its start is looked at this often
FAR_POLL_FRACTION: Final = 0.25  # ...or at this fraction of the time left, if less
OVERDUE_BACKOFF_MAX_S: Final = 60.0  # looks after an end lila has not reached yet
# TournamentApi.join's refusals that come after initialJoin has charged its credits (the
# entry code, the conditions, the pause, the team); an arena ban, a finished arena and
# "too many" itself come before or instead of the charge.
CHARGED_REFUSALS: Final = ("Wrong entry code", "Tournament restrictions", PAUSED_TEXT,
                           "Missing team")


@dataclass
class ArenaState:
    entry: ArenaEntry
    origin: str  # "config" or "command"
    view: ArenaView | None = None
    sheet: Sheet | None = None
    joined: bool = False
    withdrawn: bool = False  # by us: at the end, the cap or a command
    done: bool = False  # nothing more to do with it
    problem: str | None = None  # the last refusal, logged once
    next_look: float = 0.0  # monotonic
    overdue_looks: int = 0  # looks since the end was due while lila still runs it
    leave_why: str = "asked to"  # why we withdraw once `done` while still in it

    def summary(self) -> dict[str, Any]:
        view = self.view
        return {
            "id": self.entry.id, "name": view.name if view else None,
            "status": view.status if view else "unknown", "joined": self.joined,
            "withdrawn": self.withdrawn, "done": self.done, "problem": self.problem,
            "rank": view.rank if view else None,
            "score": self.sheet.score if self.sheet else None,
            "games": self.sheet.games if self.sheet else None,
            "seconds_to_start": view.seconds_to_start if view else None,
            "seconds_to_finish": view.seconds_to_finish if view else None,
        }


class ArenaDesk:
    """The arenas of one running bot."""

    def __init__(self, config: TournamentsConfig, client: Commands, username: str, *,
                 control: ControlDir | None = None,
                 on_change: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 ledger: JoinLedger | None = None) -> None:
        self.config = config
        self.client = client
        self.username = username
        self.control = control
        self.on_change = on_change or (lambda: None)
        self.clock = clock  # monotonic seconds; a test may drive it
        self.arenas: dict[str, ArenaState] = {}
        self.banned_until: float | None = None  # a playban: no join before this
        self.ban_message = ""
        self.no_start_losses = 0  # arena games lost by noStart in a row
        self.joins_stopped: str | None = None  # why we join no more, until a join command
        self.rounds = 0  # turns of the loop, for a test to wait on
        # Our initialJoin charges, in the state directory when there is one.
        self.ledger = ledger or JoinLedger(
            control.root / CHARGES_FILE if control is not None else None)
        self.paused_until: float | None = None  # no first join to a running arena before
        self.pause_bound = False  # paused_until is Pause.scala's bound, not a pause shown
        self._wake = asyncio.Event()
        for entry in config.arenas:
            self.arenas[entry.id] = ArenaState(entry, "config")

    # --- what the bot asks -----------------------------------------------------------------

    def running(self) -> list[ArenaState]:
        """Arenas we are in that may still pair us (running, pairings not closed): the slots
        kept for their pairings and the pause of matchmaking follow from this
        (bot.challenges.slots)."""
        return [s for s in self.arenas.values()
                if s.joined and not s.withdrawn and s.view is not None and s.view.running
                and not s.view.pairings_closed]

    def summaries(self) -> list[dict[str, Any]]:
        """Every arena we know of, as the status page shows it (name, status, rank, score,
        games, time to start or finish, the last refusal)."""
        return [state.summary() for state in self.arenas.values()]

    def status_lines(self) -> list[str]:
        """One line per arena we are in: name, rank, score, games, time left; and what
        keeps us from joining (a playban, noStart losses)."""
        lines = []
        if self.banned_until is not None:
            left_s = self.banned_until - self.clock()
            lines.append(f"arenas: playban, joining again in {_clock(left_s)} "
                         f"({self.ban_message})")
        if self.joins_stopped is not None:
            lines.append(f"arenas: no more joins: {self.joins_stopped}")
        for state in self.arenas.values():
            view = state.view
            if view is None or not state.joined or state.done:
                continue
            if view.running:
                left = f"{_clock(view.seconds_to_finish)} left"
            elif view.finished:
                left = "finished"
            else:
                left = f"starts in {_clock(view.seconds_to_start)}"
            sheet = state.sheet
            score = f", {sheet.score} points, {sheet.games} games" if sheet else ""
            rank = f"rank {view.rank}/{view.nb_players}" if view.rank else "unranked"
            lines.append(f"arena {view.name} ({view.id}): {rank}{score}, {left}")
        return lines

    # --- commands ----------------------------------------------------------------------------

    def on_game_finish(self, info: GameInfo) -> None:
        """An arena game of ours ended: count noStart losses in a row (lila modules/round
        Finisher.scala `noStart` ends a game whose first move was not played in time
        against the player who did not move; modules/playban PlaybanApi.scala `noStart`);
        at NO_START_LOSSES_STOP, join no more arenas and say why."""
        if info.tournament_id is None:
            return
        lost_unstarted = info.status == NO_START and info.winner is not None \
            and info.winner != info.color
        self.no_start_losses = self.no_start_losses + 1 if lost_unstarted else 0
        if lost_unstarted:
            log.warning("arena %s: game %s lost by noStart (the first move was not played "
                        "in time; lila counts it towards a playban)", info.tournament_id,
                        info.game_id)
        if self.no_start_losses >= NO_START_LOSSES_STOP and self.joins_stopped is None:
            self.joins_stopped = (
                f"{self.no_start_losses} arena games in a row lost by noStart, each counted "
                "towards a playban: is the bot too slow to start its games? "
                "`kibitz tournament join ID` joins again")
            log.error("joining no more arenas: %s", self.joins_stopped)
            # lila goes on pairing us in our other running arenas (StartedOrganizer,
            # PlayerRepo.activeBotIds): leave them, or each pairing may be one more noStart.
            for other in self.arenas.values():
                if other.joined and not other.withdrawn and other.view is not None \
                        and other.view.running and other.entry.id != info.tournament_id:
                    other.done = True
                    other.next_look = 0.0
                    other.leave_why = "noStart losses"
                    other.problem = f"left: {self.joins_stopped}"
            self._wake.set()
            self._publish()

    def apply(self, command: TournamentCommand) -> None:
        if command.action == "join":
            if self.joins_stopped is not None:
                log.info("joins allowed again (%s)", self.joins_stopped)
                self.joins_stopped = None
                self.no_start_losses = 0
            state = self.arenas.get(command.arena_id)
            if state is None or state.done:
                entry = ArenaEntry(command.arena_id, command.team, command.password)
                self.arenas[command.arena_id] = ArenaState(entry, "command")
                log.info("arena %s: join requested", command.arena_id)
            else:
                state.next_look = 0.0  # asked now: look at once
            self._wake.set()
        elif command.action == "withdraw":
            state = self.arenas.get(command.arena_id)
            if state is None:
                log.info("arena %s: withdraw requested, but we are not in it",
                         command.arena_id)
                return
            state.done = True
            if state.joined and not state.withdrawn:
                state.next_look = 0.0
                self._wake.set()
            self._publish()

    # --- the loop ----------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            if self.control is not None:
                for command in self.control.take():
                    self.apply(command)
            now = self.clock()
            for state in list(self.arenas.values()):
                if state.next_look <= now:
                    await self._look(state)
            self._publish()
            self.rounds += 1
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._sleep_s()):
                    await self._wake.wait()

    def _sleep_s(self) -> float:
        due = [s.next_look for s in self.arenas.values()
               if not (s.done and (s.withdrawn or not s.joined))]
        sleep_s = max(0.0, min(due, default=self.clock() + 3600) - self.clock())
        return min(sleep_s, CONTROL_TICK_S) if self.control is not None else sleep_s

    async def stop(self) -> None:
        """The bot stops: withdraw from every running arena we are in; keep our place in
        those that have not started (a stop is most often a restart)."""
        # An arena whose pairings have closed pairs us no more: a withdrawal would only add
        # a pause (Pause.scala).
        pending = [s for s in self.arenas.values() if s.joined and not s.withdrawn
                   and s.view is not None and s.view.running and not s.view.pairings_closed]
        for state in self.arenas.values():
            if state.joined and not state.withdrawn and state.view is not None \
                    and not state.view.running and not state.view.finished:
                log.info("arena %s (%s): kept on its list across the stop (it starts in "
                         "%s); to leave it: kibitz tournament withdraw %s",
                         state.view.name, state.entry.id,
                         _clock(state.view.seconds_to_start), state.entry.id)
        if pending:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(WITHDRAW_AT_STOP_S):
                    await asyncio.gather(*(self._withdraw(s, "the bot stops")
                                           for s in pending))
        self._publish()

    async def _look(self, state: ArenaState) -> None:
        arena_id = state.entry.id
        state.next_look = self.clock() + self.config.poll_interval_s
        if state.done and state.joined and not state.withdrawn:
            await self._withdraw(state, state.leave_why)
            return
        if state.done:
            return
        try:
            raw = await self.client.request("GET", f"/api/tournament/{quote(arena_id)}",
                                            kind="tournament:show",
                                            deadline_s=REQUEST_DEADLINE_S)
            view = parse_view(raw)
        except RequestError as exc:
            self._refused(state, exc.message, final=exc.status == 404)
            return
        except (Unavailable, AuthError, ArenaFormatError) as exc:
            self._refused(state, str(exc), final=isinstance(exc, (AuthError, ArenaFormatError)))
            return
        state.view = view
        state.joined = view.joined and not view.withdrawn
        if view.finished:
            log.info("arena %s (%s) is over", view.name, arena_id)
            await self._refresh_sheet(state, raw)
            if state.joined and not state.withdrawn:
                await self._withdraw(state, "it ended")
            state.done = True
            return
        self._note_pause(view)
        if view.running:
            # Look again when the pairings close (the kept slot is free again) and at the end;
            # past the end, while lila still runs the arena, less and less often.
            closes_in_s = view.seconds_to_pairings_close
            if view.seconds_to_finish > 0 or not view.pairings_closed:
                state.overdue_looks = 0
                state.next_look = min(state.next_look, self.clock() + (
                    closes_in_s + END_MARGIN_S if not view.pairings_closed
                    else view.seconds_to_finish + END_MARGIN_S))
            else:
                state.next_look = self.clock() + min(
                    OVERDUE_BACKOFF_MAX_S, END_MARGIN_S * 2 ** state.overdue_looks)
                state.overdue_looks += 1
        else:
            # By the time to start: a few looks an hour far ahead, then at the join and
            # the start.
            join_at_s = view.seconds_to_start - self.config.join_before_s
            far_s = min(FAR_POLL_MAX_S, max(self.config.poll_interval_s,
                                            view.seconds_to_start * FAR_POLL_FRACTION))
            state.next_look = self.clock() + far_s
            if join_at_s > 0 and not state.joined:
                state.next_look = min(state.next_look, self.clock() + join_at_s)
            state.next_look = min(state.next_look,
                                  self.clock() + view.seconds_to_start + END_MARGIN_S)
        if not state.joined and view.running and view.pairings_closed:
            # Tournament.scala pairingsClosed: nobody is paired any more; a join would cost
            # credits for nothing.
            self._refused(state, "not joined: its pairings have closed", final=True)
            return
        if not state.joined and (view.running or view.seconds_to_start
                                 <= self.config.join_before_s):
            await self._join_when_allowed(state, view)
        if state.joined:
            await self._refresh_sheet(state, raw)

    async def _join_when_allowed(self, state: ArenaState, view: ArenaView) -> None:
        """Join unless a playban, a pause or our noStart losses say to wait."""
        now = self.clock()
        if self.joins_stopped is not None:
            self._refused(state, f"not joined: {self.joins_stopped}", final=False)
            return
        if self.banned_until is not None and now < self.banned_until:
            state.next_look = max(state.next_look, self.banned_until)
            return
        if view.pause_delay_s > 0:
            self._wait(state, view.pause_delay_s + PAUSE_MARGIN_S,
                       "paused by lila after a withdrawal from the top 7")
            return
        if view.running and self.paused_until is not None and now < self.paused_until:
            # Pause.canJoin refuses a running arena, after initialJoin has charged.
            self._wait(state, self.paused_until - now,
                       "paused by lila after a withdrawal from the top 7 of another arena")
            return
        foreseen = self._foreseen_refusal(state, view)
        if foreseen is not None:
            # lila would charge its credits, then refuse: look again at the next poll.
            if state.problem != foreseen:
                log.warning("arena %s: not joined: %s; looking again at each poll",
                            state.entry.id, foreseen)
            state.problem = foreseen
            return
        await self._join(state, view)

    def _foreseen_refusal(self, state: ArenaState, view: ArenaView) -> str | None:
        """What lila's TournamentApi.join would refuse, read in the tournament we just
        fetched (JsonView.scala): None when a join may pass. A team battle with one team of
        ours and none configured is joined with that team."""
        if not view.verdicts_accepted:
            failed = "; ".join(view.refused_conditions) or "a condition is not met"
            return f"its conditions refuse us ({failed})"
        if view.private and not view.joined and state.entry.password is None:
            return "it is private and no password is configured for it"
        if view.team_battle and not view.joined:
            team = state.entry.team
            if team is None and len(view.join_with) == 1:
                state.entry = ArenaEntry(state.entry.id, view.join_with[0],
                                         state.entry.password)
                log.info("arena %s: a team battle, joined with our team %s", state.entry.id,
                         view.join_with[0])
            elif team is None or team not in view.join_with:
                teams = ", ".join(view.join_with) or "none"
                return (f"a team battle; the configured team {team or '(none)'} is not one "
                        f"of ours in it (ours there: {teams})")
        return None

    def _note_pause(self, view: ArenaView) -> None:
        """An arena we are on the list of shows lila's pause (`me.pauseDelay`), which is per
        user but measured by each arena's game length (Pause.scala): no first join to a
        running arena before the largest one shown ends. A pause shown replaces the bound
        waited after our own withdrawal."""
        if not view.joined or view.pause_delay_s <= 0:
            return
        until = self.clock() + view.pause_delay_s + PAUSE_MARGIN_S
        if self.pause_bound or self.paused_until is None:
            self.paused_until = until
        else:
            self.paused_until = max(self.paused_until, until)
        self.pause_bound = False

    def _wait(self, state: ArenaState, wait_s: float, message: str) -> None:
        """A refusal that ends by itself: logged once, the join tried again after it."""
        state.next_look = max(state.next_look, self.clock() + wait_s)
        if state.problem != message:
            log.warning("arena %s: %s; joining again in %s", state.entry.id, message,
                        _clock(wait_s))
        state.problem = message

    async def _join(self, state: ArenaState, view: ArenaView) -> None:
        entry = state.entry
        form = {k: v for k, v in (("team", entry.team), ("password", entry.password))
                if v is not None}
        try:
            await self.client.request("POST", f"/api/tournament/{quote(entry.id)}/join",
                                      kind="tournament:join", data=form,
                                      deadline_s=REQUEST_DEADLINE_S)
        except (RateLimited, RequestError, AuthError) as exc:
            refusal = classify_join_error(exc, view.pause_delay_s)
            if isinstance(exc, RequestError) and not view.joined \
                    and any(text in exc.message for text in CHARGED_REFUSALS):
                self.ledger.charge(view.join_cost)  # initialJoin charged, then refused
            if refusal.kind == "too_many":
                clears_s = self.ledger.clears_in_s()
                wait_s = clears_s + PAUSE_MARGIN_S if clears_s is not None \
                    else TOO_MANY_WAIT_S
                self._wait(state, wait_s, f"cannot join: {refusal.message}")
                return
            if refusal.kind == "playban":
                self._banned(refusal.message, refusal.wait_s)
                state.next_look = max(state.next_look, self.clock() + refusal.wait_s)
                return
            why = f"{refusal.message} (Bot players are not allowed)" \
                if refusal.final and view.bots_refused else refusal.message
            if refusal.final:
                self._refused(state, f"cannot join: {why}", final=True)
            else:
                self._wait(state, refusal.wait_s, f"cannot join: {why}")
            return
        except Unavailable as exc:
            self._refused(state, str(exc), final=False)
            return
        if not view.joined:
            self.ledger.charge(view.join_cost)
        if self.banned_until is not None:
            log.info("the playban is over: arenas are joined again")
            self.banned_until = None
        state.joined = True
        state.withdrawn = False
        state.problem = None
        state.next_look = self.clock()  # read our rank and score at once
        log.info("joined arena %s (%s), %s", view.name, entry.id,
                 "running" if view.running else f"starting in {_clock(view.seconds_to_start)}")
        self.on_change()

    async def _withdraw(self, state: ArenaState, why: str) -> None:
        arena_id = state.entry.id
        try:
            await self.client.request("POST", f"/api/tournament/{quote(arena_id)}/withdraw",
                                      kind="tournament:withdraw",
                                      deadline_s=REQUEST_DEADLINE_S)
        except (RequestError, Unavailable, AuthError) as exc:
            log.warning("arena %s: withdraw (%s) failed: %s", arena_id, why, exc)
            return
        state.withdrawn = True
        log.info("withdrew from arena %s (%s)", arena_id, why)
        view = state.view
        if view is not None and view.running and (view.rank is None
                                                  or view.rank <= TOP_PAUSED):
            # TournamentApi.withdraw pauses a player in the top 7 (Pause.scala): until an
            # arena shows the pause itself, no first join to a running arena within the
            # bound.
            bound = self.clock() + PAUSE_MAX_S + PAUSE_MARGIN_S
            self.paused_until = max(self.paused_until or 0.0, bound)
            self.pause_bound = True
            await self._read_pause(arena_id)
        self.on_change()

    async def _read_pause(self, arena_id: str) -> None:
        """The arena we just left still lists us, so it shows our pause (JsonView.scala
        `me.pauseDelay`): one look replaces the bound with it (a failure keeps the
        bound)."""
        try:
            raw = await self.client.request("GET", f"/api/tournament/{quote(arena_id)}",
                                            kind="tournament:show",
                                            deadline_s=REQUEST_DEADLINE_S)
            self._note_pause(parse_view(raw))
        except (RequestError, Unavailable, AuthError, ArenaFormatError) as exc:
            log.debug("arena %s: the pause after our withdrawal: %s", arena_id, exc)

    async def _refresh_sheet(self, state: ArenaState, raw: Any) -> None:
        """Our score and games from the standing page our rank is on."""
        view = state.view
        if view is None or view.rank is None:
            return
        page = page_of(view.rank)
        if page != 1:
            try:
                raw = await self.client.request(
                    "GET", f"/api/tournament/{quote(view.id)}", kind="tournament:show",
                    params={"page": str(page)}, deadline_s=REQUEST_DEADLINE_S)
            except (RequestError, Unavailable, AuthError) as exc:
                log.debug("arena %s: standing page %d: %s", view.id, page, exc)
                return
        state.sheet = sheet_of(raw, self.username) or state.sheet

    def _banned(self, message: str, wait_s: float) -> None:
        """A playban: logged once, shown on the status page, and every join waits for it
        (lila also withdraws a playbanned player from its arenas: pausePlaybanned)."""
        if self.banned_until is None:
            log.warning("arenas: %s; joining again in %s", message, _clock(wait_s))
        self.banned_until = self.clock() + wait_s
        self.ban_message = message
        for other in self.arenas.values():
            other.next_look = max(other.next_look, self.banned_until)
            if not other.done and not (other.joined and not other.withdrawn):
                other.problem = message
        self._publish()

    def _refused(self, state: ArenaState, message: str, *, final: bool) -> None:
        if state.problem != message:
            log.warning("arena %s: %s%s", state.entry.id, message,
                        "" if final else "; trying again later")
        state.problem = message
        if final:
            state.done = True

    def _publish(self) -> None:
        if self.control is not None:
            self.control.publish([s.summary() for s in self.arenas.values()])


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"
