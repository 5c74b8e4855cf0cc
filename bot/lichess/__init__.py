"""Talking to Lichess: the running bot's HTTP client (`client`: every path it uses, its error
types, one request budget), the typed records of what the streams send (`events`), the
variants (`variants`), and the account (`account`: the one rule for whether a token may
play, and the command line's one-shot calls through berserk)."""
