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
from typing import TypeVar, cast

import numba

F = TypeVar("F", bound=Callable[..., object])


def njit(fn: F) -> F:
    """Compile ``fn`` in nopython mode, cached on disk and without the GIL."""
    return cast(F, numba.njit(cache=True, nogil=True)(fn))
