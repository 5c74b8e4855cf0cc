"""The one typed entry point to numba for the engine's compiled functions.

Every hot function is a plain function over numpy arrays compiled with ``@njit``: cached on disk
(``cache=True``, so a later start loads machine code instead of compiling) and releasing the GIL
(``nogil=True``, so a UCI thread keeps running while the search works).  These wrappers give
mypy decorators that return the decorated function's own type, so callers stay fully typed.
With ``NUMBA_DISABLE_JIT=1`` numba returns the function unchanged: the same code runs as plain
Python.

numba keys its on-disk cache to the source file of each function only, so a cached caller
keeps the old code of a callee or a constant from another module after that module changes,
and silently computes with it.  Importing this module therefore points numba's cache at a
directory named by a fingerprint of all engine sources: any edit starts a fresh cache.  The
base directory is ``NUMBA_CACHE_DIR`` when set (a service's cache directory), else
``engine/__pycache__/numba``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import numba
import numpy.typing as npt
from llvmlite import ir  # type: ignore[import-untyped]
from numba.core import cgutils, types
from numba.core.extending import intrinsic, overload

F = TypeVar("F", bound=Callable[..., object])

_ENGINE_DIR = Path(__file__).resolve().parent


# Modules that define nothing compiled and that no compiled code reads: the process plumbing,
# and the limited strength's table (tuned by calibration runs, which must not wait minutes for
# a recompile after each anchor moves).
_NOT_COMPILED = frozenset({"host.py", "launcher.py", "strength.py"})


def _source_fingerprint() -> str:
    """A digest of every engine source file (names and contents) that compiled code uses."""
    digest = hashlib.sha256()
    for path in sorted(_ENGINE_DIR.glob("*.py")):
        if path.name in _NOT_COMPILED:
            continue
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_dir() -> str:
    """The numba cache directory for the current engine sources."""
    base = os.environ.get("NUMBA_CACHE_DIR") or str(_ENGINE_DIR / "__pycache__" / "numba")
    return os.path.join(base, _source_fingerprint())


# numba reads this when a cached function is declared: set it before any engine module does
setattr(numba.config, "CACHE_DIR", cache_dir())  # noqa: B010 (the stubs do not declare it)

# numba's own (undocumented in its type stubs) switch for compiling without its runtime
_WITHOUT_RUNTIME: dict[str, Any] = {"_nrt": False}


def njit(fn: F) -> F:
    """Compile ``fn`` in nopython mode, cached on disk and without the GIL."""
    return cast(F, numba.njit(cache=True, nogil=True)(fn))


def njit_noalloc(fn: F) -> F:
    """``njit`` for hot functions that never allocate arrays: no reference counting.

    numba counts references to every array a function receives; in a function called a few
    hundred million times the atomic count updates cost more than the chess (measured: an
    in-check test went from about 25 ns to under 1 ns).  Such functions run without numba's
    runtime (``_nrt=False``), so they must not create arrays; views and scalars are fine.
    """
    return cast(F, numba.njit(cache=True, nogil=True, **_WITHOUT_RUNTIME)(fn))


def njit_noalloc_inline(fn: F) -> F:
    """``njit_noalloc`` that LLVM inlines into its compiled callers (``forceinline``).

    For small functions called in the innermost loops (make/unmake, the legality test): the
    call passes every array as half a dozen scalars, which costs as much as the work.  LLVM
    inlining keeps numba's compile time low (numba's own ``inline="always"`` retypes the
    callee at every call site) and adds no reference counting even into callers that use
    numba's runtime.
    """
    return cast(F, numba.njit(cache=True, nogil=True, forceinline=True, **_WITHOUT_RUNTIME)(fn))


def uncompiled(fn: F) -> F:
    """The plain Python function behind a compiled one (itself when the JIT is disabled).

    For one-off work such as reading a FEN, where loading compiled code would cost more than
    running the Python: a UCI loop can then set up positions before anything is compiled.
    """
    return cast(F, getattr(fn, "py_func", fn))


def prefetch(array: npt.NDArray[Any], index: int) -> None:
    """Start loading the cache line of ``array[index]`` (compiled; nothing as plain Python).

    Memory prefetch: for a table entry probed a little later (the transposition table of the
    position just reached by a move), so the memory access overlaps the work in between.
    """


def _prefetch_typer(typingctx: Any, array: Any, index: Any) -> tuple[Any, Any]:
    """numba intrinsic: a read prefetch (``llvm.prefetch``) of ``array[index]``'s address."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        array_type = signature.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        pointer = cgutils.get_item_pointer(  # type: ignore[no-untyped-call]
            context, builder, array_type, view, [args[1]], wraparound=False
        )
        i32 = ir.IntType(32)
        fn_type = ir.FunctionType(ir.VoidType(), [pointer.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(  # type: ignore[no-untyped-call]
            builder.module, fn_type, "llvm.prefetch.p0"
        )
        # read access, keep in all cache levels, data cache
        builder.call(fn, [pointer, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


_prefetch_intrinsic: Any = intrinsic(_prefetch_typer)


def _prefetch_overload(array: Any, index: Any) -> Callable[[Any, Any], None]:
    """Compiled ``prefetch``: the intrinsic (the Python body above does nothing)."""

    def compiled(array: Any, index: Any) -> None:
        _prefetch_intrinsic(array, index)

    return compiled


overload(prefetch)(_prefetch_overload)
