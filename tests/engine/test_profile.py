"""The compiled search's profiler: object code read for its functions, names made readable, and
a real ``perf`` run over the bench's end games where ``perf`` can sample."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import llvmlite.binding as llvm
import pytest

from tools.bench import profile

REPO = Path(__file__).resolve().parents[2]

IR = """
define i64 @outer(i64 %x) {
  %y = call i64 @inner(i64 %x)
  %z = mul i64 %y, %y
  ret i64 %z
}
define internal i64 @inner(i64 %x) noinline {
  %y = add i64 %x, 7
  ret i64 %y
}
"""


def _object_code() -> bytes:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(IR)
    machine = llvm.Target.from_default_triple().create_target_machine(codemodel="default")
    return bytes(machine.emit_object(module))


def test_the_function_symbols_of_an_object_are_read_with_their_sizes() -> None:
    functions = {f.name: f for f in profile.elf_functions(_object_code())}
    assert set(functions) == {"outer", "inner"}
    assert functions["outer"].is_global and not functions["inner"].is_global
    assert all(f.size > 0 for f in functions.values())
    # both in one text section, and not overlapping
    assert functions["outer"].section == functions["inner"].section
    first, second = sorted(functions.values(), key=lambda f: f.offset)
    assert first.offset + first.size <= second.offset


def test_anything_but_an_elf_object_is_refused() -> None:
    with pytest.raises(ValueError, match="ELF"):
        profile.elf_functions(b"MZ\x90\x00" + bytes(60))


class _Loaded:
    """A library whose global ``outer`` was loaded at a known address."""

    def __init__(self, address: int) -> None:
        self.address = address

    def get_pointer_to_function(self, name: str) -> int:
        return self.address if name == "outer" else 0


def test_local_functions_are_placed_by_a_global_of_their_section() -> None:
    image = _object_code()
    functions = {f.name: f for f in profile.elf_functions(image)}
    base = 0x7F0000001000
    lines = {line.name: line for line in profile.symbol_map([(image, _Loaded(base))])}
    assert lines["outer"].start == base
    assert lines["inner"].start == base - functions["outer"].offset + functions["inner"].offset
    assert lines["inner"].size == functions["inner"].size


def test_a_mangled_numba_name_reads_as_module_and_function() -> None:
    mangled = ("_ZN6engine6search8_negamaxB4v174B38c8tJTIeFIjxB2IKSgI4CrvQClUZKEGARTQA_3dE5Array"
               "IaLi1E1C7mutable7alignedE")
    assert profile.readable(mangled) == "search._negamax"
    assert profile.readable("cfunc._ZN6engine3tt5storeE") == "cfunc._ZN6engine3tt5storeE"
    assert profile.readable("memset") == "memset"


def _perf_samples() -> bool:
    if shutil.which("perf") is None:
        return False
    probe = subprocess.run(["perf", "stat", "-e", "task-clock", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _perf_samples(), reason="perf is missing or may not sample here")
def test_a_profile_of_the_end_games_names_the_search() -> None:
    run = subprocess.run([sys.executable, "-m", "tools.bench.profile", "--depth", "9",
                          "--top", "40"], cwd=REPO, capture_output=True, text=True, check=True)
    lines = run.stdout.splitlines()
    assert lines[0].startswith("endings: 14 positions at depth 9")
    total = int(lines[0].split(" samples;")[0].rsplit(" ", 1)[-1])
    # each line: the share (rounded to 0.01), the samples, the name
    rows = [(float(line.split()[0]), int(line.split()[2]), line.split()[-1])
            for line in lines[1:]]
    samples = {name: count for _, count, name in rows}
    # printed to 0.01: within half of that, plus a float's error (46.875 % of 8,992 samples
    # reads back 0.005 and an ulp away from the quotient)
    assert all(share == pytest.approx(100 * count / total, abs=0.005 + 1e-9)
               for share, count, _ in rows)
    assert sum(samples.values()) <= total
    # the compiled search is named, and it is where most of the time goes
    assert "search._negamax" in samples
    compiled = sum(count for name, count in samples.items()
                   if name.split(".")[0] in {"search", "movegen", "movepick", "evalcache",
                                             "tt", "nnue", "history", "board", "evaluate"})
    assert compiled > total / 2
