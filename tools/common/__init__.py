"""The tools' shared library: what more than one family of tools needs (the engines of a match,
the opening positions, the referee of a game and its tally, SPRT, one self-play game, the
SIGTERM handler of a long run).

The families (bench, match, nnue, strength, texel) may import this package, never each
other's modules; this package imports no family. tests/test_layout.py holds both rules.
"""
