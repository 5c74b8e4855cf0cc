"""Arena tournaments: joining, keeping a slot for pairings, withdrawing, arena game rules.

    rules    what an arena game forbids (abort, early draws) and asks (a quick first move)
    view     `GET /api/tournament/{id}` read into an ArenaView (status, time, our rank/score)
    desk     ArenaDesk: joins the arenas we play, withdraws at the end, at a stop and at the
             daily bot-game cap, and says how many slots to keep free
    control  the control directory through which `kibitz tournament ...` reaches the service

Lichess pairs the players of a running arena itself; the pairings arrive on the event stream
as ordinary gameStart events whose source is "arena" (with `tournamentId`). Swiss
tournaments refuse bots (lila app/controllers/Swiss.scala): only arenas are joined.
"""
