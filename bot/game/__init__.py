"""One game from start to end: its stream and board, the engine process that thinks for it,
the clock allocation, the conduct rules (draws, resigns, takebacks), and the correspondence
desk; `hooks` is where features plug in."""
