"""`numpy()`: numpy, imported on first need with its BLAS threads held at one unless the user chose a count.

A run needs numpy only for small arrays (the summary's bootstrap, a resume's key tables), never for
large linear algebra. OpenBLAS starts one thread per core when it loads and those threads spin
waiting for work for a while: on a 2-core machine that cost about 0.08 CPU-s a process, more than
all the bootstrap's arithmetic. With `OPENBLAS_NUM_THREADS` (or `OMP_NUM_THREADS`) already set,
or numpy already imported, nothing is changed. The variable is set only for the import, so child
processes see the environment as it was.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

__all__ = ["numpy"]

_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")


def numpy() -> ModuleType:
    """The numpy module, imported with one BLAS thread when neither the user nor an earlier import decided."""
    np = sys.modules.get("numpy")
    if np is not None:
        return np
    if any(name in os.environ for name in _THREAD_VARS):
        import numpy as np

        return np
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy as np
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)
    return np
