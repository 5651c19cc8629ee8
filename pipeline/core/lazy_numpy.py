"""`numpy()`: numpy, imported on first need; under the command line with its BLAS threads held at one unless the user chose a count.

A run needs numpy only for small arrays (the summary's bootstrap, a resume's key tables), never for
large linear algebra. OpenBLAS starts one thread per core when it loads and those threads spin
waiting for work for a while: on a 2-core machine that cost about 0.08 CPU-s a process, more than
all the bootstrap's arithmetic. With `OPENBLAS_NUM_THREADS` (or `OMP_NUM_THREADS`) already set,
or numpy already imported, nothing is changed. The variable is set only for the import, so child
processes see the environment as it was (but for one started while a run imports numpy in the background, `blas_env`). Only the command line asks for this (`single_blas_thread`):
a program that imports tracejudge as a library keeps numpy's own threading for its own arrays.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

__all__ = ["blas_env", "numpy", "single_blas_thread"]

_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
_single = [False]  # (set once by the command line: process configuration, like the log setup)


def single_blas_thread() -> None:
    """From now on, `numpy()` imports numpy with one BLAS thread (see the module docstring); the command line calls it."""
    _single[0] = True


@contextmanager
def blas_env() -> Iterator[None]:
    """While the block runs, `OPENBLAS_NUM_THREADS=1` in the environment if `numpy()` would set it for its import.

    For an import made on another thread (the run imports numpy in the background while its workers compute): the
    calling thread changes the environment and restores it, never the importing one. Children started inside the
    block (a stand-in worker process) see the variable too; they use no BLAS.
    """
    if "numpy" in sys.modules or not _single[0] or any(name in os.environ for name in _THREAD_VARS):
        yield
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


def numpy() -> ModuleType:
    """The numpy module; imported with one BLAS thread under the command line when neither the user nor an earlier import decided.

    While another thread is importing numpy (a store's client importing its own dependencies as the run imports numpy
    in the background), this waits for that import to end instead of returning the half-made module.
    """
    np = sys.modules.get("numpy")
    if np is not None and not getattr(getattr(np, "__spec__", None), "_initializing", False):
        return np
    # (`import` of a module another thread is initializing waits on that module's import lock)
    with blas_env():
        import numpy as np
    return np
