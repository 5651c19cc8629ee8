"""junit.xml stays well-formed XML whatever text a trace carries into an id or a reason.

XML 1.0 cannot carry most control characters, nor U+FFFE and U+FFFF, even escaped: one of them in a
reason made a CI's JUnit reader refuse the whole file. They are dropped from reasons in the report, and an id
holding them is written escaped as its test case's name (results.jsonl keeps the text as recorded), both where a result is rendered as it is scored and where the reports are
rebuilt from results.jsonl (`tracejudge report`).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import anyio
import pytest

ODD = "\ufffe\uffff\x01\x0b&<>\"'é"


def _dataset(path: Path) -> None:
    calls = [{"name": "book", "arguments": {"note": f"x{ODD}y"}}]
    cases = [
        {"id": f"odd{ODD}-{i}", "expected_tool_calls": [{"name": "book", "arguments": {"note": "other"}}],
         "trace": {"steps": [{"tool_calls": calls}], "output": f"done {ODD}"}}
        for i in range(3)
    ]
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")


@pytest.mark.parametrize("processes", [1, 2])
def test_junit_of_text_xml_cannot_carry_parses_as_run_and_as_rebuilt(processes, tmp_path):
    from tracejudge.core.config import load_config
    from tracejudge.engine import runner
    from tracejudge.stages.reports import rebuild

    cases = tmp_path / "cases.jsonl"
    _dataset(cases)
    run_dir = tmp_path / "run"
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"dataset: {{path: {cases}, format: native}}\n"
                   "metrics:\n  - {type: ToolCalls, arguments: exact}\n  - {type: Contains, value: done}\n"
                   f"run: {{dir: {run_dir}, processes: {processes}}}\n")
    out = anyio.run(runner.run, load_config(cfg))
    assert out.new_results == 3
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(r["status"] == "ok" for r in results)
    assert all(r["case_id"].startswith("odd" + ODD) for r in results)  # the results keep the text as recorded
    assert any("\ufffe\uffff" in s["reason"] for r in results for s in r["scores"].values())

    def check() -> bytes:
        raw = (run_dir / "junit.xml").read_bytes()
        root = ET.fromstring(raw)  # raises on a character XML cannot carry
        names = [tc.get("name") for tc in root.iter("testcase")]
        assert len(names) == 6 and all(n.startswith("odd\\ufffe\\uffff\\x01\\x0b&<>\"'é-") for n in names)  # escaped as text
        assert "\ufffe" not in raw.decode("utf-8") and "\uffff" not in raw.decode("utf-8")
        return raw

    as_run = check()
    (run_dir / "junit.xml").unlink()
    rebuild(run_dir)
    assert check() == as_run
