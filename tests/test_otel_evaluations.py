"""Format `otel`: evaluation results recorded with a trace (`gen_ai.evaluation.result`) are the case's labels.

`tests/data/otel-evaluations/` is recorded by `tests/frameworks/record_evaluation_results.py`: a chat loop under
OpenLLMetry's openai instrumentation and an evaluator writing the event with the OpenTelemetry SDK, as a span event on
each turn's agent span and as log records (with the chat span's context, or after the run with only the reply's
`gen_ai.response.id`), exported over OTLP/HTTP protobuf to a loopback collector; `split/` is the same run as a traces
export and a logs export in protobuf's JSON mapping (base64 ids). agentevals' hand fixtures (`ext_eval_*`, in
`tests/data/agentevals/hand/`) are compared with their truths by `test_agentevals_fixtures`. Before, none was read.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from _otel_truth import assert_evaluations, extract
from tracejudge.core.records import Case
from tracejudge.entrypoints.cli import main

DATA = Path(__file__).resolve().parent / "data" / "otel-evaluations"
TRUTH = json.loads((DATA / "evaluations.truth.json").read_text())


@pytest.mark.parametrize("path", [DATA / "evaluations.jsonl", DATA / "split"], ids=["json", "protobuf-json"])
def test_recorded_results_are_the_cases_labels(path: Path) -> None:
    cases = extract(path)
    assert all(isinstance(c, Case) for c in cases) and len(cases) == len(TRUTH["cases"])
    for case, want in zip(cases, TRUTH["cases"]):
        assert [case.input, *case.turns] == want["user_turns"] and case.trace.output == want["answers"][-1]
        assert_evaluations(case, want["evaluations"])  # (the failed evaluation, `error.type`, is none)
    first, second = (c.metadata for c in cases)
    # two results of one name that agree are one label, each source listed; two that differ are the list, oldest first
    assert first["other_labels"] == {"task_success": 1.0, "Relevance": [0.9, 0.4]}
    assert first["other_label_sources"]["task_success"] == ["evaluator", "evaluator"]
    assert [d.get("explanation") for d in first["other_label_details"]["Relevance"]] == ["answers the question"] * 2
    # the result logged after the run, naming only the reply's id, belongs to the request that answered it
    assert first["other_label_details"]["Relevance"][1]["response_id"] == "chatcmpl-1"
    assert second["other_labels"] == {"task_success": 0.0, "Relevance": 0.9}
    assert "labels" not in first and "labels" not in second  # no attribute says a person evaluated


def _export(tmp_path: Path, logs: list[dict[str, Any]], events: list[dict[str, Any]] | None = None, trace: str = "ab" * 16) -> Path:
    """One chat turn (agent span `a1`, chat span `c1`, reply id `resp-1`) with `events` on the chat span and `logs` as
    log records, written as an OTLP/JSON file."""
    def attrs(d: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"key": k, "value": {"doubleValue": v} if isinstance(v, float) else {"stringValue": v}} for k, v in d.items()]
    msgs = {"gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Ping?"}]}]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Pong."}]}])}
    spans = [{"traceId": trace, "spanId": "a1" * 8, "name": "invoke_agent helper", "startTimeUnixNano": "1000", "endTimeUnixNano": "9000",
              "attributes": attrs({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"})},
             {"traceId": trace, "spanId": "c1" * 8, "parentSpanId": "a1" * 8, "name": "chat m", "startTimeUnixNano": "2000",
              "endTimeUnixNano": "8000", "attributes": attrs({"gen_ai.operation.name": "chat", "gen_ai.response.id": "resp-1", **msgs}),
              "events": [{"name": e.pop("name", "gen_ai.evaluation.result"), "attributes": attrs(e)} for e in events or []]}]
    records = [{"timeUnixNano": str(10000 + i), "eventName": r.pop("eventName", "gen_ai.evaluation.result"),
                **{k: r.pop(k) for k in ("traceId", "spanId", "body") if k in r}, "attributes": attrs(r)} for i, r in enumerate(logs)]
    doc = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}],
           "resourceLogs": [{"resource": {}, "scopeLogs": [{"logRecords": records}]}]}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


def test_a_malformed_result_costs_only_itself_and_is_warned_of_with_its_place(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _export(tmp_path, [{"gen_ai.evaluation.name": "Relevance", "gen_ai.evaluation.score.value": "high", "spanId": "c1" * 8, "traceId": "ab" * 16},
                              {"gen_ai.evaluation.score.value": 0.5, "spanId": "c1" * 8, "traceId": "ab" * 16},
                              {"gen_ai.evaluation.name": "Empty", "spanId": "c1" * 8, "traceId": "ab" * 16},
                              {"gen_ai.evaluation.name": "Fluency", "gen_ai.evaluation.score.value": 0.7, "spanId": "c1" * 8, "traceId": "ab" * 16}],
                   events=[{"gen_ai.evaluation.name": "Tone", "gen_ai.evaluation.score.label": "polite"}, {"gen_ai.evaluation.explanation": "no name"}])
    with caplog.at_level(logging.WARNING):
        [case] = extract(path)
    assert case.metadata["other_labels"] == {"Fluency": 0.7, "Tone": "polite"}  # a text label alone is the label
    said = [r.getMessage() for r in caplog.records]
    at = f"otel: {path}:1: log record 'gen_ai.evaluation.result' of span {'c1' * 8}"
    assert any(m.startswith(at) and "('Relevance'): gen_ai.evaluation.score.value must be a number, got 'high'" in m for m in said), said
    assert any(m.startswith(at) and "gen_ai.evaluation.name is missing" in m for m in said), said
    assert any(m.startswith(at) and "('Empty'): gen_ai.evaluation.score.value / gen_ai.evaluation.score.label are both missing" in m for m in said)
    assert any(m.startswith(f"otel: {path}:1: span {'c1' * 8}: span event 'gen_ai.evaluation.result'") and "name is missing" in m for m in said)
    assert (case.input, case.trace.output) == ("Ping?", "Pong.")  # the conversation reads on


def test_a_result_naming_its_trace_or_only_the_reply_finds_its_span(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A record naming only the trace is the trace's (its root's); one naming nothing but `gen_ai.response.id` is the
    reply's request; one naming nothing that was read is warned of, never put on another trace."""
    path = _export(tmp_path, [{"gen_ai.evaluation.name": "Run", "gen_ai.evaluation.score.value": 1.0, "traceId": "ab" * 16},
                              {"gen_ai.evaluation.name": "Reply", "gen_ai.evaluation.score.value": 0.5, "gen_ai.response.id": "resp-1"},
                              {"gen_ai.evaluation.name": "Lost", "gen_ai.evaluation.score.value": 0.1, "gen_ai.response.id": "resp-9"},
                              {"eventName": "", "event.name": "gen_ai.evaluation.result", "body": {"kvlistValue": {"values": [
                                  {"key": "gen_ai.evaluation.name", "value": {"stringValue": "InBody"}},
                                  {"key": "gen_ai.evaluation.score.value", "value": {"doubleValue": 0.25}}]}},
                               "traceId": "ab" * 16, "spanId": "c1" * 8}])
    with caplog.at_level(logging.WARNING):
        [case] = extract(path)
    meta = case.metadata
    assert meta["other_labels"] == {"Run": 1.0, "Reply": 0.5, "InBody": 0.25}
    assert [meta["other_label_details"][n][0]["span_id"] for n in ("Run", "Reply", "InBody")] == ["a1" * 8, "c1" * 8, "c1" * 8]
    assert any("1 evaluation result log record(s)" in r.getMessage() and r.getMessage().startswith(f"otel: {path}:1:") for r in caplog.records)


