"""Where the compiled search spends its time: a ``perf`` profile with numba's functions named.

``python -m tools.bench.profile [--part endings|middle|all] [--depth 17] [--top 30]``
searches the bench positions of one part (``engine.bench``; the end games from
``BENCH_ENDGAMES_FROM``) to a fixed depth with the default net in a process of its own that
``perf record`` runs and samples, then prints each function's share of the samples.

numba's compiled code lives in anonymous memory that ``perf`` cannot name, so before the
search this writes ``/tmp/perf-PID.map``, the file ``perf`` reads for code made at run time:
one line per compiled function, its address, its size and its name.  The sizes and offsets come
from each library's object code (an ELF file, read here from its symbol table); numba keeps no
copy of it once loaded, so the loader's hook is wrapped to see each object as it goes by.  A
callee compiled into several callers' libraries shows once per copy and is counted under one
name.  Inlined code counts as its caller's: a share is the function's own time.

Needs ``perf`` (Debian's ``linux-perf``) and ``kernel.perf_event_paranoid`` at 2 or less.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DEPTH = 17
DEFAULT_TOP = 30
SAMPLE_HZ = 2999  # odd, so that sampling does not beat with a periodic timer
PARTS = ("endings", "middle", "all")
STT_FUNC = 2
SHT_SYMTAB = 2
PERF_UNKNOWN = "[unknown]"


@dataclass(frozen=True)
class ElfFunction:
    """A function symbol of an object file: name, section index, offset in it, size."""
    name: str
    section: int
    offset: int
    size: int
    is_global: bool


def elf_functions(image: bytes) -> list[ElfFunction]:
    """The function symbols of a 64-bit little-endian ELF object (what LLVM emits for numba on
    x86-64 and arm64 Linux)."""
    if image[:4] != b"\x7fELF" or image[4] != 2 or image[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF object")
    (shoff,) = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", image, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", image, shoff + i * shentsize)
                for i in range(shnum)]
    functions = []
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind != SHT_SYMTAB:
            continue
        strings_offset = sections[link][4]
        for first in range(offset, offset + size, entsize):
            st_name, st_info, _other, st_shndx, st_value, st_size = struct.unpack_from(
                "<IBBHQQ", image, first)
            if st_info & 0xF != STT_FUNC or st_shndx == 0:
                continue
            end = image.index(b"\0", strings_offset + st_name)
            name = image[strings_offset + st_name:end].decode("ascii", "replace")
            functions.append(ElfFunction(name, st_shndx, st_value, st_size, st_info >> 4 != 0))
    return functions


_COMPONENT = re.compile(r"(\d+)")


def readable(symbol: str) -> str:
    """numba's mangled name as ``module.function``: the length-prefixed components of an
    Itanium ``_ZN..E`` name, without the ABI tags and argument types after them."""
    if not symbol.startswith("_ZN"):
        return symbol
    parts, at = [], 3
    while at < len(symbol):
        match = _COMPONENT.match(symbol, at)
        if match is None:
            break
        length = int(match.group(1))
        at = match.end()
        parts.append(symbol[at:at + length])
        at += length
    name = ".".join(parts) or symbol
    return name.removeprefix("engine.")


@dataclass(frozen=True)
class MapLine:
    start: int
    size: int
    name: str


def symbol_map(objects: Sequence[tuple[bytes, object]]) -> list[MapLine]:
    """The address ranges of every function of the loaded libraries.  ``objects``: each
    library's object code and the library (``get_pointer_to_function`` finds where a global
    symbol was loaded; a local one is placed by a global of its section)."""
    lines = []
    for image, library in objects:
        functions = elf_functions(image)
        section_base: dict[int, int] = {}
        for function in functions:
            if function.is_global and function.section not in section_base:
                address = library.get_pointer_to_function(function.name)  # type: ignore[attr-defined]
                if address:
                    section_base[function.section] = address - function.offset
        for function in functions:
            base = section_base.get(function.section)
            if base is not None and function.size:
                lines.append(MapLine(base + function.offset, function.size,
                                     readable(function.name)))
    return sorted(lines, key=lambda line: line.start)


def write_perf_map(lines: Sequence[MapLine], pid: int) -> Path:
    path = Path(f"/tmp/perf-{pid}.map")
    path.write_text("".join(f"{line.start:x} {line.size:x} {line.name}\n" for line in lines),
                    encoding="ascii")
    return path


class ObjectTap:
    """Keeps each numba library's object code as the JIT loads it (numba drops its copy)."""

    def __init__(self) -> None:
        self.objects: list[tuple[bytes, object]] = []

    def install(self) -> None:
        """Wrap the loader's hooks.  Before anything is compiled or loaded from the cache: the
        JIT engine takes the hooks when numba makes it, on the first compiled function."""
        from numba.core import codegen

        library_class = codegen.JITCodeLibrary
        original = library_class._object_getbuffer_hook.__func__  # type: ignore[attr-defined]
        tap = self
        # numba keeps the library on its LLVM module as ``__library``, set inside
        # ``CPUCodeLibrary``: the attribute's name is mangled with that class's
        library_attribute = "_CPUCodeLibrary__library"

        def getbuffer(cls: type, ll_module: object) -> bytes | None:
            buffer: bytes | None = original(cls, ll_module)
            library = getattr(ll_module, library_attribute, None)
            if buffer is not None and library is not None:
                tap.objects.append((bytes(buffer), library))
            return buffer

        def compiled(cls: type, ll_module: object, buffer: bytes) -> None:
            library = getattr(ll_module, library_attribute, None)
            if library is not None:
                tap.objects.append((bytes(buffer), library))
            original_compiled(cls, ll_module, buffer)

        original_compiled = library_class._object_compiled_hook.__func__  # type: ignore[attr-defined]
        library_class._object_getbuffer_hook = classmethod(getbuffer)  # type: ignore[assignment]
        library_class._object_compiled_hook = classmethod(compiled)  # type: ignore[assignment]


