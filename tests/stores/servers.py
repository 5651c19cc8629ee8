"""Real trace servers for the store tests, each a subprocess on 127.0.0.1 and a free port, killed at the end.

`mlflow_server(folder)` runs `mlflow server` on a SQLite backend; `phoenix_server(folder)`
runs `phoenix serve` on SQLite. Both yield the base URL once the server answers. `FlakyJudge`
is a loopback judge whose replies fail to parse (`judge_error`) until it is `fixed`: a run
resumed after it is fixed redoes those results, as a night whose judge failed is redone.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml


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
def _serve(cmd: list[str], url: str, health: str, log: Path, env: dict[str, str], wait_s: float = 120) -> Iterator[str]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env}, start_new_session=True)
    try:
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
    with _serve(cmd, f"http://127.0.0.1:{port}", "/health", folder / "mlflow.log", {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}) as url:
        yield url


@contextmanager
def phoenix_server(folder: Path) -> Iterator[str]:
    """`phoenix serve` with its SQLite database in `folder`; yields `http://127.0.0.1:PORT` (OTLP/HTTP at `/v1/traces`)."""
    port = free_port()
    env = {"PHOENIX_WORKING_DIR": str(folder), "PHOENIX_PORT": str(port), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_TELEMETRY_ENABLED": "false", "DO_NOT_TRACK": "true"}
    cmd = [sys.executable, "-m", "phoenix.server.main", "serve"]
    with _serve(cmd, f"http://127.0.0.1:{port}", "/healthz", folder / "phoenix.log", env) as url:
        yield url
