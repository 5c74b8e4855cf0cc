"""The data factory: shards, the ledger, a killed run, and positions from game records."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import numpy as np
import pytest

from engine.params import DEFAULT_EVAL_FILE
from tests.engine.conftest import random_net
from tools.common.referee import elo_difference_unpaired, elo_estimate
from tools.nnue import factory, from_pgn, ledger, merge, shards
from tools.nnue.data import decode_board, encode

REPO = Path(__file__).resolve().parents[2]
META = {"k": 205, "evaluation": "net 0123abcd", "net": "test.nnue", "nodes": 100,
        "source": "selfplay", "run": "20260101T000000Z-1"}
# A game from a random opening can be adjudicated before its first sampled ply and write no
# position (2 games in 300 at 100 nodes and 4 random plies); from the named openings alone the
# node-bound searches are deterministic, and each of the 32 writes positions at the node
# counts below, alone or against the engine at 50 nodes. Runs that must add positions in a
# game or two start there.
NAMED_OPENINGS = ["--random-plies", "0"]


def _game(seed: int, plies: int) -> bytes:
    """The records of a short random game (its positions, scores from the seed)."""
    rng = np.random.default_rng(seed)
    board = chess.Board()
    data = []
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(moves[int(rng.integers(len(moves)))])
        data.append(encode(board, int(rng.integers(-500, 500)), 1))
    return b"".join(data)


def _write_run(directory: Path, run: str, games: list[bytes], max_bytes: int) -> list[Path]:
    writer = shards.ShardWriter(directory, f"{run}-j0", {**META, "run": run}, max_bytes)
    for data in games:
        writer.add(data)
    writer.close()
    return sorted(directory.glob(f"{run}-*{shards.SEALED_SUFFIX}"))


def test_shards_round_trip_their_records_and_stay_under_their_size(tmp_path: Path) -> None:
    games = [_game(seed, 30 + seed) for seed in range(12)]
    paths = _write_run(tmp_path, "r1", games, max_bytes=2500)
    assert len(paths) > 1  # the size bound split them
    assert all(path.stat().st_size <= 2500 for path in paths)
    loaded = [shards.read_shard(path) for path in paths]
    assert all(shard.sealed and shard.torn_bytes == 0 and shard.k == 205 for shard in loaded)
    assert loaded[0].meta["run"] == "r1"
    records = np.concatenate([shard.records for shard in loaded])
    assert records.tobytes() == b"".join(games)
    assert shards.SHARD_MAX_BYTES == 16 * 1024 * 1024


def test_a_truncated_or_corrupt_shard_is_refused_by_name_and_the_others_load(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    games = [_game(seed, 40) for seed in range(9)]
    good, cut, flipped = (_write_run(tmp_path, f"r{i}", games[3 * i:3 * i + 3], 1 << 20)[0]
                          for i in range(3))
    with cut.open("r+b") as handle:
        handle.truncate(cut.stat().st_size - 10)
    data = bytearray(flipped.read_bytes())
    data[-5] ^= 0xFF
    flipped.write_bytes(bytes(data))
    with pytest.raises(shards.ShardError, match=rf"^{cut.name}: truncated"):
        shards.read_shard(cut)
    with pytest.raises(shards.ShardError, match=rf"^{flipped.name}: corrupt frame 2"):
        shards.read_shard(flipped)
    # a whole frame cut off a sealed shard: its header's count tells
    whole = _write_run(tmp_path, "r3", games[:2], 1 << 20)[0]
    first_frame_end = len(shards.header({**META, "run": "r3"})) + len(shards.frame(games[0]))
    with whole.open("r+b") as handle:
        handle.truncate(first_frame_end)
    with pytest.raises(shards.ShardError, match=r"header says 80 records, its frames hold 40"):
        shards.read_shard(whole)
    sources = shards.training_sources([tmp_path], None)
    assert [Path(source.name).name for source in sources] == [good.name]
    assert sources[0].records.tobytes() == b"".join(games[:3]) and sources[0].k == 205.0
    err = capsys.readouterr().err
    for bad in (cut, flipped, whole):
        assert f"SKIPPED {bad.name}: " in err
    with pytest.raises(SystemExit, match=r"no shard with positions in it"):
        shards.training_sources([cut], None)


def test_an_open_shard_loads_its_whole_games_and_sealing_cuts_the_torn_one(
        tmp_path: Path) -> None:
    games = [_game(seed, 40) for seed in range(3)]
    writer = shards.ShardWriter(tmp_path, "r-j0", META)
    for data in games:
        writer.add(data)
    os.close(writer.fd)
    with writer.path.open("ab") as handle:  # a game in flight, half written
        handle.write(shards.frame(_game(7, 20))[:50])
    shard = shards.read_shard(writer.path)
    assert not shard.sealed and shard.torn_bytes == 50 and len(shard.records) == 120
    sealed = shards.seal(writer.path)
    assert sealed is not None and not writer.path.exists()
    again = shards.read_shard(sealed.path)
    assert again.sealed and again.records.tobytes() == b"".join(games)


def _ledgered_run(directory: Path, games: list[bytes]) -> dict[str, Any]:
    """A run as the factory makes one, without playing: its shards and its ledger line."""
    start = factory.begin_run(directory)
    _write_run(directory, start.run, games, 1 << 20)
    ev = factory.Evaluation("test.nnue", "test.nnue", "0123abcd", 205)
    return factory.finish_run(directory, start, "selfplay", ev, 100, 1, len(games))


def test_the_status_names_a_shard_deleted_or_cut_behind_the_ledger(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _ledgered_run(tmp_path, [_game(1, 30), _game(2, 30)])
    assert line["added"] == 60 and line["ledger_total"] == 0
    assert factory.main(["status", "--dir", str(tmp_path)]) == 0
    assert "no mismatch" in capsys.readouterr().out
    (shard_name,) = list(line["shards"])
    (tmp_path / shard_name).unlink()
    assert factory.main(["status", "--dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"MISMATCH: {shard_name}: missing (the ledger counts 60 positions in it)" in out
    # the next run records what it found against the ledger's total
    line = _ledgered_run(tmp_path, [_game(3, 30)])
    assert line["found"] == {"shards": 0, "positions": 0, "bad": []}
    assert line["ledger_total"] == 60
    assert line["mismatches"] == [f"{shard_name}: missing (the ledger counts 60 positions "
                                  "in it)"]


def test_the_status_of_a_new_machine_is_no_data_not_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "kibitz-data"
    assert factory.main(["status", "--dir", str(missing)]) == 0
    assert f"{missing}: no data yet" in capsys.readouterr().out
    missing.write_bytes(b"")
    with pytest.raises(SystemExit, match="not a directory"):
        factory.main(["status", "--dir", str(missing)])


def _started(run_args: list[str]) -> tuple[subprocess.Popen[str], list[str]]:
    """``factory run`` with these arguments in a session of its own, returned with the lines
    it printed once its first game is on disk."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tools.nnue.factory", "run", *run_args],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    assert process.stdout is not None
    lines = []
    for text in process.stdout:  # each line an event; ends when the run does
        lines.append(text)
        if text.startswith(factory.FIRST_GAME_LINE):
            return process, lines
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    raise AssertionError("the run ended before its first game: " + "".join(lines))


