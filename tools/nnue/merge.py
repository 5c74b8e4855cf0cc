"""Merge another data directory into this one: its shards and their ledger lines.

Data made on another machine (a second server, a machine lent for an hour, an old one about
to go) arrives as a directory of shards with its ``ledger.jsonl``.  Copying its shards by hand
would leave them without their runs' lines: the next run here would record them as
``recovered``, and their rates, nets and scores against an opponent would be lost.  ``merge``
takes what the other directory's ledger vouches for:

- the source is audited first (``ledger.audit``); a source with any mismatch (a shard missing,
  truncated, corrupt, or outside its run's line) is refused whole, by name, and nothing is
  copied;
- each of its ledger lines whose run this directory's ledger does not hold yet is merged: the
  line's shards are copied (to a temporary name, synced, renamed, read back and counted), and
  only then is the line appended, with ``merged`` (where from, and when);
- a shard already here under the same name is skipped when it holds the same bytes, and
  refused when it does not; a line whose run is already here is skipped: merging the same
  source twice adds nothing; a shard another line here counts already (a run here recovered
  it from a merge cut short) leaves the merged line, named in its ``merged``;
- shards of the source's runs without a ledger line (stopped, or still running) are left
  there, and named: a run in that directory records them first.

A merge killed part way leaves shards whose run has no line here (the status names them; the
next run, or the same merge again, accounts for them) and perhaps a copy in flight under a
temporary name, which no reader takes for a shard and the next merge removes.  The source is
only read (it may be a read-only copy); this directory is locked as a run locks it.

    python -m tools.nnue.merge /mnt/old/kibitz-data --dir ~/kibitz-data
    make datagen-merge FROM=/mnt/old/kibitz-data
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.nnue import factory, ledger
from tools.nnue.shards import ShardError, fsync_dir, read_shard

TEMP_SUFFIX = ".merging"  # not a shard's suffix: a copy in flight is no shard to the readers


class MergeError(SystemExit):
    """A merge refused before anything was copied, or stopped at a shard; names what."""


@dataclass
class MergeReport:
    """What one source gave."""

    runs: list[str] = field(default_factory=list)  # the runs whose lines were appended
    copied: dict[str, int] = field(default_factory=dict)  # shard -> positions
    already: list[str] = field(default_factory=list)  # runs whose lines were here before
    same_shards: list[str] = field(default_factory=list)  # shards here already, same bytes
    left: dict[str, int] = field(default_factory=dict)  # shards of runs with no line there

    @property
    def positions(self) -> int:
        return sum(self.copied.values())


def _same_bytes(a: Path, b: Path) -> bool:
    if a.stat().st_size != b.stat().st_size:
        return False
    with a.open("rb") as left, b.open("rb") as right:
        while True:
            chunk = left.read(1 << 20)
            if chunk != right.read(1 << 20):
                return False
            if not chunk:
                return True


def copy_shard(source: Path, directory: Path, count: int) -> None:
    """``source`` into ``directory`` under its name, whole or not at all: copied to a
    temporary name (no shard to the readers), synced, read back and its positions counted
    against ``count`` (the source ledger's), and only then renamed."""
    temporary = directory / (source.name + TEMP_SUFFIX)
    with source.open("rb") as src, temporary.open("wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
        dst.flush()
        os.fsync(dst.fileno())
    try:
        copy = read_shard(temporary)
        problem = (f"{copy.torn_bytes} bytes of a frame cut short" if copy.torn_bytes
                   else f"{len(copy.records)} positions, the source's ledger counts {count}"
                   if len(copy.records) != count else "")
    except ShardError as exc:
        problem = str(exc)
    if problem:
        temporary.unlink()
        raise MergeError(f"{source}: its copy is refused ({problem}); the shards and lines "
                         "merged before it stay")
    os.replace(temporary, directory / source.name)
    fsync_dir(directory)


def merge(source: Path, directory: Path) -> MergeReport:
    """Merge ``source``'s ledgered shards and lines into ``directory`` (held locked by the
    caller).  Raises ``MergeError`` naming what is wrong; nothing is copied when the source
    fails its audit or a shard name here holds other bytes."""
    for stale in directory.glob(f"*{TEMP_SUFFIX}"):  # a copy a killed merge left
        stale.unlink()
    check = ledger.audit(source)
    if check.mismatches:
        raise MergeError(f"{source}: refused, its shards do not match its ledger "
                         f"({len(check.mismatches)}): " + "; ".join(check.mismatches))
    here_lines = ledger.read_ledger(directory)
    here_runs = {str(line.get("run")) for line in here_lines}
    here_shards = ledger.ledgered_shards(here_lines)
    report = MergeReport(left=dict(check.unledgered))
    to_merge: list[tuple[dict[str, Any], list[str]]] = []
    for line in check.lines:
        run = str(line.get("run"))
        if run in here_runs:
            report.already.append(run)
            continue
        counted = sorted(name for name in ledger.ledgered_shards([line]) if name in here_shards)
        if counted:
            # another line here counts some of them already (a run here recovered the shards
            # of a merge cut short): the rest come with the line, those leave it
            line = _without(line, set(counted))
            if not ledger.ledgered_shards([line]):
                report.already.append(run)
                continue
        for name in ledger.ledgered_shards([line]):
            here = directory / name
            if here.exists() and not _same_bytes(source / name, here):
                raise MergeError(f"{here}: already here with other bytes than {source / name}: "
                                 "nothing merged")
        to_merge.append((line, counted))
    for line, counted in to_merge:
        for name, count in sorted(ledger.ledgered_shards([line]).items()):
            if (directory / name).exists():
                report.same_shards.append(name)
                continue
            copy_shard(source / name, directory, count)
            report.copied[name] = count
        merged: dict[str, Any] = {"from": str(source), "at": factory.utc_now()}
        if counted:
            merged["counted_here_before"] = counted
        ledger.append_line(directory, {**line, "merged": merged})
        report.runs.append(str(line.get("run")))
    return report


def _without(line: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """``line`` without the shards ``names``, its ``added`` what its own shards then hold."""
    shards = {n: c for n, c in line.get("shards", {}).items() if n not in names}
    recovered = {n: c for n, c in line.get("recovered", {}).items() if n not in names}
    return {**line, "shards": shards, "recovered": recovered,
            "added": sum(int(c) for c in shards.values())}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nnue.merge", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, nargs="+",
                        help="a data directory to merge (its shards and ledger.jsonl)")
    parser.add_argument("--dir", type=Path, default=factory.DEFAULT_DIR,
                        help=f"the data directory to merge into (default {factory.DEFAULT_DIR})")
    args = parser.parse_args(argv)
    sources = []
    for given in args.source:
        path = given.expanduser().resolve()
        if not path.is_dir():
            raise SystemExit(f"{given}: not a directory")
        if not ledger.ledger_path(path).is_file():
            raise SystemExit(f"{given}: no {ledger.LEDGER_NAME} in it: not a data directory")
        sources.append(path)
    directory = factory.data_dir(args.dir)
    if directory in sources:
        raise SystemExit(f"{args.dir}: a directory cannot be merged into itself")
    with factory.locked(directory):
        for source in sources:
            report = merge(source, directory)
            print(f"{source}: {len(report.runs)} run(s) merged, {report.positions} positions in "
                  f"{len(report.copied)} shard(s)"
                  + (f"; {len(report.already)} run(s) here already" if report.already else "")
                  + (f"; {len(report.same_shards)} shard(s) here already, the same bytes"
                     if report.same_shards else ""), flush=True)
            if report.left:
                print(f"{source}: left there: {sum(report.left.values())} positions in "
                      f"{len(report.left)} shard(s) of runs without a ledger line (a run there "
                      "records them first)", flush=True)
        check = ledger.audit(directory)
    for mismatch in check.mismatches:
        print(f"MISMATCH: {mismatch}", flush=True)
    print(f"{directory}: {check.ledger_total} positions in the ledger, "
          f"{check.scan.positions} in {len(check.scan.good)} shard(s)", flush=True)
    return 1 if check.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
