"""Shards: training records (``tools.nnue.data``'s 32-byte format) in self-checking files.

A data directory holds many shards, each at most ``SHARD_MAX_BYTES`` (16 MiB), so that they
can be copied between machines as plain files.  A shard is written by appending whole games,
so a run stopped at any moment loses only the games it was playing::

    header   magic ``KBZSHRD\\0`` (8 bytes), uint32 version, uint64 records (0 while open),
             uint32 meta length, the meta (UTF-8 JSON: the K of its scores, the evaluation
             that played its games, the run that wrote it, ...), uint32 CRC-32 of all before
    frames   one per game: uint32 records, uint32 body length, uint32 CRC-32 of the body,
             the body (zlib of the records)

All little-endian.  A shard being written is named ``*.part``: its last frame may be cut short
(a game in flight when the run was killed), which the reader leaves out.  Sealing it (``seal``)
cuts such a tail off, writes the record count into the header and renames it ``*.kbzs``; a
sealed shard whose frames do not add up to its header's count, or any shard with a frame that
fails its checksum, is refused as a whole, by name (``ShardError``), and the others still load.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from tools.nnue.data import RECORD_BYTES, RECORD_DTYPE, Records

MAGIC = b"KBZSHRD\0"
VERSION = 1
SHARD_MAX_BYTES = 16 * 1024 * 1024  # compressed: a shard never grows past this
SEALED_SUFFIX = ".kbzs"
OPEN_SUFFIX = ".part"
ZLIB_LEVEL = 6
_HEAD = struct.Struct("<8sIQI")  # magic, version, records, meta length
_CRC = struct.Struct("<I")
_FRAME = struct.Struct("<III")  # records, body length, body CRC-32
_RECORDS_OFFSET = 12  # of the uint64 record count in the header
MIN_FILE_POSITIONS = 100  # a record file with fewer is refused (a shard may hold fewer)


class ShardError(ValueError):
    """A shard that cannot be trusted; the message starts with its name."""


@dataclass(frozen=True)
class Shard:
    """What a shard holds: its meta, its records, and (for an open one) the bytes of a game
    cut short at its end."""

    path: Path
    meta: dict[str, Any]
    records: Records
    frames: int
    torn_bytes: int
    data_end: int  # the offset after its last whole frame

    @property
    def sealed(self) -> bool:
        return self.path.name.endswith(SEALED_SUFFIX)

    @property
    def k(self) -> int:
        return int(self.meta["k"])


def is_shard(path: Path) -> bool:
    return path.name.endswith((SEALED_SUFFIX, OPEN_SUFFIX))


def shard_paths(directory: Path) -> list[Path]:
    """The shards of a data directory, sealed and open, in name order (the order they were
    begun: names start with their run's start time)."""
    return sorted(p for p in directory.iterdir() if p.is_file() and is_shard(p))


def header(meta: dict[str, Any], records: int = 0) -> bytes:
    meta_bytes = json.dumps(meta, sort_keys=True).encode("utf-8")
    head = _HEAD.pack(MAGIC, VERSION, records, len(meta_bytes)) + meta_bytes
    return head + _CRC.pack(zlib.crc32(head))


def frame(data: bytes) -> bytes:
    """One game's records as a frame."""
    if len(data) % RECORD_BYTES:
        raise ValueError(f"{len(data)} bytes is not a whole number of records")
    body = zlib.compress(data, ZLIB_LEVEL)
    return _FRAME.pack(len(data) // RECORD_BYTES, len(body), zlib.crc32(body)) + body


def read_shard(path: Path) -> Shard:
    """The records of a shard; ``ShardError`` naming it when it cannot be trusted."""
    name = path.name
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ShardError(f"{name}: cannot be read ({exc.strerror})") from None
    if len(data) < _HEAD.size + _CRC.size:
        raise ShardError(f"{name}: {len(data)} bytes, shorter than a shard's header")
    magic, version, count, meta_len = _HEAD.unpack_from(data)
    if magic != MAGIC:
        raise ShardError(f"{name}: not a shard (magic {magic!r})")
    if version != VERSION:
        raise ShardError(f"{name}: format version {version}, this reader knows {VERSION}")
    meta_end = _HEAD.size + meta_len
    if meta_end + _CRC.size > len(data):
        raise ShardError(f"{name}: truncated inside its header")
    (crc,) = _CRC.unpack_from(data, meta_end)
    if crc != zlib.crc32(data[:meta_end]):
        raise ShardError(f"{name}: corrupt header (checksum)")
    try:
        meta = json.loads(data[_HEAD.size:meta_end].decode("utf-8"))
    except ValueError as exc:
        raise ShardError(f"{name}: its meta is not JSON ({exc})") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("k"), int) or meta["k"] <= 0:
        raise ShardError(f"{name}: its meta names no positive K")
    offset = meta_end + _CRC.size
    chunks: list[bytes] = []
    frames = 0
    torn = 0
    while offset < len(data):
        if offset + _FRAME.size > len(data):
            torn = len(data) - offset
            break
        records, body_len, body_crc = _FRAME.unpack_from(data, offset)
        body_start = offset + _FRAME.size
        if body_start + body_len > len(data):
            torn = len(data) - offset
            break
        body = data[body_start:body_start + body_len]
        if zlib.crc32(body) != body_crc:
            raise ShardError(f"{name}: corrupt frame {frames} at byte {offset} (checksum)")
        try:
            raw = zlib.decompress(body)
        except zlib.error as exc:
            raise ShardError(f"{name}: corrupt frame {frames} at byte {offset} ({exc})") from None
        if len(raw) != records * RECORD_BYTES:
            raise ShardError(f"{name}: frame {frames} at byte {offset} holds {len(raw)} bytes, "
                             f"not its {records} records")
        chunks.append(raw)
        frames += 1
        offset = body_start + body_len
    total = sum(len(c) for c in chunks) // RECORD_BYTES
    sealed = name.endswith(SEALED_SUFFIX)
    if sealed and torn:
        raise ShardError(f"{name}: truncated: its last {torn} bytes are part of a frame")
    if sealed and total != count:
        raise ShardError(f"{name}: truncated: its header says {count} records, its frames "
                         f"hold {total}")
    records_array = np.frombuffer(b"".join(chunks), dtype=RECORD_DTYPE).copy()
    return Shard(path, meta, records_array, frames, torn, offset if not torn else
                 len(data) - torn)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def seal(path: Path) -> Shard | None:
    """Close an open shard: its torn tail cut off, its count in the header, renamed to
    ``*.kbzs`` (fsynced before the rename, so a sealed name always holds its whole data).
    A shard with no whole game is removed (None).  Raises ``ShardError`` for a corrupt one."""
    shard = read_shard(path)
    if shard.frames == 0:
        path.unlink()
        return None
    head = header(shard.meta, len(shard.records))
    with path.open("r+b") as handle:
        handle.truncate(shard.data_end)
        handle.seek(0)
        old = handle.read(len(head))
        if len(old) != len(head) or old[:_RECORDS_OFFSET] != head[:_RECORDS_OFFSET]:
            raise ShardError(f"{path.name}: header changed while sealing")
        handle.seek(0)
        handle.write(head)
        handle.flush()
        os.fsync(handle.fileno())
    target = path.with_name(path.name[:-len(OPEN_SUFFIX)] + SEALED_SUFFIX)
    os.replace(path, target)
    fsync_dir(path.parent)
    return Shard(target, shard.meta, shard.records, shard.frames, 0, shard.data_end)


class ShardWriter:
    """Appends games to a series of shards ``STEM-0000.part``, ``STEM-0001.part``, ...,
    sealing each before it would pass ``max_bytes``."""

    def __init__(self, directory: Path, stem: str, meta: dict[str, Any],
                 max_bytes: int = SHARD_MAX_BYTES) -> None:
        self.directory = directory
        self.stem = stem
        self.meta = meta
        self.max_bytes = max_bytes
        self.sequence = 0
        self.fd = -1
        self.size = 0
        self.path = directory

    def _open(self) -> None:
        self.path = self.directory / f"{self.stem}-{self.sequence:04d}{OPEN_SUFFIX}"
        self.sequence += 1
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        head = header(self.meta)
        os.write(self.fd, head)
        self.size = len(head)

    def add(self, data: bytes) -> Shard | None:
        """Append one game's records (one write: a kill never leaves half a game but at the
        very end); the shard sealed first, if it would grow too large, is returned."""
        piece = frame(data)
        sealed = None
        if self.fd >= 0 and self.size + len(piece) > self.max_bytes:
            sealed = self.close()
        if self.fd < 0:
            self._open()
        if self.size + len(piece) > self.max_bytes:
            raise ValueError(f"one game of {len(piece)} bytes does not fit a shard")
        os.write(self.fd, piece)
        self.size += len(piece)
        return sealed

    def close(self) -> Shard | None:
        """Seal the open shard (None when there is none, or it holds no game)."""
        if self.fd < 0:
            return None
        os.close(self.fd)
        self.fd = -1
        return seal(self.path)


RECORD_FILE_ORIGIN = "records"  # the origin of a plain record file (no meta of its own)


@dataclass(frozen=True)
class TrainingSource:
    """One ``--data`` file or shard for the trainer: its positions, their K, and their origin
    (a shard's ``source``, ``selfplay`` or ``pgn``; ``records`` for a plain record file), by
    which the trainer splits its held-out loss."""

    name: str
    records: Records
    k: float
    origin: str


def mean_by_group(values: npt.NDArray[np.float64], group_ids: npt.NDArray[np.int64],
                  groups: Sequence[str]) -> dict[str, float]:
    """The mean of ``values`` over each group's positions (``group_ids`` index ``groups``),
    for the groups that have any: the trainer's held-out loss per origin, so that a net's loss
    on the bot's own games (``pgn``) shows beside its loss on self-play's, and per phase (the
    pieces on the board)."""
    counts = np.bincount(group_ids, minlength=len(groups))
    sums = np.bincount(group_ids, weights=values, minlength=len(groups))
    return {group: float(sums[i] / counts[i]) for i, group in enumerate(groups) if counts[i]}


def origin_repeats(specs: Sequence[str], origins: Sequence[str]) -> dict[str, int]:
    """The trainer's ``--repeat ORIGIN=N``: how many times each origin's training positions
    are seen an epoch (1 when not named), so that a small source (the games against another
    engine, the bot's own games) weighs more than its count beside millions of self-play's.
    An origin the data does not hold, a count that is not a whole number of at least 1, or an
    origin named twice is refused by what is wrong."""
    repeats: dict[str, int] = {}
    for spec in specs:
        origin, equals, count = spec.partition("=")
        if not equals or not origin:
            raise SystemExit(f"--repeat {spec!r}: expected ORIGIN=N, e.g. versus=4")
        if origin not in origins:
            raise SystemExit(f"--repeat {spec!r}: no --data position is of origin {origin!r} "
                             f"(the data's: {', '.join(origins)})")
        if origin in repeats:
            raise SystemExit(f"--repeat {spec!r}: {origin!r} is named twice")
        try:
            repeats[origin] = int(count)
        except ValueError:
            raise SystemExit(f"--repeat {spec!r}: {count!r} is not a whole number") from None
        if repeats[origin] < 1:
            raise SystemExit(f"--repeat {spec!r}: the count must be 1 or more")
    return repeats


def training_sources(paths: Sequence[Path], given_k: Sequence[float] | None
                     ) -> list[TrainingSource]:
    """The trainer's data: each ``--data`` path a record file of ``tools.nnue.data`` (its K
    from its sidecar or ``given_k``: ``file_ks``), a shard, or a directory of shards (each
    shard's K from its header).  A shard that cannot be trusted is skipped, by name, loudly;
    the others load."""
    from tools.nnue.data import file_ks, read_records

    plain = [p for p in paths if not p.is_dir() and not is_shard(p)]
    ks = iter(file_ks(plain, given_k) if plain else [])
    sources: list[TrainingSource] = []
    for path in paths:
        if path in plain:
            part = read_records(path)
            if len(part) < MIN_FILE_POSITIONS:
                raise SystemExit(f"--data {path}: {len(part)} positions are too few to train on")
            sources.append(TrainingSource(str(path), part, next(ks), RECORD_FILE_ORIGIN))
            continue
        found = shard_paths(path) if path.is_dir() else [path]
        loaded = 0
        for shard_path in found:
            try:
                shard = read_shard(shard_path)
            except ShardError as exc:
                print(f"--data {path}: SKIPPED {exc}", file=sys.stderr, flush=True)
                continue
            if len(shard.records):
                sources.append(TrainingSource(str(shard_path), shard.records, float(shard.k),
                                              str(shard.meta.get("source", "?"))))
                loaded += 1
        if not loaded:
            raise SystemExit(f"--data {path}: no shard with positions in it")
    return sources