def test_a_failed_evaluation_is_no_label_and_no_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = _export(tmp_path, [], events=[{"gen_ai.evaluation.name": "Relevance", "error.type": "timeout"}])
    with caplog.at_level(logging.WARNING):
        [case] = extract(path)
    assert "other_labels" not in case.metadata and not [r for r in caplog.records if "evaluation" in r.getMessage()]


def test_a_run_pairs_the_recorded_results_with_the_judges_verdicts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """End to end, against the judge simulator on 127.0.0.1: `judge.labels.fields` naming an evaluation result's label
    pairs it with the verdicts; a name whose results disagree within a case is named as a conflict and gives no label."""
    def config(fields: dict[str, str] | None) -> Path:
        cfg = {"dataset": {"path": str(DATA / "split"), "format": "otel"}, "metrics": [{"type": "TaskCompletion"}],
               "judge": {"provider": "simulator", "model": "gpt-4o-mini"}, "cache": {"dir": str(tmp_path / "cache")},
               "run": {"dir": str(tmp_path / "run")}}
        if fields:
            cfg["judge"]["labels"] = {"fields": fields}
        out = tmp_path / "eval.yaml"
        out.write_text(yaml.safe_dump(cfg))
        return out

    assert main(["run", str(config({"TaskCompletion": "metadata.other_labels.task_success"})), "--no-progress"]) in (0, 1)
    block = json.loads((tmp_path / "run" / "summary.json").read_text())["labels"]
    assert (block["total_labels"], block["matched"], block["problem_count"]) == (2, 2, 0)
    assert (block["metrics"]["TaskCompletion"]["n"], block["metrics"]["TaskCompletion"]["cases"]) == (2, 2)
    out = tmp_path / "calibrate.json"
    capsys.readouterr()
    code = main(["calibrate", str(config(None)), "--labels-field", "TaskCompletion=metadata.other_labels.Relevance", "--json", str(out)])
    assert code in (0, 1)
    got = json.loads(out.read_text())
    assert got["metrics"]["TaskCompletion"]["n"] == 1
    [problem] = got["problems"]
    assert problem.startswith("case 'conv-1' metadata.other_labels.Relevance: label: the case's 2 labels of this name (from its traces ")
    assert "disagree: 0.9, 0.4; none is taken" in problem


