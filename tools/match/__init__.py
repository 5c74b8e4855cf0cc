"""Matches between engines: the match command line, the opening-book maker, SPRT pooling (the
engines, openings, referee and SPRT it uses are in tools.common)."""
