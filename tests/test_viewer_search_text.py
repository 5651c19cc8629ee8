"""The Cases search finds a case by a tool call's argument value or error, and by a judge's reason for any question.

The search covered ids, inputs, outputs, tool names, score reasons and errors: a value the agent passed (an order
number, a city) or the judge's reason on a question it answered yes (the score's reason quotes only the failed ones)
found nothing. A real `tracejudge run` (judge: the bundled simulator on 127.0.0.1), then a real `tracejudge view`
process over HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from pathlib import Path

from _runs import native_case, view_server, write_config, write_dataset
from tracejudge.entrypoints.cli import main


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.read().decode()


def _found(url: str, words: str) -> str:
    return _get(f"{url}/run/run/cases?q=" + urllib.parse.quote(words))


def test_a_search_finds_argument_values_call_errors_and_every_judge_reason(tmp_path: Path) -> None:
    cases = [native_case(f"c{i}", ["lookup"], ["lookup"]) for i in range(3)]
    cases[0]["trace"]["steps"][0]["tool_calls"][0]["arguments"] = {"order_id": "#W4471", "city": "Zürich"}
    cases[1]["trace"]["steps"][0]["tool_calls"][0]["error"] = "warehouse quokka unreachable"
    data = write_dataset(tmp_path / "c.jsonl", cases)
    run_dir = tmp_path / "run"
    cfg = write_config(tmp_path / "c.yaml", data, run_dir, metrics=[{"type": "ToolCorrectness", "name": "tc"}, {"type": "ToolCallNecessity"}],
                       judge={"provider": "simulator", "model": "gpt-4o-mini"})
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    # A reason the judge gave on a question only `details` holds (not quoted by the score's reason).
    quiet = {r["case_id"]: [a["reason"] for a in r["scores"]["ToolCallNecessity"]["details"]["answers"].values()
                            if a["reason"] not in r["scores"]["ToolCallNecessity"]["reason"]] for r in results}
    cid, reasons = next((c, got) for c, got in quiet.items() if got)
    with view_server(str(run_dir)) as url:
        for _ in range(150):  # the dataset's text is indexed in the background
            if "c0" in _found(url, "#w4471"):
                break
            time.sleep(0.2)
        else:
            raise AssertionError("a call's argument value is not searched")
        assert "c0" in _found(url, "zürich") and "c1" not in _found(url, "zürich")
        assert "c1" in _found(url, "quokka") and "c0" not in _found(url, "quokka")
        page = _found(url, reasons[0])
        assert f"id={cid}" in page and all(f"id={other}" not in page for other in quiet if other != cid
                                           and not any(reasons[0] == r for r in quiet[other]))
