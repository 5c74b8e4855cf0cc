"""Texel tuning of the hand-written evaluation: data, labels, the linear trace, the fit."""