def positions(part: str) -> list[str]:
    from engine.bench import BENCH_ENDGAMES_FROM, BENCH_FENS

    if part == "endings":
        return list(BENCH_FENS[BENCH_ENDGAMES_FROM:])
    if part == "middle":
        return list(BENCH_FENS[:BENCH_ENDGAMES_FROM])
    return list(BENCH_FENS)


def search_all(fens: Sequence[str], depth: int,
               sampled: Callable[[], AbstractContextManager[None]] = nullcontext) -> int:
    """Search each position to ``depth`` from an empty table, each search inside ``sampled()``
    (the table's allocation outside it); the nodes."""
    from engine.bench import BENCH_HASH_MB
    from engine.board import Position
    from engine.nnue import net_for
    from engine.params import DEFAULT_EVAL_FILE
    from engine.search import Searcher
    from engine.timeman import GoLimits, TimeBudget

    net = net_for(DEFAULT_EVAL_FILE)
    nodes = 0
    for fen in fens:
        searcher = Searcher(BENCH_HASH_MB, 1)
        searcher.set_net(net)
        position = Position.from_fen(fen)
        with sampled():
            result = searcher.think(position, GoLimits(depth=depth), TimeBudget(None, None),
                                    time.monotonic(), lambda _: None)
        nodes += result.nodes
    return nodes


def shares(perf_data: Path) -> Iterator[tuple[str, int]]:
    """Samples per function name, most first."""
    script = subprocess.run(["perf", "script", "-i", str(perf_data), "-F", "ip,sym"],
                            check=True, capture_output=True, text=True)
    counts: Counter[str] = Counter()
    for line in script.stdout.splitlines():
        _ip, _, name = line.strip().partition(" ")  # the address, then the name
        counts[name.strip() or PERF_UNKNOWN] += 1
    yield from counts.most_common()


CONTROL_FIFO = "control"
ACK_FIFO = "ack"


class PerfControl:
    """Switches ``perf record`` on and off through its control FIFO: it starts disabled
    (``-D -1``), so that only the searches are sampled, not the start-up (loading the compiled
    code, the net) nor the tables' allocation."""

    def __init__(self, directory: Path) -> None:
        self.control = open(directory / CONTROL_FIFO, "w", encoding="ascii")  # noqa: SIM115
        self.ack = open(directory / ACK_FIFO, encoding="ascii")  # noqa: SIM115

    def _command(self, word: str) -> None:
        self.control.write(word + "\n")
        self.control.flush()
        self.ack.readline()

    @contextmanager
    def sampled(self) -> Iterator[None]:
        self._command("enable")
        try:
            yield
        finally:
            self._command("disable")

    def close(self) -> None:
        self.control.close()
        self.ack.close()


def searched(args: argparse.Namespace) -> int:
    """The profiled process (``perf record`` runs it, so every thread the search starts is
    sampled): loads and maps the compiled code, searches, and writes its pid and nodes."""
    tap = ObjectTap()
    tap.install()
    from engine.nnue import net_for
    from engine.params import DEFAULT_EVAL_FILE
    from engine.search import warm_up

    warm_up(net_for(DEFAULT_EVAL_FILE))  # every function the search calls, loaded before the map
    fens = positions(args.part)
    lines = symbol_map(tap.objects)
    if not lines:
        raise SystemExit("no compiled function found: numba's loader hooks did not fire")
    write_perf_map(lines, os.getpid())
    control = PerfControl(args.child.parent)
    try:
        nodes = search_all(fens, args.depth, control.sampled)
    finally:
        control.close()
    args.child.write_text(f"{os.getpid()} {nodes} {len(fens)} {len(lines)}\n", encoding="ascii")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=PARTS, default="endings")
    parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH)
    parser.add_argument("--top", type=int, default=DEFAULT_TOP)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        return searched(args)
    if shutil.which("perf") is None:
        raise SystemExit("perf is not installed (Debian: linux-perf)")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        data, child = directory / "perf.data", directory / "child"
        os.mkfifo(directory / CONTROL_FIFO)
        os.mkfifo(directory / ACK_FIFO)
        subprocess.run(["perf", "record", "-q", "-F", str(SAMPLE_HZ), "-o", str(data), "-D", "-1",
                        f"--control=fifo:{directory / CONTROL_FIFO},{directory / ACK_FIFO}", "--",
                        sys.executable, "-m", "tools.bench.profile", "--part", args.part,
                        "--depth", str(args.depth), "--child", str(child)], check=True)
        pid, nodes, count, mapped = (int(word) for word in child.read_text().split())
        try:
            counts = list(shares(data))
        finally:
            Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)
    total = sum(samples for _, samples in counts)
    print(f"{args.part}: {count} positions at depth {args.depth}, {nodes} nodes, "
          f"{total} samples; {mapped} compiled functions mapped")
    for name, samples in counts[:args.top]:
        print(f"{100 * samples / total:6.2f} %  {samples:8d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
