"""A trace-store label whose name holds a `.` (`correct.v2`) can be named in `judge.labels.fields`.

Before, `judge.labels.fields: {TaskCompletion: metadata.labels.correct.v2}` split the path at every dot, looked for
`metadata.labels.correct.v2` as four keys, found none and gave every case no label, saying nothing: a label named so
(a team versioning its rubric, `correct.v2` beside `correct`) could not be read at all. Now (`core.field_paths`):

- `metadata.labels["correct.v2"]` (or `['correct.v2']`, or `[correct.v2]`) names that key exactly;
- the dotted form finds it too when the path's own split finds nothing (`correct` then `v2`), the split winning when
  both would;
- a path that cannot be read (a bracket or quote left open, two dots in a row) is refused when the config is read,
  `judge.labels.fields` and `--labels-field` alike, naming the character where it goes wrong.

The trace is a Langfuse API trace (`score_v1`, as Langfuse lists scores) read by format `langfuse`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from helpers import extract_path
from langfuse_traces import DATA, score_v1, trace_with_full_details
from tracejudge.core.config import load_config
from tracejudge.core.errors import ConfigError
from tracejudge.entrypoints.cli import main
from tracejudge.stages.judge.labels import field_labels



def _results(tmp_path: Path) -> tuple[Path, list[dict]]:
    lines = (DATA / "langfuse-api-observe" / "lf-manual.otlp.jsonl").read_text().splitlines()
    (trace,) = trace_with_full_details([json.loads(x) for x in lines])
    trace["scores"] = [score_v1(trace["id"], "correct.v2", False, "BOOLEAN", author="u1"),
                       score_v1(trace["id"], "correct", True, "BOOLEAN", author="u1")]
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(trace) + "\n")
    (case,) = extract_path(path, "langfuse")
    assert case.metadata["labels"] == {"correct.v2": False, "correct": True}
    return path, [{"case_id": case.id, "trial": 0, "metadata": case.metadata}]


@pytest.mark.parametrize("path", ['metadata.labels["correct.v2"]', "metadata.labels['correct.v2']", "metadata.labels[correct.v2]",
                                  "metadata.labels.correct.v2"])
def test_a_name_holding_a_dot_is_read(tmp_path: Path, path: str) -> None:
    _, results = _results(tmp_path)
    got = field_labels(results, {"TaskCompletion": path})
    assert [lab.value for lab in got.labels] == [False] and got.problems == []
    assert [lab.value for lab in field_labels(results, {"TaskCompletion": "metadata.labels.correct"}).labels] == [True]


def test_the_split_wins_and_brackets_say_which_is_meant() -> None:
    results = [{"case_id": "1", "metadata": {"labels": {"a": {"b": True}, "a.b": False}}}]
    assert [lab.value for lab in field_labels(results, {"M": "metadata.labels.a.b"}).labels] == [True]
    assert [lab.value for lab in field_labels(results, {"M": 'metadata.labels["a.b"]'}).labels] == [False]
    assert [lab.value for lab in field_labels(results, {"M": 'metadata.labels["a"].b'}).labels] == [True]


def _config(tmp_path: Path, data: Path, fields: dict[str, str] | None) -> Path:
    cfg = {"dataset": {"path": str(data), "format": "langfuse"}, "metrics": [{"type": "TaskCompletion"}],
           "judge": {"provider": "simulator", "model": "gpt-4o-mini"}, "cache": {"dir": str(tmp_path / "cache")}, "run": {"dir": str(tmp_path / "run")}}
    if fields:
        cfg["judge"]["labels"] = {"fields": fields}
    out = tmp_path / "eval.yaml"
    out.write_text(yaml.safe_dump(cfg))
    return out


@pytest.mark.parametrize("path, problem", [('metadata.labels["correct.v2"', "at its end: expected ']' after the quoted key"),
                                           ("metadata.labels[correct.v2", "at character 16: a '[' with no ']' after it"),
                                           ("metadata.labels..v2", "at character 17: an empty key")])
def test_a_path_that_cannot_be_read_is_refused_when_the_config_is_read(tmp_path: Path, path: str, problem: str,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    data, _ = _results(tmp_path)
    with pytest.raises(ConfigError) as err:
        load_config(_config(tmp_path, data, {"TaskCompletion": path}))
    assert f"judge.labels.fields: TaskCompletion: {path!r} {problem}" in str(err.value)
    capsys.readouterr()
    assert main(["calibrate", str(_config(tmp_path, data, None)), "--labels-field", f"TaskCompletion={path}"]) == 2
    assert f"--labels-field 'TaskCompletion={path}': {path!r} {problem}" in capsys.readouterr().err
