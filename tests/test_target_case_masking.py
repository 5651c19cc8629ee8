"""A live run's `traces.jsonl` masks the case it copies, as `results.jsonl` masks tags and metadata.

A real `tracejudge run` with a python agent target, on a case whose input, expected tool calls, tags and metadata
hold credentials: none of them reaches `traces.jsonl` in clear, the ordinary text does, and the masked line still
counts as the answer to that case when the run resumes.
"""

from __future__ import annotations

import json
import sys

import anyio
import yaml
from live_support import write_cases
from tracejudge.core.records import Case
from tracejudge.llm.redact import MASK
from tracejudge.stages.target.traces import TRACES, Answered, recorded_case

INPUT_PW = "inpPass" + "-9911"
EXPECTED_PW = "expPass" + "-7722"
TAG_KEY = "Zq8mK3vR7tY2pL9x" + "W4nB"  # token-shaped (16+ letters and digits)
META_PW = "metaPass" + "-5533"
NESTED_TOKEN = "nestTok" + "-6644"
DSN_PW = "dsnPw" + "-4411"
SECRETS = (INPUT_PW, EXPECTED_PW, TAG_KEY, META_PW, NESTED_TOKEN, DSN_PW)

CASE = {
    "id": "login",
    "input": {"password": INPUT_PW, "question": "please sign me in quickly"},
    "expected_tool_calls": [{"name": "login", "arguments": {"user": "ann", "password": EXPECTED_PW}}],
    "tags": ["smoke", f"api_key={TAG_KEY}"],
    "metadata": {"db_password": META_PW, "nested": {"Access_Token": NESTED_TOKEN}, "dsn": f"postgres://app:{DSN_PW}@host/db",
                 "note": "an ordinary note"},
}

AGENT = (
    "def agent(request):\n"
    "    return {'output': 'signed in', 'trace': {'steps': [{'tool_calls': [\n"
    "        {'name': 'login', 'arguments': {'user': 'ann'}, 'result': 'welcome back'}]}]}}\n"
)


def test_traces_jsonl_masks_the_case_it_copies(tmp_path):
    (tmp_path / "login_agent.py").write_text(AGENT, encoding="utf-8")
    data = write_cases(tmp_path / "cases.jsonl", [CASE])
    run_dir = tmp_path / "run"
    # (`arguments: ignore`: this test is about what the run copies of the case, not what a metric's reason quotes)
    config = {"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "ToolCalls", "arguments": "ignore"}],
              "target": {"kind": "python", "callable": "login_agent:agent", "pythonpath": str(tmp_path), "retries": 0},
              "run": {"dir": str(run_dir)}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    proc = anyio.run(lambda: anyio.run_process([sys.executable, "-m", "tracejudge", "run", str(path)], cwd=tmp_path, check=False))
    out = proc.stdout.decode() + proc.stderr.decode()
    text = (run_dir / TRACES).read_text(encoding="utf-8")
    assert [s for s in SECRETS if s in text] == [], text
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert [(p.name, s) for p in files for s in SECRETS if s.encode() in p.read_bytes()] == []
    assert [s for s in SECRETS if s in out] == []
    (line,) = [json.loads(x) for x in text.splitlines()]
    case = line["case"]
    assert line["status"] == "ok"
    assert case["id"] == "login"
    assert case["input"] == {"password": MASK, "question": "please sign me in quickly"}
    assert case["expected_tool_calls"] == [{"name": "login", "arguments": {"user": "ann", "password": MASK}}]
    assert case["tags"][0] == "smoke" and MASK in case["tags"][1]
    assert case["metadata"]["db_password"] == MASK and case["metadata"]["nested"]["Access_Token"] == MASK
    assert case["metadata"]["dsn"] == f"postgres://app:{MASK}@host/db"
    assert case["metadata"]["note"] == "an ordinary note"
    assert case["trace"]["steps"][0]["tool_calls"][0]["result"] == "welcome back"
    Case.model_validate(case)  # the viewer reads it back as a case

    # A resumed run takes this answer as the case's own: the masked line still matches the case it was made from.
    answered = Answered(run_dir / TRACES, line["target"])
    try:
        assert answered.get(Case.model_validate(CASE), 0) is not None
        edited = Case.model_validate({**CASE, "input": {**CASE["input"], "question": "another question"}})
        assert answered.get(edited, 0) is None
    finally:
        answered.close()


def test_a_clean_case_is_written_as_it_is():
    case = Case.model_validate({"id": "c1", "input": "what is the weather", "tags": ["a"], "metadata": {"k": 1}})
    assert recorded_case(case, None) == case.model_dump(mode="json", exclude_defaults=True)
