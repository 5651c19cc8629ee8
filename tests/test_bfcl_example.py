"""The BFCL example run (`examples/agents/bfcl.yaml`): its target asks a chat model over HTTP, here the simulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples" / "agents"))

from bfcl_agent import tool_of  # noqa: E402
import _forkserver


def test_function_docs_are_sent_as_the_chat_api_takes_them() -> None:
    # BFCL's docs say `dict`, `float`, `tuple`, `any` and put dots in names; the Chat Completions API refuses both.
    doc = {"name": "math.factorial", "description": "n!", "parameters": {"type": "dict", "properties": {
        "n": {"type": "integer"}, "scale": {"type": "float"}, "pair": {"type": "tuple", "items": {"type": "float"}},
        "opts": {"type": "dict", "properties": {"x": {"type": "any"}}}}, "required": ["n"]}}
    sent, tool = tool_of(doc)
    params = tool["function"]["parameters"]
    assert sent == "math_factorial" and tool["function"]["name"] == "math_factorial"
    assert params["type"] == "object" and params["properties"]["scale"] == {"type": "number"}
    assert params["properties"]["pair"] == {"type": "array", "items": {"type": "number"}}
    assert params["properties"]["opts"]["type"] == "object" and params["properties"]["opts"]["properties"]["x"] == {}
    assert params["required"] == ["n"]


def test_the_example_runs_against_a_chat_server_and_maps_names_back(tmp_path: Path, data_dir: Path, simulator) -> None:
    sim = simulator()
    run_dir = tmp_path / "run"
    env = {**os.environ, "BFCL_BASE_URL": f"{sim.url}/v1", "BFCL_TOOL_CHOICE": "required", "BFCL_API_KEY": "test"}
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(REPO / "examples/agents/bfcl.yaml"), "--no-progress",
                           "--set", "dataset.limit=5", "--set", f"run.dir={run_dir}"], capture_output=True, text=True, env=env,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0 and "5 results: ok 5" in done.stdout, done.stdout + done.stderr
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert all(r["status"] == "ok" and r["scores"]["ast_match"]["value"] is not None for r in results)
    traces = {t["case"]["id"]: t for t in map(json.loads, (run_dir / "traces.jsonl").read_text().splitlines())}
    names = [c["name"] for s in traces["simple_python_1"]["case"]["trace"]["steps"] for c in s["tool_calls"]]
    assert names == ["math.factorial"]  # the model was offered `math_factorial`; the call is scored under BFCL's name