def _started_run(directory: Path) -> subprocess.Popen[str]:
    """A self-play run with the hand-written evaluation, once its first game is on disk."""
    return _started(["--dir", str(directory), "--jobs", "1", "--nodes", "100",
                     "--evalfile", ""])[0]


def test_a_killed_run_leaves_a_consistent_directory(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """SIGKILL to the run and its players once its first game is on disk: the directory
    holds whole games only, the status shows no mismatch, and the next run seals and records
    the killed run's shards."""
    process = _started_run(tmp_path)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    opened = sorted(tmp_path.glob(f"*{shards.OPEN_SUFFIX}"))
    assert opened and not ledger.read_ledger(tmp_path)
    written = sum(len(shards.read_shard(path).records) for path in opened)
    assert written > 0
    assert factory.main(["status", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "has no ledger line (stopped before it, or still running)" in out
    assert "MISMATCH" not in out
    line = _ledgered_run(tmp_path, [_game(5, 30)])
    assert sum(line["recovered"].values()) == written
    assert not list(tmp_path.glob(f"*{shards.OPEN_SUFFIX}"))
    assert line["mismatches"] == [] and line["found"]["positions"] == written
    capsys.readouterr()
    assert factory.main(["status", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"total {written + 30} positions" in out and "no ledger line" not in out


def test_sigterm_to_the_run_s_group_seals_its_shards_and_writes_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What ``timeout`` does at the end of ``make datagen``: SIGTERM to the process group."""
    process = _started_run(tmp_path)
    os.killpg(process.pid, signal.SIGTERM)
    assert process.wait() == 0
    (line,) = ledger.read_ledger(tmp_path)
    assert line["added"] > 0 and line["added"] == sum(line["shards"].values())
    assert not list(tmp_path.glob(f"*{shards.OPEN_SUFFIX}"))
    assert factory.main(["status", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"total {line['added']} positions" in out and "no ledger line" not in out


def test_a_run_plays_the_net_it_read_when_the_file_goes_during_the_run(tmp_path: Path) -> None:
    """The run reads its net once, before its players start, and hands them those bytes: the
    file removed after that (a checkout that drops it, a new default) stops nothing, and the
    ledger names the net that played."""
    from engine import nnue, params

    net_file = tmp_path / "net.nnue"
    net_file.write_bytes((nnue.NETS_DIR / params.DEFAULT_EVAL_FILE).read_bytes())
    expected = nnue.load_net(net_file).hash
    data = tmp_path / "data"
    process = subprocess.Popen(
        [sys.executable, "-m", "tools.nnue.factory", "run", "--dir", str(data), "--jobs", "1",
         "--nodes", "100", "--games", "2", *NAMED_OPENINGS, "--evalfile", str(net_file)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    header = process.stdout.readline()  # printed once the net is read, before any player starts
    assert f"net {expected}" in header, header
    net_file.unlink()
    rest = process.stdout.read()
    assert process.wait() == 0, header + rest
    assert "Traceback" not in rest, rest
    (line,) = ledger.read_ledger(data)
    assert line["net_hash"] == expected and line["games"] == 2
    assert line["added"] > 0 and line["added"] == sum(line["shards"].values())


GAME_RECORD = """[Event "Rated blitz game"]
[Site "https://lichess.org/abcdEFGH"]
[White "kibitz"]
[Black "someone"]
[Result "0-1"]
[Variant "Standard"]

1. e4 { [%eval 0.3] [%clk 0:03:00] } 1... e5 { [%clk 0:03:00] } 2. Nf3 { [%eval 0.25] \
[%clk 0:02:59] } 2... Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 6. Re1 b5 7. Bb3 d6 8. c3 O-O \
9. h3 Nb8 10. d4 Nbd7 11. Nbd2 Bb7 12. Bc2 Re8 0-1

[Event "Casual crazyhouse game"]
[Site "https://lichess.org/zzzzzzzz"]
[Variant "Crazyhouse"]
[Result "1-0"]

1. e4 e5 1-0

[Event "Unfinished"]
[Site "https://lichess.org/yyyyyyyy"]
[Result "*"]

1. d4 d5 *
"""


def test_game_records_give_rescored_positions_once(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    pgn = tmp_path / "games.pgn"
    pgn.write_text(GAME_RECORD)
    data = tmp_path / "data"
    assert from_pgn.main([str(pgn), "--dir", str(data), "--nodes", "100"]) == 0
    (line,) = ledger.read_ledger(data)
    assert line["source"] == "pgn" and line["pgn_games"] == ["https://lichess.org/abcdEFGH"]
    assert line["skipped"] == {"variant": 1, "unfinished": 1}
    # what the rescoring cost (a few hundred nodes may round to 0.0 s)
    assert line["cpu_s"] >= 0 and "positions_per_cpu_hour" in line
    (shard,) = (shards.read_shard(data / name) for name in line["shards"])
    assert shard.meta["source"] == "pgn" and len(shard.records) == line["added"] > 0
    assert set(shard.records["result"].tolist()) == {0}  # 0-1: white's loss
    with pgn.open() as handle:
        game = chess.pgn.read_game(handle)
    assert game is not None
    played = set()
    board = game.board()
    for move in game.mainline_moves():
        board.push(move)
        played.add(board.board_fen())
    start = chess.Board().board_fen()
    for record in shard.records:
        board = decode_board(record)
        assert board.board_fen() in played | {start} and not board.is_check()
    capsys.readouterr()
    assert from_pgn.main([str(pgn), "--dir", str(data), "--nodes", "100"]) == 0
    assert ledger.read_ledger(data)[-1]["added"] == 0
    assert "'imported before': 1" in capsys.readouterr().out


def test_describe_tells_the_sources_apart(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    _write_run(tmp_path, "r1", [_game(1, 30)], 1 << 20)
    writer = shards.ShardWriter(tmp_path, "r2-pgn", {**META, "run": "r2", "source": "pgn"})
    writer.add(encode(chess.Board("8/8/4k3/8/8/4K3/4P3/8 w - - 0 1"), 700, 2))
    writer.close()
    assert factory.main(["describe", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "pgn: 1 positions; pieces mean 3.0" in out and "selfplay: 30 positions" in out
    assert "600-3000 cp 100.0%" in out


def test_the_trainer_takes_record_files_and_shard_directories_together(
        tmp_path: Path) -> None:
    """A record file keeps its sidecar's K (or ``--k``); each shard brings its own."""
    from tools.nnue import data as nnue_data

    shard_dir = tmp_path / "shards"
    shard_dir.mkdir()
    _write_run(shard_dir, "r1", [_game(1, 30)], 1 << 20)
    records = tmp_path / "old.bin"
    records.write_bytes(b"".join(_game(seed, 40) for seed in range(3)))
    nnue_data.meta_path(records).write_text('{"evaluation": "hand-written", "k": 400}\n')
    sources = shards.training_sources([records, shard_dir], None)
    assert [(Path(s.name).name, len(s.records), s.k, s.origin) for s in sources] == [
        ("old.bin", 120, 400.0, shards.RECORD_FILE_ORIGIN),
        ("r1-j0-0000.kbzs", 30, 205.0, "selfplay")]
    assert [s.k for s in shards.training_sources([records, shard_dir], [250.0])] == [
        250.0, 205.0]
    records.write_bytes(_game(1, 40))
    with pytest.raises(SystemExit, match=r"old\.bin: 40 positions are too few to train on"):
        shards.training_sources([records], None)


def test_the_held_out_loss_splits_by_group() -> None:
    """Each group's mean over its own positions (an origin, or a phase), in the order of
    ``groups``; a group with no held-out position is left out, not divided by zero."""
    errors = np.array([1.0, 3.0, 10.0, 5.0, 20.0])
    ids = np.array([0, 0, 2, 0, 2], dtype=np.int64)
    assert shards.mean_by_group(errors, ids, ["pgn", "records", "selfplay"]) == {
        "pgn": 3.0, "selfplay": 15.0}


def test_repeat_names_an_origin_of_the_data_and_a_whole_count() -> None:
    """``--repeat ORIGIN=N`` of the trainer: origins not named are seen once; a misspelt
    origin, a count that is not a whole number of at least 1, or one named twice is refused by
    what is wrong, before any training."""
    origins = ["pgn", "selfplay", "versus"]
    assert shards.origin_repeats(["versus=4", "pgn=2"], origins) == {"versus": 4, "pgn": 2}
    assert shards.origin_repeats([], origins) == {}
    for spec, why in [("versus", "expected ORIGIN=N"), ("=3", "expected ORIGIN=N"),
                      ("vs=4", r"no --data position is of origin 'vs' \(the data's: pgn, "
                               r"selfplay, versus\)"),
                      ("versus=1.5", "'1.5' is not a whole number"),
                      ("versus=0", "the count must be 1 or more")]:
        with pytest.raises(SystemExit, match=why):
            shards.origin_repeats([spec], origins)
    with pytest.raises(SystemExit, match="'versus' is named twice"):
        shards.origin_repeats(["versus=2", "versus=3"], origins)


class _FirstMoveOpponent:
    """An opponent that plays the first legal move in python-chess's order, and keeps what
    it was asked."""

    name = "first-move"

    def __init__(self) -> None:
        self.games = 0
        self.asked: list[chess.Board] = []
        self.played: list[chess.Move] = []

    def new_game(self) -> None:
        self.games += 1

    def move(self, board: chess.Board) -> chess.Move:
        self.asked.append(board.copy())
        self.played.append(next(iter(board.legal_moves)))
        return self.played[-1]


@pytest.mark.parametrize("opponent_color", [chess.WHITE, chess.BLACK])
def test_a_game_against_an_opponent_plays_its_moves_on_its_turns(
        opponent_color: chess.Color) -> None:
    """The opponent is asked on each of its turns and on no other, and what it answers is
    the move played."""
    import random

    from tools.common import selfplay

    opponent = _FirstMoveOpponent()
    kept, result = selfplay.play_game(random.Random(3), 200, 2, None, opponent, opponent_color)
    assert opponent.games == 1 and opponent.asked and result in ("1-0", "0-1", "1/2-1/2")
    assert all(board.turn == opponent_color for board in opponent.asked)
    for board, move, after in zip(opponent.asked, opponent.played, opponent.asked[1:],
                                  strict=False):
        # two plies later the opponent is asked again, its own move played in between
        assert after.move_stack[:-1] == [*board.move_stack, move]
    assert len(opponent.asked) >= 2 and kept


def test_the_engine_s_outcome_against_an_opponent() -> None:
    assert factory.engine_outcome("1-0", chess.BLACK) == "win"
    assert factory.engine_outcome("1-0", chess.WHITE) == "loss"
    assert factory.engine_outcome("0-1", chess.WHITE) == "win"
    assert factory.engine_outcome("0-1", chess.BLACK) == "loss"
    assert factory.engine_outcome("1/2-1/2", chess.WHITE) == "draw"


def test_a_run_against_another_engine_keeps_its_source_and_score(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two games against the engine itself as a UCI process: the shards and the ledger line
    say ``versus`` and whom, the line counts the engine's outcomes, the status names them."""
    data = tmp_path / "data"
    run = subprocess.run(
        [sys.executable, "-m", "tools.nnue.factory", "run", "--dir", str(data), "--jobs", "1",
         "--nodes", "100", "--games", "2", *NAMED_OPENINGS, "--opponent", "kibitz",
         "--opponent-nodes", "50", "--opponent-option", "Hash=4"],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stdout + run.stderr
    (line,) = ledger.read_ledger(data)
    assert line["source"] == "versus" and line["games"] == 2
    assert line["opponent"] == "kibitz" and line["opponent_limit"] == "50 nodes"
    assert sum(line["engine_score"].values()) == 2
    assert line["added"] > 0 and line["added"] == sum(line["shards"].values())
    for name in line["shards"]:
        meta = shards.read_shard(data / name).meta
        assert meta["source"] == "versus" and meta["opponent"] == "kibitz"
    assert "against kibitz at 50 nodes:" in run.stdout
    assert factory.main(["status", "--dir", str(data)]) == 0
    assert "against kibitz at 50 nodes" in capsys.readouterr().out


def test_a_run_shares_its_time_between_the_opponent_and_self_play(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--opponent-share``: the games against the opponent first, then self-play, as two
    runs with a ledger line each (one matchup a line), their shards named by their source."""
    data = tmp_path / "data"
    run = subprocess.run(
        [sys.executable, "-m", "tools.nnue.factory", "run", "--dir", str(data), "--jobs", "1",
         "--nodes", "100", "--games", "1", *NAMED_OPENINGS, "--seconds", "3600",
         "--opponent", "kibitz", "--opponent-nodes", "50", "--opponent-option", "Hash=4",
         "--opponent-share", "0.3"],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stdout + run.stderr
    versus, selfplay = ledger.read_ledger(data)
    assert versus["source"] == "versus" and versus["opponent"] == "kibitz"
    assert sum(versus["engine_score"].values()) == 1
    assert selfplay["source"] == "selfplay" and "opponent" not in selfplay
    assert selfplay["run"] != versus["run"] and selfplay["start"] >= versus["end"]
    assert selfplay["ledger_total"] == versus["added"]  # the second found the first's shards
    for line in (versus, selfplay):
        assert line["games"] == 1 and line["added"] == sum(line["shards"].values()) > 0
        for name in line["shards"]:
            assert shards.read_shard(data / name).meta["source"] == line["source"]
    assert factory.main(["status", "--dir", str(data)]) == 0
    out = capsys.readouterr().out
    assert f"total {versus['added'] + selfplay['added']} positions" in out
    assert "no mismatch" in out


def test_a_run_stopped_against_the_opponent_starts_no_self_play(tmp_path: Path) -> None:
    """SIGTERM in the first part: that run seals its shards and writes its line, and the
    self-play part does not start in the time left."""
    data = tmp_path / "data"
    process, lines = _started(
        ["--dir", str(data), "--jobs", "1", "--nodes", "100", "--seconds", "3600",
         "--opponent", "kibitz", "--opponent-nodes", "50", "--opponent-option", "Hash=4",
         "--opponent-share", "0.5"])
    process.send_signal(signal.SIGTERM)
    try:  # a self-play part started after the stop would run for half an hour
        lines.append(process.communicate(timeout=600)[0])
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError("the run went on after SIGTERM: " + "".join(lines)) from None
    assert process.returncode == 0, "".join(lines)
    (line,) = ledger.read_ledger(data)
    assert line["source"] == "versus" and line["added"] > 0
    assert not list(data.glob(f"*{shards.OPEN_SUFFIX}"))


@pytest.mark.parametrize("args, wrong", [
    (["--seconds", "60", "--opponent-share", "0.5"], "needs --opponent"),
    (["--opponent", "kibitz", "--opponent-share", "0.5"], "needs --opponent and --seconds"),
    (["--seconds", "60", "--opponent", "kibitz", "--opponent-share", "1"], "between 0 and 1"),
    (["--seconds", "60", "--opponent", "kibitz", "--opponent-share", "0"], "between 0 and 1"),
])
def test_an_opponent_share_without_its_opponent_or_time_is_refused(
        tmp_path: Path, args: list[str], wrong: str) -> None:
    with pytest.raises(SystemExit, match=wrong):
        factory.main(["run", "--dir", str(tmp_path / "data"), *args])
    assert not (tmp_path / "data").exists()


def test_the_status_scores_each_net_against_each_opponent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The runs against an opponent add up by net and setting; each net is read against the
    one that played most there; self-play, other limits and other openings stay apart."""
    def run_line(run: str, net: str, limit: str, wdl: tuple[int, int, int]) -> dict[str, Any]:
        return {"run": run, "source": "versus", "net": net, "net_hash": net[:4], "nodes": 3000,
                "opponent": "ethereal-chess", "opponent_limit": limit, "shards": {},
                "random_plies": 4, "added": 0,
                "engine_score": dict(zip(factory.OUTCOMES, wdl, strict=True))}
    lines = [run_line("r1", "old.nnue", "depth 9", (300, 100, 600)),
             run_line("r2", "new.nnue", "depth 9", (200, 100, 200)),
             run_line("r3", "old.nnue", "depth 9", (300, 100, 600)),
             run_line("r4", "old.nnue", "depth 8", (50, 0, 50)),
             {**run_line("r6", "old.nnue", "depth 9", (1, 0, 0)), "random_plies": 8},
             {"run": "r5", "source": "selfplay", "net": "old.nnue", "net_hash": "old.",
              "nodes": 3000, "shards": {}, "added": 0}]
    for line in lines:
        ledger.append_line(tmp_path, line)
    scores = ledger.versus_scores(ledger.read_ledger(tmp_path))
    depth_9 = ledger.Matchup("ethereal-chess", "depth 9", 3000, 4)
    assert scores[depth_9] == {ledger.Player("old.nnue", "old."): (600, 200, 1200),
                               ledger.Player("new.nnue", "new."): (200, 100, 200)}
    assert len(scores) == 3  # other openings are another matchup
    assert factory.main(["status", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    old_elo = [round(value) for value in elo_estimate(600, 200, 1200)]
    diff = [round(value) for value in elo_difference_unpaired((200, 100, 200), (600, 200, 1200))]
    assert "against ethereal-chess at depth 9, 3000 nodes a move, 4 random plies:" in out
    assert (f"  old.nnue (old.): +600 =200 -1200 in 2000 games, 35.0%, {old_elo[0]:+d} Elo "
            f"({old_elo[1]:+d} .. {old_elo[2]:+d})\n") in out
    assert "  new.nnue (new.): +200 =100 -200 in 500 games, 50.0%, +0 Elo (-27 .. +27)" in out
    assert f"; against old.nnue (old.) {diff[0]:+d} Elo ({diff[1]:+d} .. {diff[2]:+d})\n" in out
    assert diff[1] > 0
    assert "against ethereal-chess at depth 8, 3000 nodes a move, 4 random plies:" in out
    assert "against ethereal-chess at depth 9, 3000 nodes a move, 8 random plies:" in out


def test_one_net_under_two_names_is_one_player(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A candidate copied to the default's name keeps its hash: its runs under both names add
    up as one net, named by both, and no net is read against itself."""
    def run_line(run: str, net: str, net_hash: str, wdl: tuple[int, int, int]) -> dict[str, Any]:
        return {"run": run, "source": "versus", "net": net, "net_hash": net_hash, "nodes": 3000,
                "opponent": "ethereal-chess", "opponent_limit": "depth 9", "shards": {},
                "random_plies": 4, "added": 0,
                "engine_score": dict(zip(factory.OUTCOMES, wdl, strict=True))}
    for line in [run_line("r1", "old.nnue", "aaaa", (300, 100, 600)),
                 run_line("r2", "c2.nnue", "bbbb", (200, 100, 200)),
                 run_line("r3", "new.nnue", "bbbb", (100, 50, 150)),
                 run_line("r4", "x.nnue", "?", (1, 0, 0)),
                 run_line("r5", "y.nnue", "?", (0, 0, 1))]:
        ledger.append_line(tmp_path, line)
    scores = ledger.versus_scores(ledger.read_ledger(tmp_path))
    assert scores[ledger.Matchup("ethereal-chess", "depth 9", 3000, 4)] == {
        ledger.Player("old.nnue", "aaaa"): (300, 100, 600),
        ledger.Player("c2.nnue = new.nnue", "bbbb"): (300, 150, 350),
        ledger.Player("x.nnue", "?"): (1, 0, 0), ledger.Player("y.nnue", "?"): (0, 0, 1)}
    assert factory.main(["status", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "  c2.nnue = new.nnue (bbbb): +300 =150 -350 in 800 games" in out
    assert "  old.nnue (aaaa): +300 =100 -600 in 1000 games" in out
    (merged,) = [line for line in out.splitlines() if line.startswith("  c2.nnue = new.nnue")]
    diff = [round(value) for value in elo_difference_unpaired((300, 150, 350), (300, 100, 600))]
    assert merged.endswith(f"; against old.nnue (aaaa) {diff[0]:+d} Elo "
                           f"({diff[1]:+d} .. {diff[2]:+d})")
    assert "new.nnue (bbbb)" not in out.replace("c2.nnue = new.nnue (bbbb)", "")


def test_the_status_reads_each_net_against_the_default_or_the_reference(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A candidate is read against the net it would replace, the engine's default net, though
    an older net played more games; ``--reference`` names another; a reference that has not
    played there leaves the net that played most; a reference that is no net is an error."""
    default_hash = factory.evaluation(DEFAULT_EVAL_FILE).hash
    older = random_net(tmp_path / "older.nnue", seed=3, hidden=8).net.hash
    unplayed = tmp_path / "unplayed.nnue"
    random_net(unplayed, seed=5, hidden=8)
    assert len({default_hash, older}) == 2
    data = tmp_path / "data"
    data.mkdir()

    def run_line(run: str, net: str, net_hash: str, wdl: tuple[int, int, int]) -> dict[str, Any]:
        return {"run": run, "source": "versus", "net": net, "net_hash": net_hash, "nodes": 3000,
                "opponent": "ethereal-chess", "opponent_limit": "depth 9", "shards": {},
                "random_plies": 4, "added": 0,
                "engine_score": dict(zip(factory.OUTCOMES, wdl, strict=True))}
    most, default, candidate = (300, 100, 600), (200, 100, 300), (250, 100, 250)
    for line in [run_line("r1", "older.nnue", older, most),
                 run_line("r2", DEFAULT_EVAL_FILE, default_hash, default),
                 run_line("r3", "cand.nnue", "cccc", candidate)]:
        ledger.append_line(data, line)

    def against(out: str, net: str) -> str:
        (row,) = [row for row in out.splitlines() if row.startswith(f"  {net} (")]
        return row.split("; against ", 1)[1] if "; against " in row else ""

    def elo(wdl: tuple[int, int, int], reference: tuple[int, int, int]) -> str:
        diff = [round(value) for value in elo_difference_unpaired(wdl, reference)]
        return f"{diff[0]:+d} Elo ({diff[1]:+d} .. {diff[2]:+d})"

    assert factory.main(["status", "--dir", str(data)]) == 0
    out = capsys.readouterr().out
    assert against(out, DEFAULT_EVAL_FILE) == ""
    assert against(out, "cand.nnue") == f"{DEFAULT_EVAL_FILE} ({default_hash}) " + elo(
        candidate, default)
    assert against(out, "older.nnue") == f"{DEFAULT_EVAL_FILE} ({default_hash}) " + elo(
        most, default)

    older_path = str(tmp_path / "older.nnue")
    assert factory.main(["status", "--dir", str(data), "--reference", older_path]) == 0
    out = capsys.readouterr().out
    assert against(out, "older.nnue") == ""
    assert against(out, "cand.nnue") == f"older.nnue ({older}) " + elo(candidate, most)

    # a reference without games there: the net with the most games is the one read against
    assert factory.main(["status", "--dir", str(data), "--reference", str(unplayed)]) == 0
    out = capsys.readouterr().out
    assert against(out, "older.nnue") == ""
    assert against(out, "cand.nnue") == f"older.nnue ({older}) " + elo(candidate, most)

    missing = tmp_path / "no-such.nnue"
    with pytest.raises(SystemExit, match=r"--reference: .*no-such\.nnue"):
        factory.main(["status", "--dir", str(data), "--reference", str(missing)])


FAULTY_ENGINE = Path(__file__).with_name("faulty_engine.py")


def _processes_running(marker: str) -> list[int]:
    """The live (not zombie) processes whose command line holds ``marker``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (stat.parent / "cmdline").read_bytes().decode(errors="replace")
        except (OSError, IndexError):
            continue  # gone meanwhile
        if marker in cmdline and state != "Z":
            found.append(int(stat.parent.name))
    return found


def test_a_stopped_run_closes_its_opponents(tmp_path: Path) -> None:
    """SIGTERM to the run alone (``kill PID``): its jobs send their opponents ``quit`` on
    the way out, so an engine that does not end at the end of its input is not left running."""
    data = tmp_path / "data"
    process, lines = _started(
        ["--dir", str(data), "--jobs", "1", "--nodes", "100",
         "--opponent", f"{sys.executable} {FAULTY_ENGINE} stubborn {tmp_path}"])
    process.send_signal(signal.SIGTERM)
    assert process.stdout is not None
    lines.append(process.stdout.read())
    assert process.wait() == 0, "".join(lines)
    left = _processes_running(str(tmp_path))
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "the opponent was left running: " + "".join(lines)
    (line,) = ledger.read_ledger(data)
    assert line["source"] == "versus" and line["added"] > 0


def test_the_opponent_is_a_fresh_process_each_game(tmp_path: Path) -> None:
    """Each game after one with a move starts a new process and quits the old one (an engine
    that leaks a thread a search cannot play thousands of games in one process); a game with
    no move asked keeps it."""
    from tools.common.engines import resolve_engine
    from tools.common.opponent import EngineOpponent, OpponentLimit

    stubborn = f"{sys.executable} {FAULTY_ENGINE} stubborn {tmp_path}"
    opponent = EngineOpponent(resolve_engine(stubborn),
                              OpponentLimit(depth=2))
    try:
        first = opponent.engine.transport.get_pid()
        opponent.new_game()
        assert opponent.engine.transport.get_pid() == first  # nothing played yet
        assert opponent.move(chess.Board()) in chess.Board().legal_moves
        opponent.new_game()
        second = opponent.engine.transport.get_pid()
        assert second != first and opponent.game == 2
        assert _processes_running(str(tmp_path)) == [second]
        assert opponent.move(chess.Board()) in chess.Board().legal_moves
    finally:
        opponent.close()
    assert not _processes_running(str(tmp_path))


def test_an_opponent_silent_on_a_move_is_killed_and_the_move_fails(tmp_path: Path) -> None:
    """An engine that reads ``go`` and never answers (Ethereal 12 once it cannot start a
    thread) is killed after the move's timeout, and the move fails by name, not for ever."""
    from tools.common.engines import resolve_engine
    from tools.common.opponent import EngineOpponent, OpponentError, OpponentLimit

    silent = f"{sys.executable} {FAULTY_ENGINE} silent {tmp_path}"
    opponent = EngineOpponent(resolve_engine(silent), OpponentLimit(depth=2), move_timeout_s=0.5)
    try:
        opponent.new_game()
        with pytest.raises(OpponentError, match=r"faulty_engine\.py silent [^']*' in rnbqkbnr/"
                                                r".*: gave no move within 0\.5 s: killed"):
            opponent.move(chess.Board())
    finally:
        opponent.close()
    assert not _processes_running(str(tmp_path))


def test_an_opponent_that_dies_stops_its_job_and_the_run_keeps_its_line(
        tmp_path: Path) -> None:
    """An opponent that exits at its first search: the job says which engine failed and
    where, the run still ends cleanly with its ledger line, and nothing is left open."""
    data = tmp_path / "data"
    quitter = f"{sys.executable} {FAULTY_ENGINE} quitting"
    run = subprocess.run(
        [sys.executable, "-m", "tools.nnue.factory", "run", "--dir", str(data), "--jobs", "1",
         "--nodes", "100", "--games", "2", "--opponent", quitter,
         "--opponent-depth", "3"],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"opponent '{quitter}' in " in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    (line,) = ledger.read_ledger(data)
    assert line["source"] == "versus" and line["games"] == 0 and line["added"] == 0
    assert line["opponent_limit"] == "depth 3"
    assert not list(data.glob(f"*{shards.OPEN_SUFFIX}"))


@pytest.mark.parametrize(("argv", "message"), [
    (["--opponent", "/nonexistent/engine"], "/nonexistent/engine is not installed"),
    (["--opponent-option", "Hash=4"], "--opponent-option without --opponent"),
    (["--opponent", "kibitz", "--opponent-nodes", "0"], "--opponent-nodes and --opponent-depth"
                                                        " must be positive"),
    (["--opponent", "kibitz", "--opponent-depth", "-1"], "--opponent-nodes and --opponent-depth"
                                                         " must be positive"),
])
def test_a_bad_opponent_is_refused_before_the_run_starts(
        tmp_path: Path, argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit, match=message):
        factory.main(["run", "--dir", str(tmp_path / "data"), "--games", "1", *argv])
    assert not (tmp_path / "data").exists()


def test_an_opponent_option_that_is_not_name_value_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        factory.main(["run", "--dir", str(tmp_path / "data"), "--games", "1",
                      "--opponent", "kibitz", "--opponent-option", "Hash"])
    assert "engine option must be NAME=VALUE, got 'Hash'" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()


def _directory_state(directory: Path) -> dict[str, bytes]:
    """Every file but the lock (which a merge makes, as a run does)."""
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())
            if path.name != factory.LOCK_NAME}


def test_a_merge_brings_another_directory_s_runs_with_their_lines_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, here = tmp_path / "other-machine", tmp_path / "data"
    source.mkdir()
    here.mkdir()
    theirs = [_ledgered_run(source, [_game(1, 30), _game(2, 20)]),
              _ledgered_run(source, [_game(3, 25)])]
    ours = _ledgered_run(here, [_game(4, 40)])
    # a run there stopped before its line: its shard stays there
    _write_run(source, "20260102T000000Z-9-stopped", [_game(5, 10)], 1 << 20)
    assert merge.main([str(source), "--dir", str(here)]) == 0
    out = capsys.readouterr().out
    assert f"{source}: 2 run(s) merged, 75 positions in 2 shard(s)" in out
    assert f"{source}: left there: 10 positions in 1 shard(s) of runs without a ledger line" \
        in out
    lines = ledger.read_ledger(here)
    assert [line["run"] for line in lines] == [ours["run"], theirs[0]["run"], theirs[1]["run"]]
    assert lines[1]["merged"]["from"] == str(source) and "merged" not in lines[0]
    assert {k: v for k, v in lines[1].items() if k != "merged"} == theirs[0]
    assert factory.main(["status", "--dir", str(here)]) == 0
    status_out = capsys.readouterr().out
    assert f"{here}: 115 positions in 3 shards" in status_out
    assert f"merged from {source}" in status_out and "no mismatch" in status_out
    sources = shards.training_sources([here], None)
    assert sum(len(s.records) for s in sources) == 115
    # again: nothing new
    before = _directory_state(here)
    assert merge.main([str(source), "--dir", str(here)]) == 0
    assert "0 run(s) merged, 0 positions in 0 shard(s); 2 run(s) here already" \
        in capsys.readouterr().out
    assert _directory_state(here) == before


def test_a_source_that_fails_its_audit_is_refused_whole_by_name(tmp_path: Path) -> None:
    source, here = tmp_path / "other-machine", tmp_path / "data"
    source.mkdir()
    here.mkdir()
    _ledgered_run(source, [_game(1, 30)])
    cut_line = _ledgered_run(source, [_game(2, 30), _game(3, 30)])
    (cut_name,) = list(cut_line["shards"])
    with (source / cut_name).open("r+b") as handle:
        handle.truncate((source / cut_name).stat().st_size - 10)
    _ledgered_run(here, [_game(4, 40)])
    before = _directory_state(here)
    with pytest.raises(SystemExit, match=rf"refused, its shards do not match its ledger "
                                         rf"\(1\): {cut_name}: truncated"):
        merge.main([str(source), "--dir", str(here)])
    assert _directory_state(here) == before


def test_a_shard_here_with_other_bytes_stops_the_merge_before_any_copy(tmp_path: Path) -> None:
    source, here = tmp_path / "other-machine", tmp_path / "data"
    source.mkdir()
    here.mkdir()
    line = _ledgered_run(source, [_game(1, 30)])
    (name,) = list(line["shards"])
    _write_run(here, line["run"], [_game(2, 30)], 1 << 20)  # the same name, other games
    before = _directory_state(here)
    with pytest.raises(SystemExit, match=rf"{name}: already here with other bytes"):
        merge.main([str(source), "--dir", str(here)])
    assert _directory_state(here) == before


def test_a_merge_cut_short_is_finished_by_the_same_merge_again(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, here = tmp_path / "other-machine", tmp_path / "data"
    source.mkdir()
    here.mkdir()
    line = _ledgered_run(source, [_game(1, 30), _game(2, 30)])
    (name,) = list(line["shards"])
    # killed after the copy was renamed, before the line; and a copy in flight of another
    (here / name).write_bytes((source / name).read_bytes())
    (here / f"other{merge.TEMP_SUFFIX}").write_bytes(b"half a shard")
    assert factory.main(["status", "--dir", str(here)]) == 0
    assert f"run {line['run']} has no ledger line" in capsys.readouterr().out
    assert merge.main([str(source), "--dir", str(here)]) == 0
    assert "1 run(s) merged, 0 positions in 0 shard(s); 1 shard(s) here already, the same " \
        "bytes" in capsys.readouterr().out
    assert not list(here.glob(f"*{merge.TEMP_SUFFIX}"))
    assert ledger.ledger_total(ledger.read_ledger(here)) == 60
    assert factory.main(["status", "--dir", str(here)]) == 0
    assert "no mismatch" in capsys.readouterr().out
    # a run here that recovered such a shard first: the line is not merged twice over it
    other = tmp_path / "third"
    other.mkdir()
    line = _ledgered_run(source, [_game(3, 30)])
    (name,) = list(line["shards"])
    (other / name).write_bytes((source / name).read_bytes())
    recovering = _ledgered_run(other, [_game(4, 10)])
    assert recovering["recovered"] == {name: 30}
    assert merge.main([str(source), "--dir", str(other)]) == 0
    assert "1 run(s) merged, 60 positions in 1 shard(s); 1 run(s) here already" \
        in capsys.readouterr().out
    assert ledger.ledger_total(ledger.read_ledger(other)) == 100
    # ... and one that recovered a part of a run's shards: the rest come with its line
    source2, fourth = tmp_path / "fifth", tmp_path / "fourth"
    source2.mkdir()
    fourth.mkdir()
    start = factory.begin_run(source2)
    split = _write_run(source2, start.run, [_game(seed, 40) for seed in range(6)], 2500)
    assert len(split) > 1
    ev = factory.Evaluation("test.nnue", "test.nnue", "0123abcd", 205)
    line = factory.finish_run(source2, start, "selfplay", ev, 100, 1, 6)
    first = split[0].name
    (fourth / first).write_bytes(split[0].read_bytes())
    assert _ledgered_run(fourth, [_game(9, 10)])["recovered"] == {first: line["shards"][first]}
    assert merge.main([str(source2), "--dir", str(fourth)]) == 0
    capsys.readouterr()
    lines = ledger.read_ledger(fourth)
    assert lines[-1]["merged"]["counted_here_before"] == [first]
    assert first not in lines[-1]["shards"]
    assert lines[-1]["added"] == line["added"] - line["shards"][first]
    assert ledger.ledger_total(lines) == 240 + 10
    assert sum(int(x["added"]) for x in lines) == 240 + 10 - line["shards"][first]
    assert factory.main(["status", "--dir", str(fourth)]) == 0
    assert "no mismatch" in capsys.readouterr().out


def test_a_merge_names_a_source_that_is_no_data_directory(tmp_path: Path) -> None:
    here = tmp_path / "data"
    here.mkdir()
    with pytest.raises(SystemExit, match=r"nowhere: not a directory"):
        merge.main([str(tmp_path / "nowhere"), "--dir", str(here)])
    with pytest.raises(SystemExit, match=r"no ledger.jsonl in it: not a data directory"):
        merge.main([str(tmp_path), "--dir", str(here)])
    _ledgered_run(here, [_game(1, 30)])
    with pytest.raises(SystemExit, match=r"cannot be merged into itself"):
        merge.main([str(here), "--dir", str(here)])
