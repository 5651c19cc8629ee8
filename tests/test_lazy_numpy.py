"""numpy as a run imports it: under the command line one BLAS thread unless the user chose a count, the environment left
as it was; a program using tracejudge as a library keeps numpy's own threading."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import _forkserver

# Runs a summary's bootstrap in a fresh interpreter, then reports the process's threads and the variable.
CHILD = """
import json, os, random, sys
from tracejudge.core.lazy_numpy import single_blas_thread
from tracejudge.stages.aggregate.stats import bootstrap_mean_ci
if sys.argv[1:] == ["cli"]:
    single_blas_thread()
bootstrap_mean_ci([0.0, 1.0] * 50, n_total=100, mean_total=0.5, rng=random.Random("x"), resamples=50)
print(json.dumps({"threads": len(os.listdir("/proc/self/task")), "var": os.environ.get("OPENBLAS_NUM_THREADS")}))
"""


def _child(extra_env: dict[str, str], cli: bool = True) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    done = _forkserver.run([sys.executable, "-c", CHILD, *(["cli"] if cli else [])], capture_output=True, text=True, env={**env, **extra_env}, check=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not Path("/proc/self/task").is_dir() or (os.cpu_count() or 1) < 2, reason="counts threads in /proc on a machine of 2+ cores")
def test_the_bootstrap_starts_no_blas_threads_and_leaves_the_environment_alone():
    got = _child({})
    assert got == {"threads": 1, "var": None}


@pytest.mark.skipif(not Path("/proc/self/task").is_dir() or (os.cpu_count() or 1) < 2, reason="counts threads in /proc on a machine of 2+ cores")
def test_a_thread_count_the_user_set_is_kept():
    got = _child({"OPENBLAS_NUM_THREADS": "2"})
    assert got == {"threads": 2, "var": "2"}


@pytest.mark.skipif(not Path("/proc/self/task").is_dir() or (os.cpu_count() or 1) < 2, reason="counts threads in /proc on a machine of 2+ cores")
def test_a_library_user_keeps_numpys_own_threading():
    got = _child({}, cli=False)
    assert got["var"] is None and got["threads"] > 1


# numpy imported on a thread of its own (as a trace store's client imports its dependencies while the run imports numpy
# in the background), and `numpy()` asked for it the moment it appears in `sys.modules`, half made.
RACE = """
import sys, threading
from tracejudge.core.lazy_numpy import numpy
def other():
    import numpy
t = threading.Thread(target=other)
t.start()
while "numpy" not in sys.modules:
    pass
print(numpy().random.__name__)
t.join()
"""


def test_numpy_being_imported_on_another_thread_is_waited_for_not_returned_half_made():
    done = _forkserver.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "numpy.random", done.stderr[-600:]
