"""Positions searched afresh by engines at a node count (``tools.strength.rescore``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tools.strength.rescore import main

FAULTY_ENGINE = Path(__file__).with_name("faulty_engine.py")
# white to move: a queen up, a queen down, a rook up
POSITIONS = ("4k3/8/8/8/8/8/8/3QK3 w - - c0 \"queen up\";\n"
             "3qk3/8/8/8/8/8/8/4K3 w - - 0 1\n"
             "# a comment line\n"
             "\n"
             "4k3/8/8/8/8/8/8/R3K3 w - -\n")


def _epd(tmp_path: Path, text: str = POSITIONS) -> Path:
    path = tmp_path / "positions.epd"
    path.write_text(text, encoding="utf-8")
    return path


def test_each_engine_reads_every_position_from_the_side_to_move_s_view(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(_epd(tmp_path)), "--engine", "kibitz", "--engine", "kibitz",
                 "--option", "2:EvalFile=", "--nodes", "2000"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    net, hand_written = lines
    assert net.startswith("kibitz: 3 positions, median +")
    assert hand_written.startswith("kibitz EvalFile=: 3 positions, median +")
    for line in lines:
        assert line.endswith(", 2 at +0.50 or more, 1 at 0 or less")
    assert main([str(_epd(tmp_path)), "--nodes", "2000", "--cp", "100000"]) == 0
    assert capsys.readouterr().out.endswith(", 0 at +1000.00 or more, 1 at 0 or less\n")


def test_bad_input_is_refused_by_name(tmp_path: Path) -> None:
    epd = _epd(tmp_path)
    with pytest.raises(SystemExit, match=r"--option '3:Hash=16': give N:NAME=VALUE"):
        main([str(epd), "--engine", "kibitz", "--engine", "stockfish", "--option", "3:Hash=16"])
    with pytest.raises(SystemExit, match=r"--option '1:Hash': .*NAME=VALUE"):
        main([str(epd), "--option", "1:Hash"])
    bad = _epd(tmp_path, "4k3/8/8/8/8/8/8/3QK3 w - -\nnot a position\n")
    with pytest.raises(SystemExit, match=r"positions\.epd:2: not a FEN or EPD position"):
        main([str(bad)])
    with pytest.raises(SystemExit, match=r"positions\.epd: no positions"):
        main([str(_epd(tmp_path, "# nothing\n"))])


def test_an_engine_silent_on_a_position_is_killed_and_named(tmp_path: Path) -> None:
    silent = f"{sys.executable} {FAULTY_ENGINE} silent {tmp_path}"
    with pytest.raises(SystemExit, match=r"faulty_engine\.py silent [^']*' gave no move within "
                                         r"0\.5 s in 4k3/8/8/8/8/8/8/3QK3 w - - .*: killed"):
        main([str(_epd(tmp_path)), "--engine", silent, "--nodes", "100", "--timeout-s", "0.5"])
