"""Format `langfuse`: the scores a trace holds (`GET /api/public/traces/{id}`'s `scores`) are the case's labels.

The traces are the API JSON `tests/frameworks/langfuse_api.py` builds from recorded OTLP (three runs of
`tests/data/langfuse-api-*`), with scores as the server lists them (`score_v1`). Before, the `scores` were dropped: no
`metadata.labels`, and `judge.labels.fields: {TaskCompletion: metadata.labels.correct}` matched no verdict.

- a person's score (`source: ANNOTATION`) is `metadata.labels.<name>` (`label_sources`: `human`): a `BOOLEAN` as
  true/false, a `NUMERIC` as its number, a `CATEGORICAL` as its category; Langfuse's evaluators' (`EVAL`) and the API's
  (`API`) are `metadata.other_labels.<name>` (`llm`, `api`); a score on an observation, or a `TEXT` one, is no label;
- two people's scores of one name that differ are a list, oldest first, and so are the scores of one name on the traces
  of one conversation; `judge.labels.fields` names such a list among the label problems and takes no label from it
  (scores that agree are one label: `test_store_labels_agreeing`);
- end to end, `tracejudge run` with `judge.labels.fields` and `tracejudge calibrate --labels-field` pair the labels with
  the judge's verdicts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from langfuse_traces import DATA, score_v1, trace_with_full_details
from tracejudge.entrypoints.cli import main

RECORDINGS = ["langfuse-api-observe/lf-args.otlp.jsonl", "langfuse-api-observe/lf-manual.otlp.jsonl", "langfuse-api-langgraph/lf-react.otlp.jsonl"]


def _traces() -> list[dict[str, Any]]:
    out = []
    for name in RECORDINGS:
        out += trace_with_full_details([json.loads(x) for x in (DATA / name).read_text().splitlines()])
    return out


def _scored(tmp_path: Path) -> tuple[Path, list[str]]:
    """Three traces: the first scored by two annotators, an evaluator, the API and on an observation; the second by one
    annotator; the third by none."""
    a, b, c = _traces()
    a["scores"] = [score_v1(a["id"], "correct", True, "BOOLEAN", when="2025-06-01T12:00:00.000Z", author="u1"),
                   score_v1(a["id"], "verdict", "pass", "CATEGORICAL", when="2025-06-01T12:00:00.000Z", author="u1"),
                   score_v1(a["id"], "verdict", "fail", "CATEGORICAL", when="2025-06-01T11:00:00.000Z", author="u2"),
                   score_v1(a["id"], "quality", 4, when="2025-06-01T12:00:00.000Z", author="u1"),
                   score_v1(a["id"], "correct", 0, source="EVAL", when="2025-06-01T12:01:00.000Z"),
                   score_v1(a["id"], "thumbs", 1, source="API", when="2025-06-01T12:02:00.000Z"),
                   score_v1(a["id"], "step_ok", False, "BOOLEAN", observation_id=a["observations"][0]["id"], author="u1"),
                   {**score_v1(a["id"], "note", 0, author="u1"), "dataType": "TEXT", "stringValue": "looks fine", "value": None}]
    b["scores"] = [score_v1(b["id"], "correct", False, "BOOLEAN", author="u2")]
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in (a, b, c)))
    return path, [a["id"], b["id"], c["id"]]


def _cases(path: Path, **options: Any) -> dict[str, Any]:
    from tracejudge.core import registry
    from tracejudge.core.config import DatasetConfig
    from tracejudge.stages.extract import extract_record

    fmt = registry.format_for("langfuse")
    ds = DatasetConfig(path=path, format="langfuse", options=options)
    ctx = fmt.prepare(ds)
    return {c.id: c for c in (extract_record(raw, fmt, ctx) for raw in fmt.read(ds))}


def test_scores_are_labels_a_persons_apart_from_the_others(tmp_path: Path) -> None:
    path, (a, b, c) = _scored(tmp_path)
    cases = _cases(path, group_by="trace")
    first = cases[a].metadata
    assert first["labels"] == {"correct": True, "verdict": ["fail", "pass"], "quality": 4.0}  # (oldest first)
    assert first["label_sources"] == {"correct": "human", "verdict": ["human", "human"], "quality": "human"}
    assert first["other_labels"] == {"correct": 0.0, "thumbs": 1.0}
    assert first["other_label_sources"] == {"correct": "llm", "thumbs": "api"}
    assert cases[b].metadata["labels"] == {"correct": False}
    assert not {"labels", "label_sources", "other_labels", "other_label_sources"} & set(cases[c].metadata)


def test_the_scores_of_a_conversations_traces_are_one_list(tmp_path: Path) -> None:
    path, (a, b, _) = _scored(tmp_path)
    traces = [json.loads(x) for x in path.read_text().splitlines()]
    for t in traces[:2]:
        t["sessionId"] = "s-1"
    path.write_text("".join(json.dumps(t) + "\n" for t in traces))
    case = _cases(path)["s-1"]
    assert case.metadata["langfuse"]["traces"] == [a, b]
    assert case.metadata["labels"]["correct"] == [True, False] and case.metadata["label_sources"]["correct"] == ["human", "human"]


def _config(tmp_path: Path, path: Path, fields: dict[str, str] | None = None) -> Path:
    cfg = {"dataset": {"path": str(path), "format": "langfuse", "options": {"group_by": "trace"}},
           "metrics": [{"type": "TaskCompletion"}], "judge": {"provider": "simulator", "model": "gpt-4o-mini"},
           "cache": {"dir": str(tmp_path / "cache")}, "run": {"dir": str(tmp_path / "run")}}
    if fields:
        cfg["judge"]["labels"] = {"fields": fields}
    out = tmp_path / "eval.yaml"
    out.write_text(yaml.safe_dump(cfg))
    return out


def test_run_and_calibrate_pair_the_labels_with_the_verdicts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, (a, b, _) = _scored(tmp_path)
    assert main(["run", str(_config(tmp_path, path, {"TaskCompletion": "metadata.labels.correct"})), "--no-progress"]) in (0, 1)
    block = json.loads((tmp_path / "run" / "summary.json").read_text())["labels"]
    assert (block["total_labels"], block["matched"], block["problem_count"]) == (2, 2, 0)
    assert (block["metrics"]["TaskCompletion"]["n"], block["metrics"]["TaskCompletion"]["cases"]) == (2, 2)
    # Two annotators' labels of one name that differ: a list, which `fields` names as no label rather than picking one.
    out = tmp_path / "calibrate.json"
    capsys.readouterr()
    code = main(["calibrate", str(_config(tmp_path, path)), "--labels-field", "TaskCompletion=metadata.labels.verdict", "--json", str(out)])
    assert code == 2  # no label met a verdict: nothing measured
    assert f"case {a!r} metadata.labels.verdict: label: the case's 2 labels of this name disagree: fail, pass; none is taken" \
        in capsys.readouterr().out + out.read_text()
    # The evaluator's are there for whoever names them.
    assert main(["calibrate", str(_config(tmp_path, path)), "--labels-field", "TaskCompletion=metadata.other_labels.correct",
                 "--json", str(out)]) in (0, 1)
    assert json.loads(out.read_text())["metrics"]["TaskCompletion"]["n"] == 1
