"""Live re-recording of every installed framework, started early and shared by the test session.

The recordings run as subprocesses (instrumentors patch libraries process-wide) in the
background from the moment the session knows a test needs them, so the second core records
while the suite runs on the first; `wait()` collects them. Each recording runs only the
`LIVE_TASKS`.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["LIVE_TASKS", "NEEDS", "installed", "start", "wait"]

LIVE_TASKS = ("failing", "parallel")
RECORD = Path(__file__).resolve().parent / "record.py"
# recording -> modules it imports (skipped when one is missing)
NEEDS = {
    "smolagents-memory": ("smolagents",),
    "openinference-smolagents": ("smolagents", "openinference.instrumentation.smolagents"),
    "openai-agents-export": ("agents",),
    "openinference-openai-agents": ("agents", "openinference.instrumentation.openai_agents"),
    "openinference-openai": ("openai", "openinference.instrumentation.openai"),
    "traceloop-openai": ("openai", "opentelemetry.instrumentation.openai"),
    "openinference-langchain": ("langgraph.prebuilt", "langchain_openai", "openinference.instrumentation.langchain"),
    "traceloop-langchain": ("langgraph.prebuilt", "langchain_openai", "opentelemetry.instrumentation.langchain"),
    "mlflow": ("mlflow",),
    "langfuse-otel": ("langfuse",),
    "langfuse-api": ("langfuse",),
}
_PARALLEL = 2  # recordings at a time: one core for them, one for the suite

_state: dict[str, object] = {}


def installed(module: str) -> bool:
    """True when `module` can be imported here."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def start() -> None:
    """Start recording every installed framework into a temp dir (once per session; a no-op after)."""
    if "out" in _state:
        return
    out = Path(tempfile.mkdtemp(prefix="recordings-"))
    todo = [n for n, mods in NEEDS.items() if all(installed(m) for m in mods)]
    _state.update(out=out, todo=todo, running={}, done={})
    _pump()


def _pump() -> None:
    running: dict[str, subprocess.Popen[str]] = _state["running"]  # type: ignore[assignment]
    todo: list[str] = _state["todo"]  # type: ignore[assignment]
    env = {**os.environ, "RECORD_TASKS": ",".join(LIVE_TASKS)}
    while todo and len(running) < _PARALLEL:
        name = todo.pop(0)
        running[name] = subprocess.Popen([sys.executable, str(RECORD), str(_state["out"]), "--only", name],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)


def wait(timeout_s: float = 900) -> tuple[Path, dict[str, str]]:
    """Wait for every recording; returns (their folder, stderr tail of each that failed)."""
    start()
    running: dict[str, subprocess.Popen[str]] = _state["running"]  # type: ignore[assignment]
    done: dict[str, tuple[int, str]] = _state["done"]  # type: ignore[assignment]
    while running:
        name, proc = next(iter(running.items()))
        try:
            _, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        done[name] = (proc.returncode, err or "")
        del running[name]
        _pump()
    return _state["out"], {n: err[-3000:] for n, (code, err) in done.items() if code != 0}  # type: ignore[return-value]


def stop() -> None:
    """Kill recordings still running (the session ends early)."""
    for proc in dict(_state.get("running") or {}).values():  # type: ignore[call-overload]
        proc.kill()
