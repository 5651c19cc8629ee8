"""Run loader scripts (`load_mlflow.py`, `load_phoenix.py`) as `python SCRIPT ARG...` runs them, each in a process
forked from one that imported their heavy modules once (MLflow and what its OpenAI autolog brings: seconds a process).

`python preloaded.py MODULE...` imports the MODULEs, then reads requests on stdin, a JSON line each:
`{"argv": [script, arg, ...], "env": {...}, "cwd": path, "stdout": path, "stderr": path}`. For each it forks a child
that takes that environment and folder, writes its stdout and stderr to those files and runs the script as `__main__`,
then ends as `python SCRIPT` would (its exit handlers run, an exception is printed and exits 1); the parent answers
with the child's exit status on a line. It ends with its stdin: when the test process that started it is gone.
"""

from __future__ import annotations

import importlib
import json
import os
import runpy
import sys


def _child(request: dict) -> None:
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, fd)
        os.close(out)
    null = os.open(os.devnull, os.O_RDONLY)  # (the requests stay the parent's)
    os.dup2(null, 0)
    os.close(null)
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    runpy.run_path(sys.argv[0], run_name="__main__")
    sys.exit(0)


def main(modules: list[str]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # (not installed: the script meets it as it would alone)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)  # returns only by raising: SystemExit or the script's error ends the child as Python does
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
