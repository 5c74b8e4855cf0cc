"""Arena tournaments: joining, keeping a slot for pairings, withdrawing, arena game rules.

    rules    what an arena game forbids (abort, draws before the variant's long-game ply)
             and asks (a quick first move)
    view     `GET /api/tournament/{id}` read into an ArenaView (status, time, our rank/score)
    desk     ArenaDesk: joins the arenas we play, waits out pauses, playbans and join
             limits, withdraws at the end and from running arenas at a stop, and says how
             many slots to keep free
    refusals what a refused join means: final, or wait how long before the next try
    credits  the join credits we spent, in the state directory: when "too many" clears
    control  the control directory through which `kibitz tournament ...` reaches the service

Lichess pairs the players of a running arena itself; the pairings arrive on the event stream
as ordinary gameStart events whose source is "arena" (with `tournamentId`). Swiss
tournaments refuse bots (lila modules/game Game.scala `isBotCompatible`: a Swiss game never
is): only arenas are joined, and a Swiss URL in the configuration is refused.
"""
