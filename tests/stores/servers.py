"""Real trace servers for the store tests, each a subprocess on 127.0.0.1 and a free port, killed at the end.

`mlflow_server(folder)` runs `mlflow server` on a SQLite backend; `phoenix_server(folder)`
runs `phoenix serve` on SQLite. Both yield the base URL once the server answers. The test session
starts one of each (the `mlflow_url` and `phoenix_url` fixtures of tests/conftest.py) for every file
that needs them: each file keeps to experiments and projects of its own names. `FlakyJudge`
is a loopback judge whose replies fail to parse (`judge_error`) until it is `fixed`: a run
resumed after it is fixed redoes those results, as a night whose judge failed is redone.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml


def phoenix_installed() -> bool:
    """Whether arize-phoenix (the server, not only its client) is installed, without importing it: `find_spec` of
    `phoenix.server` imports `phoenix`, whose package imports the whole server (seconds in every collecting worker)."""
    spec = importlib.util.find_spec("phoenix")
    return spec is not None and any((Path(loc) / "server" / "main.py").is_file() for loc in spec.submodule_search_locations or ())


def free_port() -> int:
    """A TCP port nothing listens on now (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sweep_config(tmp_path: Path, fmt: str, options: dict, max_calls: int, judge_url: str | None = None) -> Path:
    """A nightly-sweep config reading `fmt` with `options`: MaxToolCalls and TaskCompletion (judge simulator, or the
    OpenAI-compatible judge at `judge_url`, uncached), run dir `tmp_path/run`."""
    judge = ({"provider": "openai", "model": "gpt-4o-mini", "base_url": judge_url + "/v1", "api_key_env": None}
             if judge_url else {"provider": "simulator", "model": "gpt-4o-mini"})
    cfg = {"dataset": {"format": fmt, "options": options},
           "metrics": [{"type": "MaxToolCalls", "max_calls": max_calls}, {"type": "TaskCompletion"}],
           "judge": judge, "cache": {"dir": str(tmp_path / "cache"), "enabled": not judge_url}, "run": {"dir": str(tmp_path / "run")}}
    path = tmp_path / "nightly.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


# The modules each loader script imports (MLflow's OpenAI autolog imports the Agents SDK's tracing): imported once.
_PRELOAD = {"load_mlflow.py": ["mlflow", "mlflow.entities", "mlflow.openai", "mlflow.openai._agent_tracer", "openai", "agents"],
            "load_phoenix.py": ["openinference.instrumentation.openai", "opentelemetry.exporter.otlp.proto.http.trace_exporter",
                                "opentelemetry.sdk.trace", "openai"]}
# What load_mlflow.py sets before it imports MLflow: set before the preloading process imports it.
_PRELOAD_ENV = {"load_mlflow.py": {"MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false", "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}}
_preloaded: dict[str, subprocess.Popen[str]] = {}
_preloaded_lock = threading.Lock()


def run_loader(script: Path, *args: str, timeout: float = 180) -> str:
    """`subprocess.run([python, script, *args], capture_output=True, text=True, timeout=timeout, check=True).stdout`, run
    in a process forked from one that imported the script's modules once (`preloaded.py`; one per script and test process)."""
    import tempfile

    with _preloaded_lock:
        proc = _preloaded.get(script.name)
        if proc is None or proc.poll() is not None:
            env = {**os.environ, **_PRELOAD_ENV.get(script.name, {})}
            if not _preloaded:
                atexit.register(_stop_preloaded)
            proc = _preloaded[script.name] = subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("preloaded.py")), *_PRELOAD[script.name]], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, text=True, env=env, cwd=script.parent, start_new_session=True)
        with tempfile.TemporaryDirectory() as tmp:
            out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
            request = {"argv": [str(script), *args], "env": dict(os.environ), "cwd": os.getcwd(), "stdout": str(out), "stderr": str(err)}
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            answer = _readline(proc, timeout)
            if not answer:
                raise RuntimeError(f"the preloading process of {script.name} ended with {proc.wait()}")
            stdout, stderr = (out.read_text() if out.exists() else ""), (err.read_text() if err.exists() else "")
        if int(answer) != 0:
            raise subprocess.CalledProcessError(int(answer), [sys.executable, str(script), *args], stdout, stderr)
        return stdout


