"""BFCL question files whose answers are not call lists: agentic answer texts, and the format-sensitivity index."""

from __future__ import annotations

import json
from pathlib import Path

from tracejudge.core.records import Case
from tracejudge.core.registry import format_for
from tracejudge.stages.extract import extract_record
from tracejudge.stages.score import Contains
import _forkserver


class _Dataset:
    def __init__(self, path: Path) -> None:
        self.path, self.tasks, self.limit, self.options = path, None, None, {}


def _read(path: Path) -> list:
    fmt = format_for("bfcl")
    ds = _Dataset(path)
    ctx = fmt.prepare(ds)
    return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]


def _write(folder: Path, name: str, questions: list[dict], answers: list[dict]) -> Path:
    (folder / "possible_answer").mkdir(parents=True, exist_ok=True)
    (folder / "possible_answer" / name).write_text("".join(json.dumps(a) + "\n" for a in answers))
    (folder / name).write_text("".join(json.dumps(q) + "\n" for q in questions))
    return folder / name


def test_memory_and_web_search_answers_are_texts_the_reply_must_contain(tmp_path: Path):
    # the shapes of BFCL_v4_memory.json / BFCL_v4_web_search.json and their possible answers
    path = _write(tmp_path, "BFCL_v4_memory.json",
                  [{"id": "memory_1-customer-1", "question": [[{"role": "user", "content": "How old am I?"}]],
                    "involved_classes": ["MemoryAPI"], "scenario": "customer"}],
                  [{"id": "memory_1-customer-1", "ground_truth": ["35", "thirty five"], "source": "I'm 35 years old."}])
    [case] = _read(path)
    assert isinstance(case, Case), case
    assert case.expected_output == ["35", "thirty five"] and case.expected_tool_calls is None
    assert case.metadata["category"] == "memory" and case.tags == ["bfcl", "memory"]
    said = Case.model_validate({**case.model_dump(), "trace": {"steps": [], "output": "You told me you are Thirty Five."}})
    assert Contains().evaluate(said).value == 1.0
    wrong = Case.model_validate({**case.model_dump(), "trace": {"steps": [], "output": "You are 53."}})
    score = Contains().evaluate(wrong)
    assert score.value == 0.0 and "none of '35', 'thirty five'" in score.reason


def test_the_format_sensitivity_index_is_one_error_saying_what_it_is(tmp_path: Path):
    index = {"simple_python": ["simple_python_58", "simple_python_94"], "multiple": ["multiple_161"]}
    path = tmp_path / "BFCL_v4_format_sensitivity.json"
    path.write_text(json.dumps(index, indent=4))  # as upstream writes it: one object over several lines
    [(where, err)] = _read(path)
    assert err.kind == "invalid_input" and err.line == 1
    assert "format-sensitivity index" in err.message and "not a question file" in err.message


def test_a_question_file_without_its_answer_file_says_so(tmp_path: Path):
    # The cases were read without expectations and every metric needing one said "not computed", naming no file.
    import subprocess
    import sys

    import yaml

    q = [{"id": "multiple_0", "question": [[{"role": "user", "content": "Area of a circle of radius 5?"}]],
          "function": [{"name": "area", "parameters": {"type": "dict", "properties": {"r": {"type": "integer"}}}}]}]
    for name, warned in (("BFCL_v4_multiple.json", 1), ("BFCL_v4_irrelevance.json", 0), ("BFCL_v4_live_relevance.json", 0)):
        (tmp_path / name).write_text(json.dumps({**q[0], "id": name.split("_v4_")[1].removesuffix(".json") + "_0"}) + "\n")
        cfg = tmp_path / "c.yaml"
        cfg.write_text(yaml.safe_dump({"dataset": {"path": str(tmp_path / name), "format": "bfcl"}, "metrics": [{"type": "ToolCalls"}]}))
        done = _forkserver.run([str(Path(sys.executable).with_name("tracejudge")), "extract", str(cfg), "-o", "-"], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stderr.count("BFCL answer file not found") == warned, (name, done.stderr)
        if warned:
            assert str(tmp_path / "possible_answer" / name) in done.stderr, done.stderr
    # BFCL's format-sensitivity index has no answer file upstream either: its one error says what it is, with no
    # warning before it about an answer file it never had.
    index = tmp_path / "BFCL_v4_format_sensitivity.json"
    index.write_text(json.dumps({"multiple": ["multiple_0"]}, indent=4))
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(index), "format": "bfcl"}, "metrics": [{"type": "ToolCalls"}]}))
    done = _forkserver.run([str(Path(sys.executable).with_name("tracejudge")), "extract", str(cfg), "-o", "-"], capture_output=True,
                          text=True, timeout=120)
    assert "BFCL answer file not found" not in done.stderr and "format-sensitivity index" in done.stdout + done.stderr, done.stderr
