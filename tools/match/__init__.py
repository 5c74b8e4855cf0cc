"""Matches between engines: the match command line, the opening-book maker, SPRT (the engines
and openings it plays are in tools.common)."""
