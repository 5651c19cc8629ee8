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


def run_example(tmp_path: Path, base_url: str, *sets: str, **env: str) -> tuple[list[dict], dict[str, dict]]:
    """Run `examples/agents/bfcl.yaml` against the chat server at `base_url` with `--set` options `sets` and the
    example's variables `env` (`BFCL_TOOL_CHOICE=...`), asserting every result ok: (results, traces by case id)."""
    run_dir = tmp_path / "run"
    env = {**os.environ, "BFCL_BASE_URL": f"{base_url}/v1", "BFCL_API_KEY": "test", **env}
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(REPO / "examples/agents/bfcl.yaml"), "--no-progress",
                            *[x for s in sets for x in ("--set", s)], "--set", f"run.dir={run_dir}"],
                           capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert done.returncode == 0 and f"{len(results)} results: ok {len(results)}" in done.stdout, done.stdout + done.stderr
    traces = {t["case_id"]: t["case"]["trace"] for t in map(json.loads, (run_dir / "traces.jsonl").read_text().splitlines())}
    return results, traces


def test_the_example_runs_against_a_chat_server_and_maps_names_back(tmp_path: Path, data_dir: Path, simulator) -> None:
    results, traces = run_example(tmp_path, simulator().url, "dataset.limit=5", BFCL_TOOL_CHOICE="required")
    assert len(results) == 5 and all(r["scores"]["ast_match"]["value"] is not None for r in results)
    names = [c["name"] for s in traces["simple_python_1"]["steps"] for c in s["tool_calls"]]
    assert names == ["math.factorial"]  # the model was offered `math_factorial`; the call is scored under BFCL's name


def test_a_reply_in_text_is_the_answer_of_an_irrelevance_question(tmp_path: Path, data_dir: Path, simulator) -> None:
    # The simulator answers `auto` in text, as a model declining every offered function does: that text is the step's
    # output (a trace step has no `text`: such a reply was an invalid trace, a target_error, in the category expecting it).
    results, traces = run_example(tmp_path, simulator().url, f"dataset.path={data_dir / 'bfcl' / 'BFCL_v4_irrelevance.json'}",
                                  "dataset.limit=3", BFCL_TOOL_CHOICE="auto")
    assert len(results) == 3 and all(r["scores"]["ast_match"]["passed"] for r in results)
    assert all(t["steps"][0]["output"] == t["output"] and t["output"] for t in traces.values())
