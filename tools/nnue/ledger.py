"""The ledger of a data directory: one JSON line per run, and the audit of the directory by it.

``ledger.jsonl`` beside the shards gets one line when a run ends: when it started and ended,
the positions it added and in which shards, the net that played them, positions per hour,
and what it found in the directory when it started, checked against the ledger's own total.
A run killed before its line leaves its shards (each names its run in its meta); the next run
seals them and records them as ``recovered``, so the ledger's total counts every position
written.  ``audit`` checks the directory against the ledger: a shard the ledger lists that is
missing, or holds another count, and a shard that is truncated or corrupt, are mismatches.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.nnue.shards import Shard, ShardError, read_shard, shard_paths

LEDGER_NAME = "ledger.jsonl"


def ledger_path(directory: Path) -> Path:
    return directory / LEDGER_NAME


def read_ledger(directory: Path) -> list[dict[str, Any]]:
    """The ledger's lines; a line cut short by a kill while it was written is left out (it is
    the last one; its run's shards count as a run without its line)."""
    path = ledger_path(directory)
    if not path.exists():
        return []
    lines = []
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except ValueError:
            print(f"{path}: line {number} is not JSON (cut short?): left out", flush=True)
            continue
        if isinstance(line, dict):
            lines.append(line)
    return lines


def append_line(directory: Path, line: dict[str, Any]) -> None:
    """One line, written with one append and synced."""
    text = (json.dumps(line, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(ledger_path(directory), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, text)
        os.fsync(fd)
    finally:
        os.close(fd)


def ledgered_shards(lines: list[dict[str, Any]]) -> dict[str, int]:
    """Every shard a ledger line accounts for, with its count."""
    shards: dict[str, int] = {}
    for line in lines:
        shards.update(line.get("shards", {}))
        shards.update(line.get("recovered", {}))
    return shards


def ledger_total(lines: list[dict[str, Any]]) -> int:
    return sum(ledgered_shards(lines).values())


@dataclass(frozen=True)
class Matchup:
    """Games of the factory against one opponent at one setting."""

    opponent: str
    opponent_limit: str
    nodes: int  # the engine's nodes a move
    random_plies: int  # the openings: random moves from the start (-1: not recorded)


@dataclass(frozen=True)
class Player:
    """The net that played: its file's name and its hash."""

    net: str
    net_hash: str


def versus_scores(lines: list[dict[str, Any]]) -> dict[Matchup, dict[Player, tuple[int, int, int]]]:
    """The engine's (wins, draws, losses) by matchup and net, summed over the runs against an
    opponent that wrote their line: thousands of games at a fixed node count, a cheap measure
    of a net against that opponent beside the data it makes."""
    # a net is its weights: one file copied under another name (a candidate that became the
    # default) is one player, named by all its names; a line without a hash is keyed by its
    # name as well, so that unknown nets stay apart
    by_net: dict[Matchup, dict[tuple[str, str], tuple[int, int, int]]] = defaultdict(dict)
    names: dict[tuple[str, str], set[str]] = defaultdict(set)
    for line in lines:
        score = line.get("engine_score")
        if line.get("source") != "versus" or not isinstance(score, dict):
            continue
        matchup = Matchup(str(line.get("opponent", "?")), str(line.get("opponent_limit", "?")),
                          int(line.get("nodes", 0)), int(line.get("random_plies", -1)))
        name = str(line.get("net", "?"))
        net_hash = str(line.get("net_hash", "?"))
        key = (net_hash, name if net_hash == "?" else "")
        names[key].add(name)
        wins, draws, losses = by_net[matchup].get(key, (0, 0, 0))
        by_net[matchup][key] = (wins + int(score.get("win", 0)),
                                draws + int(score.get("draw", 0)),
                                losses + int(score.get("loss", 0)))
    return {matchup: {Player(net_names(names[key]), key[0]): wdl for key, wdl in players.items()}
            for matchup, players in by_net.items()}


def net_names(names: set[str]) -> str:
    """The names one net was played under, as one name: "c16c.nnue = kibitz-14.nnue"."""
    return " = ".join(sorted(names))


@dataclass
class Scan:
    """The shards of a directory as read now."""

    good: list[Shard] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)  # ShardError messages, each naming a shard

    @property
    def positions(self) -> int:
        return sum(len(s.records) for s in self.good)


def scan(directory: Path) -> Scan:
    result = Scan()
    for path in shard_paths(directory):
        try:
            result.good.append(read_shard(path))
        except ShardError as exc:
            result.bad.append(str(exc))
    return result


@dataclass
class Audit:
    """The directory checked against its ledger."""

    scan: Scan
    lines: list[dict[str, Any]]
    mismatches: list[str]
    notes: list[str]
    unledgered: dict[str, int]  # shards of runs with no ledger line (yet): name -> positions

    @property
    def ledger_total(self) -> int:
        return ledger_total(self.lines)


def audit(directory: Path, current_run: str = "") -> Audit:
    """Check the directory against the ledger (``current_run``: a run now writing, whose
    shards have no line yet)."""
    lines = read_ledger(directory)
    found = scan(directory)
    listed = ledgered_shards(lines)
    runs_with_lines = {line.get("run") for line in lines}
    present = {s.path.name: s for s in found.good}
    bad_names = {message.split(":", 1)[0] for message in found.bad}
    mismatches = list(found.bad)
    notes: list[str] = []
    for name, count in sorted(listed.items()):
        sealed = name
        shard = present.get(sealed)
        if shard is None:
            if name not in bad_names:
                mismatches.append(f"{name}: missing (the ledger counts {count} positions in it)")
        elif len(shard.records) != count:
            mismatches.append(f"{name}: holds {len(shard.records)} positions, the ledger "
                              f"counts {count}")
    unledgered: dict[str, int] = {}
    by_run: dict[str, list[Shard]] = defaultdict(list)
    for shard in found.good:
        if shard.path.name in listed:
            continue
        run = str(shard.meta.get("run", ""))
        if run in runs_with_lines and run != current_run:
            mismatches.append(f"{shard.path.name}: not in the ledger line of its run {run}")
            continue
        unledgered[shard.path.name] = len(shard.records)
        by_run[run].append(shard)
    for run, shards in sorted(by_run.items()):
        if run == current_run:
            continue
        notes.append(f"run {run} has no ledger line (stopped before it, or still running): "
                     f"{sum(len(s.records) for s in shards)} positions in {len(shards)} "
                     "shard(s); the next run records them")
    for shard in found.good:
        if shard.torn_bytes:
            notes.append(f"{shard.path.name}: {shard.torn_bytes} bytes of a game in flight "
                         "when its run stopped (lost; cut off when sealed)")
    return Audit(found, lines, mismatches, notes, unledgered)
