"""Benchmarks: perft speed, the bot's overhead and soak, its memory, its request rate."""
