"""Matches between engines: the match command line, its openings and engines, SPRT."""
