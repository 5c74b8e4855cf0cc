"""Random UCI sessions against a real engine process: it never dies, never goes silent.

Every ``isready`` is answered, every ``go`` gets exactly one ``bestmove``, and that move is
legal in the position the ``go`` was about (``0000`` when the ``go`` or its position was
refused, or there is no legal move).  Positions come from real games and from mangled FEN
strings and move lists.
"""

from __future__ import annotations

import contextlib

import chess
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.engine.uci_process import UciProcess

FENS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "8/8/8/8/8/B7/n1K5/k7 w - - 0 1",
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",  # stalemate
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
    "8/P6K/8/1R6/8/2p5/4p3/k7 w - - 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
]
FEN_NOISE = "pnbrqkPNBRQK123456789/ -wbKQkqABH0"
MOVE_NOISE = ["e2e4", "e7e8q", "e7e8Q", "a7a8n", "e1g1", "e1h1", "e9e4", "0000", "zz", "h2h1r"]


@st.composite
def fens(draw: st.DrawFn) -> str:
    fen = draw(st.sampled_from(FENS))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(fen)))
        kind = draw(st.sampled_from(("insert", "delete", "replace", "cut")))
        char = draw(st.sampled_from(FEN_NOISE))
        if kind == "insert":
            fen = fen[:at] + char + fen[at:]
        elif kind == "delete":
            fen = fen[:at] + fen[at + 1 :]
        elif kind == "replace":
            fen = fen[:at] + char + fen[at + 1 :]
        else:
            fen = fen[:at]
    return fen


@st.composite
def position_commands(draw: st.DrawFn) -> str:
    fen = draw(fens())
    head = "position startpos" if draw(st.booleans()) else f"position fen {fen}"
    start = chess.STARTING_FEN if head == "position startpos" else fen
    moves: list[str] = []
    with contextlib.suppress(ValueError):
        board = chess.Board(start)
        for _ in range(draw(st.integers(0, 6))):
            legal = [move.uci() for move in board.legal_moves]
            if not legal or draw(st.integers(0, 9)) == 0:
                moves.append(draw(st.sampled_from(MOVE_NOISE)))
                break
            text = draw(st.sampled_from(legal))
            moves.append(text)
            board.push_uci(text)
    return f"{head} moves {' '.join(moves)}" if moves else head


GO_COMMANDS = st.one_of(
    st.integers(1, 3).map(lambda d: f"go depth {d}"),
    st.integers(1, 3000).map(lambda n: f"go nodes {n}"),
    st.integers(1, 40).map(lambda t: f"go movetime {t}"),
    st.integers(-50, 500).map(lambda t: f"go wtime {t} btime {t} winc 0 binc 0"),
    st.sampled_from(
        [
            "go infinite",
            "go",
            "go depth",
            "go depth -1",
            "go movetime abc",
            "go mate 0",
            "go mate 2",
            "go winc 10 binc 10",
            "go depth 2 searchmoves e2e4 zz",
            "go perft 0",
            "go perft 1",
            "go perft 2",
            "go wibble 3 depth 1",
        ]
    ),
)
OTHER_COMMANDS = st.sampled_from(
    [
        "isready",
        "stop",
        "ponderhit",
        "ucinewgame",
        "setoption name UCI_Chess960 value true",
        "setoption name UCI_Chess960 value false",
        "setoption name Hash value 2",
        "setoption name Hash value 0",
        "setoption name Move Overhead value 5",
        "setoption name Nonsense value 1",
        "xyzzy",
        "",
        "position",
        "position startpos moves",
        "go perft",
    ]
)
COMMANDS = st.lists(st.one_of(position_commands(), GO_COMMANDS, OTHER_COMMANDS), max_size=8)


class Session:
    """The test's picture of the engine: the position it holds (None after a refusal)."""

    def __init__(self, engine: UciProcess) -> None:
        self.engine = engine
        self.board: chess.Board | None = chess.Board()
        self.known = True  # False: the engine took a FEN python-chess reads otherwise

    def sync(self) -> list[str]:
        self.engine.send("isready")
        return self.engine.expect("readyok", timeout_s=60.0)

    def position(self, line: str) -> None:
        self.engine.send(line)
        refused = any(text.startswith("info string error") for text in self.sync())
        self.board, self.known = None, True
        if not refused:
            try:
                self.board = self._board(line)
            except ValueError:
                self.board, self.known = chess.Board(), False

    @staticmethod
    def _board(line: str) -> chess.Board:
        tokens = line.split()[1:]
        moves = tokens[tokens.index("moves") + 1 :] if "moves" in tokens else []
        head = tokens[: tokens.index("moves")] if "moves" in tokens else tokens
        board = chess.Board() if head[0] == "startpos" else chess.Board(" ".join(head[1:]))
        for text in moves:
            board.push(board.parse_uci(text.lower()))
        return board

    def go(self, line: str) -> None:
        self.engine.send(line)
        if "perft" in line.split():
            answer = self.engine.read_until(
                lambda text: text.startswith(("Nodes searched", "info string error")),
                timeout_s=60.0,
            )[-1]
            assert answer.startswith("Nodes searched") == (
                self.board is not None and line != "go perft 0"
            ), answer
            self.sync()
            return
        if line.split()[1:2] == ["infinite"]:
            self.engine.send("stop")
        lines = self.engine.expect("bestmove", timeout_s=60.0)
        best = lines[-1].split()[1]
        after = self.sync()
        assert not [text for text in after if text.startswith("bestmove")], "two bestmoves"
        if self.board is None:
            assert best == "0000", lines
        elif best == "0000":
            refused = any(text.startswith("info string error go") for text in lines)
            assert refused or not any(self.board.legal_moves), lines
        elif self.known:
            board = self.board
            # castling may be written king-to-square or king-takes-rook (UCI_Chess960)
            legal = {m.uci() for m in board.legal_moves}
            legal |= {board.uci(m, chess960=True) for m in board.legal_moves}
            assert best in legal, f"{best} not legal in {board.fen()}: {lines}"

    def other(self, line: str) -> None:
        self.engine.send(line)
        if line == "isready":
            # its own readyok, read here: left in the queue, it would end the next sync early
            # and leave that sync's lines (an error) to the command after it
            self.engine.expect("readyok", timeout_s=60.0)
        if line == "ucinewgame" or line == "position startpos moves":
            self.board, self.known = chess.Board(), True
        elif line == "position":
            self.board = None
        self.sync()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(commands=COMMANDS)
@example(commands=["isready", "ponderhit", "go perft 2"])  # the session's own sync, kept in step
def test_random_sessions_never_break_the_engine(engine: UciProcess, commands: list[str]) -> None:
    session = Session(engine)
    engine.send("ucinewgame")
    engine.send("setoption name UCI_Chess960 value false")
    session.sync()
    for line in commands:
        if line.startswith("position") and len(line.split()) > 1 and line != (
            "position startpos moves"
        ):
            session.position(line)
        elif line.startswith("go") and line != "go perft":
            session.go(line)
        else:
            session.other(line)
        assert engine.proc.poll() is None, engine.transcript[-20:]
