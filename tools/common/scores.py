"""One reading of a UCI score as centipawns for every tool.

python-chess turns a mate into a number only when told how large a mate is; the tools compare
and cap such numbers, so they must all agree on it (the bot's `MATE_SCORE_CP` is the same)."""

from __future__ import annotations

# A mate in n reads as MATE_CP - n: above any evaluation, and shorter mates score higher.
MATE_CP = 100_000