def test_the_drafts_shapes_read_alike(tmp_path: Path) -> None:
    """A draft emitter's `gen_ai.evaluation` log record, its explanation in the body (opentelemetry-util-genai-dev), and
    a span event of another name whose `event.name` attribute says what it is."""
    body = {"kvlistValue": {"values": [{"key": "gen_ai.evaluation.explanation", "value": {"stringValue": "on topic"}}]}}
    path = _export(tmp_path, [{"eventName": "gen_ai.evaluation", "gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 0.8,
                               "gen_ai.evaluation.score.label": "relevant", "body": body, "traceId": "ab" * 16, "spanId": "c1" * 8}],
                   events=[{"name": "evaluation", "event.name": "gen_ai.evaluation.result", "gen_ai.evaluation.name": "bias",
                            "gen_ai.evaluation.score.label": "none"}])
    [case] = extract(path)
    assert case.metadata["other_labels"] == {"relevance": 0.8, "bias": "none"}
    assert case.metadata["other_label_details"]["relevance"] == [{"span_id": "c1" * 8, "score_label": "relevant", "explanation": "on topic"}]


def test_a_result_written_both_as_its_spans_event_and_as_a_log_record_counts_once(tmp_path: Path) -> None:
    # An emitter writing each result both ways (the span event and its log record, on the same span) made one verdict
    # two sources of one label; a second, different verdict on the same span still counts.
    same = {"gen_ai.evaluation.name": "Relevance", "gen_ai.evaluation.score.value": 0.8, "gen_ai.evaluation.explanation": "on topic"}
    path = _export(tmp_path, [{**same, "spanId": "c1" * 8, "traceId": "ab" * 16},
                              {**same, "gen_ai.evaluation.score.value": 0.3, "spanId": "c1" * 8, "traceId": "ab" * 16}],
                   events=[dict(same)])
    [case] = extract(path)
    assert case.metadata["other_labels"] == {"Relevance": [0.8, 0.3]}
    assert len(case.metadata["other_label_sources"]["Relevance"]) == 2
