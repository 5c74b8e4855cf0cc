"""Kibitz chess engine: a UCI engine compiled with numba."""
