"""The one typed entry point to numba for the engine's compiled functions.

Every hot function is a plain function over numpy arrays compiled with ``@njit``: cached on disk
(``cache=True``, so a later start loads machine code instead of compiling) and releasing the GIL
(``nogil=True``, so a UCI thread keeps running while the search works).  numba ships no type
information, so this wrapper gives mypy a decorator that keeps the decorated signature: modules
write ``@njit`` from here and stay fully typed.  With ``NUMBA_DISABLE_JIT=1`` numba returns the
function unchanged and the same code runs as plain Python.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., object])

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
