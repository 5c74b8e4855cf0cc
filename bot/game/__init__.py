"""One game from start to end. `game` orchestrates: the stream, the dispatch of its events,
the ending. Its parts, one job each: `position` (the board in step with the server),
`mover` (our move and pondering), `talk` (offers and chat), `chat` (kibitz lines and the
chat sanitizer), `greetings` (the lines said at the start and end), `alarms` (abort, claim
victory, resync), `metrics` (what is measured, bounded). Around them: `clock` (the time
allocation), `conduct` (draws, resigns, takebacks), `correspondence` (the visits), and
`hooks`, where the features plug in. The engines a game plays with live in `bot.engines`."""
