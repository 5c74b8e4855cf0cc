"""A local Lichess-compatible server for tests and the demo.

It speaks the Bot API, enough of the Board API to host an opponent, challenges, the event
stream and game export, as the official OpenAPI spec describes them and as lila behaves
where the spec is silent (error bodies, limits, clocks, castling notation, stream rules).

Modules, one job each:
    server      SandboxServer (in-process use by tests) and run_sandbox
    cli         the one command line of `kibitz sandbox` and `python -m sandbox`
    routes      the HTTP handlers and the error/fault middleware
    lobby       challenges, pairing, results, presence (opponentGone), end-of-game quirks
    games       one game: board, moves, offers, chat, timers and every way it ends
    clock       Fischer clocks in milliseconds and correspondence deadlines
    challenges  the challenge form, its validation, decline reasons, ChallengeJson
    views       the JSON objects of the event and game streams and the account endpoints
    streams     ND-JSON streams with keep-alives; who listens to what
    ratelimit   lila-shaped limits and their 429 bodies (JSON, or HTML on demand)
    faults      injected 5xx, delays, 429s; dropped and silent streams; `--fault` parsing
    opponent    a sandbox-side player (random or a UCI engine) over HTTP
    pgn         `GET /game/export/{id}` as PGN or GameJson
    accounts    accounts, scopes and bearer tokens
    timecontrol speeds, perfs and variants with lila's names and thresholds
    online      stand-ins for the opening explorer, cloud evaluation and tablebase
    tournaments arenas: join, withdraw, pairing each tick, arena scoring, the end on time
    tournament_routes  `/api/tournament/{id}` (show, join, withdraw)
    farming     lila's botFarming: each pair's last games, and which game is left unrated
    strength    how the sparring engine plays a person of a rating (UCI_Elo or a node limit)

Where it follows lila (github lichess-org/lila; a comment at each place cites the file),
as a table of behaviour, lila source and test:

- Our daily bot-game cap: 429 `bot.vsBot.day` on create and accept; the other bot's cap: 400
  with the same key and "please wait until <date>". The day is a fixed window: 24 h from
  the first game (memo RateLimit `clearAt`), then all of it is free again.
    lila: modules/bot/src/main/BotLimit.scala; app/controllers/Challenge.scala
      (eitherBotLimitResponse); modules/memo/src/main/RateLimit.scala
    test: tests/sandbox/test_challenges.py::test_challenge_credits_and_the_bot_game_cap;
      tests/sandbox/test_units.py::
      test_fixed_window_opens_with_the_first_charge_and_clears_at_once;
      tests/bot/test_lila_e2e.py::test_our_daily_bot_cap_declines_bots_and_still_serves_people,
      ::test_the_challengers_daily_cap_turns_away_that_challenger_only
- lila's own limits (event stream opens 30 per token per 10 min, /api/account 30 per user
  per 5 min, challenge credits 25 a minute and 200 a day, arena joins, the bot-game day)
  are lila's RateLimit: a window opens with the first charge; a charge passes while the
  credits used are below the limit (so the last may overshoot), or once the clock is past
  clearAt; a key is forgotten its window after its last write; a composite limit keeps
  the charges made before the limit that refused. Their 429 is lila's `rateLimited`, a
  bare `{"error": ...}`: only the bot-game day sends a `ratelimit` object.
    lila: modules/memo/src/main/RateLimit.scala (apply, composite);
      modules/web/src/main/Limiters.scala; app/http/ResponseBuilder.scala (rateLimited);
      app/controllers/Api.scala (eventStream), Account.scala (apiMe), Challenge.scala
      (apiCreate), Tournament.scala (apiJoin)
    test: tests/sandbox/test_units.py::test_lilas_rate_limit_boundaries,
      ::test_a_composite_limit_keeps_the_charges_before_a_refusal;
      tests/sandbox/test_accounts.py::test_account_profile_and_its_rate_limit;
      tests/sandbox/test_tournaments.py::test_join_needs_a_scope_and_is_rate_limited
- One overall limit per token on every request (180 a minute), a bare 429 (no `ratelimit`
  object), HTML on demand; no per-move limit.
    lila: app/controllers/PlayApi.scala (botMove has none: the limit is lichess.org's proxy)
    test:
      tests/sandbox/test_faults.py::test_every_request_of_a_token_counts_against_one_limit;
      tests/bot/test_concurrency_e2e.py::test_requests_keep_under_the_servers_overall_limit
- opponentGone: after 5 s offline, repeated every 5 s tick with a falling claimWinInSeconds
  (whole seconds, truncated), then 0; `gone: false` only for a player who had become
  claimable.
    lila: modules/round/src/main/RoundAsyncActor.scala (Tick, showMillisToGone, setOnline)
    test:
      tests/sandbox/test_games.py::test_a_player_who_leaves_is_announced_until_claimable_then_claimed,
      ::test_back_before_claimable_is_not_announced,
      ::test_back_after_claimable_is_announced;
      tests/bot/test_lila_e2e.py::
      test_a_refused_claim_is_tried_again_while_the_opponent_stays_gone
- Claim delay: 40 s, x3 classical, x2 rapid, /3 for a side down 4 points, /2 for a player
  not logged in, at least 10 s.
    lila: modules/round/src/main/RoundSocket.scala (povDisconnectTimeout)
    test: tests/sandbox/test_challenges.py::test_an_anonymous_challenger_is_null (the
      anonymous half; the other tests set the delay)
- claim-victory: a no-op (OK) on one's own turn, in a finished game or while it can still
  be aborted (before both sides moved), 400 while the opponent is not long gone, a draw if
  the claimer cannot mate; claim-draw: a no-op unless `drawable` (playing, past ply 2, not
  under noEarlyDraw), then 400 unless the opponent is long gone.
    lila: modules/bot/src/main/BotPlayer.scala (claimVictory, claimDraw); modules/core
      game/Game.scala (forceResignable, drawable); Pov.scala (mightClaimWin)
    test: tests/sandbox/test_games.py (the leaving tests),
      ::test_claims_do_nothing_while_the_game_can_be_aborted
- No takeback in a game with a BOT: a BOT's takeback preference is NEVER and both players'
  must allow it; a proposal is answered 200 and changes nothing. Between people they work.
    lila: modules/pref/src/main/PrefApi.scala (setBot); modules/round/src/main/
      Takebacker.scala (isAllowedByPrefs); modules/bot/src/main/BotPlayer.scala (setTakeback)
    test: tests/sandbox/test_games.py::test_no_takeback_in_a_game_with_a_bot,
      ::test_takeback_rewinds_to_the_proposers_turn;
      tests/bot/test_features_e2e.py::
      test_no_takeback_with_a_bot_and_the_pgn_completed_across_a_restart
- Draw offers: from ply 2 (60 under noEarlyDraw), one per 20 plies, on either turn; one
  sent with a move (`offeringDraw`) is judged before that move is played.
    lila: modules/bot/src/main/BotPlayer.scala (apply, offerDraw); modules/game GameExt
      (playerCanOfferDraw)
    test: tests/sandbox/test_games.py::
      test_a_draw_offer_with_a_move_needs_two_plies_before_that_move
- Chat: 1-140 characters of raw text (else 400), room player or spectator; then cleaned:
  trimmed, blank lines made one space, shouting lowered (castling words aside), one's own
  @mention made the bare name, cut to 140; a BOT's line with a link, or one cleaned to
  nothing, is dropped silently.
    lila: modules/bot/src/main/BotForm.scala; modules/chat/src/main/ChatApi.scala
      (makeLine, Writer.preprocessUserInput); lila.common.String (isShouting)
    test: tests/sandbox/test_games.py::test_chat_rooms_limits_and_links,
      ::test_chat_lines_are_cleaned_as_lila_does, ::test_chat_is_normalised_like_lila
- The challenges a (re)opened event stream sends first: only those still `created` (not
  offline), without `compat`; a live challenge event has `compat`, `bot` true only for a
  BOT recipient.
    lila: app/controllers/Api.scala (eventStream, createdByDestId);
      modules/api/src/main/EventStream.scala (challengeCompat)
    test: tests/sandbox/test_event_stream.py::
      test_reconnect_resends_ongoing_games_and_pending_challenges,
      ::test_a_live_challenge_has_compat_for_its_recipient,
      ::test_a_challenge_gone_offline_is_not_sent_again_on_reconnect;
      tests/bot/test_lila_e2e.py::
      test_a_challenge_waiting_before_the_bot_connects_is_accepted_without_compat
- A real-time challenge unseen for 20 s goes "offline" silently and can still be accepted;
  closing a keepAliveStream only stops its pings.
    lila: modules/challenge/src/main/ChallengeApi.scala (sweep); ChallengeRepo.scala
      (offline); ChallengeKeepAliveStream.scala
    test:
      tests/sandbox/test_challenges.py::test_realtime_challenges_go_offline_silently_unless_kept_alive,
      ::test_closing_a_keep_alive_stream_lets_its_challenge_go_offline;
      tests/bot/test_lila_e2e.py::test_a_challenge_gone_offline_while_queued_is_declined_not_accepted
- An anonymous challenger is `"challenger": null` (the OpenAPI spec says an object); its
  side of the game has no id or name.
    lila: modules/challenge/src/main/JsonView.scala (c.challengerUser);
      modules/bot/src/main/GameStateStream.scala
    test: tests/sandbox/test_challenges.py::test_an_anonymous_challenger_is_null;
      tests/bot/test_lila_e2e.py::test_an_anonymous_challenge_is_judged_like_any_other
- `GET /api/users/status`: the first 100 ids, unknown ones left out, `online` and `playing`
  only when true, no ids a 400 "No user ids provided".
    lila: app/controllers/Api.scala (usersStatus)
    test: tests/sandbox/test_accounts.py::test_public_profiles_and_statuses
- `GET /game/export/{id}` as JSON: `fullId` for a player asking with their token,
  `provisional`, `moves` unless moves=false, `pgn` with pgnInJson=true.
    lila: modules/api/src/main/GameApiV2.scala (toJson)
    test: tests/sandbox/test_games.py::test_export_gives_pgn_and_json;
      tests/bot/test_berserk_e2e.py (berserk plays the free human account against the bot)
- Arenas: join (scopes tournament:write or bot:play) answers lila's JoinResult texts as a
  400 (bots refused: "Tournament restrictions", the verdict "Bot players are not allowed";
  "Wrong entry code"; "Missing team"; "This tournament no longer exists", also for a
  finished arena; "Your pause is not over yet"; "You are joining too many tournaments"
  under `tournament.user.join`, 8 credits an hour and 30 a day, a new join to a user's
  arena 2, to lichess's 1; a pause blocks joins to running arenas only, Pause.canJoin);
  a playban is 403 with `minutes` and withdraws from arenas;
  30 joins or resumes a user per 10 minutes (`tournament.user.joinOrResume`, a bare 429);
  withdraw before the start leaves the list, after it stops the pairing and pauses a top-7
  player (Pause.scala, `me.pauseDelay`); an unknown id is 404 "No such tournament".
  Waiting players (people while on the event stream or after pairMeAsap, bots always) are
  paired by rank, under 50 players every 15 s, from 50 every 2 s, never straight back
  against their last opponent; colours by history. Arena games: source arena with
  tournamentId, mandatory (no abort, resignable from the start; no challenge rules), a
  missed first move loses; a draw after a draw (losses between) scores 0 under 60 plies
  (ArenaSheet isDrawStreak, Pairing.longGame); bot-vs-bot
  games count towards the daily cap, which pairing ignores (BotLimit). Scoring
  2/1/0, doubled on fire (after two wins), a draw under 20 plies 0, berserk +1 from 14
  plies (never a BOT). No pairing in the last max(30, min(limit / 2, 120)) s
  (`pairingsClosed`); a player who loses by noStart is withdrawn; at the end running
  games go on unscored. `botsAllowed` in the arena's JSON only when true.
    lila: app/controllers/Tournament.scala (apiJoin, apiWithdraw, show);
      modules/tournament/src/main/Tournament.scala (JoinResult), TournamentApi.scala (join,
      berserk, finish), StartedOrganizer.scala (fetchWaitingBots), WaitingUsers.scala,
      arena/PairingSystem.scala, arena/ArenaSheet.scala, Pairing.scala (quickDraw,
      notSoQuickFinish); modules/gathering/src/main/
      Condition.scala (Bots); modules/bot/src/main/BotLimit.scala; modules/core
      game/Game.scala (isMandatory, timeForFirstMove)
    test: tests/sandbox/test_tournaments.py (every rule);
      tests/bot/test_tournaments_e2e.py (a whole arena with the bot)
- Scopes per endpoint as lila's controllers declare them (Scoped, ScopedBody,
  AnonOrScoped; one line per route in routes.py); a bot's default token has bot:play alone,
  so `show` and the challenge list answer it 403; a rematch offer to a bot has no stored
  challenge (`show` 404, accept and decline work); a challenger still seen on its
  challenge counts as online in /api/users/status.
    lila: app/controllers/Challenge.scala (apiShow, apiList, apiAccept `tryRematch`,
      apiDecline), Api.scala (eventStream), PlayApi.scala, Round.scala (apiAddTime);
      modules/challenge/src/main/ChallengeApi.scala (ping, sweep)
    test: tests/sandbox/test_accounts.py::test_each_endpoint_checks_lilas_scopes;
      tests/bot/test_lila_e2e.py::
      test_a_bot_play_token_answers_queued_challenges_and_a_rematch,
      ::test_a_challenge_gone_offline_while_queued_is_declined_not_accepted
- An outage: `fail(status, path, for_s=45)` answers every matching request with that error
  for 45 s on the sandbox's clock (simulated in tests), past the mover's deadline while the
  clock still has time; the bot outlasts it and never resigns for it.
    lila: modules/round/src/main/RoundAsyncActor.scala (LilaStop, WsBoot: games survive
      restarts, time given back)
    test: tests/bot/test_faults_e2e.py::
      test_a_long_move_outage_on_our_turn_is_outlasted_never_resigned
- Keep-alives: an empty line every 6 s on the event stream, every 7 s on a game stream (a
  test's shorter keepalive_s scales both); a stream silenced by a fault counts the
  keep-alives its client went without before it reopened.
    lila: modules/api/src/main/EventStream.scala; modules/bot/src/main/GameStateStream.scala
    test: tests/bot/test_faults_e2e.py::
      test_silent_streams_are_reopened_after_two_missed_keep_alives
- A challenge game whose opponent never moves is never expired by the server (only the
  lobby's first-move timers abort); an abort that fails is the bot's to try again.
    lila: modules/core game/misc (Source.expirable: Lobby, Arena, Pool, Swiss; not Friend)
    test: tests/bot/test_faults_e2e.py::
      test_a_failed_abort_is_retried_until_the_game_is_aborted
- `opponent.username` in gameStart, gameFinish and nowPlaying: "TITLE name" for a titled
  player ("BOT name"), "Anon." for one not logged in.
    lila: modules/game/src/main/Namer.scala (playerTextBlocking, titleName)
    test: tests/sandbox/test_accounts.py::test_playing_lists_ongoing_games_most_urgent_first;
      tests/bot/lichess/test_events.py::test_event_stream_lines
- Ratings: a rated game is rated once finished with two plies played (any number in a
  tournament, so an arena's noStart loss is rated); one with a BOT whose first 20 plies
  (SAN) and winner (the same user, or a draw) repeat one of the pair's last 2 games (rated
  or casual: the crosstable) is left unrated: no `ratingDiff` in gameFinish or the export,
  the ratings unchanged, counted in `SandboxServer.summary()` (printed by `kibitz sandbox`
  at its stop).
    lila: modules/round/src/main/FarmBoostDetection.scala (botFarming, SAME_PLIES 20,
      PREV_GAMES 2), PerfsUpdater.scala (save), Finisher.scala (updateCountAndPerfs);
      modules/game/src/main/CrosstableApi.scala (add), JsonView.scala (ownerPreview)
    test: tests/sandbox/test_farming.py
- People of several ratings (`--humans`, default 1200,1600,2000; `start_opponent(rating=)`):
  accounts `human<rating>` with an established rating in every perf (no `provisional`), no
  title (gameFull's `title` is null, as lila's playerJson writes an untitled user's; the
  profile has none), played by the sparring engine at that strength: `UCI_LimitStrength`
  and `UCI_Elo` where the engine declares them, clamped to the option's range, a node limit
  below its floor or where it declares none; they accept every challenge.
    lila: modules/bot/src/main/BotJsonView.scala (playerJson)
    test: tests/sandbox/test_strength.py
- Decline reason keys and their texts.
    lila: modules/challenge/src/main/Challenge.scala (DeclineReason);
      translation/source/challenge.xml
    test: tests/bot/test_challenge_rules_e2e.py (one case per rule)

Endpoints: /api/account, /api/account/playing, /api/token/test, /api/bot/account/upgrade,
/api/bot/online, /api/user/{username}, /api/users/status, /api/stream/event,
/api/challenge (list, create, show, accept, decline, cancel), /api/{bot,board}/game/...
(stream, move, chat, abort, resign, draw, takeback, claim-victory, claim-draw),
/api/round/{id}/add-time/{seconds}, /api/tournament/{id} (show, join, withdraw) and
/game/export/{id}.
"""
