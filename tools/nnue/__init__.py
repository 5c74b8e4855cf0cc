"""The learned evaluation's tools: self-play data, the trainer, the centipawn scale."""
