"""MultiPV: the lines of every depth sorted, complete and distinct; bestmove is line 1."""

from __future__ import annotations

import chess

from tests.engine.uci_process import UciProcess

MIDDLEGAME = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N2N2/PP2BPPP/R2QKB1R w KQ - 0 9"
# White is in check with two ways out: Kf1-f2 and Kf1-e2
FEW_MOVES = "6k1/8/8/8/8/8/6PP/r4K2 w - - 0 1"


def _field(line: str, name: str) -> str:
    tokens = line.split()
    return tokens[tokens.index(name) + 1]


def _pv(line: str) -> list[str]:
    tokens = line.split()
    return tokens[tokens.index("pv") + 1 :]


def _score_cp(line: str) -> int:
    tokens = line.split()
    kind, value = tokens[tokens.index("score") + 1], int(tokens[tokens.index("score") + 2])
    return value if kind == "cp" else (100_000 - abs(value)) * (1 if value > 0 else -1)


def _lines_by_depth(lines: list[str]) -> dict[int, list[str]]:
    """The exact (not bound) info lines of each depth, in the order sent."""
    depths: dict[int, list[str]] = {}
    for line in lines:
        if line.startswith("info depth") and "bound" not in line:
            depths.setdefault(int(_field(line, "depth")), []).append(line)
    return depths


def _search(fen: str, multipv: int, depth: int) -> tuple[dict[int, list[str]], str]:
    process = UciProcess()
    try:
        process.handshake()
        process.send(f"setoption name MultiPV value {multipv}")
        process.send(f"position fen {fen}")
        process.send(f"go depth {depth}")
        lines = process.expect("bestmove", timeout_s=120.0)
    finally:
        assert process.close() == 0
    return _lines_by_depth(lines), lines[-1].split()[1]


def _assert_legal(board: chess.Board, moves: list[str]) -> None:
    walker = board.copy()
    for text in moves:
        move = chess.Move.from_uci(text)
        assert move in walker.legal_moves, f"{text} illegal in {walker.fen()} ({moves})"
        walker.push(move)


def test_every_depth_reports_its_lines_sorted_complete_and_distinct() -> None:
    depths, best = _search(MIDDLEGAME, 4, 7)
    board = chess.Board(MIDDLEGAME)
    assert sorted(depths) == list(range(1, 8))
    for depth, lines in depths.items():
        assert [int(_field(line, "multipv")) for line in lines] == [1, 2, 3, 4], depth
        firsts = [_pv(line)[0] for line in lines]
        assert len(set(firsts)) == 4, (depth, firsts)
        scores = [_score_cp(line) for line in lines]
        assert scores == sorted(scores, reverse=True), (depth, scores)
        for line in lines:
            for name in ("seldepth", "nodes", "nps"):
                assert name in line.split()
            _assert_legal(board, _pv(line))
    assert best == _pv(depths[7][0])[0]


def test_more_lines_asked_than_legal_moves_gives_one_per_move() -> None:
    board = chess.Board(FEW_MOVES)
    legal = {move.uci() for move in board.legal_moves}
    depths, best = _search(FEW_MOVES, 16, 5)
    for depth, lines in depths.items():
        assert len(lines) == len(legal), (depth, lines)
        assert {_pv(line)[0] for line in lines} == legal
    assert best == _pv(depths[max(depths)][0])[0]


def test_multipv_1_reports_one_line_per_depth() -> None:
    depths, _ = _search(MIDDLEGAME, 1, 5)
    assert all(len(lines) == 1 and " multipv 1 " in lines[0] for lines in depths.values())
