"""Playing strength by level: centipawn loss over fixed middlegames, and UCI_Elo calibration."""