def _stop_preloaded() -> None:
    for proc in _preloaded.values():
        try:
            proc.stdin.close()  # type: ignore[union-attr]  # it ends at the end of its requests
        except OSError:
            pass
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _readline(proc: subprocess.Popen[str], timeout: float) -> str:
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
        if not sel.select(timeout):
            os.killpg(proc.pid, signal.SIGKILL)  # its session: the script's process with it
            proc.wait()
            raise subprocess.TimeoutExpired([str(a) for a in proc.args], timeout)  # type: ignore[union-attr]
    return proc.stdout.readline()  # type: ignore[union-attr]


class FlakyJudge:
    """An OpenAI-compatible judge on 127.0.0.1 (`url`) answering text no verdict parser reads until `fixed` is set."""

    def __init__(self) -> None:
        from _loopback import Loopback

        self.fixed = False
        self.server = Loopback(self._respond)
        self.url = self.server.url

    def _respond(self, headers: dict, body: dict) -> tuple[int, dict]:
        from _loopback import completion, verdict

        return 200, completion(json.dumps(verdict(body)) if self.fixed else "I would rather not say.")

    def __enter__(self) -> FlakyJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()


@contextmanager
def _serve(cmd: list[str], url: str, health: str, log: Path, env: dict[str, str], wait_s: float = 600) -> Iterator[str]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env}, start_new_session=True)
    try:
        # A generous wait: at load 5 on two cores `phoenix serve` took 83 s to answer and `mlflow server` 51 s, and a
        # busier CI machine took over 120 s, which failed every store test of the session; only a broken server waits it out.
        deadline = time.monotonic() + wait_s
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{cmd[0]} exited with {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(url + health, timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"{cmd[0]} did not answer in {wait_s}s: {log.read_text(errors='replace')[-2000:]}")
                time.sleep(0.3)
        yield url
    finally:
        # Its own session: the server's workers go with it.
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextmanager
def mlflow_server(folder: Path) -> Iterator[str]:
    """`mlflow server` with `folder/mlflow.db` and `folder/artifacts`; yields `http://127.0.0.1:PORT`."""
    port = free_port()
    cmd = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", f"sqlite:///{folder}/mlflow.db",
           "--default-artifact-root", str(folder / "artifacts"), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    # No job execution: it starts a job runner and seven huey consumers, each importing MLflow, that poll for online
    # scoring every minute (about 15 CPU-s a minute); nothing here runs a server-side job.
    env = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    with _serve(cmd, f"http://127.0.0.1:{port}", "/health", folder / "mlflow.log", env) as url:
        yield url


@contextmanager
def phoenix_server(folder: Path) -> Iterator[str]:
    """`phoenix serve` with its SQLite database in `folder`; yields `http://127.0.0.1:PORT` (OTLP/HTTP at `/v1/traces`)."""
    port = free_port()
    env = {"PHOENIX_WORKING_DIR": str(folder), "PHOENIX_PORT": str(port), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_TELEMETRY_ENABLED": "false", "DO_NOT_TRACK": "true"}
    # Phoenix from 20.21.1 on needs graphql-core >= 3.3, which MLflow's server (graphene 3) refuses: a newer Phoenix
    # server is checked from an environment of its own, whose interpreter TRACEJUDGE_PHOENIX_PYTHON names.
    cmd = [os.environ.get("TRACEJUDGE_PHOENIX_PYTHON") or sys.executable, "-m", "phoenix.server.main", "serve"]
    with _serve(cmd, f"http://127.0.0.1:{port}", "/healthz", folder / "phoenix.log", env) as url:
        yield url
